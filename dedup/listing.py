"""Whether a page is a listing: a page made of repeated items.

A listing (a home page, a section, tag or archive page, search results, quote or product
cards, a table of entries) shows items that are each something else's: a post's summary
or its whole text, a quote, a product. Its text is the items' texts side by side, so by
its text a listing holds other pages whole, and another listing under another layout or
another URL holds the same items. The decision treats it accordingly
(:func:`dedup.decide.text_check`): where either page is a listing, the two are copies only
when they show the same items (each text is in the other), so a listing is not the copy of
one of its items, nor an item the copy of a listing that shows it beside others
(docs/fingerprints.md, "Listings").

What makes a listing, read from the page's HTML (the same parse as the main text) and its
main text: at least :data:`LISTING_ITEMS` sibling block elements of one kind (the same tag
and class, made of the same kinds of elements), each with a link and of some size, whose
text holds at least :data:`LISTING_SHARE` of the page's main text; or as many
``<article>`` elements, each with a link and of some size and none inside another, wherever
they sit, that hold as much (a blog's index shows its latest post whole in a "featured"
block of its own and the others as a list below it: the featured post is an item too,
and a tag page of three posts shows one featured and two listed). An article's
paragraphs are not items (paragraphs are not blocks here); its navigation, header, footer
and sidebars are not looked into; its "related posts" list is not its main text.

Items are other pages' entries. An item that holds the page's own title (an ``<h1>`` that
leads nowhere else) is not one, and the rest are a listing only when most of them are
headed by titles that lead to their pages: rows of stories below a title row, not an
article's text row and related row below its title row. A run every item of which is
headed by a heading that leads nowhere, most of them over two paragraphs and more, is an
article's sections (a listicle's "1. The first company"; a card's title may lead nowhere
beside its link, over a summary). ``<article>`` elements one of which holds the page's
own title are the page's article among its related posts. Items named as a thread's
answers or replies (their class or id) are the page's own posts.

Fewer items make a listing only when the page says they are other pages' entries: one or
two ``<article>`` elements whose headings link to another page than the page itself (a
tag's last page of one or two posts, a tag page of one quote), read whole by its main text.
An article's own ``<article>`` has no heading link, or one to itself; a page's sections or
its pair of columns are not ``<article>`` elements with headings that lead elsewhere.
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from itertools import islice
from typing import Any
from urllib.parse import urljoin

import numpy as np

from dedup.ids import url_key
from dedup.overlap import shingles
from dedup.text import class_words

#: The fewest repeated items that make a listing: two could be a pair of sections of an
#: article; a listing page shows three and more (a last page of a pagination may show
#: fewer and is then judged as a page).
LISTING_ITEMS = 3

#: The share of the page's main text (its three-word shingles) that its repeated items
#: hold in a listing. Measured on the development articles (docs/fingerprints.md,
#: "Listings"): an article's largest runs of linked items (navigation, related posts,
#: comment threads) are not its main text, while a listing's main text is its items,
#: whatever its extractor kept of them.
LISTING_SHARE = 0.75

#: Block elements that can be a listing's items (paragraphs, spans and links cannot).
ITEM_TAGS = frozenset({"li", "article", "div", "section", "tr", "dd", "figure"})

#: An item of a listing holds at least this many words and this share of its largest
#: item's: a page's main column beside its small header and footer blocks is a layout,
#: not a listing, while a home page may show its latest post whole beside summaries
#: a fiftieth of its length.
ITEM_WORDS = 10
SMALLEST_ITEM = 0.02

#: An ``<article>`` is one of a listing's items only when at least this share of its text
#: is in the page's main text (:func:`items_share`): an article page's teasers of related
#: posts are ``<article>`` elements too, but not what its reading keeps.
READ_ITEM = 0.5

_SKIP = frozenset({"script", "style", "noscript", "template", "svg"})
_FURNITURE = frozenset({"nav", "header", "footer", "aside"})


def _shape(element: Any) -> frozenset[str]:
    """The tags of an element's children: items of a listing are made alike (a title, a
    date, a summary), where a page's header, main part and footer are not."""
    return frozenset(c.tag for c in element if isinstance(c.tag, str))


