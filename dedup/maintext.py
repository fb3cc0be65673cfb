"""simcrawl's own reading of a page's main text: one pass over the parsed tree.

The crawl reads every page this way by default (``DEDUP_EXTRACTOR = "simcrawl"``;
``"trafilatura"`` reads them with trafilatura, as before). It is about seven times faster
than trafilatura's fast mode on real pages, at a token F1 as high as trafilatura's default
on both development sets, and the decision finds more copies with it
(docs/benchmarks.md, "Levers of the read"). It reads every page, never some pages: two
extractors would read one article's copies under different templates two ways.

How a page is read (:func:`main_text`):

1. **Where.** The element the page marks as its main content (its one ``<main>``, else
   its one ``<article>``: :func:`main_region`), else the body. A marked region whose text
   is thin is read again from the whole body, and so is one with fewer than 200
   characters of :func:`sentences`, whose body reading is kept when it holds more of them
   (a shop marks its grid of products as ``<main>`` and writes its guide to the category
   below it). Read from the body, the page's footers outside the marked region are not
   its text (a museum's list of exhibitions, titles and names without a sentence, read
   as the address and the funders' line below it): their lines are left out of the body
   reading, and the marked region's own reading is kept when what is left is all of it.
2. **Blocks.** One walk over the tree cuts the text into blocks at block-level elements
   (paragraphs, headings, list items, cells, ``div``...). Each block knows its characters,
   the characters inside links, the elements opened since the block before it, and the
   *furniture* it sits in. Scripts, styles, forms' controls, media and hidden elements
   (``hidden``, ``aria-hidden``, ``display: none``) are not read, unless what is read
   without them is thin: a page may hold its text in ``<noscript>`` (a forum's posts for
   readers without scripts) or in ``<div hidden>`` (a body streamed to be moved into
   place by a script), and is then read again with those parts shown (the longer
   reading is kept). A dialog kept closed (``<dialog>`` without ``open``, or marked
   ``aria-modal="true"``) and a popover (an element with the ``popover`` attribute,
   which HTML shows only when a script or a button opens it) open on demand over the
   page and are never read. A tab's panel
   (``role="tabpanel"``) is read, shown or not: the page's own text behind a tab (a
   code sample in each language, a product's specifications beside its description), as
   a closed ``<details>`` is.
3. **Furniture.** ``nav``, ``aside``, ``header`` and ``footer`` elements, and containers
   whose class or id (or ARIA role) names a part of a page that is not its text (comments,
   sharing, sign-ups, notices, navigation, related links, advertising, the byline, a
   post's votes and signature, a blogroll: see :data:`FURNITURE`), are furniture, unless
   they hold more than half of the page's text: a template that calls its content wrapper
   ``content-sidebar-wrap`` or a site named "Kill the Newsletter" does not lose its
   article, and a home page does not lose its newest post "featured" in an ``<aside>``;
   the text outside all furniture is then read too (the list of the other posts). Such a
   container needs 200 characters of prose when the page has text outside all furniture: a
   sidebar of links and a line about the site is never the text of a page whose own text
   is links or short. A footer (``<footer>``, ``role="contentinfo"``) is the site's,
   however much it holds, beside 200 characters of prose outside all furniture (a shop's
   legal footnotes below a short answer). An ``<article>`` is a composition of its own:
   it is text wherever it sits (a tag page's newest note in an ``<aside>``). The readers'
   part (comments, replies) and consent notices (:data:`NOT_TEXT`) stay furniture however
   long they are, unless what is read without them is less than a tenth of them
   (:data:`NOT_TEXT_SHARE`): a thread whose first post is among its replies, a cookie
   policy's own page. Then each of their containers is read as text.
4. **The text.** The heart of the text is the run of consecutive blocks with the largest
   score (a maximum-sum run): a block's characters outside links count for it, its link
   characters and the elements opened before it against it, and a block of furniture
   counts against it by its length. The run is then widened to the whole element that
   holds both its ends (the article's container: its short items, a list of books with
   their authors, are its text), and climbs on from there (:func:`_widen`): to the parent
   of any element around it that is one of like siblings (every item of a listing, every
   answer of a thread, whatever its length), and past any that holds less than half of the
   page's text outside its furniture (a reading unsure of itself reads more), up to the
   first that holds nearly all of it. Another run is read beside it when, widened, it
   holds as much text (a second body of text, not a notice), or a fifth when it is a list
   of like items (a home page's newest post beside the list of the others), or as many
   characters of sentences as it (200 at least: a guide below a grid of short cards);
   each run is weighed in turn, best first, and one too small is passed over, not an end
   (a thread's stats line before its short answers). Then the blocks right after the page's headline
   (its first ``<h1>``, then read too) are read while they add text, furniture among them
   counting by its length alone: an article shorter than a disclaimer further down is
   still read, and so is a question after its votes. A page whose text outside its
   furniture is nearly all links (an index, a table of contents: less than 200 characters
   of prose, and more than twice that in links) is read as its links, and its furniture
   stays furniture. Prose is a block's characters outside links, in blocks that are not
   mostly links and have more letters than link characters: a jump bar "A | B | C" is
   links between separators.
5. **Filter.** Of those blocks, furniture is left out, and so are blocks that are mostly
   link text (navigation), except paragraphs, quotations, preformatted text and table
   cells, prose that links its words, unless they are a link alone ("More stories").

Each block is a line of the result (the template lines are learned over lines).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from itertools import islice
from typing import Any, NamedTuple

import xxhash

from dedup.kernels import load
from dedup.listing import ITEM_TAGS
from dedup.overlap import THIN_TOKENS, token_pattern
from dedup.text import class_words

#: Elements whose text is never read.
UNREAD = frozenset(
    "script style noscript template svg iframe button select textarea option input object "
    "embed canvas video audio map math head title".split())
#: Elements that are furniture by their tag.
FURNITURE_TAGS = frozenset("nav aside footer header".split())
#: Elements that end one block and start another.
BLOCKS = frozenset(
    "p div section article main h1 h2 h3 h4 h5 h6 ul ol li dl dt dd table thead tbody tfoot "
    "tr td th blockquote pre figure figcaption br hr address center details summary caption "
    "form fieldset legend body html nav aside footer header".split())
#: Containers whose class or id may name them as furniture.
CONTAINERS = frozenset("div section p ul ol dl table form aside nav footer header figure".split())
#: Blocks kept in the text unless nearly all of them is link text (prose that links its
#: words; see :data:`PROSE_LINK_DENSITY`).
PROSE = frozenset("p blockquote pre td th dd".split())


_READERS = "comments?|commentlist|discussion|disqus|replies|respond|responses?|reactions?"
_CONSENT = "cookies?|consent|gdpr"
#: Class or id tokens of furniture, by what the part of the page is. ``meta`` stays: read,
#: the lines it names (a post's date, its views and comments counted) differ between copies
#: of one page, and near-dup-dev-3 found fewer copies (docs/benchmarks.md).
FURNITURE = class_words(
    _READERS,
    "share|sharing|sharethis|addthis|social|follow",                        # sharing
    "newsletter|subscribe|subscription|signup|optin",                       # sign-ups
    _CONSENT + "|popup|modal|overlay|banner",                               # notices
    "breadcrumbs?|sidebar|nav|navbar|navigation|menu|pagination|pager|toolbar",
    "complementary|contentinfo",                                            # ARIA landmarks
    "masthead|footer|skip|sr|visually|screen",                              # chrome, skip links
    "related|recommended|popular|trending|outbrain|taboola|blogroll",       # other pages
    "ad|ads|advert|advertisement|adslot|sponsor|sponsored|promo|promoted|dfp",
    "author|byline|bio|meta|timestamp|dateline|tags|tag|categories",        # about the page
    "votecell|signature|reputation",                                        # about a post
)
#: Furniture that stays furniture however much text it holds.
NOT_TEXT = class_words(_READERS, _CONSENT)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)

#: The deepest element walked recursively; below it, a subtree's text is one block.
MAX_DEPTH = 400
#: What an element opened between two blocks costs a run, in characters.
TAG_COST = 8.0
#: Furniture holding more than this share of the page's text is not furniture.
FURNITURE_SHARE = 0.5
#: A block more than this share link text is navigation; a paragraph of :data:`PROSE`
#: more than the second share (a link alone: "Read more", "More stories").
LINK_DENSITY, PROSE_LINK_DENSITY = 0.5, 0.9
#: A page whose text outside its furniture has fewer characters than this outside links,
#: and more than the share of that many in blocks that are mostly links, is a page of
#: links (an index, a table of contents): its links are its text.
LINK_PAGE_CHARS, LINK_PAGE_SHARE = 200, 2.0
#: A reading that holds less than this share of the page's text outside its furniture
#: is widened to the element around it (a reading unsure of itself reads more).
UNSURE_SHARE = 0.5
#: The climb of :func:`_widen` ends at an element holding this share of the page's text.
WHOLE_SHARE = 0.95
#: Another run of blocks is read beside the best when, widened, it holds this share of
#: the best's text (a second body of text as long: a notice, a disclaimer, a list of
#: other stories is shorter), or the second share when it is a list of like items (a
#: home page's list of posts beside its newest, "featured"). Half, before, read a
#: republishing site's disclaimer, cookie notices and "enable JavaScript" lines on
#: near-dup-dev-2 and lost a republished pair (docs/benchmarks.md).
OTHER_RUN_SHARE, OTHER_ITEMS_SHARE = 1.0, 0.2
#: A line or block of this many words and more is a sentence (a product card's name and
#: price, a menu entry, a date are shorter): another run holding as many characters of
#: sentences as the best, and 200 at least (:data:`LINK_PAGE_CHARS`), is read beside it
#: (a shop's guide to a category below its grid of cards); a marked region with fewer is
#: read from the body too (:func:`read_main`).
SENTENCE_WORDS = 10
#: How far above a block of links :func:`_item_titles` looks for the item it titles, and
#: the fewest such items that make a listing.
ITEM_DEPTH, LISTING_ITEMS = 6, 3
#: The items whose titles are read (a table's rows are not: its cells are read as cells,
#: a link alone in one as before, so that a listing reads alike as cards and as a table).
TITLED_ITEMS = ITEM_TAGS - {"tr"}
#: The readers' part and the notices (:data:`NOT_TEXT`) are the page's text when the
#: prose read without them is less than this share of theirs: a thread whose replies are
#: its text (its first post among them, or a line above them), a cookie policy's own
#: page; an article's comments, however many, answer an article read beside them.
NOT_TEXT_SHARE = 0.1


NOT_TEXT_KIND = 2
#: What each class or id seen names: 0 text, 1 furniture, 2 furniture that is not text
#: (a page repeats its names: a lookup instead of two searches).
_KINDS: dict[str, int] = {}


def _kind(name: str) -> int:
    if len(_KINDS) >= 100_000:
        _KINDS.clear()
    kind = _KINDS[name] = (NOT_TEXT_KIND if NOT_TEXT.search(name) else 1) \
        if FURNITURE.search(name) else 0
    return kind


class _Blocks:
    """The walk (its definition; the compiled kernel ``dedup._walk`` gives the same blocks
    about three times faster, :func:`_walk`): the blocks of one element's subtree, in
    document order. A block is
    ``(text, link_chars, tag, opened, furniture, element)``: ``tag`` is the element it
    is the text of, ``opened`` the elements opened since the block before it,
    ``furniture`` the furniture containers it sits in (numbers), ``element`` the
    element whose text it is."""

    def __init__(self, root: Any) -> None:
        self.blocks: list[tuple[str, int, str, int, tuple[int, ...], Any]] = []
        self.parts: list[str] = []
        self.link_chars = 0
        self.tag, self.element = "body", root
        self.opened = 0
        self.furniture: tuple[int, ...] = ()
        self.containers = 0
        self.not_text: set[int] = set()
        #: the page's footers (``<footer>``, ``role="contentinfo"``): see :func:`_furniture`
        self.footers: set[int] = set()
        #: elements with three and more children outside nav, header, footer and aside
        #: (where a listing's items can be: :func:`dedup.listing.item_groups`)
        self.parents: list[Any] = []
        self.outside = 0  # the nav, header, footer and aside elements open
        self._walk(root, False, 0)
        self._flush("body", root)

    def _flush(self, tag: str, element: Any) -> None:
        if self.parts:
            text = " ".join(" ".join(self.parts).split())
            if text:
                self.blocks.append((text, self.link_chars, self.tag, self.opened,
                                    self.furniture, self.element))
                self.opened = 0
            self.parts, self.link_chars = [], 0
        self.tag, self.element = tag, element

    def _walk(self, el: Any, in_link: bool, depth: int) -> None:
        tag = el.tag
        if not isinstance(tag, str):  # a comment or a processing instruction
            return
        self.opened += 1
        if tag in UNREAD:
            return
        get = el.get
        panel = get("role") == "tabpanel"  # a tab's panel: read, shown or not
        if not panel and (get("hidden") is not None or get("aria-hidden") == "true"
                          or get("aria-modal") == "true" or get("popover") is not None
                          or tag == "dialog" and get("open") is None):
            return
        style = get("style")
        if style and not panel and _HIDDEN_STYLE.search(style):
            return
        block = tag in BLOCKS
        if block:
            self._flush(tag, el)
        outer = self.furniture
        furniture = by_tag = tag in FURNITURE_TAGS
        if by_tag:
            self.outside += 1
        elif not self.outside and len(el) >= 3:
            self.parents.append(el)
        if not furniture and tag in CONTAINERS:
            for name in (get("class"), get("id"), get("role")):
                if name:
                    kind = _KINDS.get(name)
                    if kind is None:
                        kind = _kind(name)
                    if kind:
                        furniture = True
                        if kind == NOT_TEXT_KIND:
                            self.not_text.add(self.containers + 1)
        if furniture:
            self.containers += 1
            self.furniture = (*outer, self.containers)
            if tag == "footer" or get("role") == "contentinfo":
                self.footers.add(self.containers)
        elif tag == "article" and outer:  # a composition of its own: text wherever it sits
            self.furniture = tuple(f for f in outer if f in self.not_text)  # but the readers'
        in_link = in_link or tag == "a"
        parts = self.parts
        text = el.text
        if depth >= MAX_DEPTH:  # deeper than a recursive walk should go: the text as it is
            text = " ".join(el.itertext())
        if text:
            parts.append(text)
            if in_link:
                self.link_chars += len(text.strip())
        if depth < MAX_DEPTH:
            walk = self._walk
            for child in el:
                walk(child, in_link, depth + 1)
                text = child.tail
                if text:
                    self.parts.append(text)  # a flush in the child's walk replaced the list
                    if in_link:
                        self.link_chars += len(text.strip())
        if block or furniture:
            parent = el.getparent()
            self._flush(parent.tag if parent is not None else "body", parent)
        if by_tag:
            self.outside -= 1
        self.furniture = outer


_kernel: Any = load("_walk", "about three times slower")
#: Which walk runs: ``"cython"`` (the kernel) or ``"python"`` (its twin, :class:`_Blocks`).
KERNEL = "python" if _kernel is None else "cython"


def _walk(root: Any) -> Any:
    """The blocks of ``root``'s subtree (:class:`_Blocks`'s attributes), from the kernel
    when it is built."""
    if _kernel is None:
        return _Blocks(root)
    return _kernel.Walk(root, UNREAD, BLOCKS, FURNITURE_TAGS, CONTAINERS, _KINDS, _kind,
                        _HIDDEN_STYLE.search, MAX_DEPTH, NOT_TEXT_KIND)


def _inside(el: Any, top: Any) -> bool:
    while el is not None:
        if el is top:
            return True
        el = el.getparent()
    return False


def _common(a: Any, b: Any) -> Any:
    """The nearest element that holds both ``a`` and ``b``."""
    above = set()
    while a is not None:
        above.add(a)
        a = a.getparent()
    while b is not None and b not in above:
        b = b.getparent()
    return b


class MainText(NamedTuple):
    """A page's main text as :func:`read_main` reads it."""

    #: the text, one line a block (``""``: none found)
    text: str
    #: the elements of the part read that have three and more children, outside nav,
    #: header, footer and aside, in document order: where the items of a listing that
    #: holds this text can be (:func:`dedup.listing.item_groups`)
    parents: list[Any]
    #: XXH3-128 of the page's whole visible text (every block of its body, read or not,
    #: or of its marked main part when the text was read there; ``""``: not read), on
    #: which a page whose reading is its site's template alone is judged
    #: (:func:`dedup.decide.leave_out_template`)
    whole: str = ""


