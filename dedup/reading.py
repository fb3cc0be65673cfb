"""A page as the crawl reads it, and the crawl's decision over pages given as (url, html).

:func:`read_html` is the crawl's reading of a page's HTML: the main text
(:func:`extract_main`: simcrawl's own reading, :mod:`dedup.maintext`, or trafilatura), the
URL it declares canonical, and its fingerprints (the simhash, the second opinion, the
pinyin windows, the lines' keys for the template text).
The crawler's extraction workers call it (``crawler/extraction.py``, which adds the links,
title and language from the same parse), and so does :func:`decide_pages`, which runs the
crawl's decision (:func:`dedup.deduplicator.in_memory`: the same code, rules and
thresholds, templates and text check included) over pages in crawl order, in memory and
without any server, for scripts, benchmarks and ``simcrawl scan``:

    >>> from dedup.reading import decide_pages
    >>> body = "<html><body><article><p>" + "A long enough story. " * 20 + "</p></article>"
    >>> [v.kind for v in decide_pages([("http://a.example/1", body),
    ...                                ("http://b.example/1", body)])]
    ['new', 'exact']
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin, urlsplit

from dedup.decide import NEW, TEMPLATE_ONLY, THIN_TOKENS, Decision, second_opinion
from dedup.listing import listing_items
from dedup.maintext import main_region, parse, read_main, thin
from dedup.overlap import without_title
from dedup.page import Page
from dedup.pinyin import PinyinFingerprinter
from dedup.simhash import fingerprint
from dedup.sketch import shingle_values
from dedup.templates import block_keys
from dedup.text import ExtractedText, extract_text, normalize, parse_html, token_pattern

#: How a page is read and fingerprinted, as a small picklable tuple (the extraction
#: workers get it): ``(extraction, shingle, drop_numbers, min_tokens, cjk_ngram, pinyin,
#: verify, templates)``; ``extraction``: one of :data:`EXTRACTIONS`; ``pinyin``: ``(size,
#: overlap, q, anchors)`` or ``None``; ``verify``: also the second-opinion simhash;
#: ``templates``: also the lines' keys.
Params = tuple[str, int, bool, int, int, tuple[int, float, int, str] | None, bool, bool]


def fingerprint_params(config: Any) -> Params:
    """The :data:`Params` of a :class:`dedup.config.DedupConfig`."""
    pinyin = ((config.pinyin_size, config.pinyin_overlap, config.pinyin_q,
               config.pinyin_anchors) if config.pinyin else None)
    return (extraction(config), config.shingle, config.drop_numbers, config.min_tokens,
            config.cjk_ngram, pinyin, config.verify_distance >= 0, config.template_pages > 0)


@lru_cache(maxsize=4)
def pinyin_fingerprinter(size: int, overlap: float, q: int, anchors: str
                         ) -> PinyinFingerprinter:
    """One fingerprinter per parameter set (its tables are built once per process)."""
    return PinyinFingerprinter(size=size, overlap=overlap, q=q, anchors=anchors)


@dataclass(frozen=True)
class Facts:
    """What a parsed page says of itself in its markup (:func:`page_facts`)."""

    #: its ``<title>``, white space collapsed (``None``: none)
    title: str | None
    #: its description: ``<meta name="description">``, else ``<meta
    #: property="og:description">``, white space collapsed (``None``: none)
    description: str | None
    #: the URL it declares canonical, absolute (:func:`declared_canonical`)
    canonical: str | None
    #: when it says it was first published (:func:`published_date`; ``None``: it does
    #: not say)
    published: dt.datetime | None = None


#: The metadata that names when a page was first published: ``<meta>`` names and
#: properties (Open Graph's article, Dublin Core, Highwire's citation tags, schema.org's
#: microdata). Dates of a change (``article:modified_time``, ``dateModified``) are not
#: read: a later edit says nothing of which page came first.
PUBLISHED_NAMES = frozenset({
    "article:published_time", "og:published_time", "datepublished", "date",
    "dc.date", "dc.date.issued", "dcterms.date", "dcterms.issued", "dcterms.created",
    "citation_publication_date", "citation_date", "pubdate", "publishdate",
    "publish-date", "sailthru.date", "parsely-pub-date"})

#: schema.org's date in a JSON-LD block (``"datePublished": "2024-05-02T09:00:00Z"``).
_JSON_LD_PUBLISHED = re.compile(r'"datePublished"\s*:\s*"([^"]{4,40})"')


def _marked(tree: Any) -> dict[str, str]:
    """One pass over a parsed page's ``<title>``, ``<link>``, ``<meta>``, ``<time>`` and
    ``<script>`` elements (lxml finds them in C): the first title's text, and the first
    value of each of ``canonical`` (the ``href`` of a link whose ``rel`` has the word
    ``canonical``), ``og:url``, ``description`` and ``og:description`` (a meta element's
    ``content``), and ``published``: the first date of :data:`PUBLISHED_NAMES`, of an
    element with ``itemprop="datePublished"``, or of a JSON-LD block's ``datePublished``."""
    found: dict[str, str] = {}
    for el in tree.iter("title", "link", "meta", "time", "script"):
        get = el.get
        tag = el.tag
        if tag == "meta":
            value = get("content")
            if value is not None:
                if get("name") == "description":
                    found.setdefault("description", value)
                if (key := get("property")) in ("og:url", "og:description"):
                    found.setdefault(key, value)
                if "published" not in found and (
                        (get("property") or get("name") or get("itemprop") or "").lower()
                        in PUBLISHED_NAMES):
                    found["published"] = value
        elif tag == "time":
            if "published" not in found and get("itemprop") == "datePublished":
                found["published"] = get("datetime") or "".join(el.itertext())
        elif tag == "script":
            if "published" not in found and get("type") == "application/ld+json" \
                    and el.text and (m := _JSON_LD_PUBLISHED.search(el.text)):
                found["published"] = m.group(1)
        elif tag == "link":
            href = get("href")
            if href is not None and "canonical" not in found \
                    and "canonical" in (get("rel") or "").split():
                found["canonical"] = href
        elif "title" not in found:
            found["title"] = " ".join(el.itertext())
    return found


