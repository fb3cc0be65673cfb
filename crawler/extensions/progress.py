"""A crawl process's counters (:func:`crawl_counters`) and the file that shows them to
another process (:class:`ProgressFile`)."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


def crawl_counters(crawler: Crawler) -> dict[str, Any]:
    """A crawl process's counters now, from its Scrapy stats: fetched, admitted, dropped,
    revisits, skipped, lost, queue length (-1: unknown) and seconds since it started (and
    for ``simcrawl warc``, the bytes of its files read and their size). What
    the live display, the progress file and the ``crawls`` record of a running crawl show."""
    stats = crawler.stats.get_stats()
    started = stats.get("start_time")
    elapsed = (dt.datetime.now(dt.timezone.utc) - started).total_seconds() \
        if isinstance(started, dt.datetime) else 0.0
    try:  # the engine and its scheduler exist once the crawl has started
        scheduler = crawler.engine.scheduler
    except RuntimeError:
        scheduler = None
    try:
        queue = len(scheduler) if scheduler is not None else 0
    except Exception:  # noqa: BLE001 - a queue that cannot say (Redis down): unknown
        queue = -1

    def total(prefix: str) -> int:
        return int(sum(v for k, v in stats.items() if k.startswith(prefix)
                       and isinstance(v, (int, float))))

    archive = {"archive_read": int(stats["dedup/warc/bytes_read"]),
               "archive_total": int(stats["dedup/warc/bytes_total"])} \
        if "dedup/warc/bytes_total" in stats and "dedup/warc/bytes_read" in stats else {}
    from crawler.wiring import built_parts

    parts = built_parts(crawler)
    waiting = {"disk_full": parts.state.disk_full} \
        if parts is not None and parts.state.disk_full else {}
    return {**archive, **waiting, "fetched": int(stats.get("downloader/response_count", 0)),
            "admitted": int(stats.get("dedup/unique", 0)),
            "dropped": sum(int(stats.get(f"dedup/{k}", 0)) for k in (
                "near_duplicate", "exact_duplicate", "pinyin_copy")),
            "revisits": int(stats.get("dedup/revisit", 0)),
            "skipped": total("dedup/skipped/"), "lost": total("dedup/lost/"),
            "queue": queue, "elapsed": round(elapsed, 1)}




class ProgressFile:
    """Write the crawl's counters to a JSON file every few seconds, for a display in
    another process (``./simcrawl`` combines its crawl processes' files into one live
    line): fetched, admitted, dropped, skipped, lost, queue length, elapsed seconds.

    The file is replaced atomically, so a reader never sees half of it.

    Settings: SIMCRAWL_PROGRESS_FILE (off without it), SIMCRAWL_PROGRESS_SECONDS.
    """

    def __init__(self, crawler: Crawler, path: Path, interval: float) -> None:
        self.crawler = crawler
        self.path = path
        self.interval = interval
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ProgressFile:
        path = value("SIMCRAWL_PROGRESS_FILE", crawler.settings.get)
        if not path:
            raise NotConfigured("no SIMCRAWL_PROGRESS_FILE")
        interval = value("SIMCRAWL_PROGRESS_SECONDS", crawler.settings.get)
        if interval <= 0:
            raise ValueError(f"SIMCRAWL_PROGRESS_SECONDS must be positive, got {interval}")
        ext = cls(crawler, Path(path), interval)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Any = None) -> None:
        from twisted.internet import task

        self._loop = task.LoopingCall(self.write)
        self._loop.start(self.interval, now=True)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.write(done=True)

    def snapshot(self) -> dict[str, Any]:
        """The counters now."""
        return crawl_counters(self.crawler)

    def write(self, done: bool = False) -> None:
        """Replace the file with the counters now."""
        data = dict(self.snapshot(), done=done)
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:  # the owner's only, as everything simcrawl writes of a crawl
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write(json.dumps(data))
            tmp.replace(self.path)
        except OSError as exc:  # the display is a nicety: never stop the crawl for it
            log.debug("writing the progress file %s failed: %s", self.path, exc)
