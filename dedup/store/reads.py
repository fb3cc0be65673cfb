"""What the console, the report, the export and the verbs read of a crawl's records.

:class:`StoreReads` is the interface; :class:`dedup.adapters.mongo.reads.MongoReads` reads a
MongoDB database. Its answers are plain data: the records of :mod:`dedup.store.records`
(ids as 24 hex digits, fingerprints unsigned, times aware datetimes), with what a store
adds (``first_detected_at``, ``times_seen``, ``crawl_ids``), and the ``crawls`` and
``clusters`` records. A filter is a :class:`Where`, never a query language's document.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

#: The kinds of record a reader lists: admitted pages, copies' match records, excerpts.
KINDS = ("pages", "matches", "excerpts")

#: The time field a :class:`Span` bounds, by kind.
TIME_FIELD = {"matches": "detected_at", "excerpts": "detected_at", "pages": "fetched_at"}


@dataclass(frozen=True)
class Where:
    """Which records: their URL starts with one of ``url_prefixes``, or their host is
    ``host`` (with ``any_port``: on any port too), or their ``source`` is ``source``;
    nothing set: every record."""

    url_prefixes: tuple[str, ...] = ()
    host: str | None = None
    any_port: bool = False
    source: str | None = None


@dataclass(frozen=True)
class Span:
    """Records of one crawl (``crawl_id``: a match record seen by it) and of a time range
    (a page's ``fetched_at``, a match record's ``detected_at``)."""

    crawl_id: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None


#: Every record.
EVERYTHING = Span()


class StoreReads(Protocol):
    """The reads of the console, the report, the export and the verbs."""

    name: str

    # ---------------------------------------------------------- the database
    def sizes(self) -> dict[str, int] | None: ...
    def holds_crawl(self) -> bool: ...
    def has_records(self) -> bool: ...
    def count(self, kind: str, span: Span = EVERYTHING) -> int: ...
    def index_k(self, namespace: str | None = None) -> int: ...

    # ---------------------------------------------------------- whole reads
    def records(self, kind: str, span: Span = EVERYTHING,
                fields: Iterable[str] | None = None,
                ordered: bool = True) -> Iterator[dict[str, Any]]: ...
    def clusters(self) -> Iterator[dict[str, Any]]: ...
    def crawls(self, crawl_id: str | None = None) -> list[dict[str, Any]]: ...
    def fingerprints(self) -> Iterator[tuple[str, int, int | None]]: ...
    def near_matches(self, max_distance: int) -> Iterator[tuple[str, int, str]]: ...

    # ---------------------------------------------------------- one at a time
    def recent_crawls(self, limit: int) -> list[dict[str, Any]]: ...
    def newest(self, kind: str, where: Where, limit: int, before: str | None = None,
               by: str = "_id") -> tuple[list[dict[str, Any]], str | None]: ...
    def match(self, match_id: str) -> dict[str, Any] | None: ...
    def page(self, page_id: str, text: bool = True) -> dict[str, Any] | None: ...
    def url_and_text(self, kind: str, record_id: str) -> tuple[str, str]: ...
    def copies_of(self, page_id: str, limit: int) -> tuple[list[dict[str, Any]], int]: ...
    def cluster(self, cluster_id: str) -> dict[str, Any] | None: ...
    def pages_of(self, page_ids: Iterable[str]) -> list[dict[str, Any]]: ...
    def batch_record(self, url: str) -> dict[str, Any] | None: ...
    def examples(self, kind: str, limit: int) -> list[dict[str, Any]]: ...
    def source_counts(self) -> dict[str, int]: ...
    def originals(self, source: str, after: str | None,
                  limit: int) -> tuple[list[dict[str, Any]], str | None]: ...
    def copy_counts(self, page_ids: Iterable[str]) -> dict[str, int]: ...


def search(q: str) -> tuple[Where, str]:
    """The records a console search ``q`` names, and how it reads: a host (exact,
    case-insensitive; without a port, on any port), or a URL prefix (with a scheme, or a
    host followed by a path; a prefix that is a whole host, like ``https://example.org/``,
    is searched as that host).

    >>> search("Example.org")
    (Where(url_prefixes=(), host='example.org', any_port=True, source=None), 'host example.org')
    >>> search("example.org/news")[1]
    'URLs starting with http(s)://example.org/news'
    """
    q = q.strip()
    if "://" in q:
        rest = q.partition("://")[2]
        if rest and "/" not in rest.rstrip("/"):
            return search(rest.rstrip("/"))
        return Where(url_prefixes=(q,)), f"URLs starting with {q}"
    if "/" in q:
        return (Where(url_prefixes=tuple(f"{scheme}://{q}" for scheme in ("http", "https"))),
                f"URLs starting with http(s)://{q}")
    host = q.lower().rstrip(".")
    # hosts are stored with their port when it is not the default
    return Where(host=host, any_port=":" not in host), f"host {host}"


def k_of_layouts(saved: Mapping[str, Any], database: str, namespace: str | None = None) -> int:
    """The k of the crawl's index, from the index layouts a store keeps (namespace ->
    ``IndexLayout.describe()``): the namespace's, or without one the database's own
    (:func:`dedup.config.namespace_of`), else the default namespace's (a crawl before
    databases had their own), else the demo's, else the first saved; the crawl's default
    (:data:`dedup.config.DEFAULT_MAX_DISTANCE`) when none is saved. What the console marks
    as k, so that every command agrees with the crawl.

    >>> k_of_layouts({}, "simcrawl")
    3
    """
    from dedup.config import DEFAULT_MAX_DISTANCE, DEFAULT_NAMESPACE, DEMO_NAMESPACE, namespace_of
    from dedup.index.layout import IndexLayout, IndexMismatchError

    try:
        own = [namespace_of(database)]
    except ValueError:  # a name no namespace can take: its crawl named one
        own = []
    order = [namespace] if namespace else [*own, DEFAULT_NAMESPACE, DEMO_NAMESPACE,
                                           *sorted(saved)]
    for name in order:
        if saved.get(name):
            try:
                return IndexLayout.from_description(saved[name]).k
            except IndexMismatchError:
                continue
    return DEFAULT_MAX_DISTANCE