def page_facts(tree: Any, url: str, html: str = "") -> Facts:
    """A parsed page's :class:`Facts` (``url``: where it was fetched; ``html``: its HTML,
    for its ``<base href>``), read in one pass."""
    if tree is None:
        return Facts(None, None, None)
    found = _marked(tree)
    title = " ".join(found.get("title", "").split()) or None
    description = found.get("description", found.get("og:description", ""))
    return Facts(title, " ".join(description.split()) or None,
                 _absolute(found.get("canonical") or found.get("og:url"), url, html),
                 published_date(found.get("published")))


#: No page says it was published before this (a date before it is a placeholder).
EARLIEST_PUBLISHED = dt.datetime(1991, 1, 1, tzinfo=dt.timezone.utc)


def published_date(value: str | None, now: dt.datetime | None = None) -> dt.datetime | None:
    """A publication date as the page declares it (ISO 8601: a date, or a date and time
    with or without its offset), in UTC; a date alone is its midnight, a time without an
    offset is read as UTC. ``None`` for anything else, and for a date before
    :data:`EARLIEST_PUBLISHED` or more than a day after ``now`` (a placeholder or a
    template's mistake is not evidence).

    >>> published_date("2024-05-02T09:30:00+02:00")
    datetime.datetime(2024, 5, 2, 7, 30, tzinfo=datetime.timezone.utc)
    >>> published_date("2024-05-02"), published_date("yesterday")
    (datetime.datetime(2024, 5, 2, 0, 0, tzinfo=datetime.timezone.utc), None)
    """
    text = (value or "").strip()
    if not text:
        return None
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    when = when.replace(tzinfo=dt.timezone.utc) if when.tzinfo is None \
        else when.astimezone(dt.timezone.utc)
    latest = (now or dt.datetime.now(dt.timezone.utc)) + dt.timedelta(days=1)
    return when if EARLIEST_PUBLISHED <= when <= latest else None


