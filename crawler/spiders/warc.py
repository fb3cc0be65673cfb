"""Web archives read as a crawl (``simcrawl warc FILE...``; ``scrapy crawl warc -a
files=A,B``): every HTML page of WARC and ARC files (``response`` and ``resource``
records), in file order, is decided by the crawl's own decision and written as a crawl
writes it (pages, fingerprints, match records, the summary), under the run's crawl id,
dated as it was captured (``WARC-Date``). The files are read with :mod:`dedup.archive`.

- :class:`WarcSpider` (the site spider, whose pages come from the files): a request per
  page record, none for the links of a page (the archive is the crawl).
- :class:`FromArchive` (a downloader middleware, first of all): a request is answered with
  its record, read again from its file at its offset (the files are not held in memory;
  Scrapy's HTTP cache answers the same way), with the request record the archive holds
  for it, when there is one, for the WARC the run writes.

A ``revisit`` record that repeats an HTML response's payload (profile
*identical-payload-digest*, as Heritrix, browsertrix-crawler and simcrawl write them for a
payload seen before, or webrecorder's *uri-agnostic-identical-payload-digest*) is decided
as a page of its own URL with that response's payload: under another URL it is an exact
copy, under the same URL a revisit of the page (``unchanged``). It is found by its
``WARC-Payload-Digest`` among the HTML responses read before it, in these files (counted
in ``dedup/warc/revisits``); one whose response is not in them (an earlier crawl's files
not given) is counted in ``dedup/warc/revisits_unresolved``, logged, and not decided.

One record's fault costs that record alone:

- a digest that does not match the record's bytes (``dedup/warc/digest_mismatch``, each
  named in the log): the record is decided (``DEDUP_WARC_DIGESTS=decide``, the default),
  skipped (``skip``), or the run stops there (``raise``);
- a payload that cannot be decoded (``dedup/warc/undecodable``, named): skipped;
- a record that cannot be read at all (cut short, corrupt): named with its file and its
  offset, counted in ``dedup/warc/bad_records``; the rest of its file cannot be found from
  it, and the next file is read.

Records that are not pages (requests, metadata, images, redirects, ``dns:`` records...)
are counted in ``dedup/warc/other_records`` and not decided.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.responsetypes import responsetypes

from crawler.items import ARCHIVED_REQUEST, CAPTURED, READ
from crawler.spiders.site import SiteSpider
from crawler.skips import page_skipped
from crawler.warc_out import record_passed
from dedup.archive import (
    DIGEST_CHOICES,
    BadRecord,
    Entry,
    archive_files,
    page_at,
    records,
    request_at,
    warc_time,
)
from dedup.readahead import stage_paths, staged_index, staged_page
from dedup.setting_names import value

log = logging.getLogger(__name__)

#: Where a request's record is: the meta key (file, offset).
RECORD = "simcrawl_warc_record"
#: Where the archive's request record of a page is (file, offset): the meta key.
ASKED = "simcrawl_warc_request"
#: The request's meta key: the file and offset of its own record (a revisit's, where
#: ``RECORD`` names the response it repeats).
OWN = "simcrawl_warc_own"
#: Where a page's reading is staged (pages file, position): the meta key.
READ_AHEAD = "simcrawl_warc_read_ahead"
#: Request records waiting for their page at most (they come next to it): past it, those
#: waiting are taken for requests of no page (POSTs, non-HTML).
ASKED_HELD = 64

class Undecodable(IgnoreRequest):
    """A page record whose payload cannot be decoded (counted as the skip ``undecodable``)."""

    reason = "undecodable"


class WarcSpider(SiteSpider):
    """The pages of WARC files, decided as a crawl decides them (see the module
    docstring)."""

    name = "warc"
    custom_settings: ClassVar[dict[str, Any]] = {
        "ROBOTSTXT_OBEY": False,  # the pages were fetched already
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_LIMIT": 0,
        "DEDUP_URL_RULES": False,  # no request to save: every page is in the files
        "DOWNLOADER_MIDDLEWARES": {"crawler.spiders.warc.FromArchive": 1},
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DOWNLOAD_DELAY": 0,
        # in file order: one queue for every host (Scrapy's default takes turns among
        # the hosts' download slots), first in first out (the start requests' queue)
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
    }
    #: the dedup middleware decides the pages in the order they come, one batch at a time
    #: (:class:`crawler.middlewares.batches.InOrder`): the originals are the files' first pages,
    #: however long each page takes to read
    decide_in_order = True

    def __init__(self, files: str = "", digests: str = "decide", read: str = "",
                 **kwargs: Any) -> None:
        scrapy.Spider.__init__(self, **kwargs)  # no start URLs: the files are the crawl
        self.files = archive_files([f for f in files.split(",") if f])
        self.start_urls, self.allowed_domains = [], []  # every page of the files
        self.digests = digests
        #: the staging folder of the pages read ahead (dedup.readahead), if any
        self.read_ahead = Path(read) if read else None
        self._ahead: dict[int, int] = {}  # the file read now: offset -> staged position
        self._start_state()

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> WarcSpider:
        digests = value("DEDUP_WARC_DIGESTS", crawler.settings.get)
        if digests not in DIGEST_CHOICES:
            raise ValueError(f"DEDUP_WARC_DIGESTS must be one of {', '.join(DIGEST_CHOICES)}, "
                             f"got {digests!r}")
        kwargs.setdefault("digests", digests)
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.skipped, signal=page_skipped)
        return spider

    def skipped(self, response: Any = None, reason: str = "", **kwargs: Any) -> None:
        """A page the crawl read and did not decide (no text, nothing but its site's
        template): it copies nothing, so the deduplicated archive keeps its record as it
        is, with its request record."""
        request = getattr(response, "request", None)
        own = request.meta.get(OWN) if request is not None else None
        if own is None:
            return
        asked = request.meta.get(ASKED)
        if asked is not None:
            self._pass(Path(asked[0]), asked[1], page=True)
        self._pass(Path(own[0]), own[1], page=True)

    async def start(self) -> AsyncIterator[Any]:
        done = 0  # bytes of the files read before this one: the progress line's share
        self._set("dedup/warc/bytes_total", sum(p.stat().st_size for p in self.files))
        # where each HTML payload read so far is, by its digest: a revisit record's page
        # (a key and a small tuple a response: about 180 MB a million responses, measured)
        payloads: dict[int, tuple[int, int]] = {}
        for n, path in enumerate(self.files):
            # a page is held until the record after it is read: the request record of a
            # page comes before it (wget) or after it (Heritrix, warcio)
            held: tuple[Entry, tuple[int, int]] | None = None
            asked: dict[str, int] = {}  # request records by the records they go with
            # this file's pages read ahead: offset -> where the reading is staged
            self._ahead = staged_index(self.read_ahead, n) if self.read_ahead else {}
            with open(path, "rb") as fh:  # noqa: ASYNC230  (a local file, read a record at a time)
                try:
                    for entry in records(fh):
                        self._set("dedup/warc/bytes_read", done + fh.tell())
                        if entry.kind == "request":  # not decided: kept for its page
                            self._count("dedup/warc/other_records")
                            for other in entry.concurrent_to:
                                asked[other] = entry.offset
                            if entry.record_id:
                                asked[entry.record_id] = entry.offset
                            continue
                        if held is not None:
                            yield self._request(n, *held, asked)
                            held = None
                        if len(asked) > ASKED_HELD:  # requests of no page here (POSTs, ...)
                            self._pass_requests(path, asked)
                        if entry.problems and not self._digests_pass(path, entry):
                            if self.digests == "raise":
                                return
                            continue
                        where = self._place(n, path, entry, payloads)
                        if where is not None:
                            held = (entry, where)
                    if held is not None:
                        yield self._request(n, *held, asked)
                        held = None
                except BadRecord as exc:
                    if held is not None:
                        yield self._request(n, *held, asked)
                        held = None
                    self._count("dedup/warc/bad_records")
                    log.error("%s: the record at offset %d cannot be read (%s); the rest of "
                              "this file cannot be found from it and is not read", path,
                              exc.offset, exc.reason)
                self._pass_requests(path, asked)
            done += path.stat().st_size
            self._set("dedup/warc/bytes_read", done)

    def _digests_pass(self, path: Path, entry: Entry) -> bool:
        """Whether a record whose digests do not match its bytes is decided (counted and
        named in any case, per ``DEDUP_WARC_DIGESTS``)."""
        self._count("dedup/warc/digest_mismatch")
        what = {"decide": "decided as it is", "skip": "skipped",
                "raise": "the run stops here (DEDUP_WARC_DIGESTS=raise)"}[self.digests]
        log.warning("%s: the %s record at offset %d (%s) does not match its digest (%s); %s",
                    path, entry.kind, entry.offset, entry.url, "; ".join(entry.problems), what)
        if self.digests == "raise":
            self._set("dedup/warc/stopped_at_digest", 1)
        return self.digests == "decide"

    def _place(self, n: int, path: Path, entry: Entry,
               payloads: dict[int, tuple[int, int]]) -> tuple[int, int] | None:
        """Where the page of a record is (file number, offset), or ``None``: it is not a
        page to decide (counted)."""
        if entry.kind == "page":
            if entry.payload is not None:
                payloads.setdefault(entry.payload, (n, entry.offset))
            return n, entry.offset
        if entry.kind == "revisit":
            where = self._revisited(entry, payloads, path)
            if where is None:
                self._pass(path, entry.offset)
            return where
        self._count("dedup/warc/other_records")
        if entry.record_type != "warcinfo":  # the archive written has its own
            self._pass(path, entry.offset)
        return None

    def _pass(self, path: Path, offset: int, page: bool = False) -> None:
        """A record that is not a page decided: handed on as it is (the WARC the run
        writes keeps it, per ``DEDUP_WARC_KEEP``: crawler/warc_out.py; ``page``: a page
        skipped, and its request, which it keeps whatever that says)."""
        self.crawler.signals.send_catch_log(record_passed, path=str(path), offset=offset,
                                            page=page)

    def _pass_requests(self, path: Path, asked: dict[str, int]) -> None:
        """The request records no page of the file took: handed on (:meth:`_pass`)."""
        for offset in sorted(set(asked.values())):
            self._pass(path, offset)
        asked.clear()

    def _request(self, n: int, entry: Entry, where: tuple[int, int],
                 asked: dict[str, int]) -> scrapy.Request:
        meta: dict[str, Any] = {RECORD: (str(self.files[where[0]]), where[1]),
                                OWN: (str(self.files[n]), entry.offset),
                                CAPTURED: warc_time(entry.date),
                                "dont_redirect": True, "dont_retry": True}
        request_offset = None
        for key in (entry.record_id or "", *entry.concurrent_to):
            found = asked.pop(key, None)
            request_offset = found if found is not None else request_offset
        if request_offset is not None:
            meta[ASKED] = (str(self.files[n]), request_offset)
            for key in [k for k, v in asked.items() if v == request_offset]:
                del asked[key]  # under its other name
        position = self._ahead.get(entry.offset) if where == (n, entry.offset) else None
        if position is not None and self.read_ahead is not None:
            meta[READ_AHEAD] = (str(stage_paths(self.read_ahead, n)[0]), position)
        return scrapy.Request(entry.url or "", callback=self.parse, errback=self.failed,
                              dont_filter=True, meta=meta)

    def _revisited(self, entry: Entry, payloads: dict[int, tuple[int, int]],
                   path: Path) -> tuple[int, int] | None:
        """Where the HTML response a revisit record repeats is (file number, offset), or
        ``None``: it repeats none, or one these files do not hold before it (counted,
        and said)."""
        where = payloads.get(entry.payload) if entry.payload is not None else None
        if where is not None:
            self._count("dedup/warc/revisits")
            return where
        if entry.payload is not None and entry.html:
            self._count("dedup/warc/revisits_unresolved")
            log.warning("%s: the revisit record at offset %d (%s) repeats a response not "
                        "in the files before it; not decided", path, entry.offset, entry.url)
        else:
            self._count("dedup/warc/other_records")
        return None

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)

    def _set(self, key: str, value: int) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.set_value(key, value)

    def follow(self, urls: list[str], source: str, depth: int = 0) -> list[scrapy.Request]:
        return []  # the archive is the crawl: its pages' links are not requested


class FromArchive:
    """Answer a :class:`WarcSpider` request with its record (see the module docstring).
    A payload that cannot be decoded is named in the log and the request skipped
    (:class:`Undecodable`, counted in ``dedup/warc/undecodable``)."""

    def __init__(self, stats: Any = None) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Any) -> FromArchive:
        return cls(crawler.stats)

    def process_request(self, request: scrapy.Request, spider: Any = None) -> Response | None:
        where = request.meta.get(RECORD)
        if where is None:
            return None
        path, offset = where
        try:
            page = page_at(path, offset)
        except ValueError as exc:
            if self.stats is not None:
                self.stats.inc_value("dedup/warc/undecodable")
            log.error("%s: the page record at offset %d (%s) cannot be decoded (%s); "
                      "skipped", path, offset, request.url, exc)
            raise Undecodable(f"cannot be decoded: {exc}") from None
        ahead = request.meta.get(READ_AHEAD)
        if ahead is not None:
            request.meta[READ] = staged_page(*ahead)
            if self.stats is not None:
                self.stats.inc_value("dedup/warc/read_ahead")
        asked_at = request.meta.get(ASKED)
        if asked_at is not None:
            request.meta[ARCHIVED_REQUEST] = request_at(*asked_at)
        headers = [(k.encode("latin-1", "replace"), v.encode("latin-1", "replace"))
                   for k, v in page.headers]
        cls = responsetypes.from_args(headers=dict(headers), url=request.url, body=page.body)
        return cls(url=request.url, status=page.status, headers=headers, body=page.body,
                   request=request, flags=["warc"], protocol=page.protocol)