def _alike(el: Any, kinds: dict[Any, Counter[tuple[str, str | None]]] | None = None
           ) -> bool:
    """Whether ``el`` is one of several like siblings (the same tag and class): an item of
    a listing, an answer of a thread, a paragraph among paragraphs; for definitions
    (``<dl>``), a class word in common: an API page's ``py class`` and ``py function``.
    (A class word in common for every tag read more than that: a page's sections and
    columns, and one wrong pair on near-dup-dev.) ``kinds``: a cache of each parent's
    children counted by tag and class, for a caller that asks of many siblings."""
    parent = el.getparent()
    if parent is None:
        return False
    tag, cls = el.tag, _kind_named(el.get("class"))
    if tag == "dl" and cls:  # definitions of one kind of thing: a class word in common
        words = set(cls.split())
        return any(other is not el and other.tag == "dl"
                   and not words.isdisjoint((other.get("class") or "").split())
                   for other in parent)
    if kinds is not None:
        if (counts := kinds.get(parent)) is None:
            counts = kinds[parent] = Counter((c.tag, _kind_named(c.get("class")))
                                             for c in parent)
        return counts[tag, cls] > 1
    return any(other is not el and other.tag == tag and _kind_named(other.get("class")) == cls
               for other in parent)


def _kind_named(cls: str | None) -> str | None:
    """The kind an element's class names: its class without the tokens that end in a
    number of three digits or more, which name the one element (XenForo's
    ``js-threadListItem-8162``, WordPress's ``post-123``), not what it is (a grid's
    ``col-md-8`` beside its ``col-md-4`` is another kind of column). A builder's hashed
    id (Elementor's ``elementor-element-5d7c0a1``) stays: read as alike, a page's columns
    and sidebars were one run of its text (near-dup-dev and -2 lost copies).

    >>> _kind_named("structItem structItem--thread js-threadListItem-8162")
    'structItem structItem--thread'
    >>> _kind_named("col-md-8"), _kind_named("col-md-4")
    ('col-md-8', 'col-md-4')
    >>> _kind_named("elementor-column elementor-element elementor-element-7a1b234")
    'elementor-column elementor-element elementor-element-7a1b234'
    >>> _kind_named("post-123 hentry")
    'hentry'
    """
    if not cls or not _ID_NUMBER.search(cls):
        return cls
    return " ".join(t for t in cls.split() if not _ID_NUMBER.search(t))