def _absolute(href: str | None, url: str, html: str) -> str | None:
    from w3lib.html import get_base_url

    href = href.strip() if href else ""
    if not href:
        return None
    absolute = urljoin(get_base_url(html[:4096], url) if html else url, href)
    return absolute if absolute.startswith(("http://", "https://")) else None


def declared_canonical(tree: Any, url: str, html: str = "") -> str | None:
    """The URL a parsed page declares as its canonical version: ``<link rel="canonical">``,
    else ``<meta property="og:url">``, made absolute against the page's base URL (its
    ``<base href>``, else ``url``); ``None`` when it declares none, or not an http(s) URL.
    """
    return page_facts(tree, url, html).canonical


def page_title(tree: Any) -> str | None:
    """A parsed page's ``<title>``, its white space collapsed (``None``: none)."""
    return page_facts(tree, "").title


def page_description(tree: Any) -> str | None:
    """A parsed page's description: ``<meta name="description">``, else
    ``<meta property="og:description">``, its white space collapsed (``None``: none)."""
    return page_facts(tree, "").description


def _alone(element: Any) -> Any:
    """A copy of ``element`` as the body of a page of its own (trafilatura looks for the
    main text below the element it is given, so the region goes in a body)."""
    from copy import deepcopy

    from lxml.html import Element

    page, body = Element("html"), Element("body")
    page.append(body)
    body.append(deepcopy(element))
    return page


#: The ways to read a page's main text (:func:`extract_main`): simcrawl's own reading
#: (:mod:`dedup.maintext`, the default), trafilatura's fast mode, trafilatura with its
#: fallback extractors.
EXTRACTIONS = ("simcrawl", "trafilatura", "trafilatura-full")


def extraction(config: Any) -> str:
    """The :data:`EXTRACTIONS` entry of a :class:`dedup.config.DedupConfig`
    (``DEDUP_EXTRACTOR``, and for trafilatura ``DEDUP_EXTRACT_FAST``)."""
    if config.extractor == "simcrawl":
        return "simcrawl"
    return "trafilatura" if config.extract_fast else "trafilatura-full"


def parse_page(html: str | bytes, how: str = "simcrawl") -> Any | None:
    """A page's HTML parsed once for the reading ``how`` (one of :data:`EXTRACTIONS`) and
    for every other reader of the page (its facts, a crawler's link extraction):
    :func:`dedup.maintext.parse` for simcrawl's own reading, trafilatura's parse
    (:func:`dedup.text.parse_html`, ``lxml.html`` elements, which trafilatura needs) for
    trafilatura's. ``None``: not parsed (:func:`extract_main` then reads the HTML itself).
    """
    if how == "simcrawl" and isinstance(html, str):
        return parse(html)
    return parse_html(html)


def extract_main(html: str, url: str, how: str = "simcrawl", tree: Any = None
                 ) -> ExtractedText:
    """A page's main text as the crawl extracts it, ``how`` one of :data:`EXTRACTIONS`.

    ``tree`` is ``html`` parsed by :func:`parse_page` for the same ``how``.

    ``simcrawl`` (the default): :func:`dedup.maintext.read_main` on the parsed ``tree``;
    a page it finds no text in (an image, a frameset, markup lxml could not parse) is
    read by trafilatura's path below (on trafilatura's own parse), whose last resort is
    the page's visible text.

    ``trafilatura``: trafilatura without its fallback extractors; a result that is
    :func:`thin` is extracted again with the fallbacks, since it is often not the article
    but the page's furniture (an author box), which the fallbacks read past
    (docs/fingerprints.md, "Extraction"). On a page that marks its main content
    (:func:`main_region`), trafilatura reads that element alone first: it finds the same
    text there at a fraction of the cost, which grows with the tree it is given; a
    result that is thin there is read from the whole page. ``trafilatura-full``:
    trafilatura with its fallbacks."""
    if how == "simcrawl":
        main = read_main(tree)
        if main.text:
            return ExtractedText(main.text, "simcrawl", parents=main.parents,
                                 whole=main.whole)
        how = "trafilatura"
        from lxml.html import HtmlElement

        if tree is not None and not isinstance(tree, HtmlElement):
            tree = parse_html(html)
    fast = how == "trafilatura"
    if fast and (region := main_region(tree)) is not None:
        read = extract_text(html, url, fast=True, tree=_alone(region))
        if read.method == "trafilatura" and not thin(read.text):
            return read
    read = extract_text(html, url, fast=fast, tree=tree)
    if fast and read.method == "trafilatura" and thin(read.text):
        full = extract_text(html, url, fast=False, tree=tree)
        if full.method == "trafilatura" and len(full.text) > len(read.text):
            return full
    return read


