"""The crawl frontier: Scrapy's own (``SIMCRAWL_FRONTIER=memory``, the default) or one
frontier in Redis shared by every crawl process on the namespace (``redis``).

The shared frontier is scrapy-redis's scheduler, request dupefilter and priority queue,
configured by this adapter (it subclasses, never copies):

- keys under the crawl's namespace: ``{ns}:frontier:queue`` (a sorted set by priority),
  ``{ns}:frontier:seen`` (request fingerprints), ``{ns}:frontier:active:{owner}``;
- requests are stored as JSON (bytes as base64), never pickled: a shared store must not
  be a way to run code in every crawler;
- the queue persists when a process stops (``SCHEDULER_PERSIST`` would otherwise let the
  first process that stops flush everybody's queue);
- a shared crawl ends when the queue is empty and no live process has had work for
  ``SIMCRAWL_IDLE_SECONDS``; every process then exits by itself, and the last clears
  the frontier so that the next crawl on the namespace starts afresh.
  ``SIMCRAWL_KEEP_WAITING`` keeps processes waiting for work instead (a service).

Any number of ``scrapy crawl site ... -s SIMCRAWL_FRONTIER=redis`` processes, on any
machines, with the same ``REDIS_URL``, ``MONGO_URI``, namespace and start URLs, share one
crawl: every URL is requested once across them, and seeding by several processes is
harmless (the shared dupefilter sees the start URLs once).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import socket
import time
import uuid
from typing import Any

from scrapy import signals
from scrapy.core.scheduler import Scheduler as MemoryScheduler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.scheduler import Scheduler as RedisScheduler

log = logging.getLogger(__name__)

#: ``SIMCRAWL_FRONTIER`` values.
FRONTIERS = ("memory", "redis")

#: Seconds without work anywhere before a shared crawl ends (``SIMCRAWL_IDLE_SECONDS``).
IDLE_SECONDS = 10.0


# ------------------------------------------------------------------- serialization
def _plain(obj: Any) -> Any:
    """A request dict as JSON-able data: bytes tagged as base64, dicts whose keys are not
    all strings (headers) as tagged item lists, tuples as lists."""
    if isinstance(obj, bytes):
        return {"__b64__": base64.b64encode(obj).decode("ascii")}
    if isinstance(obj, dict):
        if all(isinstance(k, str) for k in obj):
            return {k: _plain(v) for k, v in obj.items()}
        return {"__items__": [[_plain(k), _plain(v)] for k, v in obj.items()]}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


def _unplain(obj: dict[str, Any]) -> Any:
    if set(obj) == {"__b64__"}:
        return base64.b64decode(obj["__b64__"])
    if set(obj) == {"__items__"}:
        return {k: v for k, v in obj["__items__"]}
    return obj


class JsonSerializer:
    """scrapy-redis's serializer interface (``dumps`` / ``loads`` of a request dict),
    in JSON: bytes (bodies, header names and values) travel as base64.

    >>> data = {"url": "https://a.example/", "body": b"x", "headers": {b"Referer": [b"r"]}}
    >>> JsonSerializer.loads(JsonSerializer.dumps(data)) == data
    True
    """

    @staticmethod
    def dumps(obj: Any) -> bytes:
        return json.dumps(_plain(obj), separators=(",", ":")).encode("utf-8")

    @staticmethod
    def loads(data: bytes | str) -> Any:
        return json.loads(data, object_hook=_unplain)


def frontier_keys(namespace: str) -> dict[str, str]:
    """The shared frontier's Redis keys for a namespace."""
    return {"queue": f"{namespace}:frontier:queue", "seen": f"{namespace}:frontier:seen",
            "active": f"{namespace}:frontier:active"}


# ------------------------------------------------------------------------ scheduler
class Scheduler(MemoryScheduler):
    """``SCHEDULER`` of simcrawl: Scrapy's scheduler (``SIMCRAWL_FRONTIER=memory``), or
    the shared frontier in Redis (``redis``), which :meth:`from_crawler` builds instead.

    Settings: SIMCRAWL_FRONTIER, REDIS_URL, DEDUP_NAMESPACE.
    """

    @classmethod
    def from_crawler(cls, crawler: Any) -> Any:
        if frontier_of(crawler.settings) == "redis":
            return SharedFrontier.from_crawler(crawler)
        return super().from_crawler(crawler)


def frontier_of(settings: Any) -> str:
    """``SIMCRAWL_FRONTIER``, checked.

    Raises:
        ValueError: not ``memory`` or ``redis``.
    """
    kind = str(settings.get("SIMCRAWL_FRONTIER") or "memory").strip().lower()
    if kind not in FRONTIERS:
        raise ValueError(f"SIMCRAWL_FRONTIER must be memory or redis, got {kind!r}")
    return kind