#: A number that names one element: a class token's end (:func:`_kind_named`).
_ID_NUMBER = re.compile(r"(?:^|[-_\s])[0-9]{3,}(?=\s|$)")


def _best_run(scores: list[float], taken: bytearray) -> tuple[float, int, int]:
    """The maximum-sum run of consecutive blocks not ``taken`` (a flag a block): its
    score, first and last block (``-1``: none)."""
    best, first, last = float("-inf"), 0, -1
    run, start = 0.0, 0
    for i, score in enumerate(scores):
        if taken[i]:
            run = 0.0
            continue
        run, start = (run + score, start) if run > 0 else (score, i)
        if run > best:
            best, first, last = run, start, i
    return best, first, last


def _widen(blocks: list[Any], first: int, last: int, root: Any, good: list[int],
           whole: int, taken: bytearray) -> tuple[int, int, bool]:
    """A run of blocks widened to the element holding both its ends (a marked region
    included; the body is the page), and on up the elements around it: to the parent of
    any of them that is one of like siblings (every item of a listing, every answer of a
    thread) and past any that holds less than :data:`UNSURE_SHARE` of the page's text
    outside its furniture (a reading unsure of itself reads more), up to the first that
    holds :data:`WHOLE_SHARE` of it. Blocks already ``taken`` (a flag a block) bound it.
    Also says whether it climbed to the parent of like items (:data:`ITEM_TAGS`: list
    items, articles, sections, rows; not paragraphs)."""
    top = _common(blocks[first][5], blocks[last][5])
    levels: list[tuple[int, int]] = []
    want, items = 0, False
    while top is not None and top is not root and top.tag not in ("body", "html"):
        while first > 0 and not taken[first - 1] and _inside(blocks[first - 1][5], top):
            first -= 1
        while last + 1 < len(blocks) and not taken[last + 1] \
                and _inside(blocks[last + 1][5], top):
            last += 1
        levels.append((first, last))
        held = sum(good[first:last + 1])
        if held >= WHOLE_SHARE * whole:
            break
        alike = _alike(top)
        if held < UNSURE_SHARE * whole or alike:
            want = len(levels)  # its parent's blocks are read
            items = items or (alike and top.tag in ITEM_TAGS)
        top = top.getparent()
    else:  # the climb reached the part read: all of it, up to the blocks taken
        if not levels:
            levels.append((first, last))
        while first > 0 and not taken[first - 1]:
            first -= 1
        while last + 1 < len(blocks) and not taken[last + 1]:
            last += 1
        levels.append((first, last))
    first, last = levels[min(want, len(levels) - 1)]
    return first, last, items


