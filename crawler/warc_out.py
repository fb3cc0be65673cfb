"""The crawl written as WARC files as it goes (``DEDUP_WARC_DIR``, ``./simcrawl --warc
DIR``): the Scrapy side of :mod:`dedup.warc_writer`.

:class:`WarcOut` (an extension) takes each decided page as it leaves the item pipelines
(an original stored, a copy recorded: Scrapy's ``item_scraped`` and, under the add-on,
whose records do not go on to the project's pipelines, ``item_dropped``) with its response,
and hands it to one thread, which hands the pages waiting (up to :data:`HANDOFF` a call)
to a process of its own that writes the records (:class:`dedup.warc_writer.WarcWriter`): building
warcio's records, their digests and their gzip members cost the crawl process about 0.8 ms
a page of the development sets, on the core its reactor needs, where the writer's process
takes what the machine has left.
Links not requested (``url_rule`` records) and excerpts are not fetches of their own and
are not written. When the crawl closes, the thread writes what is left, closes the last
file and indexes it.

Settings (docs/settings.md): ``DEDUP_WARC_DIR`` (unset: no archive),
``DEDUP_WARC_FILE_BYTES`` (1 GiB), ``DEDUP_WARC_NEAR`` (``response`` or ``metadata``),
``DEDUP_WARC_KEEP`` (``all`` or ``pages``: what ``simcrawl warc`` keeps of its files'
records that are not pages, :data:`KEEP_CHOICES`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import multiprocessing
import os
import queue
import threading
import uuid
from collections import OrderedDict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.items import ARCHIVED_REQUEST, PageItem
from dedup.decide import CHANGED, EXACT, NEAR, NEW, PINYIN
from dedup.errors import ServiceUnavailable
from dedup.setting_names import value
from dedup.store.records import MatchRecord
from dedup.warc_writer import (
    NEAR_CHOICES,
    WARC_FIELDS,
    Fetch,
    WarcWriter,
    record_id_of,
    remember,
    warc_date,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: Copies of these kinds were fetched and decided (a ``url_rule`` link was never sent; an
#: ``excerpt`` names a kept page's quotation).
FETCHED_COPIES = (EXACT, NEAR, PINYIN)

#: Pages waiting for the writer thread at most (past it, the crawl waits for the disk).
QUEUE = 1000
#: Pages handed to the writer's process in one call at most (those waiting, up to this:
#: a call costs its round trip whatever it carries).
HANDOFF = 32


#: What the deduplicated archive keeps of an archive's records that are not pages it
#: decides (``DEDUP_WARC_KEEP``): ``all`` of them as they are (a page's stylesheets,
#: images and scripts, redirects, ``dns:`` records: what a replay needs), or ``pages``.
KEEP_CHOICES = ("all", "pages")

#: A Scrapy signal the archive's spider (crawler/spiders/warc.py) sends for a record of
#: its files that is not a page it decides, with ``path`` and ``offset``: written to the
#: deduplicated archive as it is (``DEDUP_WARC_KEEP=all``).
record_passed = object()

#: The writer of the process that writes the archive (:func:`_open_writer`).
_WRITER: WarcWriter | None = None


def _open_writer(args: tuple[Any, ...]) -> None:
    """In the writer's process: its :class:`dedup.warc_writer.WarcWriter`."""
    global _WRITER
    _WRITER = WarcWriter(*args)


def _write(pages: list[tuple[str, Fetch, Any, tuple[str, str] | None]]) -> int:
    """In the writer's process: originals' records and copies', in order; how many records
    were written."""
    writer = _WRITER
    assert writer is not None
    before = writer.records
    for what, fetch, extra, elsewhere in pages:
        if what == "original":
            writer.original(fetch, extra)
        elif what == "record":
            writer.copied(*extra)
        else:
            writer.copy(fetch, extra, elsewhere)
    return writer.records - before


def _close_writer() -> int:
    """In the writer's process: the last file closed and indexed; how many files."""
    writer = _WRITER
    assert writer is not None
    writer.close()
    return len(writer.files)


