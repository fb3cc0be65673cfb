"""Storage of admitted pages, their fingerprints and the match records, in batches."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.threads import deferToThread

from crawler.extensions import crawl_counters
from crawler.items import FrontierReceipt, PageItem
from crawler.extraction import fingerprint_item
from crawler.outage import Outage, sleep
from crawler.skips import skip_reason
from crawler.stopping import stop_crawl
from crawler.wiring import Parts, parts_of
from dedup.adapters.journal import LostPages
from dedup.decide import NEW
from dedup.errors import ServiceUnavailable
from dedup.ids import new_page_id
from dedup.adapters.servers.services import process_alive
from dedup.setting_names import value
from dedup.adapters.mongo import DEFAULT_TIMEOUT as STORE_TIMEOUT
from dedup.adapters.mongo import time_limit
from dedup.store.records import MatchRecord, fingerprint_record, page_record
from dedup.store.writer import RecordWriter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)




#: The stat of pages stored without a decision (``DEDUP_ENABLED`` off).
UNDECIDED = "dedup/stored_undecided"


def summary_adds_up(summary: dict[str, Any]) -> bool:
    """Whether a crawl process's summary (``DEDUP_SUMMARY_FILE``) adds up: every request it
    took (``dedup/requests``) became a page decided (or stored undecided, with
    ``DEDUP_ENABLED`` off), a skip, a loss or, when the crawl stopped, a request put back
    unsent (``dedup/put_back``: :class:`crawler.extensions.put_back.PutBackOnStop`), once."""
    decided = sum(summary.get(k, 0) for k in ("dedup/unique", "dedup/near_duplicate",
                                               "dedup/exact_duplicate", "dedup/pinyin_copy",
                                               "dedup/revisit", UNDECIDED))
    skipped = sum(v for k, v in summary.items() if k.startswith("dedup/skipped/"))
    return bool(summary.get("dedup/requests", 0) == decided + skipped + summary.get(
        "dedup/lost/undecided", 0) + summary.get("dedup/put_back", 0))


def failed_services(services: set[str], parts: Parts) -> str:
    """``Redis at URL``, ``MongoDB at URL`` or both, for the services in ``services``."""
    where = {"Redis": parts.redis_url, "MongoDB": parts.mongo_uri}
    return " and ".join(f"{name} at {where.get(name, '?')}" for name in sorted(services))


class KeptBySimcrawl(DropItem):
    """A record of simcrawl's own (a page, a match record, a frontier receipt) taken out
    of the item stream once it is buffered: not an item the project's spider dropped."""


