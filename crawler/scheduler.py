"""The ``SCHEDULER`` and the extension of a crawl's frontier (:mod:`crawler.frontier`):
Scrapy's own scheduler, or the shared frontier in Redis that the crawl's factory builds
(:func:`crawler.wiring.parts_of`), and the end of a shared crawl."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import Scheduler as MemoryScheduler
from scrapy.exceptions import DontCloseSpider, NotConfigured

from crawler.frontier import (
    POLL_SECONDS,
    READY,
    FrontierWaits,
    SharedFrontier,
    count_request,
    frontier_of,
)
from crawler.stopping import stop_crawl
from crawler.wiring import parts_of
from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


class Scheduler(MemoryScheduler):
    """``SCHEDULER`` of simcrawl: Scrapy's scheduler (``SIMCRAWL_FRONTIER=memory``), or
    the shared frontier in Redis (``redis``), which :meth:`from_crawler` builds instead.

    Settings: SIMCRAWL_FRONTIER, REDIS_URL, DEDUP_NAMESPACE.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        if frontier_of(crawler.settings) == "redis":  # built with the crawl's parts
            return parts_of(crawler).frontier
        return super().from_crawler(crawler)

    def next_request(self) -> Request | None:
        request = super().next_request()
        count_request(self.stats, request)
        return request


class SharedCrawlEnd:
    """Shares the work of a shared crawl and ends it when there is none left anywhere
    (see the module docstring); keeps a process waiting with ``SIMCRAWL_KEEP_WAITING``.

    Settings: SIMCRAWL_FRONTIER, SIMCRAWL_IDLE_SECONDS, SIMCRAWL_KEEP_WAITING.
    """

    def __init__(self, crawler: Crawler, frontier: SharedFrontier, idle_seconds: float,
                 keep_waiting: bool) -> None:
        self.crawler = crawler
        self.frontier = frontier
        self.idle_seconds = idle_seconds
        self.keep_waiting = keep_waiting
        self.idle = False  # the engine said it has nothing to do
        self._finished = False
        self._quiet_since: float | None = None
        self._poll: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedCrawlEnd:
        if frontier_of(crawler.settings) != "redis":
            raise NotConfigured("SIMCRAWL_FRONTIER is memory")
        idle = value("SIMCRAWL_IDLE_SECONDS", crawler.settings.get)
        if idle < 0:
            raise ValueError(f"SIMCRAWL_IDLE_SECONDS must be at least 0, got {idle}")
        ext = cls(crawler, parts_of(crawler).frontier, idle,
                  value("SIMCRAWL_KEEP_WAITING", crawler.settings.get))
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(ext.busy, signal=signals.response_received)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Any = None) -> None:
        from twisted.internet import task

        self._poll = task.LoopingCall(self.poll)
        self._poll.start(POLL_SECONDS, now=False)

    def busy(self, *args: Any, **kwargs: Any) -> None:
        self.idle = False

    def spider_idle(self, spider: Any = None) -> None:
        scheduler = self.frontier
        self.idle = True
        if self.keep_waiting or not self._complete(scheduler):
            raise DontCloseSpider  # the poll takes work as soon as there is some

    def poll(self) -> None:
        """While the engine has nothing to do: take work from the shared queue as soon
        as there is some (the engine then takes more itself), or end the crawl when
        there is none left anywhere."""
        scheduler = self.frontier
        if not self.idle or self._finished:
            return
        request = scheduler.next_request()
        if request is not None:
            request.meta[READY] = True
            self.idle = False
            engine = self.crawler.engine
            if engine is not None:
                engine.crawl(request)  # served by the scheduler, and wakes the engine
            return
        if not self.keep_waiting and self._complete(scheduler):
            stop_crawl(self.crawler, "finished")

    def _complete(self, scheduler: SharedFrontier) -> bool:
        """Whether nothing has been queued or in flight anywhere for ``idle_seconds``."""
        try:
            left = scheduler.work_left()
        except FrontierWaits:
            left = True  # Redis is out: nobody can tell
        now = time.monotonic()
        if left:
            self._quiet_since = None
            return False
        if self._quiet_since is None:
            self._quiet_since = now
        if now - self._quiet_since < self.idle_seconds:
            return False
        self._finished = True  # the whole shared crawl is done
        log.info("the shared frontier is empty and no process has a request in flight: "
                 "the crawl is complete")
        return True

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self._poll is not None and self._poll.running:
            self._poll.stop()
        scheduler = self.frontier
        if reason == "finished" and self._finished:
            try:
                scheduler.clear_frontier()
            except FrontierWaits:  # the next crawl finds a queue that is empty anyway
                log.warning("Redis did not answer: the finished crawl's seen-set stays")