def _furniture(walk: Any, weights: list[int], prose: list[int]) -> set[int]:
    """The walk's furniture containers that are furniture: a container holding more than
    :data:`FURNITURE_SHARE` of the page's text (each block weighed by ``weights``, its
    characters counted; the readers' part and the notices are not the page's text) is
    text, unless it is the readers' part or a notice, or it holds less than
    :data:`LINK_PAGE_CHARS` of prose (``prose``, each block's) on a page with text outside
    all furniture: a sidebar of links and a line about the site is never the text of a
    page that has text of its own, links or short. A footer (``<footer>``, or an element
    whose ARIA role is ``contentinfo``) is the site's, not the page's: it stays furniture
    however much it holds when the page has :data:`LINK_PAGE_CHARS` of prose outside all
    furniture (a shop's two thousand words of legal footnotes below a short answer)."""
    held: dict[int, int] = {}
    said: dict[int, int] = {}
    total = 0
    outside = False
    own_prose = 0  # prose outside all furniture
    not_text = walk.not_text
    for b, own, words in zip(walk.blocks, weights, prose):
        if not b[4]:
            outside = True
            own_prose += words
        if own and not (not_text and any(f in not_text for f in b[4])):
            total += own  # the page's text: the readers' part is never of it
            for f in b[4]:
                held[f] = held.get(f, 0) + own
                said[f] = said.get(f, 0) + words
    footers = walk.footers if own_prose >= LINK_PAGE_CHARS else ()
    return {f for f in range(1, walk.containers + 1)
            if f in walk.not_text or f in footers or held.get(f, 0) <= FURNITURE_SHARE * total
            or (outside and said.get(f, 0) < LINK_PAGE_CHARS)}