class SharedFrontier(RedisScheduler):
    """scrapy-redis's scheduler on the crawl's namespace (see the module docstring)."""

    owner: str = ""

    @classmethod
    def from_crawler(cls, crawler: Any) -> SharedFrontier:
        from crawler.runtime import get_runtime

        runtime = get_runtime(crawler)  # the services (embedded ones included)
        server = runtime.deduplicator.redis  # the index's server and client
        keys = frontier_keys(runtime.config.namespace)
        dupefilter = RFPDupeFilter(server, keys["seen"],
                                   debug=crawler.settings.getbool("DUPEFILTER_DEBUG"))
        scheduler = cls(server=server, persist=True, queue_key=keys["queue"],
                        queue_cls="scrapy_redis.queue.PriorityQueue", dupefilter=dupefilter,
                        dupefilter_key=keys["seen"], serializer=JsonSerializer)
        scheduler.stats = crawler.stats
        scheduler.owner = runtime.journal.owner if runtime.journal else uuid.uuid4().hex[:16]
        scheduler.active_key = f"{keys['active']}:{scheduler.owner}"
        scheduler.lease = runtime.journal.lease if runtime.journal else 30.0
        scheduler._active = False
        return scheduler

    def next_request(self) -> Any:
        if not self._active:  # say "I have work" before taking any, so no one ends early
            self.mark(True)
        return super().next_request()

    def mark(self, active: bool) -> None:
        """Publish whether this process has work (with the lease's expiry: a dead
        process stops counting as active)."""
        self._active = active
        host = f"{socket.gethostname()}:{os.getpid()}"
        if active:
            self.server.set(self.active_key, host, px=int(self.lease * 1000))
        else:
            self.server.delete(self.active_key)

    def others_active(self) -> bool:
        """Whether another live process has work."""
        prefix = self.active_key.rsplit(":", 1)[0]
        return any(k.decode() != self.active_key
                   for k in self.server.scan_iter(match=f"{prefix}:*", count=1000))

    def clear_frontier(self) -> None:
        """The crawl is complete: drop its queue and seen-set (the next crawl starts
        afresh)."""
        self.server.delete(self.queue.key, self.df.key)

    def close(self, reason: str) -> None:
        self.mark(False)
        super().close(reason)


class SharedCrawlEnd:
    """Ends a shared crawl when every process has run out of work (see the module
    docstring); keeps a process waiting with ``SIMCRAWL_KEEP_WAITING``.

    Settings: SIMCRAWL_FRONTIER, SIMCRAWL_IDLE_SECONDS, SIMCRAWL_KEEP_WAITING.
    """

    def __init__(self, crawler: Any, idle_seconds: float, keep_waiting: bool) -> None:
        self.crawler = crawler
        self.idle_seconds = idle_seconds
        self.keep_waiting = keep_waiting
        self._quiet_since: float | None = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> SharedCrawlEnd:
        if frontier_of(crawler.settings) != "redis":
            raise NotConfigured("SIMCRAWL_FRONTIER is memory")
        idle = crawler.settings.getfloat("SIMCRAWL_IDLE_SECONDS", IDLE_SECONDS)
        if idle < 0:
            raise ValueError(f"SIMCRAWL_IDLE_SECONDS must be at least 0, got {idle}")
        ext = cls(crawler, idle, crawler.settings.getbool("SIMCRAWL_KEEP_WAITING"))
        crawler.signals.connect(ext.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def _scheduler(self) -> SharedFrontier | None:
        engine = self.crawler.engine
        scheduler = getattr(getattr(engine, "_slot", None), "scheduler", None)
        return scheduler if isinstance(scheduler, SharedFrontier) else None

    def spider_idle(self, spider: Any = None) -> None:
        scheduler = self._scheduler()
        if scheduler is None:
            return
        if len(scheduler.queue):  # work is waiting: take it
            self._quiet_since = None
            raise DontCloseSpider
        if scheduler._active:
            scheduler.mark(False)
        now = time.monotonic()
        if scheduler.others_active() or self.keep_waiting:
            self._quiet_since = None
            raise DontCloseSpider
        if self._quiet_since is None:
            self._quiet_since = now
        if now - self._quiet_since < self.idle_seconds:
            raise DontCloseSpider
        self._finished = True  # the whole shared crawl is done
        log.info("the shared frontier has been empty, and every process idle, for %.0f s: "
                 "the crawl is complete", now - self._quiet_since)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        scheduler = self._scheduler()
        if scheduler is not None and reason == "finished" and getattr(self, "_finished", False):
            scheduler.clear_frontier()
