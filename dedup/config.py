"""Every dedup setting in one validated, frozen place.

The crawler reads them from Scrapy settings (``DEDUP_*``, ``REDIS_URL``, ``MONGO_URI``)
with :meth:`DedupConfig.from_settings`; scripts build one directly. A bad value is a
``ValueError`` that names the setting.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import Field, dataclass, fields
from typing import Any

from dedup.setting_names import (
    DECLARED,
    EITHER,
    FAMILIES,
    PREFIXES,
    SETTING,
    convert,
)
from dedup.simhash import (
    DEFAULT_CJK_NGRAM,
    DEFAULT_DROP_NUMBERS,
    DEFAULT_MIN_TOKENS,
    DEFAULT_SHINGLE,
)

#: The crawl's k: candidates within it are judged by their texts, and so are pages that
#: share text anchors with the page at any distance (docs/fingerprints.md, "Text
#: anchors"); with the anchors, k = 3 finds what k = 6 found, in 10 tables instead of 28.
#: The one default k of simcrawl: an index saves the k it was built with (its layout,
#: in Redis and in MongoDB's ``meta``), and every command reads that; this is the k of a
#: new index and of commands without a store (scan, find-all, plan).
DEFAULT_MAX_DISTANCE = 3

#: Pages a new index's design and buckets are planned for.
DEFAULT_CAPACITY = 1_000_000

#: The defaults of the rules (dedup/decide.py), the pinyin windows (dedup/pinyin.py), the
#: index's calls (dedup/index/core.py), the URL rules (dedup/url_rules.py) and the embedded
#: servers' folder (dedup/adapters/servers/services.py), declared here once: each of those modules
#: takes its default from here, and :class:`DedupConfig` its fields' (what each means:
#: the attribute of the same name below).
#: ``DEDUP_VERIFY_CONTAINMENT``: the share of a page's own shingles a candidate must hold.
DEFAULT_CONTAINMENT = 0.8
#: ``DEDUP_TRUST_DISTANCE``.
DEFAULT_TRUST_DISTANCE = 3
#: ``DEDUP_VERIFY_DISTANCE``: the second opinion's largest distance.
DEFAULT_VERIFY_DISTANCE = 10
#: ``DEDUP_MAIN_CONTENT``.
DEFAULT_MAIN_CONTENT = 0.5
#: ``DEDUP_PINYIN_SIZE``, ``DEDUP_PINYIN_OVERLAP``, ``DEDUP_PINYIN_Q``,
#: ``DEDUP_PINYIN_ANCHORS``, ``DEDUP_PINYIN_MIN_SHARE``, ``DEDUP_PINYIN_MIN_RUN``. Windows
#: overlap by seven eighths: their anchors are 5 letters apart on average, so a quotation
#: of 60 characters holds a whole window at the same anchor in the page and in the
#: original (99% on zh-dev; 90% at 0.5): the smallest quotation the crawl records
#: (docs/chinese.md, "Quotation or copy").
DEFAULT_PINYIN_SIZE = 40
DEFAULT_PINYIN_OVERLAP = 0.875
DEFAULT_PINYIN_Q = 4
DEFAULT_PINYIN_ANCHORS = "both"
DEFAULT_PINYIN_MIN_SHARE = 0.5
DEFAULT_PINYIN_MIN_RUN = 4
#: ``DEDUP_BATCH_SIZE``: pages a decision batch and an index call (one Lua script run in
#: Redis) take.
DEFAULT_BATCH_SIZE = 64
#: ``DEDUP_URL_RULES_SUPPORT``: pairs a URL rule needs before it holds.
DEFAULT_URL_RULES_SUPPORT = 3
#: ``DEDUP_LEASE_SECONDS``: how long a crawl process may stop running before the others
#: take it for dead (dedup/adapters/journal.py).
DEFAULT_LEASE_SECONDS = 30.0
#: ``DEDUP_DATA_DIR`` (or ``SIMCRAWL_DATA``): the embedded servers' folder.
DEFAULT_DATA_DIR = "simcrawl-data"

#: The index's Redis key prefix, and the MongoDB database.
DEFAULT_NAMESPACE = "simcrawl"
DEFAULT_DATABASE = "simcrawl"

#: The database and the index namespace the demo crawl (``./simcrawl`` with no URL) fills
#: (the console falls back to them when the default database is empty).
DEMO_DATABASE = "simcrawl_demo"
DEMO_NAMESPACE = "demo"


@dataclass(frozen=True)
class DedupConfig:
    """Near-duplicate detection settings (Scrapy setting name in brackets).

    Attributes:
        enabled: drop near duplicates at all [DEDUP_ENABLED, default True].
        max_distance: k, the largest Hamming distance of a near duplicate: the index is
            planned for it, and candidates within k are judged by their texts
            [DEDUP_MAX_DISTANCE, 3].
        verify_containment: the text check, one way: a candidate is the original when
            this share of the page's own text's three-token shingles is in the
            candidate's (:func:`dedup.decide.text_check`, measured on the candidate's text
            sketch, :mod:`dedup.sketch`); -1 = off, only
            ``trust_distance`` matches count [DEDUP_VERIFY_CONTAINMENT, 0.8].
        trust_distance: where a page has no text (or the text check is off), a candidate
            within this distance whose second opinion agrees is a copy by its
            fingerprints; at most k [DEDUP_TRUST_DISTANCE, 3].
        min_tokens: texts with fewer tokens are matched by checksum only
            [DEDUP_MIN_TOKENS, 30].
        shingle: words per feature [DEDUP_SHINGLE, 1].
        cjk_ngram: characters per feature in Han, kana and Hangul text
            [DEDUP_CJK_NGRAM, 2].
        drop_numbers: leave number-only tokens out [DEDUP_DROP_NUMBERS, False].
        capacity: pages the index is planned for [DEDUP_CAPACITY, 1,000,000].
        sketches: where a new index keeps stored pages' text sketches: ``redis``,
            ``until-stored`` (they leave Redis once MongoDB holds them; candidates' are
            read from there) or ``auto``, by the capacity (past one Redis node,
            :func:`dedup.tables.sketches_leave_redis`) [DEDUP_SKETCHES, "auto"].
        namespace: the index's Redis key prefix [DEDUP_NAMESPACE, the database's:
            "simcrawl" for the default database, "demo" for the demo's, else the
            database's name (:func:`namespace_of`)].
        database: MongoDB database [DEDUP_DATABASE, "simcrawl"].
        redis_url: Redis; empty = embedded server [REDIS_URL, env REDIS_URL].
        mongo_uri: MongoDB; empty = embedded server [MONGO_URI, env MONGO_URI].
        data_dir: the embedded servers' data [DEDUP_DATA_DIR, env SIMCRAWL_DATA,
            "simcrawl-data"].
        batch_size: pages per index call / MongoDB write [DEDUP_BATCH_SIZE, 64].
        batch_wait: longest wait, in seconds, of a page for others to share its decision
            batch (each batch costs a few MongoDB queries and a Redis script, whatever its
            size); a page with no other on its way does not wait [DEDUP_BATCH_WAIT, 0.1].
        flush_seconds: longest wait before a partial batch is written
            [DEDUP_FLUSH_SECONDS, 1.0].
        debug: log every drop [DEDUP_DEBUG, False].
        store_text: keep each page's text in MongoDB [DEDUP_STORE_TEXT, True].
        match_text: characters of a dropped copy's text kept in its match record, so the
            copy can be shown beside its original later; 0 = none (a ledger only)
            [DEDUP_MATCH_TEXT, 20000].
        extract_workers: processes that extract and fingerprint pages; 0 = a thread of
            the crawl process, -1 = one per core [DEDUP_EXTRACT_WORKERS, -1].
        extractor: how a page's main text is read: ``simcrawl`` (its own one-pass
            reading, :mod:`dedup.maintext`) or ``trafilatura`` [DEDUP_EXTRACTOR,
            "simcrawl"].
        extract_fast: with ``extractor = "trafilatura"``, trafilatura without its
            fallback extractors [DEDUP_EXTRACT_FAST, True].
        verify_distance: a near match within k is confirmed by a second simhash on word
            pairs (two-word shingles), which must be within this distance too; a heavy
            rewrite that keeps the words but not the phrasing fails it and is admitted.
            Used for candidates judged by fingerprints (``trust_distance``).
            -1 = no second opinion [DEDUP_VERIFY_DISTANCE, 10].
        pinyin: fingerprint Chinese pages by pinyin initials too, and drop copies of
            registered originals found that way [DEDUP_PINYIN, True].
        pinyin_size: letters per pinyin window [DEDUP_PINYIN_SIZE, 40].
        pinyin_overlap: overlap of windows inside a sentence [DEDUP_PINYIN_OVERLAP, 0.875].
        pinyin_q: quantisation levels [DEDUP_PINYIN_Q, 4].
        pinyin_anchors: where windows start: ``sentences``, ``content`` or ``both``
            [DEDUP_PINYIN_ANCHORS, "both"].
        pinyin_min_share: a page copies a registered original when this share of its
            windows is the original's [DEDUP_PINYIN_MIN_SHARE, 0.5] ...
        main_content: ... or this share of its text (three-character shingles) is: the
            original is the page's main content, which is then dropped. A smaller
            overlap (a quotation) keeps the page and records an excerpt
            [DEDUP_MAIN_CONTENT, 0.5].
        pinyin_min_run: without the original's text, this many consecutive windows make
            an excerpt [DEDUP_PINYIN_MIN_RUN, 4].
        template_pages: a text block (a line) that has appeared on this many distinct
            admitted pages of a host, and on half of them at least
            (:data:`dedup.templates.TEMPLATE_SHARE`), is its template text: left out of
            the host's pages' fingerprints, and a page with nothing else is skipped
            (``dedup/skipped/template_only``); 0 = off [DEDUP_TEMPLATE_PAGES, 5].
        retry_seconds: how long decisions and writes wait, retrying with backoff, for
            Redis or MongoDB to answer again before the pages concerned count as lost
            (the crawl then stops and exits non-zero, naming them)
            [DEDUP_RETRY_SECONDS, 300].
        start_wait: how long a crawl process starting waits, trying again, for Redis or
            MongoDB to answer (a server restarting, briefly frozen) before it exits with
            the unreachable server's status, 3 [DEDUP_START_WAIT, 30].
        lease_seconds: how long a crawl process may stop running (frozen, swapped out, cut
            off from Redis) before the other processes of its crawl take it for dead and
            repair its work; its heartbeat renews the lease every third of it
            [DEDUP_LEASE_SECONDS, 30].
        max_body: a response body larger than this many bytes is not read for its text
            (``dedup/skipped/too_big``): reading a text of megabytes holds a crawl
            process for seconds. The crawl's own ``DOWNLOAD_MAXSIZE`` (``SIMCRAWL_MAX_BODY``)
            keeps such bodies out already; a project under the add-on may fetch them
            [DEDUP_MAX_BODY, 5 MiB].
        disk_min_free: megabytes that must stay free on each disk the crawl writes to
            (the embedded servers' data, ``JOBDIR``, the WARC files, the log, and
            ``disk_watch``); under it the disk is full and the crawl waits or stops
            (``disk_full``; :mod:`crawler.disk`). 0 = not watched [DEDUP_DISK_MIN_FREE, 64].
        disk_full: what a full disk gets: ``wait`` (no page is fetched until it has room
            again) or ``stop`` (the crawl stops, exit status 1) [DEDUP_DISK_FULL, "wait"].
        disk_watch: more folders whose disks are watched, comma-separated (a Redis's or
            a MongoDB's data on this machine that the crawl did not start)
            [DEDUP_DISK_WATCH, ""].
        concurrent: let this crawl share its namespace with another live crawl process
            (without a shared frontier both would fetch every page; by default the second
            one refuses to start) [DEDUP_CONCURRENT, False].
        url_rules: learn URL rules from the crawl's match records and do not request a
            link they predict to be a stored page's copy (recorded as a ``url_rule``
            match; :mod:`dedup.url_rules`) [DEDUP_URL_RULES, True].
        url_rules_support: pairs (copy, original) a rule needs before it predicts
            [DEDUP_URL_RULES_SUPPORT, 3].
        url_rules_confidence: the share of a rule's checks that must agree with it (its
            pairs against the pages it would take for another): 1 drops a rule at the
            first page against it [DEDUP_URL_RULES_CONFIDENCE, 1.0].
        url_rules_explore: the share of predicted links requested anyway, to check their
            rules [DEDUP_URL_RULES_EXPLORE, 0.05].
    """

    enabled: bool = True
    max_distance: int = DEFAULT_MAX_DISTANCE
    verify_containment: float = DEFAULT_CONTAINMENT
    trust_distance: int = DEFAULT_TRUST_DISTANCE
    min_tokens: int = DEFAULT_MIN_TOKENS
    shingle: int = DEFAULT_SHINGLE
    cjk_ngram: int = DEFAULT_CJK_NGRAM
    drop_numbers: bool = DEFAULT_DROP_NUMBERS
    capacity: int = DEFAULT_CAPACITY
    sketches: str = "auto"
    namespace: str = ""
    database: str = DEFAULT_DATABASE
    redis_url: str = ""
    mongo_uri: str = ""
    data_dir: str = DEFAULT_DATA_DIR
    batch_size: int = DEFAULT_BATCH_SIZE
    batch_wait: float = 0.1
    flush_seconds: float = 1.0
    debug: bool = False
    store_text: bool = True
    match_text: int = 20_000
    extract_workers: int = -1
    extractor: str = "simcrawl"
    extract_fast: bool = True
    verify_distance: int = DEFAULT_VERIFY_DISTANCE
    pinyin: bool = True
    pinyin_size: int = DEFAULT_PINYIN_SIZE
    pinyin_overlap: float = DEFAULT_PINYIN_OVERLAP
    pinyin_q: int = DEFAULT_PINYIN_Q
    pinyin_anchors: str = DEFAULT_PINYIN_ANCHORS
    pinyin_min_share: float = DEFAULT_PINYIN_MIN_SHARE
    pinyin_min_run: int = DEFAULT_PINYIN_MIN_RUN
    main_content: float = DEFAULT_MAIN_CONTENT
    template_pages: int = 5
    retry_seconds: float = 300.0
    start_wait: float = 30.0
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    max_body: int = 5 * 1024 * 1024
    disk_min_free: int = 64
    disk_full: str = "wait"
    disk_watch: str = ""
    concurrent: bool = False
    url_rules: bool = True
    url_rules_support: int = DEFAULT_URL_RULES_SUPPORT
    url_rules_confidence: float = 1.0
    url_rules_explore: float = 0.05

    def __post_init__(self) -> None:
        def need(ok: bool, name: str, what: str) -> None:
            if not ok:
                raise ValueError(f"{name} must be {what}, got {getattr(self, _ATTR[name])!r}")

        need(0 <= self.max_distance <= 31, "DEDUP_MAX_DISTANCE", "in 0..31")
        need(self.verify_containment == -1 or 0 < self.verify_containment <= 1,
             "DEDUP_VERIFY_CONTAINMENT", "in (0, 1], or -1 (off)")
        need(0 <= self.trust_distance <= 31, "DEDUP_TRUST_DISTANCE", "in 0..31")
        need(self.min_tokens >= 0, "DEDUP_MIN_TOKENS", "at least 0")
        need(1 <= self.shingle <= 16, "DEDUP_SHINGLE", "in 1..16")
        need(1 <= self.cjk_ngram <= 8, "DEDUP_CJK_NGRAM", "in 1..8")
        need(self.capacity >= 1, "DEDUP_CAPACITY", "at least 1")
        need(self.sketches in ("auto", "redis", "until-stored"), "DEDUP_SKETCHES",
             "auto, redis or until-stored")
        need(1 <= self.batch_size <= 10_000, "DEDUP_BATCH_SIZE", "in 1..10000")
        need(0 <= self.batch_wait <= 60, "DEDUP_BATCH_WAIT", "in [0, 60]")
        need(-1 <= self.extract_workers <= 256, "DEDUP_EXTRACT_WORKERS", "in -1..256")
        need(self.extractor in ("simcrawl", "trafilatura"), "DEDUP_EXTRACTOR",
             "simcrawl or trafilatura")
        need(-1 <= self.verify_distance <= 64, "DEDUP_VERIFY_DISTANCE", "in -1..64")
        need(4 <= self.pinyin_size <= 10_000, "DEDUP_PINYIN_SIZE", "in 4..10000")
        need(0 <= self.pinyin_overlap < 1, "DEDUP_PINYIN_OVERLAP", "in [0, 1)")
        need(2 <= self.pinyin_q <= 10, "DEDUP_PINYIN_Q", "in 2..10")
        need(self.pinyin_anchors in ("sentences", "content", "both"), "DEDUP_PINYIN_ANCHORS",
             "sentences, content or both")
        need(0 < self.pinyin_min_share <= 1, "DEDUP_PINYIN_MIN_SHARE", "in (0, 1]")
        need(self.pinyin_min_run >= 1, "DEDUP_PINYIN_MIN_RUN", "at least 1")
        need(0 < self.main_content <= 1, "DEDUP_MAIN_CONTENT", "in (0, 1]")
        need(0 <= self.template_pages <= 1_000_000, "DEDUP_TEMPLATE_PAGES", "in 0..1000000")
        need(0 < self.flush_seconds <= 3600, "DEDUP_FLUSH_SECONDS", "in (0, 3600]")
        need(0 <= self.retry_seconds <= 86_400, "DEDUP_RETRY_SECONDS", "in [0, 86400]")
        need(0 <= self.start_wait <= 3600, "DEDUP_START_WAIT", "in [0, 3600]")
        need(1 <= self.lease_seconds <= 3600, "DEDUP_LEASE_SECONDS", "in [1, 3600]")
        need(self.max_body >= 1024, "DEDUP_MAX_BODY", "at least 1024 (bytes)")
        need(0 <= self.disk_min_free <= 1_000_000, "DEDUP_DISK_MIN_FREE",
             "in 0..1000000 (megabytes)")
        need(self.disk_full in ("wait", "stop"), "DEDUP_DISK_FULL", "wait or stop")
        need(1 <= self.url_rules_support <= 1_000_000, "DEDUP_URL_RULES_SUPPORT",
             "in 1..1000000")
        need(0.5 <= self.url_rules_confidence <= 1, "DEDUP_URL_RULES_CONFIDENCE",
             "in [0.5, 1]")
        need(0 <= self.url_rules_explore <= 1, "DEDUP_URL_RULES_EXPLORE", "in [0, 1]")
        need(0 <= self.match_text <= 1_000_000, "DEDUP_MATCH_TEXT", "in 0..1000000")
        need(bool(self.database) and not set(self.database) & set('/\\. "$'),
             "DEDUP_DATABASE", "a MongoDB database name")
        object.__setattr__(self, "namespace", namespace_of(self.database, self.namespace))

    @property
    def fingerprint_options(self) -> dict[str, Any]:
        """The keyword arguments of :func:`dedup.simhash.fingerprint` these settings
        give (``shingle``, ``drop_numbers``, ``min_tokens``, ``cjk_ngram``)."""
        return {"shingle": self.shingle, "drop_numbers": self.drop_numbers,
                "min_tokens": self.min_tokens, "cjk_ngram": self.cjk_ngram}

    @property
    def release_sketches(self) -> bool | None:
        """Whether a new index releases stored pages' sketches (``None``: by capacity)."""
        return None if self.sketches == "auto" else self.sketches == "until-stored"

    @property
    def containment(self) -> float | None:
        """The text check's threshold for :class:`~dedup.deduplicator.Deduplicator`
        (``None``: off)."""
        return None if self.verify_containment == -1 else self.verify_containment

    @classmethod
    def from_settings(cls, get: Callable[[str, Any], Any]) -> DedupConfig:
        """Build from a settings getter (``crawler.settings.get``): each field from its
        Scrapy setting, ``REDIS_URL`` / ``MONGO_URI`` / ``SIMCRAWL_DATA`` also from the
        environment.

        Raises:
            ValueError: a value of the wrong type or out of range (the message names the
                setting).
        """
        given = {f.name: _given(f, get) for f in fields(cls)}
        return cls(**{attr: v for attr, v in given.items() if v is not None})