def _left_out(walk: Any, real: set[int]) -> list[bool]:
    """Which of the walk's blocks sit in furniture that is furniture (``real``)."""
    return [any(f in real for f in b[4]) for b in walk.blocks]


#: Characters that are not letters: white space, ASCII punctuation and the separators
#: of link bars (a table for ``str.translate``, several times faster than a pattern).
_NOT_LETTERS = str.maketrans("", "", string.punctuation + string.whitespace
                             + "\u00a0\u00b7\u2022\u00bb\u00ab\u203a\u2039\u2013\u2014\u2192")


def _links_alone(text: str, links: int) -> bool:
    """Whether ``text`` has no more letters and digits than its ``links`` characters in
    links: links between separators. Its beginning is counted first: prose shows more
    letters there at once, and a long paragraph is not counted whole.

    >>> _links_alone("A | B | C", 3), _links_alone("Read A, then B and C", 3)
    (True, False)
    >>> _links_alone("Home » Docs · API", 11)
    True
    """
    return len(text[:2 * links + 16].translate(_NOT_LETTERS)) <= links \
        and len(text.translate(_NOT_LETTERS)) <= links


def read_blocks(root: Any) -> MainText:
    """The main text of the subtree at ``root`` (steps 2 to 5 of the module's reading)."""
    walk = _walk(root)
    blocks = walk.blocks
    if not blocks:
        return MainText("", walk.parents, _whole(blocks))
    # each block's prose: its characters outside links, unless it is mostly links or has
    # no more letters than link characters (links between separators: "A | B | C")
    prose_of = [0 if links * 2 >= len(text) or links and _links_alone(text, links)
                else len(text) - links for text, links, *_ in blocks]
    keep, left_out, links_read = _read(walk, prose_of, root)
    if walk.not_text and (kept := sum(prose_of[i] for i in keep if not left_out[i])) \
            < NOT_TEXT_SHARE * sum(prose_of):
        # the readers' part and the notices are the page's text when what is read without
        # them is a small share of them (a thread's replies, a cookie policy's page): read
        # again with each of their containers as text (a thread's every reply is one)
        not_text = walk.not_text
        held = sum(own for b, own in zip(blocks, prose_of)
                   if own and not not_text.isdisjoint(b[4]))
        if kept < NOT_TEXT_SHARE * held:
            text = frozenset(not_text)
            not_text.clear()  # the walk's: _furniture weighs them as the page's text now
            keep, left_out, links_read = _read(walk, prose_of, root, text)
    read = [i for i in sorted(keep) if not left_out[i]]
    links = [not links_read and blocks[i][1] > (PROSE_LINK_DENSITY if blocks[i][2] in PROSE
                                                  else LINK_DENSITY) * len(blocks[i][0])
             for i in read]
    titles = _item_titles(blocks, read, links, root) if any(links) else set()
    return MainText("\n".join(blocks[i][0] for i, link in zip(read, links)
                              if not link or i in titles), walk.parents, _whole(blocks))


