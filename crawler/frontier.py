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
- a request taken from the queue is recorded, in the same atomic step, as in flight in
  ``{ns}:frontier:inflight:{owner}``, and settled once its outcome is durable (its page or
  match record stored, or the page skipped, failed, revisited or redirected); a process
  opening the frontier, and every few seconds after, repairs what processes that died
  (their lease, the admission journal's, is gone) left: the pages they admitted but
  never stored leave the index, copies recorded against those pages are queued again,
  and so are the requests they had in flight; so a SIGKILL loses no URL;
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
import hashlib
import json
import logging
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import Scheduler as MemoryScheduler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.utils.request import request_from_dict
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from crawler.wiring import frontier_of, wiring_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

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
    """The shared frontier's Redis keys for a namespace (``active`` and ``inflight`` are
    prefixes: one key per process)."""
    return {"queue": f"{namespace}:frontier:queue", "seen": f"{namespace}:frontier:seen",
            "active": f"{namespace}:frontier:active",
            "inflight": f"{namespace}:frontier:inflight"}


# Take the best request and record it as in flight, in one step (a kill in between
# would otherwise lose it): KEYS = queue, in-flight hash.
_POP = """
local m = redis.call('ZRANGE', KEYS[1], 0, 0)
if #m == 0 then return false end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
redis.call('HSET', KEYS[2], redis.sha1hex(m[1]), m[1])
return m[1]
"""

# Move an in-flight hash back into the queue, each request at its own priority, in one
# step: KEYS = queue, in-flight hash.
_REQUEUE = """
local members = redis.call('HVALS', KEYS[2])
for _, m in ipairs(members) do
  local ok, r = pcall(cjson.decode, m)
  local p = 0
  if ok and type(r) == 'table' and tonumber(r['priority']) then p = tonumber(r['priority']) end
  redis.call('ZADD', KEYS[1], -p, m)
end
redis.call('DEL', KEYS[2])
return #members
"""

#: The meta key that carries a popped request's in-flight id.
INFLIGHT_ID = "simcrawl_inflight"

#: Seconds between two looks for processes that died (``recover_dead_processes``).
RECOVER_SECONDS = 5.0


# ------------------------------------------------------------------------ scheduler
class Scheduler(MemoryScheduler):
    """``SCHEDULER`` of simcrawl: Scrapy's scheduler (``SIMCRAWL_FRONTIER=memory``), or
    the shared frontier in Redis (``redis``), which :meth:`from_crawler` builds instead.

    Settings: SIMCRAWL_FRONTIER, REDIS_URL, DEDUP_NAMESPACE.
    """

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        if frontier_of(crawler.settings) == "redis":
            return SharedFrontier.from_crawler(crawler)
        return super().from_crawler(crawler)


class SharedFrontier(RedisScheduler):
    """scrapy-redis's scheduler on the crawl's namespace (see the module docstring)."""

    owner: str = ""
    #: whether this process has said it has work (``{ns}:frontier:active:{owner}``)
    active: bool = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedFrontier:
        runtime = wiring_of(crawler)  # the services (embedded ones included)
        server = runtime.client  # the index's server and client
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
        scheduler.namespace = runtime.config.namespace
        scheduler.inflight_prefix = keys["inflight"]
        scheduler.inflight_key = f"{keys['inflight']}:{scheduler.owner}"
        scheduler.active = False
        runtime.attach_frontier(scheduler)  # the middleware and the pipeline settle requests
        scheduler.runtime = runtime
        return scheduler

    def open(self, spider: Any) -> Any:
        from twisted.internet import task

        result = super().open(spider)
        self._pop = self.server.register_script(_POP)
        self._requeue = self.server.register_script(_REQUEUE)
        self.recover_dead_processes(sweep=True)
        # processes may die while this one runs: look again every few seconds
        self._recovery = task.LoopingCall(self._recover_in_thread)
        self._recovery.start(RECOVER_SECONDS, now=False)
        return result

    def _recover_in_thread(self) -> Any:
        from twisted.internet.threads import deferToThread

        def failed(failure: Any) -> None:  # an outage: the decisions report it; retried
            log.debug("recovering dead processes failed: %s", failure.value)

        return deferToThread(self.recover_dead_processes).addErrback(failed)

    def recover_dead_processes(self, sweep: bool = False) -> int:
        """Repair what processes that died left (their lease is gone), in this order: the
        pages they admitted but never stored leave the index (:func:`dedup.journal.recover`),
        the copies whose records named those pages are queued again, and so are the
        requests they had in flight. Returns how many requests were queued again."""
        from dedup.journal import recover

        runtime = self.runtime
        done = recover(self.server, self.namespace, runtime.pages, runtime.index,
                       exclude=self.owner)
        copies = list(dict.fromkeys([*runtime.recovered_copies, *done.copies]))
        runtime.recovered_copies = []
        for url in copies:  # their records named a page that was never stored
            self.queue.push(Request(url, callback=self.spider.parse,
                                    errback=self.spider.failed, dont_filter=True))
        dead = [*runtime.recovered_owners, *done.dead]
        runtime.recovered_owners = []
        moved = len(copies) + self.requeue_dead(dead, sweep)
        if moved:
            self.stats.inc_value("frontier/requeued", moved)
            log.warning("put %d requests back into the shared queue: processes that died "
                        "had them in flight, or their records named pages that were lost",
                        moved)
        return moved

    def next_request(self) -> Any:
        if not self.active:  # say "I have work" before taking any, so no one ends early
            self.mark(True)
        member = self._pop(keys=[self.queue.key, self.inflight_key])
        if member is None:
            return None
        # our pop script hands back the raw member, and scrapy-redis offers no public
        # decoding of one (its queues decode inside pop): decoded as they encode it
        request = request_from_dict(JsonSerializer.loads(member), spider=self.spider)
        request.meta[INFLIGHT_ID] = hashlib.sha1(member).hexdigest()
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def enqueue_request(self, request: Any) -> bool:
        # a redirect or a retry carries the in-flight id of the request it replaces:
        # once the new one is queued (or known), the old one is settled
        replaced = request.meta.pop(INFLIGHT_ID, None)
        queued = bool(super().enqueue_request(request))
        if replaced:
            self.settle([replaced])
        return queued

    def settle(self, ids: list[str]) -> None:
        """Requests whose outcome is durable: no longer in flight."""
        ids = [i for i in ids if i]
        if ids:
            self.server.hdel(self.inflight_key, *ids)

    def settle_request(self, request: Request) -> None:
        """A request whose outcome needs nothing stored (a failure, a skip)."""
        self.settle([request.meta.get(INFLIGHT_ID, "")])

    def requeue_dead(self, dead: list[str], sweep: bool = False) -> int:
        """Put the in-flight requests of dead processes (``dead`` owner tokens) back into
        the queue; with ``sweep``, also those of any process not alive (a key scan, done
        once when the frontier opens). Returns how many."""
        from dedup.journal import owners

        keys = {f"{self.inflight_prefix}:{token}" for token in dead}
        if sweep:
            live = {o.token for o in owners(self.server, self.namespace) if o.alive}
            live.add(self.owner)
            for key in self.server.scan_iter(match=f"{self.inflight_prefix}:*", count=1000):
                name = key.decode() if isinstance(key, bytes) else key
                if name.rsplit(":", 1)[1] not in live:
                    keys.add(name)
        keys.discard(self.inflight_key)
        return sum(self.requeue(key) for key in keys)

    def requeue(self, key: Any) -> int:
        """Move the requests of one in-flight hash back into the queue, atomically (two
        processes recovering the same dead one cannot both queue them); returns how many."""
        return int(self._requeue(keys=[self.queue.key, key]))

    def mark(self, active: bool) -> None:
        """Publish whether this process has work (with the lease's expiry: a dead
        process stops counting as active)."""
        self.active = active
        host = f"{socket.gethostname()}:{os.getpid()}"
        if active:
            self.server.set(self.active_key, host, px=int(self.lease * 1000))
        else:
            self.server.delete(self.active_key)

    def others_active(self) -> bool:
        """Whether another live process has work (a killed one's flag, until its lease
        runs out, does not count: the admission journal's liveness says it is dead)."""
        from dedup.journal import owners

        prefix = self.active_key.rsplit(":", 1)[0]
        live = [o.token for o in owners(self.server, self.namespace)
                if o.alive and o.token != self.owner]
        return bool(live) and bool(self.server.exists(*[f"{prefix}:{t}" for t in live]))

    def clear_frontier(self) -> None:
        """The crawl is complete: drop its queue and seen-set (the next crawl starts
        afresh)."""
        self.server.delete(self.queue.key, self.df.key, self.inflight_key)

    def close(self, reason: str) -> None:
        recovery = getattr(self, "_recovery", None)
        if recovery is not None and recovery.running:
            recovery.stop()
        self.mark(False)
        if reason != "finished":  # stopped early: what it had taken goes back at once
            back = self.requeue(self.inflight_key)
            if back:
                log.info("put the %d requests this process had in flight back into the "
                         "shared queue", back)
        super().close(reason)


class SharedCrawlEnd:
    """Ends a shared crawl when every process has run out of work (see the module
    docstring); keeps a process waiting with ``SIMCRAWL_KEEP_WAITING``.

    Settings: SIMCRAWL_FRONTIER, SIMCRAWL_IDLE_SECONDS, SIMCRAWL_KEEP_WAITING.
    """

    def __init__(self, crawler: Crawler, idle_seconds: float, keep_waiting: bool) -> None:
        self.crawler = crawler
        self.idle_seconds = idle_seconds
        self.keep_waiting = keep_waiting
        self._quiet_since: float | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SharedCrawlEnd:
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
        """The shared frontier, as it attached itself to the crawl's wiring."""
        scheduler = wiring_of(self.crawler).frontier
        return scheduler if isinstance(scheduler, SharedFrontier) else None

    def spider_idle(self, spider: Any = None) -> None:
        scheduler = self._scheduler()
        if scheduler is None:
            return
        if len(scheduler.queue):  # work is waiting: take it
            self._quiet_since = None
            raise DontCloseSpider
        if scheduler.active:
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