def _given(f: Field[Any], get: Callable[[str, Any], Any]) -> Any:
    """A field's value as given (its setting, else its environment variable, converted),
    or ``None`` when it is given neither way."""
    name = _SETTING[f.name]
    raw = get(name, None)
    if (raw is None or raw == "") and f.name in _ENV:
        raw = os.environ.get(_ENV[f.name])
    return None if raw is None or raw == "" else convert(name, raw, f.type)


def config_value(name: str, get: Callable[[str, Any], Any]) -> Any:
    """One :class:`DedupConfig` setting (``DEDUP_ENABLED``...) read as
    :meth:`DedupConfig.from_settings` reads it, for a component that needs that one
    before the crawl's configuration is built: given, converted; else its default.

    Raises:
        KeyError: not a field's setting. ValueError: a value not of its type.
    """
    field = {f.name: f for f in fields(DedupConfig)}[_ATTR[name]]
    value = _given(field, get)
    return field.default if value is None else value


_SETTING = {f.name: ("REDIS_URL" if f.name == "redis_url" else "MONGO_URI"
                     if f.name == "mongo_uri" else f"DEDUP_{f.name.upper()}")
            for f in fields(DedupConfig)}
_ATTR = {v: k for k, v in _SETTING.items()}
_ENV = {"redis_url": "REDIS_URL", "mongo_uri": "MONGO_URI", "data_dir": "SIMCRAWL_DATA"}