def _item_titles(blocks: list[Any], read: list[int], links: list[bool], root: Any) -> set[int]:
    """Of the blocks ``read``, those that are links (``links``: mostly link text) and yet
    the titles of a listing's items. An item is an element one of like siblings that can
    be a listing's item (:data:`TITLED_ITEMS`: a product card, a post's teaser; not a
    paragraph, not a table's row) holding a link alone (its title: more than :data:`PROSE_LINK_DENSITY`
    of it in links, not a line of tags, and not a link other items repeat: "read more" is
    a label) and a block of text read (its price, its
    excerpt), and less than half the text read; a listing is at least
    :data:`LISTING_ITEMS` of them holding most of the text read. An article beside a list
    of teasers is not one (its text is outside the teasers, or one item of it), and a
    menu's items hold links alone and stay navigation."""
    if sum(links) < LISTING_ITEMS:
        return set()
    items: dict[Any, Any] = {}
    kinds: dict[Any, Counter[tuple[str, str | None]]] = {}  # a parent's children by kind

    def item(el: Any) -> Any:
        path = []
        found = None
        while el is not None and el is not root and len(path) < ITEM_DEPTH:
            if el in items:
                found = items[el]
                break
            path.append(el)
            if el.tag in TITLED_ITEMS and _alike(el, kinds):
                found = el
                break
            el = el.getparent()
        for seen in path:
            items[seen] = found
        return found

    text_in: dict[Any, int] = {}
    titled: set[Any] = set()
    total = 0
    of = [item(blocks[i][5]) for i in read]
    alone = [link and blocks[i][1] > PROSE_LINK_DENSITY * len(blocks[i][0])
             for i, link in zip(read, links)]  # a link alone: a title, not "Tags: a, b"
    # a title names its item: a link that items repeat ("read more") is a label
    holders: dict[str, set[Any]] = {}
    for i, title, found in zip(read, alone, of):
        if title:
            holders.setdefault(blocks[i][0], set()).add(found)
    alone = [title and len(holders[blocks[i][0]]) == 1 for i, title in zip(read, alone)]
    for i, link, title, found in zip(read, links, alone, of):
        if title:
            titled.add(found)
        elif not link:
            total += len(blocks[i][0])
            text_in[found] = text_in.get(found, 0) + len(blocks[i][0])
    listed = {found for found in titled if found is not None
              and 0 < text_in.get(found, 0) and 2 * text_in[found] < total}
    if len(listed) < LISTING_ITEMS or 2 * sum(text_in[found] for found in listed) <= total:
        return set()
    return {i for i, title, found in zip(read, alone, of) if title and found in listed}


def _read(walk: Any, prose_of: list[int], root: Any, text: frozenset[int] = frozenset()
          ) -> tuple[set[int], list[bool], bool]:
    """The blocks read of a walk (``prose_of``: each block's prose), which of them sit in
    furniture, and whether the page is a page of links (its links are its text); ``text``:
    containers of the walk that are not furniture whatever their names say."""
    blocks = walk.blocks
    real = _furniture(walk, prose_of, prose_of) - text
    left_out = _left_out(walk, real)
    # a page of links (an index, a table of contents): its text outside the furniture is
    # its links, when what is not a link there is thin and the links are not
    prose = links_out = 0
    for (_text, links, *_), own, out in zip(blocks, prose_of, left_out):
        if not out:
            if own:
                prose += own
            else:
                links_out += links
    links_read = prose < LINK_PAGE_CHARS and links_out > LINK_PAGE_SHARE * prose
    if links_read:  # the furniture weighed against all the page's text, links included
        real = _furniture(walk, [len(b[0]) for b in blocks], prose_of) - text
        left_out = _left_out(walk, real)
    keep = _select(blocks, left_out, links_read, root)
    revived = set(range(1, walk.containers + 1)) - real
    if revived and any(f in revived for i in keep for f in blocks[i][4]):
        # the text was read in furniture that holds most of the page's text (a misnamed
        # wrapper, a home page's newest post "featured" in an <aside>): the text outside
        # all furniture is the page's too
        outside = [bool(b[4]) for b in blocks]
        more = _select(blocks, outside, links_read, root) - keep
        if sum(prose_of[i] for i in more if not outside[i]) >= LINK_PAGE_CHARS:
            keep |= {i for i in more if not outside[i]}
    return keep, left_out, links_read