def _words(element: Any, memo: dict[Any, int]) -> int:
    """An element's words: its visible text and its descendants' (scripts and styles left
    out), each element counted once however many runs ask (``memo``)."""
    if element in memo:
        return memo[element]
    if not isinstance(element.tag, str) or element.tag in _SKIP:
        n = 0
    else:
        n = len(element.text.split()) if element.text else 0
        for child in element:
            n += _words(child, memo) + (len(child.tail.split()) if child.tail else 0)
    memo[element] = n
    return n


#: The parents of three and more elements outside a page's navigation, header, footer,
#: sidebars and scripts, below the body: where a run of items can be (lxml finds them in
#: C; "has a third child" is cheaper for libxml2 to ask than "counts three children").
_PARENTS = ("descendant::*[*[3]][not(ancestor-or-self::nav or ancestor-or-self::header"
            " or ancestor-or-self::footer or ancestor-or-self::aside"
            " or ancestor::noscript or ancestor::template or ancestor::svg)]")


@lru_cache(maxsize=1)
def _parents() -> Any:
    from lxml.etree import XPath

    return XPath(_PARENTS)


#: Class or id words that name a page's own posts: a thread's answers and replies are the
#: page's text in parts, not other pages' entries.
_REPLIES = class_words("answers?|replies|reply")


def _replies(items: list[Any]) -> bool:
    """Whether a run's items are named as a thread's answers or replies."""
    return all(_REPLIES.search(f"{item.get('class') or ''} {item.get('id') or ''}")
               for item in items)


def _runs(parent: Any) -> list[list[Any]]:
    """The children of ``parent`` that are alike (:data:`ITEM_TAGS` of one tag and class,
    made of the same kinds of elements: :func:`_shape`), at least :data:`LISTING_ITEMS`
    of a kind, each kind in the order of its first child. The shapes are compared only
    among children of one tag and class that are enough for a run."""
    named: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for child in parent:
        if child.tag in ITEM_TAGS:  # a comment's tag is a function: not among them
            named[(child.tag, child.get("class") or "")].append(child)
    runs: list[tuple[int, list[Any]]] = []
    for alike in named.values():
        if len(alike) < LISTING_ITEMS:
            continue
        shaped: dict[frozenset[str], list[Any]] = defaultdict(list)
        for child in alike:
            shaped[_shape(child)].append(child)
        runs += [(parent.index(items[0]), items) for items in shaped.values()
                 if len(items) >= LISTING_ITEMS]
    runs.sort(key=lambda run: run[0])
    return [items for _, items in runs]


def _linked(element: Any) -> bool:
    """Whether an element holds a link (an ``<a href>``)."""
    return any(a.get("href") is not None for a in element.iter("a"))


def item_groups(tree: Any, parents: list[Any] | None = None) -> list[list[Any]]:
    """The runs of repeated linked items of a parsed page (each a list of sibling
    elements), most words first; empty without a body. ``parents``: where to look, as
    the main text's reading found them (:class:`dedup.maintext.MainText`: in the part of
    the page the text was read from); ``None``: the parents of three and more elements in
    the body (:data:`_PARENTS`)."""
    if tree is None:
        return []
    if parents is not None:
        return _groups(parents)
    # the root's child (a search of the whole tree costs a tenth of a millisecond: lxml
    # looks for the next match before it returns the first)
    body = tree if tree.tag == "body" else tree.find("body")
    if body is None:
        body = tree.find(".//body")
    if body is None:
        return []
    return _groups([body, *_parents()(body)])


def _groups(parents: list[Any]) -> list[list[Any]]:
    """The runs of :func:`item_groups` among the children of ``parents``."""
    memo: dict[Any, int] = {}
    found: list[tuple[int, list[Any]]] = []
    for parent in parents:
        for items in _runs(parent):
            items = [c for c in items if _linked(c)]
            if _enough(items, memo):
                found.append((sum(_words(c, memo) for c in items), items))
    found.sort(key=lambda f: -f[0])
    return [items for _, items in found]