def _said_in(line: str, text: str) -> bool:
    """Whether ``text`` says ``line``: its tokens, as the fingerprints count them, are a
    run of the text's, the last perhaps cut short (the text's spacing and punctuation may
    differ: a reading puts spaces between the words of a highlighted line of code, "db .
    matches . find"; a description is often cut in the middle of a word).

    >>> _said_in("db.matches.find({", 'db . matches . find ({ "kind" : 1 })')
    True
    >>> _said_in("notifications from wind or ani", "false notifications from wind or animals")
    True
    >>> _said_in("The match records", "The matches record")
    False
    """
    tokens = token_pattern().findall
    return f" {' '.join(tokens(normalize(line)))}" in f" {' '.join(tokens(normalize(text)))} "


def fingerprint_text(read: ExtractedText, params: Params, url: str = "", **found: Any
                     ) -> Page:
    """A :class:`~dedup.page.Page` of ``url`` (its host: the URL's ``netloc``) with an
    extracted text and its fingerprints (``found``: the page's ``canonical``, ``links``,
    ``title``, ``description``, ``language``, ``listing``, as its reader found them).

    A thin text (fewer than :data:`THIN_TOKENS` tokens) is read with the page's
    description as its first line, unless the text says it already (:func:`_said_in`):
    what the extractor finds on a page with little text of its own is often the site's
    furniture ("related articles", an author box), the same on every such page of the
    site, and the page's summary of itself is its own text (docs/fingerprints.md, "Thin
    pages"). The title is not read as text: the heading that repeats it is left out of the
    checksum (:func:`dedup.overlap.without_title`), so the same text under another title
    is an exact copy; titles are compared as titles
    (:meth:`dedup.sketch.TextSketch.other_document`)."""
    _extraction, shingle, drop_numbers, min_tokens, cjk_ngram, pinyin, verify, templates = params
    options: dict[str, Any] = {"shingle": shingle, "drop_numbers": drop_numbers,
                               "min_tokens": min_tokens, "cjk_ngram": cjk_ngram}
    fp = fingerprint(read.text, **options)
    description = found.get("description")
    if read.text and fp.tokens < THIN_TOKENS and description \
            and not _said_in(description, read.text):
        read = ExtractedText(f"{description}\n{read.text}", read.method, read.reason,
                             whole=read.whole)
        fp = fingerprint(read.text, **options)
    py = pinyin_fingerprinter(*pinyin).fingerprint(read.text) if pinyin else None
    second = second_opinion(read.text, drop_numbers, min_tokens, cjk_ngram) \
        if verify and not fp.short else None
    blocks = block_keys(read.text) if templates and not fp.short else None
    values = shingle_values(read.text) if read.text and not fp.short else None
    checksum = fp.checksum_hex  # last: the text's normal form serves the steps above
    if (own := without_title(read.text, found.get("title"))) is not read.text:
        checksum = fingerprint(own, **options).checksum_hex
    return Page(url, urlsplit(url).netloc, checksum, fp.simhash, fp.short, py, second,
                text=read.text, method=read.method, tokens=fp.tokens, blocks=blocks,
                shingles=values, whole=read.whole, **found)