class StoragePipeline:
    """Write admitted pages (with their fingerprints) and match records to the store.

    The records (:mod:`dedup.store.records`) are buffered and written by a worker thread
    every ``DEDUP_BATCH_SIZE`` items or ``DEDUP_FLUSH_SECONDS``, so the crawl does not wait
    for MongoDB; one write runs at a time, by the store's write protocol (fence, write,
    confirm, release: :mod:`dedup.store.writer`). When MongoDB does not answer, the buffer is kept and the
    crawl waits (retrying with backoff) for up to ``DEDUP_RETRY_SECONDS``; past that the
    buffered pages count as lost (``dedup/lost/pages``, ``dedup/lost/matches``), the
    crawl stops, and it exits non-zero naming them. Everything buffered is written when
    the spider closes, and the summary is written after that.
    """

    def __init__(self, crawler: Crawler, parts: Parts) -> None:
        self.crawler = crawler
        self.parts = parts  # nearly all of them: the store, the index, the journal, ...
        self.state = parts.state
        self.config = parts.config
        self.writer = RecordWriter(parts.pages, parts.index, parts.journal,
                                   LostPages(parts.client, parts.config.namespace),
                                   parts.config.retry_seconds, turns=parts.deduplicator.turns)
        # the crawl is archived as WARC: a stored page says so, so that a copy another
        # process archives can name its original's record (crawler/warc_out.py)
        self.archived = {"warc": True} if value("DEDUP_WARC_DIR", crawler.settings.get) else {}
        self._loop: task.LoopingCall | None = None
        self._record_loop: task.LoopingCall | None = None
        self.outage = Outage("writing pages", parts.config.retry_seconds, log,
                             gave_up=parts.gave_up, abandoned=parts.given_up)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StoragePipeline:
        from scrapy import signals

        pipeline = cls(crawler, parts_of(crawler))
        crawler.signals.connect(pipeline._note_finish, signal=signals.spider_closed)
        crawler.signals.connect(pipeline._uncount, signal=signals.item_dropped)
        return pipeline

    def _uncount(self, exception: BaseException | None = None, **_: Any) -> None:
        """simcrawl's own records taken out of the item stream (:class:`KeptBySimcrawl`)
        are not items the project's spider dropped: Scrapy's core stats, which count every
        drop (``item_dropped_count``, ``item_dropped_reasons_count/...``), do not count
        them (simcrawl's own are under ``dedup/``)."""
        if isinstance(exception, KeptBySimcrawl):
            stats = self.crawler.stats
            for key in ("item_dropped_count",
                        f"item_dropped_reasons_count/{type(exception).__name__}"):
                stats.inc_value(key, -1)
                if stats.get_value(key) == 0:  # counted and uncounted: as if never
                    stats.get_stats().pop(key, None)

    def _note_finish(self, spider: Any = None, reason: str = "") -> None:
        """Add Scrapy's finish reason to the summary file (``DEDUP_SUMMARY_FILE``): it is
        known only once the pipelines are closed (``closespider_pagecount`` for a crawl cut
        short by ``CLOSESPIDER_PAGECOUNT``, ``shutdown`` for one stopped by a signal)."""
        path = value("DEDUP_SUMMARY_FILE", self.crawler.settings.get)
        if not path or not self.state.closed_cleanly:
            return
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            data["finish_reason"] = reason
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(data, fh, default=str, indent=1)
        except (OSError, ValueError) as exc:
            log.warning("could not add the finish reason to %s: %s", path, exc)

    def open_spider(self, spider: Any = None) -> None:
        try:  # an earlier crawl on this machine killed without its summary
            for crawl_id in self.parts.pages.mark_interrupted(socket.gethostname(),
                                                                process_alive):
                log.warning("crawl %s ended without its summary (its process is gone): "
                            "marked interrupted", crawl_id)
        except ServiceUnavailable as exc:
            log.debug("could not check for interrupted crawls: %s", exc)
        self._loop = task.LoopingCall(self._flush_in_thread)
        self._loop.start(self.config.flush_seconds, now=False)
        every = value("SIMCRAWL_RECORD_SECONDS", self.crawler.settings.get)
        if every > 0:
            self._record_loop = task.LoopingCall(self._record_running, every)
            self._record_loop.start(every, now=True)

    def _crawl_record(self) -> dict[str, Any]:
        """What the ``crawls`` record says of this process, running or finished."""
        return {"started_at": self.crawler.stats.get_value("start_time"),
                "counters": crawl_counters(self.crawler),
                "pid": os.getpid(), "hostname": socket.gethostname(),
                "namespace": self.config.namespace}

    def _record_running(self, every: float) -> Any:
        """Rewrite this process's live record (counters taken here, in the reactor; the
        write in a thread, given until the next one at most, and the crawl's
        ``DEDUP_RETRY_SECONDS``: a write left waiting for a MongoDB that died holds the
        process's exit, which joins the thread). A failed write is only logged: the
        crawl goes on."""
        if "MongoDB" in self.parts.given_up:
            return None
        record = self._crawl_record()

        def write() -> None:
            try:
                with time_limit(min(every, self.config.retry_seconds)):
                    self.parts.pages.save_crawl(self.parts.crawl_id, record, running=True)
            except ServiceUnavailable as exc:
                log.debug("could not update the crawl's live record: %s", exc)

        return deferToThread(write)

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        if isinstance(item, FrontierReceipt):  # every request of its page is queued
            self.state.settle_ids([item.inflight])
            raise KeptBySimcrawl("frontier receipt (not a page)", log_level="DEBUG")
        if isinstance(item, PageItem) and not item.decision:
            # DEDUP_ENABLED is off: store every page, fingerprinted, without deciding.
            reason = skip_reason(item, item.encoding is not None, self.config.max_body)
            if reason is None:
                reason = await fingerprint_item(item, self.parts.extractor)
            if reason is not None:
                self.crawler.stats.inc_value(f"dedup/skipped/{reason}")
                return item
            item.page_id, item.decision = new_page_id(), NEW
            item.body = b""
            self.crawler.stats.inc_value(UNDECIDED)
        if isinstance(item, PageItem) and item.decision == NEW:
            self.writer.add_page(
                page_record(item, store_text=self.config.store_text, status=item.status,
                            depth=item.depth, referer=item.referer,
                            crawl_id=self.parts.crawl_id, encoding=item.encoding,
                            **self.archived),
                fingerprint_record(item, self.parts.pinyin_params),
                turned=None if item.turned is None else
                MatchRecord.of_turn(item, item.turned).row(crawl_id=self.parts.crawl_id))
        elif isinstance(item, MatchRecord):
            self.writer.add_match(item.row(crawl_id=self.parts.crawl_id,
                                           text_cap=self.config.match_text))
        if self.writer.pending() >= self.config.batch_size:
            await self._flush_or_wait()
        if isinstance(item, (PageItem, MatchRecord)) and \
                not getattr(self.crawler.spider, "yields_pages", False):
            # a project's spider under the add-on: simcrawl's records are kept in MongoDB,
            # not handed on to the project's pipelines and feeds with its own items
            raise KeptBySimcrawl("kept by simcrawl", log_level="DEBUG")
        return item

    async def _flush_or_wait(self) -> None:
        """Write the buffer; while MongoDB fails, hold the crawl here (backoff) until it
        answers or ``DEDUP_RETRY_SECONDS`` have passed (then the buffer is lost)."""
        delay = 0.25
        while True:
            probe = await self.outage.turn()  # during an outage, one write at a time
            if probe is None:  # lasted DEDUP_RETRY_SECONDS while another write probed
                self._give_up_if_overdue()
                return
            try:
                if await maybe_deferred_to_future(deferToThread(self.flush)):
                    return
            finally:
                if probe:
                    self.outage.probed()
            if self._give_up_if_overdue():
                return
            await sleep(delay)
            delay = min(delay * 2, 8.0)

    def _give_up_if_overdue(self, now: bool = False) -> bool:
        """Past ``DEDUP_RETRY_SECONDS`` of an outage (or ``now``, while one is on): the
        buffer is lost, named, and the crawl stops. Returns whether it gave up."""
        outage = self.outage
        if outage.since is None or not (outage.overdue or now):
            return False
        pages, matches = self.writer.take()
        if pages or matches:
            self.state.lost.extend(str(d["url"]) for d in [*pages, *matches])
            self.state.abandon(str(d["url"]) for d in pages)  # their links stay unqueued
            self.crawler.stats.inc_value("dedup/lost/pages", len(pages))
            self.crawler.stats.inc_value("dedup/lost/matches", len(matches))
            failed = failed_services(outage.failing, self.parts)
            log.error("%s %s failed for %.0f s (%s): %d pages and %d match records are "
                      "lost; stopping the crawl", failed,
                      "have" if " and " in failed else "has", outage.lasted,
                      "DEDUP_RETRY_SECONDS" if outage.overdue else "the crawl gave up on it",
                      len(pages), len(matches))
            self.parts.gave_up(set(outage.failing))
            stop_crawl(self.crawler, "store_unavailable")
        return True

    def _flush_in_thread(self) -> Any:
        """The write of every ``DEDUP_FLUSH_SECONDS``; past ``DEDUP_RETRY_SECONDS`` of an
        outage it gives the buffer up too. It must: with a shared frontier, an admitted
        page's response stays in Scrapy's scraper until its record is stored (its links
        wait for it), so once the pages stop coming no other write comes to give up,
        and the crawl, stopping, waited for those responses forever (MongoDB killed
        mid-crawl: "Closing spider", then nothing)."""
        def written(_: Any) -> None:
            self._give_up_if_overdue()

        def failed(failure: Any) -> None:  # said, and the loop goes on (else it stops)
            log.error("writing the buffered records failed: %s", failure.getTraceback())

        return deferToThread(self.flush).addCallback(written).addErrback(failed)

    def flush(self, limit: float | None = None) -> bool:
        """Write everything buffered (called in a worker thread; one write at a time;
        :meth:`dedup.store.writer.RecordWriter.flush`), and account for what the write did.
        ``limit``: seconds the write may take (default: what is left of an outage's
        ``DEDUP_RETRY_SECONDS``, when one is on).

        Returns:
            Whether the buffer is written (``False``: a service failed; the buffer is kept
            for the next attempt).
        """
        left = self.outage.left() if limit is None else limit
        with time_limit(left):  # during an outage, by its limit (not the client's 5 s)
            done = self.writer.flush()
        stats, state = self.crawler.stats, self.state
        if done.again:  # copies whose records named a withdrawn or lost page
            state.recovered_copies.extend(done.again)
            state.settle(done.again)
        if done.withdrawn:
            state.abandon(done.withdrawn)  # their links stay unqueued
            stats.inc_value("dedup/withdrawn/pages", len(done.withdrawn))
        if done.copies_of_lost_pages:
            stats.inc_value("dedup/requeued/copies_of_lost_pages", done.copies_of_lost_pages)
        if done.self_copies:
            stats.inc_value("dedup/self_copies_dropped", done.self_copies)
        if not done.ok:
            if done.stage == "write":
                stats.inc_value("dedup/retries/store")
            self.outage.failed(done.failure or ServiceUnavailable(done.said),
                               done.failed_service, said=done.said)
            return False
        if done.settled:  # a batch was written
            self.outage.answered("the buffered records are written")
            stats.inc_value("dedup/stored/pages", done.pages)
            stats.inc_value("dedup/stored/matches", done.matches)
            if done.excerpts:
                stats.inc_value("dedup/stored/excerpts", done.excerpts)
        state.settle(done.settled)
        return True

    def _save_crawl(self, summary: dict[str, Any]) -> None:
        """This process's summary in the store's ``crawls`` collection (for reports)."""
        import datetime as dt

        record = dict(self._crawl_record(), finished_at=dt.datetime.now(dt.timezone.utc),
                      stats={k.replace(".", "_"): v for k, v in summary.items()},
                      skipped_per_minute=dict(sorted(self.state.skips_per_minute.items())))
        if self.outage.overdue:
            log.warning("could not keep the crawl's summary in MongoDB: %s has failed for "
                        "%.0f s", failed_services(self.outage.failing, self.parts),
                        self.outage.lasted)
            return  # not tried again: the crawl stops within seconds of giving up
        if "MongoDB" in self.parts.given_up:  # the decisions gave up on it
            log.warning("could not keep the crawl's summary in MongoDB: the crawl gave up "
                        "on MongoDB")
            return
        try:  # never longer than the crawl waits out an outage
            with time_limit(min(self.config.retry_seconds, STORE_TIMEOUT)):
                self.parts.pages.save_crawl(self.parts.crawl_id, record)
        except ServiceUnavailable as exc:
            log.warning("could not keep the crawl's summary in MongoDB: %s", exc)

    def _flush_before_close(self) -> bool:
        """The last write: retried with backoff while MongoDB fails, for up to
        ``DEDUP_RETRY_SECONDS`` from when the failures began (at least a few seconds)."""
        if self.outage.overdue:
            return False  # given up already: the buffer is lost, named (not tried again)
        delay = 0.25
        started = time.monotonic()
        limit = None  # the first attempt's: the client's own, or the outage's
        while not self.flush(limit):
            if self.outage.failing & self.parts.given_up:
                return False  # a service the crawl has given up on already: not waited for
            since = self.outage.since or started
            deadline = since + max(self.config.retry_seconds, started + 5 - since)
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
            limit = deadline - time.monotonic()
        return True

    async def close_spider(self, spider: Any = None) -> None:
        for loop in (self._loop, self._record_loop):
            if loop is not None and loop.running:
                loop.stop()
        if not await maybe_deferred_to_future(deferToThread(self._flush_before_close)):
            self._give_up_if_overdue(now=True)
        stats = self.crawler.stats
        lost = self.state.lost
        if lost:
            shown = lost[:50]
            log.error("%d pages could not be decided or stored (they are crawled again by "
                      "the next crawl): %s%s", len(lost), ", ".join(shown),
                      f" ... and {len(lost) - len(shown)} more" if len(lost) > len(shown)
                      else "")
        summary = {k: v for k, v in sorted(stats.get_stats().items()) if k.startswith("dedup/")}
        log.info("dedup summary: %s", summary)
        self._save_crawl(summary)
        path = value("DEDUP_SUMMARY_FILE", self.crawler.settings.get)
        if path:
            keep = ("dedup/", "downloader/response_count", "robotstxt/response_count",
                    "item_scraped_count", "start_time")
            data = {k: v for k, v in stats.get_stats().items() if k.startswith(keep)}
            data["lost_urls"] = lost
            with open(path, "w", encoding="utf-8") as fh:  # noqa: ASYNC230 - once, at close
                json.dump(data, fh, default=str, indent=1)
        self.state.closed_cleanly = True
        self.parts.close()