def _enough(items: list[Any], memo: dict[Any, int]) -> bool:
    """Whether ``items`` are enough for a listing: at least :data:`LISTING_ITEMS` of some
    size (:data:`ITEM_WORDS`, :data:`SMALLEST_ITEM` of the largest); one block and its small
    neighbours are a layout."""
    if len(items) < LISTING_ITEMS:
        return False
    sizes = [_words(c, memo) for c in items]
    least = max(ITEM_WORDS, SMALLEST_ITEM * max(sizes))
    return sum(1 for n in sizes if n >= least) >= LISTING_ITEMS


_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")


def _leads_elsewhere(heading: Any, url: str | None) -> bool:
    """Whether a heading links to another page than ``url`` (the page's own; ``None``:
    any link but a fragment)."""
    link = next((a.get("href") for a in heading.iter("a") if a.get("href") is not None),
                None)
    if not link or link.startswith("#"):
        return False
    if url is None:
        return True
    try:
        return url_key(urljoin(url, link)) != url_key(url)
    except ValueError:  # a link that is no URL
        return False


def _entry_of_another(article: Any, url: str) -> bool:
    """Whether an ``<article>`` is headed by a title that links to another page than
    ``url`` (the page's own): its first heading, before any paragraph (a heading further
    down is the article's own section, whatever it links to), leads there; it is that
    page's entry in a listing."""
    heading = next(article.iter(*_HEADINGS, "p"), None)
    if heading is None or heading.tag == "p":
        return False
    return _leads_elsewhere(heading, url)


def _holds_the_title(item: Any, url: str | None) -> bool:
    """Whether an item holds the page's own title: an ``<h1>`` that leads nowhere else.
    It is then not a listing's entry (those are other pages'): the page's title row, or
    its own article among its related posts' cards."""
    return any(not _leads_elsewhere(h1, url) for h1 in item.iter("h1"))


def _linked_out(heading: Any, url: str | None) -> bool:
    """Whether a heading leads to another page, by a link in it or around it."""
    return _leads_elsewhere(heading, url) or any(
        a.get("href") for a in heading.iterancestors("a"))


def _headed_elsewhere(item: Any, url: str | None) -> bool:
    """Whether an item's first heading leads to another page (:func:`_linked_out`)."""
    heading = next(item.iter(*_HEADINGS), None)
    return heading is not None and _linked_out(heading, url)


def _sections(items: list[Any], url: str | None) -> bool:
    """Whether a run of items is an article's sections: every one headed (its first
    heading), no heading leading to another page, by a link in it or around it, and most
    of them of two paragraphs and more. A listing's entries lead to their pages, by their
    titles or by a link beside them (a card's "stretched" link, its summary one paragraph);
    a listicle's "1. The first company" headings lead nowhere, over paragraphs of text."""
    long = 0
    for item in items:
        heading = next(item.iter(*_HEADINGS), None)
        if heading is None or _linked_out(heading, url):
            return False
        long += next(islice(item.iter("p"), 1, None), None) is not None
    return 2 * long > len(items)


def articles(tree: Any, url: str | None = None) -> list[Any]:
    """The ``<article>`` elements of a parsed page that are a listing's items: none inside
    another, each with a link, at least :data:`LISTING_ITEMS` of some size
    (:data:`ITEM_WORDS`, :data:`SMALLEST_ITEM` of the largest); or, on a page at ``url``,
    one or two of at least :data:`ITEM_WORDS` words each, every one of them another page's
    entry (its heading links there); empty otherwise. An ``<article>`` is a composition of
    its own wherever it sits, so a featured post in an ``<aside>`` is an item as much as
    those of the list below it."""
    if tree is None:
        return []
    found = [a for a in tree.iter("article")
             if not any(p.tag == "article" for p in a.iterancestors())]
    items = [a for a in found if _linked(a)]
    if len(items) < LISTING_ITEMS:
        memo: dict[Any, int] = {}
        if url and items and len(items) == len(found) and all(
                _words(a, memo) >= ITEM_WORDS and _entry_of_another(a, url) for a in items):
            return items  # a listing of one or two: every one another page's entry
        return []
    memo = {}
    sizes = [_words(a, memo) for a in items]
    least = max(ITEM_WORDS, SMALLEST_ITEM * max(sizes))
    if sum(1 for n in sizes if n >= least) < LISTING_ITEMS:
        return []
    return items