_NAMESPACE = re.compile(r"^[A-Za-z0-9_.{}-]{1,64}$")


def namespace_of(database: str, namespace: str | None = None) -> str:
    """The index namespace of a crawl into ``database``: ``namespace`` when one is named
    (checked, :func:`check_namespace`), else the database's own: ``simcrawl`` for the
    default database, the demo's for the demo's, the database's name for any other. A
    database never shares another's index: its pages' copies are recorded against pages
    it holds.

    Raises:
        ValueError: ``namespace`` is not a key prefix, or none is named and the
            database's name cannot be one.
    """
    if namespace:
        return check_namespace(namespace)
    if database == DEFAULT_DATABASE:
        return DEFAULT_NAMESPACE
    if database == DEMO_DATABASE:
        return DEMO_NAMESPACE
    if not _NAMESPACE.match(database):
        raise ValueError(f"the database {database!r} cannot name its own index namespace "
                         "(1-64 of A-Z a-z 0-9 _ . - { }): name one with DEDUP_NAMESPACE "
                         "or --namespace")
    return database


def check_namespace(namespace: str) -> str:
    """Validate a key prefix: 1-64 of ``A-Z a-z 0-9 _ . - { }`` (braces for a Redis
    Cluster hash tag; no ``:``, so that one namespace is never a prefix of another's keys).

    Raises:
        ValueError: anything else (glob characters would break key scans).
    """
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
        raise ValueError(f"namespace must be 1-64 of A-Z a-z 0-9 _ . - {{ }}, got {namespace!r}")
    return namespace