def fetch_of(response: Any, when: dt.datetime | None = None) -> Fetch:
    """A Scrapy response and its request as :class:`dedup.warc_writer.Fetch`."""
    def pairs(headers: Any) -> list[tuple[str, str]]:
        return [(k.decode("latin-1"), v.decode("latin-1"))
                for k, values in headers.items() for v in values]

    from http import HTTPStatus

    try:
        reason = HTTPStatus(response.status).phrase
    except ValueError:
        reason = ""
    request = response.request
    method = request.method if request is not None else "GET"
    asked = pairs(request.headers) if request is not None else []
    archived = request.meta.get(ARCHIVED_REQUEST) if request is not None else None
    if archived is not None:  # read from an archive: the request it holds
        method, asked = archived.method, list(archived.headers)
    return Fetch(url=response.url, status=response.status, headers=pairs(response.headers),
                 body=response.body, date=when or dt.datetime.now(dt.timezone.utc),
                 reason=reason, protocol=getattr(response, "protocol", None) or "HTTP/1.1",
                 method=method, request_headers=asked)


class WarcOut:
    """Write the crawl's pages as WARC (see the module docstring). Counts
    ``dedup/warc/records`` and ``dedup/warc/files``; a failure to write (a full disk) is
    said once and counted in ``dedup/warc/errors``, and the crawl goes on without the
    archive."""

    def __init__(self, crawler: Crawler, writer: WarcWriter, pages: Any = None,
                 keep: str = "all") -> None:
        self.crawler, self.folder = crawler, writer.folder
        self.pages = pages  # the page store (PageRecords): originals other processes archived
        # the writer's process, forked from the crawl's fork server (crawler.extraction),
        # writes with a writer of ``writer``'s settings, which this process checked
        self._pool = ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("forkserver"), initializer=_open_writer,
            initargs=((writer.folder, writer.prefix, writer.info, writer.max_bytes,
                       writer.near),))
        #: the originals written, by page id and URL, as long as the writer remembers them
        self._held: OrderedDict[str, None] = OrderedDict()
        self._queue: queue.Queue[tuple[str, Fetch, Any] | None] = queue.Queue(QUEUE)
        self._failed: BaseException | None = None
        #: what of an archive's records that are not pages decided is kept (KEEP_CHOICES)
        self.keep = keep
        self._thread = threading.Thread(target=self._run, name="simcrawl-warc", daemon=True)
        self._thread.start()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcOut:
        settings = crawler.settings
        folder = value("DEDUP_WARC_DIR", settings.get)
        if not folder:
            raise NotConfigured("DEDUP_WARC_DIR is not set")
        near = value("DEDUP_WARC_NEAR", settings.get)
        if near not in NEAR_CHOICES:
            raise ValueError(f"DEDUP_WARC_NEAR must be one of {', '.join(NEAR_CHOICES)}, "
                             f"got {near!r}")
        keep = value("DEDUP_WARC_KEEP", settings.get)
        if keep not in KEEP_CHOICES:
            raise ValueError(f"DEDUP_WARC_KEEP must be one of {', '.join(KEEP_CHOICES)}, "
                             f"got {keep!r}")
        size = value("DEDUP_WARC_FILE_BYTES", settings.get)
        from dedup.about import version

        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d%H%M%S")
        prefix = f"simcrawl-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        info = {"software": f"simcrawl/{version()}", "format": "WARC File Format 1.1",
                "isPartOf": value("DEDUP_CRAWL_ID", settings.get),
                "simcrawl-settings": json.dumps(
                    {k: v for k, v in sorted(settings.copy_to_dict().items())
                     if k.startswith(("DEDUP_", "SIMCRAWL_")) and isinstance(
                         v, (str, int, float, bool)) and "URI" not in k and "URL" not in k},
                    sort_keys=True)}
        try:
            writer = WarcWriter(Path(folder), prefix, info, size, near)
        except OSError as exc:  # a bad setting: one line, exit status 2
            raise ValueError(f"DEDUP_WARC_DIR {folder} cannot be written: "
                             f"{exc.strerror or exc}") from None
        from crawler.wiring import parts_of

        ext = cls(crawler, writer, parts_of(crawler).pages, keep)
        crawler.signals.connect(ext.item_out, signal=signals.item_scraped)
        crawler.signals.connect(ext.item_out, signal=signals.item_dropped)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.record_out, signal=record_passed)
        log.info("writing the crawl as WARC in %s (%s-*.warc.gz)", folder, prefix)
        return ext

    def item_out(self, item: Any, response: Any = None, spider: Any = None,
                 **kwargs: Any) -> None:
        if response is None or self._failed is not None:
            return
        if isinstance(item, PageItem) and item.decision in (NEW, CHANGED):
            # dated as the store keeps the page (its fetched_at): a copy that another
            # process archives names this record by its id and date (record_id_of)
            self._queue.put(("original", fetch_of(response, item.fetched_at),
                             item.page_id or ""))
        elif isinstance(item, MatchRecord) and item.kind in FETCHED_COPIES:
            record = item.row(crawl_id=None)  # as the store keeps it
            match = {name: record.get(name) for name in WARC_FIELDS}
            self._queue.put(("copy", fetch_of(response, item.fetched_at), match))

    def record_out(self, path: str, offset: int, page: bool = False, **kwargs: Any) -> None:
        """A record of an archive read that is not a page decided: written as it is
        (with ``DEDUP_WARC_KEEP=pages``, only a page skipped and its request)."""
        if self._failed is None and (page or self.keep == "all"):
            self._queue.put(("record", None, (path, offset)))

    def _run(self) -> None:
        while True:
            work = self._queue.get()
            if work is None:
                break
            if self._failed is not None:
                continue
            pages = [work]
            while len(pages) < HANDOFF:  # and those waiting behind it
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # the end: after these
                    break
                pages.append(more)
            try:
                handed = []
                for what, fetch, extra in pages:
                    handed.append((what, fetch, extra, self._archived_elsewhere(extra)
                                   if what == "copy" else None))
                    if what == "original":  # as long as the writer remembers it
                        remember(self._held, (extra, fetch.url), None)
                written = self._pool.submit(_write, handed).result()
                self.crawler.stats.inc_value("dedup/warc/records", written)
            except Exception as exc:  # noqa: BLE001  (said and counted: the crawl goes on)
                self._fail(exc)
        try:
            self.crawler.stats.set_value("dedup/warc/files",
                                         self._pool.submit(_close_writer).result())
        except Exception as exc:  # noqa: BLE001
            self._fail(exc)
        self._pool.shutdown()



    def _archived_elsewhere(self, match: dict[str, Any]) -> tuple[str, str] | None:
        """The response record id and WARC date of a copy's original that another crawl
        process archived (its stored page says so: ``warc``), when this one does not hold
        it; ``None`` when it is not known yet (not stored yet, or not archived)."""
        original_id = str(match.get("original_id") or "")
        if not original_id or self.pages is None or original_id in self._held \
                or str(match.get("original_url") or "") in self._held:
            return None
        try:
            page = self.pages.page(original_id)
        except ServiceUnavailable as exc:  # named by its URL alone, as before
            log.debug("reading the original of a copy for its WARC record failed: %s", exc)
            return None
        if not page or not page.get("warc") or not isinstance(page.get("fetched_at"),
                                                                dt.datetime):
            return None
        date = warc_date(page["fetched_at"])
        return record_id_of(original_id, date), date

    def _fail(self, exc: BaseException) -> None:
        self.crawler.stats.inc_value("dedup/warc/errors")
        if self._failed is None:
            self._failed = exc
            log.error("writing WARC in %s failed (%s): the crawl goes on without the "
                      "archive from here", self.folder, exc)

    async def spider_closed(self, spider: Any = None) -> None:
        """Write what is left and close the last file, off the reactor."""
        from scrapy.utils.defer import maybe_deferred_to_future
        from twisted.internet.threads import deferToThread

        def finish() -> None:
            self._queue.put(None)
            self._thread.join()

        await maybe_deferred_to_future(deferToThread(finish))
