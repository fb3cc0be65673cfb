"""A page: one shape from extraction to storage.

The crawl reads a page (:func:`dedup.reading.read_html`: its text, the URL it declares
canonical, its fingerprints, and in the crawler its links, title and language), decides it
(:class:`dedup.deduplicator.Deduplicator`) and stores it
(:func:`dedup.store.records.page_record`, :func:`dedup.store.records.fingerprint_record`), all on
one :class:`Page`; the crawler's item (``crawler.items.PageItem``) is a :class:`Page`
extended with what only a crawl knows (the HTTP status, depth, body, ...).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from dedup.ids import new_page_id
from dedup.overlap import without_title


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass
class Page:
    """A fetched page, read and fingerprinted.

    Attributes:
        url: the page's URL (after redirects).
        host: its host (``netloc``).
        checksum: 32 hex digits (the normalised text's XXH3-128).
        simhash: the 64-bit fingerprint (once its host's template lines are left out,
            the fingerprint of the rest: what the index holds).
        short: below the minimum size (matched by checksum only).
        pinyin: the pinyin fingerprint of a Chinese page (``None``: not computed).
        verify: the second-opinion simhash on word pairs (``None``: not computed).
        page_id: the page's id if it is admitted.
        text: the main text (``""``: none given; its near matches are then judged by
            their fingerprints alone). Stored whole.
        canonical: the URL the page declares as its canonical version (``rel=canonical``
            or ``og:url``), if any.
        blocks: the keys of the text's lines (:func:`dedup.templates.block_keys`; the
            crawler computes them in its extraction workers), else computed when the
            decision has a template learner.
        shingles: the text's shingle values (:func:`dedup.sketch.shingle_values`), computed
            where the text was read (the crawl's extraction workers), so the decision
            does not compute them again for a page without template lines (``None``:
            computed when needed).
        sketch: the text sketch of its own text (:class:`dedup.sketch.TextSketch` bytes),
            set by the decision for a page that goes to the near check: what the index and
            the page's fingerprint document keep of its text for the text check.
        template_lines: lines left out of the fingerprints as the host's template text;
            ``rest``: the text without them (what the text check reads); ``templated``:
            done (a batch decided again is not stripped twice).
        method: how the text was found (``trafilatura``, ``body``, ``empty``, ``text``).
        tokens: the features hashed into the simhash.
        title, language, links: from the page's HTML, when the crawler read them.
        listing: the page is a listing, made of repeated items (:mod:`dedup.listing`);
            ``items``: their texts (:func:`dedup.listing.listing_items`), when read.
        description: the page's ``<meta name="description">`` (else ``og:description``),
            the site's summary of it, when read.
        published: when the page says it was first published (its metadata,
            :func:`dedup.reading.published_date`), when it says so.
        whole: the checksum of the page's whole visible text (:mod:`dedup.maintext`;
            ``""``: not read), on which a page whose reading is its host's template alone
            is judged (:func:`dedup.decide.leave_out_template`).
        by_whole: judged so: a short text whose registry checksum is ``whole``
            (:attr:`claimed`).
        fetched_at: when it was fetched (``None``: never, a registered original).

    Two pages are equal when they were read alike (their id and fetch time aside).
    """

    url: str
    host: str = ""
    checksum: str = ""
    simhash: int = 0
    short: bool = False
    pinyin: Any = None
    verify: int | None = None
    page_id: str = field(default_factory=new_page_id, compare=False)
    text: str = field(default="", repr=False)
    canonical: str | None = None
    blocks: list[int | None] | None = field(default=None, repr=False)
    shingles: Any = field(default=None, repr=False, compare=False)
    sketch: bytes | None = field(default=None, repr=False)
    template_lines: int = 0
    templated: bool = field(default=False, repr=False)
    rest: str | None = field(default=None, repr=False)
    method: str = ""
    tokens: int = 0
    title: str | None = None
    description: str | None = None
    published: dt.datetime | None = None
    language: str | None = None
    listing: bool = False
    items: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    links: list[str] | None = field(default=None, repr=False)
    whole: str = field(default="", repr=False)
    by_whole: bool = field(default=False, repr=False, compare=False)
    fetched_at: dt.datetime | None = field(default_factory=_now, compare=False)

    @property
    def own_text(self) -> str:
        """The text the decision compares: without the host's template lines, once they
        are left out, and without its title line (the heading that repeats its title,
        :func:`dedup.overlap.without_title`: a title is compared as a title). Kept for the
        next call while the text and the title stay the same objects: a decision reads
        it for each of its steps."""
        source, title = self.text if self.rest is None else self.rest, self.title
        memo = self.__dict__.get("_own")
        if memo is not None and memo[0] is source and memo[1] is title:
            return memo[2]
        own = without_title(source, title)
        self.__dict__["_own"] = (source, title, own)
        return own

    @property
    def claimed(self) -> str:
        """The checksum the registry holds the page under: its text's, or its whole
        visible text's for a page judged on it (:attr:`by_whole`)."""
        return self.whole if self.by_whole else self.checksum

    def take_reading(self, read: Page) -> None:
        """Take what a reader of the page's HTML found (an extraction worker's
        :func:`dedup.reading.read_html`): the text and fingerprints, and the links, title,
        language and declared canonical when it read them (``links`` not ``None``)."""
        self.text, self.method = read.text, read.method
        self.checksum, self.simhash = read.checksum, read.simhash
        self.tokens, self.short = read.tokens, read.short
        self.pinyin, self.verify, self.blocks = read.pinyin, read.verify, read.blocks
        self.shingles, self.listing, self.items = read.shingles, read.listing, read.items
        self.whole = read.whole
        if read.links is not None:
            self.links, self.title, self.language = read.links, read.title, read.language
            self.canonical, self.description = read.canonical, read.description
            self.published = read.published
