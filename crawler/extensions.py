"""Scrapy extensions of the crawler."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.extensions.throttle import AutoThrottle

from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: The marker a running job keeps in its ``JOBDIR``.
RUNNING = "simcrawl.running"

#: A request's meta key: its download was cut by a stop (:class:`PutBackOnStop`).
CUT = "simcrawl_cut"


class JobGuard:
    """Resume only jobs that closed cleanly; re-seed the others.

    Scrapy saves a ``JOBDIR``'s request queue when the crawl closes gracefully (one
    Ctrl-C, SIGTERM), but it writes the seen-requests file as it goes. After a forced
    shutdown (a second Ctrl-C) or a kill, the queue is lost while every queued URL is
    marked seen, so a resume would crawl nothing and end "finished". This extension keeps
    a marker in the ``JOBDIR`` while a crawl runs; a crawl that finds it knows the
    previous one did not close cleanly, logs so, and drops the stale queue and
    seen-requests file: the job starts again from its start URLs (pages stored already
    are revisits, copies are decided again, nothing is stored twice).

    Settings: ``JOBDIR`` (off without it).
    """

    def __init__(self, jobdir: Path) -> None:
        self.jobdir = jobdir
        self.marker = jobdir / RUNNING
        if self.marker.exists():
            stale = [p for p in (jobdir / "requests.seen", jobdir / "requests.queue")
                     if p.exists()]
            log.warning("JOBDIR %s did not close cleanly (a forced shutdown or a kill): its "
                        "request queue is lost; re-seeding the job from its start URLs "
                        "(pages stored already count as revisits)", jobdir)
            for path in stale:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        jobdir.mkdir(parents=True, exist_ok=True)
        self.marker.write_text("a crawl runs (or ran and did not close cleanly)\n")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JobGuard:
        jobdir = crawler.settings.get("JOBDIR")
        if not jobdir:
            raise NotConfigured("no JOBDIR")
        guard = cls(Path(jobdir))
        crawler.signals.connect(guard.spider_closed, signal=signals.spider_closed)
        return guard

    def spider_closed(self, spider: Any, reason: str) -> None:
        """The queue is saved after this (scheduler close): the job can be resumed."""
        self.marker.unlink(missing_ok=True)


class PutBackOnStop:
    """On the first Ctrl-C or SIGTERM, the requests waiting in the downloader's queues are
    put back instead of sent.

    Scrapy's graceful stop fetches every request the engine has handed to the downloader:
    with a download delay or AutoThrottle spacing a host's requests, up to
    ``CONCURRENT_REQUESTS`` of them wait there, and the stop took their delays one after
    another (18 s on a small site, minutes at AutoThrottle's delays on a slow one). Once
    the engine stops running (a stop: a crawl that ends by itself has nothing waiting),
    each waiting request is failed with :class:`crawler.steps.PutBack` before it is sent,
    and queued again in Scrapy's scheduler (``dont_filter``: it was seen, never fetched),
    whose ``JOBDIR`` saves it for the next run; in a shared frontier it stays in flight
    and is recovered from this process as any request in flight is. The requests being
    downloaded finish, for half of ``SIMCRAWL_STOP_SECONDS`` (30 s by default): a download
    still running then (a body that drips in a byte a second kept a stop for minutes) is
    cut at its next bytes (Scrapy's :class:`~scrapy.exceptions.StopDownload`) and put back
    the same way (:class:`crawler.middlewares.cut_downloads.CutDownloads` turns its failure into a
    :class:`crawler.steps.PutBack`); the other half is the crawl's, to decide and store
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

        from crawler.steps import PutBack

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



#: Statuses whose latency says how fast the server answers, as a 200's does: redirects and
#: client errors but 429 (:class:`Throttle`).
LIKE_200 = frozenset([*range(200, 429), *range(430, 500)])


class Throttle(AutoThrottle):
    """Scrapy's AutoThrottle, except for what a response that is not a 200 says about the
    server (enabled by ``AUTOTHROTTLE_ENABLED``, in the place of Scrapy's).

    Scrapy lets such a response raise the delay but never lower it, since error pages are
    small and quick. On a site whose links are mostly missing pages that pins the delay at
    its start value: a crawl of such a site ran at about 3 requests a second however fast
    the server answered. Here a redirect or a client error (4xx but 429) is evidence like
    a 200: the server computed and sent it as fast as it answers anything. Only 429 (too
    many requests) and server errors (5xx) keep Scrapy's rule, as signs of load.
    ``SIMCRAWL_THROTTLE_SCRAPY_RULE = True`` keeps Scrapy's rule for every status.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.scrapy_rule = value("SIMCRAWL_THROTTLE_SCRAPY_RULE", crawler.settings.get)

    def _adjust_delay(self, slot: Any, latency: float, response: Any) -> None:
        if self.scrapy_rule or response.status not in LIKE_200:
            super()._adjust_delay(slot, latency, response)
            return
        target = latency / self.target_concurrency  # Scrapy's policy for a 200
        delay = max(target, (slot.delay + target) / 2.0)
        slot.delay = min(max(self.mindelay, delay), self.maxdelay)
