"""Items the crawler yields: an admitted page (:class:`PageItem`), or the match record of a
dropped copy (:class:`dedup.store.records.MatchRecord`, the one shape a match has from the
decision to the stores).

Both export with Scrapy's feed exporters (``scrapy crawl site -o items.jsonl`` or
``-o items.csv``): fields that are not plain data say how to export themselves
(``serializer`` in the field's metadata), and :data:`EXPORT_FIELDS` (the settings'
``FEED_EXPORT_FIELDS``) names the fields of both, so a CSV file has a column for each and
a match record's row keeps its fields. ``FEEDS`` with ``item_classes``
(``crawler.items.PageItem``, ``dedup.store.records.MatchRecord``) writes pages and match
records to separate files.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlsplit

from scrapy.http import HtmlResponse

from dedup.page import Page
from dedup.store.records import MatchRecord

#: The request meta key of a page's capture time when it was not fetched now (a page read
#: from a web archive: its ``WARC-Date``); the page is dated so.
CAPTURED = "simcrawl_captured"
#: The request meta key of the request an archive holds for a page
#: (:class:`dedup.archive.Asked`): the one its WARC request record is written from.
ARCHIVED_REQUEST = "simcrawl_archived_request"
#: The request meta key of a page read already (:class:`dedup.page.Page`: an archive's
#: page read ahead, :mod:`dedup.readahead`): the page is not read again.
READ = "simcrawl_read"


def _pinyin_codes(fp: Any) -> list[int] | None:
    return None if fp is None else list(fp.codes)


def _count(values: Any) -> int | None:
    return None if values is None else len(values)


@dataclass(repr=False)
class PageItem(Page):
    """A fetched page: a :class:`dedup.page.Page` (the one shape a page has from its
    reading to its storage) with what the crawl knows of it. The spider fills the fetch
    fields; the dedup middleware has it read (text, fingerprints, links) and decided
    before it reaches the storage pipeline."""

    status: int = 0
    depth: int = 0
    referer: str | None = None
    # the HTML (emptied once decided); exported as its length, never as bytes
    body: bytes = field(default=b"", metadata={"serializer": len})
    encoding: str | None = None
    decision: str = ""  # set by the middleware: new / unchanged / changed
    # the page stored before it, now its copy (a match turned round: dedup.decide.Turn)
    turned: Any = field(default=None, metadata={"serializer": lambda t: t and t.url})
    extra: dict[str, Any] = field(default_factory=dict)
    # exported as their count, their codes, their count
    blocks: list[int | None] | None = field(default=None, metadata={"serializer": _count})
    pinyin: Any = field(default=None, metadata={"serializer": _pinyin_codes})
    links: list[str] | None = field(default=None, metadata={"serializer": _count})

    def __repr__(self) -> str:  # one short line in logs, never the page's text
        return (f"PageItem({self.url}, {self.decision or 'undecided'}, status {self.status}, "
                f"{len(self.text)} characters)")


@dataclass
class FrontierReceipt:
    """The last output of a page whose request the shared frontier holds in flight and
    that stores nothing (skipped, a revisit): Scrapy hands a response's outputs to the
    item pipelines and the scheduler in order, one at a time, so when this reaches the
    storage pipeline, every request the page yielded is in the queue, and the page's own
    request can be settled (a kill before then puts it back, links and all). The
    pipeline settles it and drops it (``item_dropped_count``, logged at DEBUG); it is never
    exported."""

    inflight: str


#: The decision's working fields of a page, not exported.
_INTERNAL = {"templated", "rest", "sketch", "shingles", "whole", "by_whole"}
#: A match record's fields that a crawl never sets (a page turned round, the batch job).
_NOT_CRAWLED = {"turned", "cluster", "held"}

#: Every field of both items, pages' first: the columns of a feed export (a CSV file's
#: header is otherwise the first item's fields only).
EXPORT_FIELDS = list(dict.fromkeys(
    [f.name for f in fields(PageItem) if f.name not in _INTERNAL]
    + [f.name for f in fields(MatchRecord) if f.name not in _NOT_CRAWLED]))


def page_item_of(response: Any) -> PageItem:
    """The :class:`PageItem` of a response, as the crawl reads pages: its URL, host,
    status, depth, referer, body and (HTML) encoding."""
    ref = response.request.headers.get("Referer") if response.request else None
    item = PageItem(url=response.url, host=urlsplit(response.url).netloc,
                    status=response.status, depth=response.meta.get("depth", 0),
                    referer=ref.decode("latin-1") if ref else None, body=response.body)
    captured = response.meta.get(CAPTURED)
    if isinstance(captured, dt.datetime):
        item.fetched_at = captured
    read = response.meta.get(READ)
    if isinstance(read, Page) and read.url == item.url:
        item.take_reading(read)
    if isinstance(response, HtmlResponse):
        item.encoding = response.encoding
    return item