def _select(blocks: list[Any], left_out: list[bool], links_read: bool, root: Any
            ) -> set[int]:
    """The blocks read (step 4 of the module's reading), ``left_out`` the blocks in
    furniture; ``links_read``: a page of links, whose links are its text."""
    scores = [(-len(text) if out else len(text) - (0 if links_read else 2 * links))
              - TAG_COST * opened
              for (text, links, _tag, opened, _f, _el), out in zip(blocks, left_out)]
    # the text each block adds: its characters outside links, outside the furniture
    good = [0 if out else len(text) - (0 if links_read else links)
            for (text, links, *_), out in zip(blocks, left_out)]
    whole = sum(good)

    def said(a: int, b: int) -> int:  # the text blocks a to b add in sentences
        return sum(good[i] for i in range(a, b + 1) if good[i] and _sentence(blocks[i][0]))

    taken = bytearray(len(blocks))  # the blocks read, a flag each
    first = last = -1
    heart, heart_said = 0, -1  # -1: the heart's sentences not yet counted
    while True:
        # the maximum-sum run of the blocks not yet weighed, widened: the first is the
        # text's heart; another is read too when, widened, it holds a share of the heart's
        # text (a home page's newest post beside the list of the others), else passed over
        # (2 in ``taken``), and the next run weighed
        score, a, b = _best_run(scores, taken)
        if b < 0 or (first >= 0 and score <= 0):
            break
        a, b, items = _widen(blocks, a, b, root, good, whole, taken)
        held = sum(good[a:b + 1])
        passed = first >= 0 and held < (OTHER_ITEMS_SHARE if items else OTHER_RUN_SHARE) * heart
        if passed and held >= LINK_PAGE_CHARS:  # unless as many sentences as the heart's
            if heart_said < 0:
                heart_said = said(first, last)
            sentences = said(a, b)
            passed = sentences < LINK_PAGE_CHARS or sentences < OTHER_RUN_SHARE * heart_said
        if first < 0:
            first, last, heart = a, b, held
        taken[a:b + 1] = (b"\x02" if passed else b"\x01") * (b + 1 - a)
    keep = {i for i, read in enumerate(taken) if read == 1}
    headline = next((i for i, b in enumerate(blocks) if b[2] == "h1"), -1)
    if 0 <= headline < first - 1:  # and the blocks after the headline while they add text
        gained, most, end = 0.0, 0.0, headline
        for i in range(headline + 1, first):  # furniture counts by its length alone
            gained += -len(blocks[i][0]) if left_out[i] else scores[i]
            if gained > most:
                most, end = gained, i
        keep.update(range(headline + 1, end + 1))
    if headline >= 0 and headline + 1 in keep and not left_out[headline]:
        keep.add(headline)  # the text's own headline: copies under other markup agree
    return keep


@lru_cache(maxsize=1)
def _parser() -> Any:
    from lxml.etree import HTMLParser

    # trafilatura's options (dedup.text.parse_html): comments and processing instructions
    # are not read, ids are not indexed, no doctype is made up
    return HTMLParser(collect_ids=False, default_doctype=False, remove_comments=True,
                      remove_pis=True)


def parse(html: str) -> Any | None:
    """A page's HTML parsed for this reading: lxml's HTML parser (libxml2) with plain
    ``lxml.etree`` elements, about 0.3 ms a real page faster than
    :func:`dedup.text.parse_html` (trafilatura's parse, into ``lxml.html`` elements: each
    element Python touches is looked up in a Python class table, and the whole page is
    scanned by regular expressions for repairs libxml2 makes itself). The walk below, the
    page's facts and Scrapy's link extractor read it as they read that tree, and are faster
    on it too (docs/benchmarks.md, "Levers of the read").

    A document lxml does not take as text (an XML declaration naming an encoding) or finds
    no element in is parsed by :func:`dedup.text.parse_html` instead (``None`` when that
    fails too).

    >>> parse("<html><body><p>Hello</p></body></html>").find("body/p").text
    'Hello'
    """
    from lxml.etree import fromstring

    try:
        tree = fromstring(html, _parser())
    except Exception:  # noqa: BLE001  (an encoding declaration in a str; hostile input)
        tree = None
    if tree is None or not len(tree):
        from dedup.text import parse_html

        return parse_html(html)
    return tree


def thin(text: str) -> bool:
    """Whether a text has fewer than :data:`THIN_TOKENS` tokens, counted as the
    fingerprints count them (:func:`dedup.overlap.token_pattern`: each Han, kana or Hangul
    character one token, runs of other letters and digits one each), and only as far as
    the threshold. Words split at white space would make every Chinese text thin (its
    sentences have no spaces), and so extracted twice.

    >>> thin("a few words"), thin("word " * 100), thin("汉字" * 50), thin("汉字" * 49)
    (True, False, False, True)
    """
    return sum(1 for _ in islice(token_pattern().finditer(text), THIN_TOKENS)) < THIN_TOKENS


def main_region(tree: Any) -> Any:
    """The part of a parsed page that HTML marks as its main content: its one ``<main>``
    element, else (a page without ``<main>``) its one ``<article>``; ``None`` when it
    marks none, or more than one (a listing of ``<article>`` cards is read whole).

    >>> from dedup.text import parse_html
    >>> main_region(parse_html("<body><nav>x</nav><main><p>y</p></main></body>")).tag
    'main'
    >>> main_region(parse_html("<body><article>a</article><article>b</article></body>"))
    """
    if tree is None:
        return None
    marked: dict[str, list[Any]] = {"main": [], "article": []}
    for element in tree.iter("main", "article"):  # one pass over the tree, in C
        marked[element.tag].append(element)
    found = marked["main"] or marked["article"]
    return found[0] if len(found) == 1 else None