def known() -> dict[str, str]:
    """Every name simcrawl reads (:class:`DedupConfig`'s settings and those
    :mod:`dedup.setting_names` declares) and how it is read
    (:data:`dedup.setting_names.SETTING`, ``ENVIRONMENT`` or ``EITHER``)."""
    names = {name: SETTING for name in _SETTING.values() if name.startswith(PREFIXES)}
    return {**names, **{n: d.how for n, d in DECLARED.items()}}


def unknown(names: Iterable[str], read_as: str) -> list[str]:
    """For the ``DEDUP_*`` / ``SIMCRAWL_*`` names among ``names``, given as ``read_as``
    (:data:`dedup.setting_names.SETTING`: ``-s`` or a project's settings; ``ENVIRONMENT``), a line for
    each that does nothing: one simcrawl does not know (with the closest known name), or
    one it reads the other way only."""
    table = known()
    out = []
    for name in sorted(set(names)):
        if not name.startswith(PREFIXES) or name.startswith(FAMILIES):
            continue
        how = table.get(name)
        if how is None:
            near = difflib.get_close_matches(name, table, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]}?" if near else ""
            out.append(f"{name} is not a simcrawl setting and does nothing{hint}")
        elif how not in (EITHER, read_as):
            if read_as == SETTING:
                out.append(f"{name} is read from the environment only: as a setting it does "
                           f"nothing (set it in the environment: {name}=... ./simcrawl ...)")
            else:
                out.append(f"{name} is a Scrapy setting, not read from the environment: it "
                           f"does nothing there (-s {name}=... or the project's settings)")
    return out