def read_html(html: str | bytes, url: str, params: Params) -> Page:
    """Read a page as the crawl does: parse it once, extract its main text, its title, the
    URL it declares canonical and whether it is a listing, and fingerprint the text. Bytes
    are decoded as a crawl without a ``Content-Type`` charset would (w3lib: a byte-order
    mark, else ``<meta charset>``, else UTF-8)."""
    if isinstance(html, bytes):
        from w3lib.encoding import html_to_unicode

        html = html_to_unicode(None, html)[1]
    return read_tree(html, parse_page(html, params[0]), url, params)


def read_tree(html: str, tree: Any, url: str, params: Params, **found: Any) -> Page:
    """The rest of :func:`read_html`, on a page already parsed (``tree``:
    :func:`parse_page` of ``html`` for ``params``' reading): its main text, its facts,
    whether it is a listing, and the fingerprints. ``found``: what other readers of the
    same tree found (a crawler's ``links`` and ``language``)."""
    read = extract_main(html, url, params[0], tree)
    facts = page_facts(tree, url, html)
    items = listing_items(tree, read.text, read.parents, url)
    return fingerprint_text(read, params, url, canonical=facts.canonical, title=facts.title,
                            description=facts.description, published=facts.published,
                            listing=items is not None, items=items, **found)


@dataclass
class Verdict:
    """What the crawl does with one page of :func:`decide_pages`.

    Attributes:
        url: the page's URL.
        kind: the decision's kind (``new``, ``exact``, ``simhash``, ``pinyin``,
            ``unchanged``, ``changed``), or the reason the page was skipped
            (``empty_text``: no text at all; ``template_only``: nothing but its host's
            template text).
        decision: the :class:`~dedup.decide.Decision` (``None`` for a skipped page).
        page: the page as read and decided.
    """

    url: str
    kind: str
    decision: Decision | None = None
    page: Page | None = None

    @property
    def original_url(self) -> str | None:
        """For a copy, the URL of the page it copies."""
        return None if self.decision is None else self.decision.original_url


def decide_pages(pages: Iterable[tuple[str, str | bytes]], config: Any = None,
                 capacity: int = 100_000) -> list[Verdict]:
    """The crawl's decision over ``(url, html)`` pages in crawl order, in memory.

    Each page is read as the crawl reads it (:func:`read_html`) and decided as
    :func:`decide_read` says.

    Args:
        pages: ``(url, html)`` pairs; ``html`` as text, or bytes (decoded as
            :func:`read_html` says).
        config: a :class:`dedup.config.DedupConfig` (default: the crawl's settings).
        capacity: pages the in-memory index is planned for.

    Returns:
        One :class:`Verdict` per page, in order.
    """
    from dedup.config import DedupConfig

    config = config or DedupConfig()
    params = fingerprint_params(config)
    return decide_read((read_html(html, url, params) for url, html in pages), config,
                       capacity)


def decide_read(pages: Iterable[Page], config: Any = None, capacity: int = 100_000
                ) -> list[Verdict]:
    """The crawl's decision over pages already read (:func:`read_html`), in order.

    Each page is decided alone, in order, by :func:`dedup.deduplicator.in_memory` with
    ``config`` (the same code, rules and thresholds as the crawl); a page without text is
    skipped (``empty_text``); an admitted page is then kept as the crawl stores it (its
    whole text: the template lines are left out of its fingerprints only), so later pages
    see it: a revisit of its URL, its text for the text check, its host's template lines.
    """
    from dedup.config import DedupConfig
    from dedup.deduplicator import in_memory

    decider, facts = in_memory(config or DedupConfig(), capacity=capacity)
    out = []
    for page in pages:
        if page.tokens == 0:
            out.append(Verdict(page.url, "empty_text", None, page))
            continue
        d = decider.decide([page])[0]
        if d.kind == TEMPLATE_ONLY:
            out.append(Verdict(page.url, TEMPLATE_ONLY, None, page))
            continue
        if d.kind == NEW:
            page.page_id = d.page_id  # a match turned round: the original's id
            facts.add_page(page)
        out.append(Verdict(page.url, d.kind, d, page))
    return out