def main_text(tree: Any) -> str:
    """The main text of a page parsed by :func:`parse`, one line a block (``""``: none
    found; :func:`read_main` also says where a listing's items can be). The tree is not
    changed.

    >>> page = parse(
    ...     "<body><nav><a href=/>Home</a> <a href=/news>News</a></nav><main><h1>Harbour</h1>"
    ...     "<p>" + "The harbour reopened on Monday after the storm. " * 3 + "</p>"
    ...     "<div class=share><a href=/s>Share this story</a></div></main>"
    ...     "<footer>Copyright 2026 The Example Times</footer></body>")
    >>> print(main_text(page)[:55])
    Harbour
    The harbour reopened on Monday after the storm.
    """
    return read_main(tree).text


def read_main(tree: Any) -> MainText:
    """The main text of a parsed page (the module's reading), and the elements of the part
    it was read from where a listing's items can be (:class:`MainText`)."""
    if tree is None:
        return MainText("", [])
    region = main_region(tree)
    body = tree.find("body")
    marked = None
    if region is not None:
        marked = read_blocks(region)
        if not thin(marked.text) and (said := sentences(marked.text, LINK_PAGE_CHARS)) >= LINK_PAGE_CHARS:
            return marked  # (its whole: the marked part's, walked already)
    read = read_blocks(body if body is not None else tree)
    if marked is not None and not thin(marked.text) and sentences(read.text) <= said:
        return marked._replace(whole=read.whole)
    if marked is not None and marked.text and read.text:  # the footers outside it are not
        own = _not_footers(read.text, tree, region)
        if own != read.text:
            return (read._replace(text=own) if own else marked)._replace(whole=read.whole)
    if thin(read.text) and (held := _held_back(body if body is not None else tree)) is not None:
        more = read_blocks(held)
        if len(more.text) > len(read.text):
            return more._replace(whole=read.whole)
    return read


def _not_footers(text: str, tree: Any, region: Any) -> str:
    """``text`` without its lines that are the page's footers' text outside ``region``
    (and not ``region``'s), or ``""`` when the lines left are all ``region``'s."""
    held = " ".join(" ".join(t for f in tree.iter("footer") if not _inside(f, region)
                             for t in f.itertext()).split())
    if not held:
        return text
    inside = " ".join(" ".join(region.itertext()).split())
    lines = [(line, " ".join(line.split())) for line in text.split("\n")]
    kept = [(line, one) for line, one in lines if one not in held or one in inside]
    if len(kept) == len(lines) or all(one in inside for _line, one in kept):
        return text if len(kept) == len(lines) else ""
    return "\n".join(line for line, _one in kept)


def _whole(blocks: list[Any]) -> str:
    """XXH3-128 (hex, 32 digits as a text's checksum, and never one: a text's tokens hold
    no line break) of a walk's visible text, its blocks one a line."""
    return xxhash.xxh3_128_hexdigest(
        ("whole\n" + "\n".join(b[0] for b in blocks)).encode("utf-8", "surrogatepass"))


def sentences(text: str, enough: int | None = None) -> int:
    """The characters of ``text``'s lines of :data:`SENTENCE_WORDS` words and more
    (counted up to ``enough``, when given)."""
    said = 0
    for line in text.split("\n"):
        if _sentence(line):
            said += len(line)
            if enough is not None and said >= enough:
                break
    return said


#: A word of a sentence: two letters and more (not a number, a price, a "+" or a "-");
#: and the characters of the scripts written without spaces (kana, CJK ideographs, hangul).
_WORD = re.compile(r"[^\W\d_]{2,}")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _sentence(text: str) -> bool:
    """Whether ``text`` has :data:`SENTENCE_WORDS` words (:data:`_WORD`) and more: a
    sentence, not a product's name and price ("Grill 1800 + stand - Acme 149,00 EUR").

    >>> _sentence("Barbecue charbon inox 1800 + socle 3 pieds - Martinsen 149,00 €")
    False
    >>> _sentence("The harbour wall reopened on Monday after three months of repairs.")
    True
    >>> _sentence("港口的防波堤在风暴损坏修复了三个月之后于星期一重新开放。")
    True
    """
    if text.count(" ") >= SENTENCE_WORDS - 1:
        return sum(1 for _ in islice(_WORD.finditer(text), SENTENCE_WORDS)) == SENTENCE_WORDS
    # Chinese, Japanese, Korean: written without spaces, a character about half a word
    return len(text) >= 2 * SENTENCE_WORDS and sum(
        1 for _ in islice(_CJK.finditer(text), 2 * SENTENCE_WORDS)) == 2 * SENTENCE_WORDS


def _held_back(root: Any) -> Any:
    """A copy of ``root`` whose ``<noscript>`` and ``hidden`` parts are shown, when they
    hold text (``None`` when not): a page whose visible text is thin may hold its text there
    (a forum's posts in ``<noscript>`` for readers without scripts, a body streamed into
    ``<div hidden>`` to be moved into place by a script). The tree itself is not changed."""
    shown = [*root.iter("noscript"), *root.xpath(".//*[@hidden]")]
    if sum(len("".join(element.itertext()).strip()) for element in shown) < LINK_PAGE_CHARS:
        return None  # a tracking pixel, a "please enable JavaScript": nothing to read
    from copy import deepcopy

    held = deepcopy(root)
    for element in held.iter("noscript"):
        element.tag = "div"
    for element in held.xpath(".//*[@hidden]"):
        del element.attrib["hidden"]
    return held
