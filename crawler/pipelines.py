"""Storage of admitted pages, their fingerprints and the match records, in batches."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.threads import deferToThread

from crawler.items import MatchItem, PageItem
from crawler.middlewares import fingerprint_item, skip_reason
from crawler.runtime import Runtime, get_runtime
from dedup.store import fingerprint_doc, match_doc, new_page_id, pinyin_doc, to_int64

log = logging.getLogger(__name__)

ALGORITHM = "simhash64-xxh3"


class StoragePipeline:
    """Write admitted pages (with their fingerprints) and match records to MongoDB.

    Documents are buffered and written by a worker thread every ``DEDUP_BATCH_SIZE``
    items or ``DEDUP_FLUSH_SECONDS``, so the crawl does not wait for MongoDB. Everything
    buffered is written when the spider closes.
    """

    def __init__(self, crawler: Any, runtime: Runtime) -> None:
        self.crawler = crawler
        self.runtime = runtime
        self.config = runtime.config
        self.pages: list[dict[str, Any]] = []
        self.fingerprints: list[dict[str, Any]] = []
        self.matches: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> StoragePipeline:
        return cls(crawler, get_runtime(crawler))

    def open_spider(self, spider: Any = None) -> None:
        self._loop = task.LoopingCall(self._flush_in_thread)
        self._loop.start(self.config.flush_seconds, now=False)

    async def process_item(self, item: Any, spider: Any = None) -> Any:
        if isinstance(item, PageItem) and not item.decision:
            # DEDUP_ENABLED is off: store every page, fingerprinted, without deciding.
            reason = skip_reason(item, item.encoding is not None)
            if reason is None:
                reason = await fingerprint_item(item, self.runtime.extractor)
            if reason is not None:
                self.crawler.stats.inc_value(f"dedup/skipped/{reason}")
                return item
            item.page_id, item.decision = new_page_id(), "new"
            item.body = b""
        if isinstance(item, PageItem) and item.decision == "new":
            fields = {"status": item.status, "title": item.title, "language": item.language,
                      "fetched_at": item.fetched_at, "depth": item.depth,
                      "referer": item.referer, "text_length": len(item.text),
                      "extraction": item.extraction, "crawl_id": self.runtime.crawl_id,
                      "encoding": item.encoding}
            if self.config.store_text:
                fields["text"] = item.text
            with self._lock:
                self.pages.append({"_id": item.page_id, "url": item.url, "host": item.host,
                                   "checksum": item.checksum, **fields})
                extra: dict[str, Any] = {}
                if item.verify is not None:
                    extra["simhash2"] = to_int64(item.verify)
                if item.pinyin is not None and item.pinyin.codes:
                    extra["pinyin"] = pinyin_doc(item.pinyin, self.runtime.pinyin_params)
                self.fingerprints.append(fingerprint_doc(
                    item.page_id or "", item.simhash, checksum=item.checksum,
                    tokens=item.tokens, short=item.short, algorithm=ALGORITHM, **extra))
        elif isinstance(item, MatchItem):
            evidence: dict[str, Any] = {"title": item.title, "fetched_at": item.fetched_at}
            if item.source:
                evidence["source"] = item.source
            if item.pinyin:
                evidence["pinyin"] = item.pinyin
            with self._lock:
                self.matches.append(match_doc(
                    url=item.url, host=item.host, original_id=item.original_id,
                    original_url=item.original_url, original_host=item.original_host,
                    distance=item.distance, kind=item.kind,
                    outlinks_dropped=item.outlinks_dropped, crawl_id=self.runtime.crawl_id,
                    **evidence))
        if len(self.pages) + len(self.matches) >= self.config.batch_size:
            await maybe_deferred_to_future(deferToThread(self.flush))
        return item

    def _flush_in_thread(self) -> Any:
        return deferToThread(self.flush)

    def flush(self) -> None:
        """Write everything buffered (called in a worker thread)."""
        with self._lock:
            pages, fps, matches = self.pages, self.fingerprints, self.matches
            self.pages, self.fingerprints, self.matches = [], [], []
        if not (pages or matches):
            return
        store = self.runtime.pages
        try:
            store.save_pages(pages, fps)
            unnamed = {str(m["original_id"]) for m in matches if not m.get("original_url")}
            if unnamed:
                named = store.urls_of(unnamed)
                for m in matches:
                    if not m.get("original_url") and str(m["original_id"]) in named:
                        url, host, source = named[str(m["original_id"])]
                        m["original_url"], m["original_host"] = url, host
                        if source:
                            m["source"] = source
            store.save_matches(matches)
        except Exception:
            with self._lock:  # keep them for the next attempt: nothing is lost silently
                self.pages[:0], self.fingerprints[:0], self.matches[:0] = pages, fps, matches
            log.exception("writing %d pages and %d matches to %s failed; will retry",
                          len(pages), len(matches), self.runtime.mongo_uri)
            return
        self.crawler.stats.inc_value("dedup/stored/pages", len(pages))
        self.crawler.stats.inc_value("dedup/stored/matches", len(matches))

    async def close_spider(self, spider: Any = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        await maybe_deferred_to_future(deferToThread(self.flush))
        if self.pages or self.matches:
            log.error("%d pages and %d matches could not be written to %s",
                      len(self.pages), len(self.matches), self.runtime.mongo_uri)
        stats = self.crawler.stats.get_stats()
        summary = {k: v for k, v in sorted(stats.items()) if k.startswith("dedup/")}
        log.info("dedup summary: %s", summary)
        path = self.crawler.settings.get("DEDUP_SUMMARY_FILE")
        if path:
            keep = ("dedup/", "downloader/response_count", "item_scraped_count", "start_time")
            with open(path, "w", encoding="utf-8") as fh:  # noqa: ASYNC230 - once, at close
                json.dump({k: v for k, v in stats.items() if k.startswith(keep)}, fh,
                          default=str, indent=1)
        self.runtime.close()