def _own_text(element: Any) -> str:
    """An element's text outside the navigation, header, footer and sidebars inside it (an
    entry's byline and tags in its ``<footer>``, its title in its ``<header>``): what a
    reading that leaves furniture out can keep of it."""
    parts: list[str] = []

    def walk(el: Any) -> None:
        if not isinstance(el.tag, str) or el.tag in _SKIP or el.tag in _FURNITURE:
            return
        if el.text:
            parts.append(el.text)
        for child in el:
            walk(child)
            if child.tail:
                parts.append(child.tail)

    if element.tag in _FURNITURE:  # an item that is a sidebar itself: all of it
        return " ".join(element.itertext())
    walk(element)
    return " ".join(parts)


def _best_run(tree: Any, text: str, parents: list[Any] | None, url: str | None = None
              ) -> tuple[float, list[str]]:
    """Of the largest run of repeated linked items of a page's HTML and its
    :func:`articles` (those its main text reads), the one that holds the largest share
    of its main text (``text``, its three-word shingles): that share and its items'
    texts (``0.0, []``: neither)."""
    runs = []
    for items in item_groups(tree, parents)[:1]:
        # the row that holds the page's own title is not an item; the rest are a listing
        # when they are entries, most of them headed by a title leading to their page
        # (stories in rows below the page's title in a row of its own), not when they are
        # an article's rows (its text, its related posts)
        rest = [item for item in items if not _holds_the_title(item, url)]
        if len(rest) < len(items) and (not _enough(rest, {}) or 2 * sum(
                _headed_elsewhere(item, url) for item in rest) <= len(rest)):
            continue
        if not _sections(rest, url) and not _replies(rest):
            runs.append(rest)
    cards = articles(tree, url)
    if any(_holds_the_title(card, url) for card in cards):
        cards = []  # the page's own article among its related posts' cards
    if cards:
        runs.append(cards)
    if not runs or not text:
        return 0.0, []
    main = shingles(text)
    if not len(main):
        return 0.0, []
    best: tuple[float, list[str]] = (0.0, [])
    for items in runs:
        texts = [" ".join(c.itertext()) for c in items]
        if items is cards and sum(  # the articles a listing shows are read
                _share_in(shingles(_own_text(c)), main) >= READ_ITEM for c in items) \
                < min(LISTING_ITEMS, len(items)):
            continue
        held = shingles("\n".join(texts))
        share = float(np.isin(main, held, assume_unique=True).mean())
        if share > best[0]:
            best = (share, texts)
    return best


def _share_in(part: np.ndarray, whole: np.ndarray) -> float:
    """The share of ``part``'s shingles that ``whole`` holds; 0 for an item without any
    (numpy's mean of nothing is NaN, with a warning in the crawl's log)."""
    return float(np.isin(part, whole).mean()) if len(part) else 0.0


def items_share(tree: Any, text: str, parents: list[Any] | None = None) -> float:
    """The share of a page's main text (``text``, its three-word shingles) that the
    largest run of repeated linked items of its HTML holds, or its :func:`articles`
    when its main text reads them (0.0: neither); ``parents`` as :func:`item_groups`
    takes them."""
    return _best_run(tree, text, parents)[0]


def listing_items(tree: Any, text: str, parents: list[Any] | None = None,
                  url: str | None = None) -> tuple[str, ...] | None:
    """The texts of a listing's items (the run that makes it one), or ``None``: the page
    is not a listing (see the module docstring); ``parents`` as :func:`item_groups`
    takes them; ``url``: the page's (a listing of one or two entries of other pages is
    told by it)."""
    share, texts = _best_run(tree, text, parents, url)
    return tuple(texts) if share >= LISTING_SHARE else None


def is_listing(tree: Any, text: str, parents: list[Any] | None = None,
               url: str | None = None) -> bool:
    """Whether a parsed page whose main text is ``text`` is a listing (see the module
    docstring); ``parents`` and ``url`` as :func:`listing_items` takes them."""
    return listing_items(tree, text, parents, url) is not None
