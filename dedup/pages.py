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

    >>> from dedup.pages import decide_pages
    >>> body = "<html><body><article><p>" + "A long enough story. " * 20 + "</p></article>"
    >>> [v.kind for v in decide_pages([("http://a.example/1", body),
    ...                                ("http://b.example/1", body)])]
    ['new', 'exact']
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from urllib.parse import urljoin, urlsplit

from dedup.decide import NEW, TEMPLATE_ONLY, THIN_TOKENS, Decision, second_opinion
from dedup.listing import is_listing
from dedup.maintext import main_region, main_text, thin
from dedup.overlap import without_title
from dedup.page import Page
from dedup.pinyin import PinyinFingerprinter
from dedup.simhash import fingerprint
from dedup.sketch import shingle_values
from dedup.templates import block_keys
from dedup.text import ExtractedText, extract_text, parse_html

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


@lru_cache(maxsize=1)
def _xpaths() -> dict[str, Any]:
    """The page facts' XPath expressions, compiled once (compiling one costs about as
    much as evaluating it)."""
    from lxml.etree import XPath

    return {"canonical": XPath("//link[contains(concat(' ', normalize-space(@rel), ' '), "
                               "' canonical ')]/@href"),
            "og:url": XPath("//meta[@property='og:url']/@content"),
            "description": XPath("//meta[@name='description']/@content"),
            "og:description": XPath("//meta[@property='og:description']/@content")}


def declared_canonical(tree: Any, url: str, html: str = "") -> str | None:
    """The URL a parsed page declares as its canonical version: ``<link rel="canonical">``,
    else ``<meta property="og:url">``, made absolute against the page's base URL (its
    ``<base href>``, else ``url``); ``None`` when it declares none, or not an http(s) URL.
    """
    from w3lib.html import get_base_url

    if tree is None:
        return None
    found = _xpaths()["canonical"](tree) or _xpaths()["og:url"](tree)
    href = str(found[0]).strip() if found else ""
    if not href:
        return None
    absolute = urljoin(get_base_url(html[:4096], url) if html else url, href)
    return absolute if absolute.startswith(("http://", "https://")) else None


def page_title(tree: Any) -> str | None:
    """A parsed page's ``<title>``, its white space collapsed (``None``: none)."""
    if tree is None:
        return None
    found = tree.find(".//title")
    title = " ".join(found.text_content().split()) if found is not None else ""
    return title or None


def page_description(tree: Any) -> str | None:
    """A parsed page's description: ``<meta name="description">``, else
    ``<meta property="og:description">``, its white space collapsed (``None``: none)."""
    if tree is None:
        return None
    found = _xpaths()["description"](tree) or _xpaths()["og:description"](tree)
    description = " ".join(str(found[0]).split()) if found else ""
    return description or None


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


def extract_main(html: str, url: str, how: str = "simcrawl", tree: Any = None
                 ) -> ExtractedText:
    """A page's main text as the crawl extracts it, ``how`` one of :data:`EXTRACTIONS`.

    ``simcrawl`` (the default): :func:`dedup.maintext.main_text` on the parsed ``tree``;
    a page it finds no text in (an image, a frameset, markup lxml could not parse) is
    read by trafilatura's path below, whose last resort is the page's visible text.

    ``trafilatura``: trafilatura without its fallback extractors; a result that is
    :func:`thin` is extracted again with the fallbacks, since it is often not the article
    but the page's furniture (an author box), which the fallbacks read past
    (docs/fingerprints.md, "Extraction"). On a page that marks its main content
    (:func:`main_region`), trafilatura reads that element alone first: it finds the same
    text there at a fraction of the cost, which grows with the tree it is given; a
    result that is thin there is read from the whole page. ``trafilatura-full``:
    trafilatura with its fallbacks."""
    if how == "simcrawl":
        text = main_text(tree) if tree is not None else ""
        if text:
            return ExtractedText(text, "simcrawl")
        how = "trafilatura"
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


def fingerprint_text(read: ExtractedText, params: Params, url: str = "", **found: Any
                     ) -> Page:
    """A :class:`~dedup.page.Page` of ``url`` (its host: the URL's ``netloc``) with an
    extracted text and its fingerprints (``found``: the page's ``canonical``, ``links``,
    ``title``, ``description``, ``language``, ``listing``, as its reader found them).

    A thin text (fewer than :data:`THIN_TOKENS` tokens) is read with the page's
    description as its first line: what the extractor finds on a page with little text
    of its own is often the site's furniture ("related articles", an author box), the
    same on every such page of the site, and the page's summary of itself is its own text
    (docs/fingerprints.md, "Thin pages"). The title is not read as text: the heading that
    repeats it is left out of the checksum (:func:`dedup.overlap.without_title`), so the
    same text under another title is an exact copy; titles are compared as titles
    (:meth:`dedup.sketch.TextSketch.other_document`)."""
    _extraction, shingle, drop_numbers, min_tokens, cjk_ngram, pinyin, verify, templates = params
    options: dict[str, Any] = {"shingle": shingle, "drop_numbers": drop_numbers,
                               "min_tokens": min_tokens, "cjk_ngram": cjk_ngram}
    fp = fingerprint(read.text, **options)
    description = found.get("description")
    if read.text and fp.tokens < THIN_TOKENS and description \
            and description not in read.text:
        read = ExtractedText(f"{description}\n{read.text}", read.method, read.reason)
        fp = fingerprint(read.text, **options)
    checksum = fp.checksum_hex
    if (own := without_title(read.text, found.get("title"))) is not read.text:
        checksum = fingerprint(own, **options).checksum_hex
    py = pinyin_fingerprinter(*pinyin).fingerprint(read.text) if pinyin else None
    second = second_opinion(read.text, drop_numbers, min_tokens, cjk_ngram) \
        if verify and not fp.short else None
    blocks = block_keys(read.text) if templates and not fp.short else None
    values = shingle_values(read.text) if read.text and not fp.short else None
    return Page(url, urlsplit(url).netloc, checksum, fp.simhash, fp.short, py, second,
                text=read.text, method=read.method, tokens=fp.tokens, blocks=blocks,
                shingles=values, **found)


def read_html(html: str | bytes, url: str, params: Params) -> Page:
    """Read a page as the crawl does: parse it once, extract its main text, its title, the
    URL it declares canonical and whether it is a listing, and fingerprint the text. Bytes
    are decoded as a crawl without a ``Content-Type`` charset would (w3lib: a byte-order
    mark, else ``<meta charset>``, else UTF-8)."""
    if isinstance(html, bytes):
        from w3lib.encoding import html_to_unicode

        html = html_to_unicode(None, html)[1]
    tree = parse_html(html)
    read = extract_main(html, url, params[0], tree)
    return fingerprint_text(read, params, url, canonical=declared_canonical(tree, url, html),
                            title=page_title(tree), description=page_description(tree),
                            listing=is_listing(tree, read.text))


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
            facts.add_page(page)
        out.append(Verdict(page.url, d.kind, d, page))
    return out
