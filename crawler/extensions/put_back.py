"""The first stop puts back what waits to be sent and cuts what downloads too long
(:class:`PutBackOnStop`)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from scrapy import signals

from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: A request's meta key: its download was cut by a stop (:class:`PutBackOnStop`).
CUT = "simcrawl_cut"


class PutBackOnStop:
    """On the first Ctrl-C or SIGTERM, the requests waiting in the downloader's queues are
    put back instead of sent.

    Scrapy's graceful stop fetches every request the engine has handed to the downloader:
    with a download delay or AutoThrottle spacing a host's requests, up to
    ``CONCURRENT_REQUESTS`` of them wait there, and the stop took their delays one after
    another (18 s on a small site, minutes at AutoThrottle's delays on a slow one). Once
    the engine stops running (a stop: a crawl that ends by itself has nothing waiting),
    each waiting request is failed with :class:`crawler.stopping.PutBack` before it is sent,
    and queued again in Scrapy's scheduler (``dont_filter``: it was seen, never fetched),
    whose ``JOBDIR`` saves it for the next run; in a shared frontier it stays in flight
    and is recovered from this process as any request in flight is. The requests being
    downloaded finish, for half of ``SIMCRAWL_STOP_SECONDS`` (30 s by default): a download
    still running then (a body that drips in a byte a second kept a stop for minutes) is
    cut at its next bytes (Scrapy's :class:`~scrapy.exceptions.StopDownload`) and put back
    the same way (:class:`crawler.middlewares.cut_downloads.CutDownloads` turns its failure into a
    :class:`crawler.stopping.PutBack`); the other half is the crawl's, to decide and store
    what it fetched. A server that sends nothing at all is left to Scrapy's
    ``DOWNLOAD_TIMEOUT``, and to the command, which forces a crawl out past
    ``SIMCRAWL_STOP_SECONDS``. Counted in ``dedup/put_back``.
    """

    #: Seconds between two looks at whether the engine stopped.
    LOOK_SECONDS = 0.2

    def __init__(self, crawler: Crawler) -> None:
        from crawler.run import stop_seconds

        self.crawler = crawler
        self._loop: Any = None
        self._said = False
        self.requeue = value("SIMCRAWL_FRONTIER", crawler.settings.get) != "redis"
        #: seconds after the stop began at which downloads still running are cut
        self.cut_after = stop_seconds(crawler.settings.get) / 2
        self._stopping_since: float | None = None
        self._cutting = False
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)
        crawler.signals.connect(self.received, signal=signals.headers_received)
        crawler.signals.connect(self.received, signal=signals.bytes_received)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PutBackOnStop:
        return cls(crawler)

    def opened(self, spider: Any = None) -> None:
        from twisted.internet.task import LoopingCall

        self._loop = LoopingCall(self._look)
        self._loop.start(self.LOOK_SECONDS, now=False)

    def closed(self, spider: Any = None, reason: str = "") -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def _look(self) -> None:
        engine = self.crawler.engine
        if engine is None or engine.running or engine.spider is None:
            return
        # stopping: what waits now, and what comes to wait until the spider closes (a
        # page whose robots.txt was being fetched)
        self.put_back(engine)
        now = time.monotonic()
        if self._stopping_since is None:
            self._stopping_since = now
        elif not self._cutting and now - self._stopping_since >= self.cut_after:
            running = sum(len(slot.transferring) for slot in
                          getattr(engine.downloader, "slots", {}).values())
            self._cutting = True
            if running:
                log.info("stopping: %d downloads still running after %.0f s (half of "
                         "SIMCRAWL_STOP_SECONDS) are cut at their next bytes and put back",
                         running, self.cut_after)

    def received(self, request: Any = None, **kwargs: Any) -> None:
        """A download's headers or bytes came: past the bound of a stop, it is cut here
        and put back (a robots.txt is left to go: pages wait on it)."""
        if not self._cutting or request is None:
            return
        from scrapy.exceptions import StopDownload
        from scrapy.http.request import NO_CALLBACK

        if request.callback is NO_CALLBACK or request.meta.get(CUT):
            return
        request.meta[CUT] = True
        self._queue_again([request])
        self._named([request], "its download cut")
        raise StopDownload(fail=True)

    def _queue_again(self, requests: list[Any]) -> None:
        """Queue requests again in Scrapy's scheduler (``JOBDIR`` keeps them; a shared
        frontier recovers them from this process's requests in flight), and count them."""
        engine = self.crawler.engine
        scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
        if self.requeue and scheduler is not None:
            for request in requests:
                scheduler.enqueue_request(request.replace(dont_filter=True))
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("dedup/put_back", len(requests))

    def put_back(self, engine: Any) -> int:
        """Fail the requests waiting in the downloader's slots and queue them again;
        returns how many. A request of the crawl's own machinery (a robots.txt, which
        Scrapy's middleware sends without a callback) is left to go: pages wait on it."""
        from scrapy.http.request import NO_CALLBACK
        from twisted.python.failure import Failure

        from crawler.stopping import PutBack

        waiting = []
        for slot in list(getattr(engine.downloader, "slots", {}).values()):
            kept = [(r, d) for r, d in slot.queue if r.callback is NO_CALLBACK]
            waiting += [(r, d) for r, d in slot.queue if r.callback is not NO_CALLBACK]
            slot.queue.clear()
            slot.queue.extend(kept)
        if not waiting:
            return 0
        self._queue_again([r for r, _ in waiting])
        self._named([r for r, _ in waiting], "not sent")
        for request, deferred in waiting:
            deferred.errback(Failure(PutBack(f"put back: {request.url}")))
        (log.debug if self._said else log.info)(
            "stopping: %d requests waiting for their download delay put back, not sent%s",
            len(waiting), " (JOBDIR keeps them)" if self.requeue and
            self.crawler.settings.get("JOBDIR") else "")
        self._said = True
        return len(waiting)

    def _named(self, requests: list[Any], how: str) -> None:
        """Each request put back, named in the log (a stop puts back at most what the
        downloader held: ``CONCURRENT_REQUESTS`` and its slots' queues)."""
        for request in requests:
            log.info("put back (%s): %s", how, request.url)
