"""Storage of admitted pages, their fingerprints and the match records, in batches."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from scrapy.exceptions import DropItem
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.threads import deferToThread

from crawler.extensions import crawl_counters
from crawler.items import FrontierReceipt, MatchItem, PageItem
from crawler.steps import Outage, fingerprint_item, skip_reason, sleep, stop_crawl
from crawler.wiring import Parts, parts_of
from dedup.adapters.journal import lost_pages, withdraw
from dedup.adapters.mongo import (
    fingerprint_document,
    from_int64,
    match_doc,
    object_id,
    page_document,
)
from dedup.errors import ServiceUnavailable
from dedup.ids import new_page_id, url_key
from dedup.servers.services import process_alive

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


#: Seconds between two updates of a running crawl's ``crawls`` record
#: (``SIMCRAWL_RECORD_SECONDS``; 0 turns them off: the record is written at the end only).
RECORD_SECONDS = 5.0


#: The stat of pages stored without a decision (``DEDUP_ENABLED`` off).
UNDECIDED = "dedup/stored_undecided"


def summary_adds_up(summary: dict[str, Any]) -> bool:
    """Whether a crawl process's summary (``DEDUP_SUMMARY_FILE``) adds up: every request it
    took (``dedup/requests``) became a page decided (or stored undecided, with
    ``DEDUP_ENABLED`` off), a skip or a loss, once."""
    decided = sum(summary.get(k, 0) for k in ("dedup/unique", "dedup/near_duplicate",
                                               "dedup/exact_duplicate", "dedup/pinyin_copy",
                                               "dedup/revisit", UNDECIDED))
    skipped = sum(v for k, v in summary.items() if k.startswith("dedup/skipped/"))
    return bool(summary.get("dedup/requests", 0) == decided + skipped + summary.get(
        "dedup/lost/undecided", 0))


def failed_services(services: set[str], parts: Parts) -> str:
    """``Redis at URL``, ``MongoDB at URL`` or both, for the services in ``services``."""
    where = {"Redis": parts.redis_url, "MongoDB": parts.mongo_uri}
    return " and ".join(f"{name} at {where.get(name, '?')}" for name in sorted(services))


class StoragePipeline:
    """Write admitted pages (with their fingerprints) and match records to MongoDB.

    Documents are buffered and written by a worker thread every ``DEDUP_BATCH_SIZE``
    items or ``DEDUP_FLUSH_SECONDS``, so the crawl does not wait for MongoDB; one write
    runs at a time. Written pages are confirmed to the admission journal
    (:mod:`dedup.adapters.journal`). When MongoDB does not answer, the buffer is kept and the
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
        self.pages: list[dict[str, Any]] = []
        self.fingerprints: list[dict[str, Any]] = []
        self.matches: list[dict[str, Any]] = []
        self._lock = threading.Lock()  # guards the buffers
        self._flush_lock = threading.Lock()  # one write at a time
        self._loop: task.LoopingCall | None = None
        self._record_loop: task.LoopingCall | None = None
        self._unconfirmed: list[str] = []
        self.outage = Outage("writing pages", parts.config.retry_seconds, log)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> StoragePipeline:
        return cls(crawler, parts_of(crawler))

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
        every = self.crawler.settings.getfloat("SIMCRAWL_RECORD_SECONDS", RECORD_SECONDS)
        if every > 0:
            self._record_loop = task.LoopingCall(self._record_running)
            self._record_loop.start(every, now=True)

    def _crawl_record(self) -> dict[str, Any]:
        """What the ``crawls`` record says of this process, running or finished."""
        return {"started_at": self.crawler.stats.get_value("start_time"),
                "counters": crawl_counters(self.crawler),
                "pid": os.getpid(), "hostname": socket.gethostname(),
                "namespace": self.config.namespace}

    def _record_running(self) -> Any:
        """Rewrite this process's live record (counters taken here, in the reactor; the
        write in a thread). A failed write is only logged: the crawl goes on."""
        record = self._crawl_record()

        def write() -> None:
            try:
                self.parts.pages.save_crawl(self.parts.crawl_id, record, running=True)
            except ServiceUnavailable as exc:
                log.debug("could not update the crawl's live record: %s", exc)

        return deferToThread(write)

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        if isinstance(item, FrontierReceipt):  # every request of its page is queued
            self.state.settle_ids([item.inflight])
            raise DropItem("frontier receipt (not a page)", log_level="DEBUG")
        if isinstance(item, PageItem) and not item.decision:
            # DEDUP_ENABLED is off: store every page, fingerprinted, without deciding.
            reason = skip_reason(item, item.encoding is not None, self.config.max_body)
            if reason is None:
                reason = await fingerprint_item(item, self.parts.extractor)
            if reason is not None:
                self.crawler.stats.inc_value(f"dedup/skipped/{reason}")
                return item
            item.page_id, item.decision = new_page_id(), "new"
            item.body = b""
            self.crawler.stats.inc_value(UNDECIDED)
        if isinstance(item, PageItem) and item.decision == "new":
            with self._lock:
                self.pages.append(page_document(
                    item, store_text=self.config.store_text, status=item.status,
                    depth=item.depth, referer=item.referer, crawl_id=self.parts.crawl_id,
                    encoding=item.encoding))
                self.fingerprints.append(fingerprint_document(item, self.parts.pinyin_params))
        elif isinstance(item, MatchItem):
            evidence: dict[str, Any] = {"title": item.title, "fetched_at": item.fetched_at}
            if item.source:
                evidence["source"] = item.source
            if item.pinyin:
                evidence["pinyin"] = item.pinyin
            if item.containment is not None:
                evidence["containment"] = item.containment
            if item.canonical_link:
                evidence["canonical_link"] = item.canonical_link
            if item.checksum:
                evidence["checksum"] = item.checksum
            if item.rules:
                evidence["rules"], evidence["claimant"] = item.rules, item.claimant
            if item.kind == "excerpt":
                evidence["characters"] = item.characters
                evidence["span"] = list(item.span or (0, 0))
                evidence["page_id"] = object_id(item.page_id or "")
            cap = self.config.match_text
            if cap and item.text and item.kind != "excerpt":  # the copy's text, to show it beside its original
                evidence["text"] = item.text[:cap]
                if len(item.text) > cap:
                    evidence["text_truncated"] = True
            with self._lock:
                self.matches.append(match_doc(
                    url=item.url, host=item.host, original_id=item.original_id,
                    original_url=item.original_url, original_host=item.original_host,
                    distance=item.distance, kind=item.kind,
                    outlinks_dropped=item.outlinks_dropped, crawl_id=self.parts.crawl_id,
                    **evidence))
        if len(self.pages) + len(self.matches) >= self.config.batch_size:
            await self._flush_or_wait()
        if isinstance(item, (PageItem, MatchItem)) and \
                not getattr(self.crawler.spider, "yields_pages", False):
            # a project's spider under the add-on: simcrawl's records are kept in MongoDB,
            # not handed on to the project's pipelines and feeds with its own items
            raise DropItem("kept by simcrawl", log_level="DEBUG")
        return item

    async def _flush_or_wait(self) -> None:
        """Write the buffer; while MongoDB fails, hold the crawl here (backoff) until it
        answers or ``DEDUP_RETRY_SECONDS`` have passed (then the buffer is lost)."""
        delay = 0.25
        while not await maybe_deferred_to_future(deferToThread(self.flush)):
            if self._give_up_if_overdue():
                return
            await sleep(delay)
            delay = min(delay * 2, 8.0)

    def _give_up_if_overdue(self) -> bool:
        outage = self.outage
        if outage.since is None or outage.lasted < self.config.retry_seconds:
            return False
        with self._lock:
            pages, matches = self.pages, self.matches
            self.pages, self.fingerprints, self.matches = [], [], []
        if pages or matches:
            self.state.lost.extend(str(d["url"]) for d in [*pages, *matches])
            self.state.abandon(str(d["url"]) for d in pages)  # their links stay unqueued
            self.crawler.stats.inc_value("dedup/lost/pages", len(pages))
            self.crawler.stats.inc_value("dedup/lost/matches", len(matches))
            failed = failed_services(outage.failing, self.parts)
            log.error("%s %s failed for %.0f s (DEDUP_RETRY_SECONDS): %d pages and %d match "
                      "records are lost; stopping the crawl", failed,
                      "have" if " and " in failed else "has", outage.lasted,
                      len(pages), len(matches))
            stop_crawl(self.crawler, "store_unavailable")
        return True

    def _flush_in_thread(self) -> Any:
        return deferToThread(self.flush)

    def flush(self) -> bool:
        """Write everything buffered (called in a worker thread; one write at a time).

        Returns:
            Whether the buffer is written (``False``: MongoDB failed; the buffer is kept
            for the next attempt).
        """
        with self._flush_lock:
            with self._lock:
                pages, fps, matches = self.pages, self.fingerprints, self.matches
                self.pages, self.fingerprints, self.matches = [], [], []
            try:
                pages, fps = self._fence(pages, fps)
            except ServiceUnavailable as exc:
                ok = False
                self.outage.failed(exc, "Redis", said=(
                    "checking this process's admitted pages against the recoveries failed "
                    f"(its lease is in doubt); retrying: {exc}"))
            else:
                ok = not (pages or matches) or self._write(pages, fps, matches)
            if not ok:
                with self._lock:  # keep them for the next attempt
                    self.pages[:0], self.fingerprints[:0] = pages, fps
                    self.matches[:0] = matches
                return False
            try:  # a recovery that ran while they were being written
                self._fence(pages, fps, stored=True)
            except ServiceUnavailable as exc:
                log.debug("checking stored pages against the recoveries failed: %s", exc)
            self._confirm([str(p["_id"]) for p in pages])
            self._release(fps)
            self.state.settle([str(d["url"]) for d in [*pages, *matches]])
            return True

    def _write(self, pages: list[dict[str, Any]], fps: list[dict[str, Any]],
               matches: list[dict[str, Any]]) -> bool:
        store = self.parts.pages
        try:
            store.save_pages(pages, fps)
            # a page an earlier crawl recorded as a copy, admitted now that it changed,
            # is not a copy any more: one verdict per URL
            store.forget_copies(str(p["url"]) for p in pages)
            unnamed = {str(m["original_id"]) for m in matches if not m.get("original_url")}
            if unnamed:
                named = store.urls_of(unnamed)
                for m in matches:
                    if not m.get("original_url") and str(m["original_id"]) in named:
                        url, host, source = named[str(m["original_id"])]
                        m["original_url"], m["original_host"] = url, host
                        if source:
                            m["source"] = source
            # a link the URL rules predicted a copy, fetched after all (a rule dropped)
            # and stored in this same write: the page is the verdict
            admitted = {str(p["url"]) for p in pages}
            matches = [m for m in matches if m["kind"] != "url_rule" or m["url"] not in admitted]
            excerpts = [m for m in matches if m["kind"] == "excerpt"]
            matches = self._without_lost_originals([m for m in matches
                                                    if m["kind"] != "excerpt"])
            matches = self._without_self_copies(matches)
            store.save_matches(matches)
            store.save_excerpts(excerpts)
        except ServiceUnavailable as exc:
            self.crawler.stats.inc_value("dedup/retries/store")
            self.outage.failed(exc, "MongoDB", said=(
                f"writing {len(pages)} pages and {len(matches)} match records failed; "
                f"retrying for up to {self.config.retry_seconds:.0f} s "
                f"(DEDUP_RETRY_SECONDS): {exc}"))
            return False
        self.outage.answered("the buffered records are written")
        self.crawler.stats.inc_value("dedup/stored/pages", len(pages))
        self.crawler.stats.inc_value("dedup/stored/matches", len(matches))
        if excerpts:
            self.crawler.stats.inc_value("dedup/stored/excerpts", len(excerpts))
        return True

    def _save_crawl(self, summary: dict[str, Any]) -> None:
        """This process's summary in the store's ``crawls`` collection (for reports)."""
        import datetime as dt

        record = dict(self._crawl_record(), finished_at=dt.datetime.now(dt.timezone.utc),
                      stats={k.replace(".", "_"): v for k, v in summary.items()},
                      skipped_per_minute=dict(sorted(self.state.skips_per_minute.items())))
        try:
            self.parts.pages.save_crawl(self.parts.crawl_id, record)
        except ServiceUnavailable as exc:
            log.warning("could not keep the crawl's summary in MongoDB: %s", exc)

    def _without_self_copies(self, matches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A page is never a copy of itself. A copy decided against a page that another
        process had admitted and not stored yet, whose URL the decision could not read,
        is named only here; when that page is the same URL (its request was fetched
        twice: put back by a recovery while the first fetch was still being stored), the
        URL is stored already and the record is not written (counted in ``dedup/self_copies_dropped``)."""
        own = [m for m in matches if m.get("original_url")
               and url_key(str(m["original_url"])) == url_key(str(m["url"]))]
        if not own:
            return matches
        self.crawler.stats.inc_value("dedup/self_copies_dropped", len(own))
        return [m for m in matches if not any(m is o for o in own)]

    def _without_lost_originals(self, matches: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Match records naming a page a recovery removed (its process died before storing
        it) are not written: their copies are queued to be decided again."""
        lost = lost_pages(self.parts.client, self.config.namespace,
                          [str(m["original_id"]) for m in matches])
        if not lost:
            return matches
        again = [m for m in matches if str(m["original_id"]) in lost]
        self.state.recovered_copies.extend(str(m["url"]) for m in again)
        self.state.settle(str(m["url"]) for m in again)
        self.crawler.stats.inc_value("dedup/requeued/copies_of_lost_pages", len(again))
        return [m for m in matches if str(m["original_id"]) not in lost]

    def _fence(self, pages: list[dict[str, Any]], fps: list[dict[str, Any]],
               stored: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Pages this process admitted that a recovery has since removed (it took this
        process for dead: frozen, or cut off from Redis, for longer than its lease) are
        withdrawn, not stored (``stored``: after they were written, for a recovery that
        ran meanwhile): out of the index, whatever is stored of them deleted, their links
        never followed; the requests the recovery put back fetch them again. Checked only
        while the journal's lease is in doubt. Returns the pages and fingerprints to
        keep.

        Raises:
            ServiceUnavailable: Redis or MongoDB failed.
        """
        journal = self.parts.journal
        if journal is None or not pages or not journal.in_doubt():
            return pages, fps
        client, namespace = self.parts.client, self.config.namespace
        gone = lost_pages(client, namespace, [str(p["_id"]) for p in pages])
        if not gone:
            return pages, fps
        found = {str(d["_id"]): (from_int64(d["simhash"]), str(d.get("checksum", "")))
                 for d in fps if str(d["_id"]) in gone}
        copies = withdraw(client, namespace, self.parts.pages, self.parts.index,
                          {pid: found.get(pid) for pid in gone})
        self.state.recovered_copies.extend(copies)  # their records named a withdrawn page
        self.state.settle(copies)
        urls = [str(p["url"]) for p in pages if str(p["_id"]) in gone]
        self.state.abandon(urls)
        self.crawler.stats.inc_value("dedup/withdrawn/pages", len(gone))
        log.warning("withdrew %d pages this process admitted%s: a recovery removed them "
                    "while this process was taken for dead (it did not run for longer "
                    "than its lease); they are fetched again: %s", len(gone),
                    " and stored" if stored else "", ", ".join(urls[:5]))
        return ([p for p in pages if str(p["_id"]) not in gone],
                [d for d in fps if str(d["_id"]) not in gone])

    def _release(self, fps: list[dict[str, Any]]) -> None:
        """The stored pages' text sketches leave Redis where the index's layout says so
        (MongoDB holds them now, and a decision that meets one of these pages reads it
        there); kept in Redis if Redis does not answer (it costs memory, not a
        decision)."""
        index = self.parts.index
        if not index.layout.release_sketches:
            return
        rows = [(from_int64(d["simhash"]), str(d["_id"])) for d in fps
                if d.get("sketch") and not d.get("short")]
        try:
            index.release(rows)
        except ServiceUnavailable as exc:
            log.warning("%d stored pages' text sketches stay in Redis: %s", len(rows), exc)

    def _confirm(self, page_ids: list[str]) -> None:
        journal = self.parts.journal
        if journal is None:
            return
        ids, self._unconfirmed = self._unconfirmed + page_ids, []
        try:
            journal.confirm(ids)
        except ServiceUnavailable as exc:  # stored all the same; confirmed next time
            self._unconfirmed = ids
            log.debug("confirming %d stored pages to the journal failed: %s", len(ids), exc)

    def _flush_before_close(self) -> bool:
        """The last write: retried with backoff while MongoDB fails, for up to
        ``DEDUP_RETRY_SECONDS`` from when the failures began (at least a few seconds)."""
        delay = 0.25
        started = time.monotonic()
        while not self.flush():
            since = self.outage.since or started
            if time.monotonic() - since >= max(self.config.retry_seconds,
                                               started + 5 - since):
                return False
            time.sleep(delay)
            delay = min(delay * 2, 8.0)
        return True

    async def close_spider(self, spider: Any = None) -> None:
        for loop in (self._loop, self._record_loop):
            if loop is not None and loop.running:
                loop.stop()
        if not await maybe_deferred_to_future(deferToThread(self._flush_before_close)):
            self._give_up_if_overdue()
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
        path = self.crawler.settings.get("DEDUP_SUMMARY_FILE")
        if path:
            keep = ("dedup/", "downloader/response_count", "robotstxt/response_count",
                    "item_scraped_count", "start_time")
            data = {k: v for k, v in stats.get_stats().items() if k.startswith(keep)}
            data["lost_urls"] = lost
            with open(path, "w", encoding="utf-8") as fh:  # noqa: ASYNC230 - once, at close
                json.dump(data, fh, default=str, indent=1)
        self.state.closed_cleanly = True
        self.parts.close()

