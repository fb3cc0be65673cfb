"""The crawl frontier: Scrapy's own (``SIMCRAWL_FRONTIER=memory``, the default) or one
frontier in Redis shared by every crawl process on the namespace (``redis``).

The shared frontier is scrapy-redis's scheduler, request dupefilter and priority queue,
configured by this adapter (it subclasses, never copies):

- keys under the crawl's namespace: ``{ns}:frontier:queue`` (a sorted set by priority,
  then by the time each request was queued: :class:`ArrivalQueue`),
  ``{ns}:frontier:seen`` (request fingerprints), ``{ns}:frontier:inflight:{owner}``;
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
- every Redis call of the frontier lives through an outage (a server restarting, a
  Redis Cluster failing a primary over to its replica, a partition) as the decisions
  do: it is said once, requests to queue and requests to settle wait in this process
  and go to Redis when it answers again (said once more, with the count of failed
  attempts), and past ``DEDUP_RETRY_SECONDS`` the crawl stops, naming what it could not
  queue (exit 1); meanwhile one probe at a time asks Redis off the reactor's thread,
  and no call waits for the client's timeout in it;
- work is shared from the first request: a process without work looks at the queue
  every ``POLL_SECONDS`` (not at Scrapy's 5-second heartbeat) and wakes its engine when
  there is some;
- a shared crawl ends as soon as the queue is empty and no process has a request in
  flight (a page is settled only after its links are queued, so nothing can come back),
  for ``SIMCRAWL_IDLE_SECONDS`` (default 1); every process then exits by itself, and the
  one that sees it first clears the frontier so that the next crawl on the namespace
  starts afresh. ``SIMCRAWL_KEEP_WAITING`` keeps processes waiting for work instead (a
  service).

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
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request
from scrapy.utils.request import request_from_dict
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from scrapy_redis.scheduler import Scheduler as RedisScheduler

from crawler.outage import Outage
from crawler.stopping import stop_crawl
from dedup.adapters.servers.services import redis_outage
from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from dedup.config import DedupConfig

log = logging.getLogger(__name__)


class FrontierParts(Protocol):
    """What the shared frontier takes of the crawl's parts (:class:`crawler.wiring.Parts`,
    which builds it): the Redis client, the settings, the admission journal, the store
    and the index (recovery), the shared state, and how an outage is given up."""

    client: Any
    config: DedupConfig
    journal: Any
    pages: Any
    index: Any
    state: Any  # crawler.state.CrawlState, which imports this module
    given_up: set[str]

    def gave_up(self, services: set[str]) -> None: ...


#: Seconds between two looks at the shared queue by a process without work.
POLL_SECONDS = 0.25

#: The meta key of a request taken from the shared queue by the idle poll and handed to
#: the engine (``engine.crawl``): the scheduler serves it, never queues it again.
READY = "simcrawl_ready"


#: ``SIMCRAWL_FRONTIER``: Scrapy's own queue, or one in Redis shared by the namespace's
#: processes.
FRONTIERS = ("memory", "redis")


def frontier_of(settings: Any) -> str:
    """``SIMCRAWL_FRONTIER``, checked.

    Raises:
        ValueError: not ``memory`` or ``redis``.
    """
    kind = str(value("SIMCRAWL_FRONTIER", settings.get)).strip().lower()
    if kind not in FRONTIERS:
        raise ValueError(f"SIMCRAWL_FRONTIER must be memory or redis, got {kind!r}")
    return kind


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


#: The start of the queue's clock (ms): 2^42 ms after it is the year 2165.
ARRIVAL_EPOCH_MS = 1_767_225_600_000  # 2026-01-01 UTC

#: A priority step in the queue's scores: a request's priority weighs more than any time.
PRIORITY_STEP = 2 ** 42


def arrival_score(priority: int, now_ms: int) -> float:
    """A request's score in the shared queue (the lowest is taken first): its priority,
    then the time it was queued (ms), so that requests of one priority are taken in the
    order they came, breadth-first, as Scrapy's own FIFO queues take them. A sorted set
    alone breaks ties by the members' bytes: by URL, so that a crawl took one URL
    pattern in a block (every ``/print/`` link, then every ``/section/`` link, one host
    after another) and every process's requests were in flight to one host at once.
    Exact for priorities within +-2047 (a double's 53 bits).

    >>> arrival_score(0, ARRIVAL_EPOCH_MS + 5) < arrival_score(0, ARRIVAL_EPOCH_MS + 6)
    True
    >>> arrival_score(1, ARRIVAL_EPOCH_MS + 10**9) < arrival_score(0, ARRIVAL_EPOCH_MS)
    True
    """
    return float(-priority * PRIORITY_STEP + max(0, now_ms - ARRIVAL_EPOCH_MS))


class ArrivalQueue(PriorityQueue):
    """scrapy-redis's priority queue, taking requests of one priority in the order they
    came (:func:`arrival_score`)."""

    def push(self, request: Request) -> None:
        self.server.execute_command("ZADD", self.key,
                                    arrival_score(request.priority, int(time.time() * 1000)),
                                    self._encode_request(request))


def frontier_keys(namespace: str) -> dict[str, str]:
    """The shared frontier's Redis keys for a namespace (``inflight`` is a prefix: one
    key per process)."""
    return {"queue": f"{namespace}:frontier:queue", "seen": f"{namespace}:frontier:seen",
            "inflight": f"{namespace}:frontier:inflight"}


# Offer a request: its fingerprint into the seen-set and, when it was not there, the
# request into the queue, in one step (SharedFrontier._offer says why): KEYS = seen-set,
# queue; ARGV = the fingerprint ('' for a request that is never filtered), score, member.
_OFFER = """
if ARGV[1] ~= '' and redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
return 1
"""

# Take the best request and record it as in flight, in one step (a kill in between
# would otherwise lose it): KEYS = queue, in-flight hash.
_POP = """
local m = redis.call('ZRANGE', KEYS[1], 0, 0)
if #m == 0 then return false end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, 0)
redis.call('HSET', KEYS[2], redis.sha1hex(m[1]), m[1])
return m[1]
"""

# Move an in-flight hash back into the queue, each request at its own priority (at its
# front: the score of the epoch, arrival_score's PRIORITY_STEP), in one step: KEYS =
# queue, in-flight hash.
_REQUEUE = """
local members = redis.call('HVALS', KEYS[2])
for _, m in ipairs(members) do
  local ok, r = pcall(cjson.decode, m)
  local p = 0
  if ok and type(r) == 'table' and tonumber(r['priority']) then p = tonumber(r['priority']) end
  redis.call('ZADD', KEYS[1], -p * 4398046511104, m)
end
redis.call('DEL', KEYS[2])
return #members
"""

# Move the named requests of an in-flight hash back into the queue (those still there),
# as _REQUEUE does: KEYS = queue, in-flight hash; ARGV = in-flight ids.
_REQUEUE_IDS = """
local n = 0
for _, id in ipairs(ARGV) do
  local m = redis.call('HGET', KEYS[2], id)
  if m then
    local ok, r = pcall(cjson.decode, m)
    local p = 0
    if ok and type(r) == 'table' and tonumber(r['priority']) then p = tonumber(r['priority']) end
    redis.call('ZADD', KEYS[1], -p * 4398046511104, m)
    redis.call('HDEL', KEYS[2], id)
    n = n + 1
  end
end
return n
"""

#: The meta key that carries a popped request's in-flight id.
INFLIGHT_ID = "simcrawl_inflight"

#: Seconds between two looks for processes that died (``recover_dead_processes``).
RECOVER_SECONDS = 5.0

#: Seconds between two attempts to send what waits for Redis during an outage.
CATCH_UP_SECONDS = 1.0

#: Seconds between two probes of Redis during an outage (:meth:`SharedFrontier._probe`).
PROBE_SECONDS = 1.0


def count_request(stats: Any, request: Request | None) -> None:
    """A request taken from the frontier that starts a chain (not a redirect or a retry
    of one taken before) counts once in ``dedup/requests``; each such request ends in
    exactly one outcome (a page decided, a skip under its reason, a page lost:
    :func:`crawler.run.outcomes`), so the crawl's summary adds up."""
    if request is None or stats is None:
        return
    if not request.meta.get("redirect_urls") and not request.meta.get("retry_times"):
        stats.inc_value("dedup/requests")


class FrontierWaits(Exception):
    """A Redis call of the shared frontier failed on an outage (counted and said by
    :class:`crawler.outage.Outage`); the caller keeps what it was doing for later."""


class SharedFrontier(RedisScheduler):
    """scrapy-redis's scheduler on the crawl's namespace (see the module docstring)."""

    owner: str = ""
    #: requests the idle poll took from the shared queue for the engine (served first)
    ready: list[Request]
    #: requests that wait for Redis (an outage), to be offered again in order
    waiting: list[Request]
    #: in-flight ids to settle once Redis answers
    unsettled: list[str]
    #: in-flight ids of the requests this process took and has not settled
    held: set[str]
    #: in-flight ids recorded for this process that it did not hold at the last look
    orphans: set[str]

    @classmethod
    def build(cls, crawler: Crawler, parts: FrontierParts) -> SharedFrontier:
        """The shared frontier of a crawl, on its Redis client and namespace, built by the
        crawl's factory (:func:`crawler.wiring.build`) with the parts it uses: the store
        and the index (recovery), and the crawl's shared state (lost links, what
        recovery at start found)."""
        server = parts.client  # the index's server and client
        keys = frontier_keys(parts.config.namespace)
        dupefilter = RFPDupeFilter(server, keys["seen"],
                                   debug=crawler.settings.getbool("DUPEFILTER_DEBUG"))
        scheduler = cls(server=server, persist=True, queue_key=keys["queue"],
                        queue_cls="crawler.frontier.ArrivalQueue", dupefilter=dupefilter,
                        dupefilter_key=keys["seen"], serializer=JsonSerializer)
        scheduler.stats = crawler.stats
        scheduler.owner = parts.journal.owner if parts.journal else uuid.uuid4().hex[:16]
        scheduler.lease = parts.journal.lease if parts.journal else 30.0
        scheduler.namespace = parts.config.namespace
        scheduler.inflight_prefix = keys["inflight"]
        scheduler.inflight_key = f"{keys['inflight']}:{scheduler.owner}"
        scheduler.ready = []
        scheduler.crawler = crawler
        scheduler.outage = Outage("the shared frontier", parts.config.retry_seconds, log,
                                  gave_up=parts.gave_up, abandoned=parts.given_up)
        scheduler.waiting = []  # requests not yet in Redis
        scheduler.unsettled = []  # in-flight ids to settle when Redis answers
        scheduler.held, scheduler.orphans = set(), set()
        scheduler._buffer_lock = threading.Lock()  # settle runs in the storage thread too
        scheduler.pages, scheduler.index = parts.pages, parts.index
        scheduler.state = parts.state
        scheduler._pop = server.register_script(_POP)  # no call to Redis yet
        scheduler._offer_script = server.register_script(_OFFER)
        scheduler._requeue = server.register_script(_REQUEUE)
        scheduler._requeue_ids = server.register_script(_REQUEUE_IDS)
        scheduler.is_open = False  # until its opening on Redis is done (open)
        return scheduler

    def open(self, spider: Any) -> Any:
        """Open on Redis in a thread (the engine waits for the Deferred): the queue's
        length read and what dead processes left repaired, an outage of Redis meanwhile
        waited out for up to ``DEDUP_RETRY_SECONDS`` as during the crawl (a process
        started while Redis is cut off waits for it, as the others do, instead of
        failing to start), and the reactor free meanwhile (its disk watch, a Ctrl-C)."""
        from twisted.internet.threads import deferToThread

        return deferToThread(self.open_on_redis, spider).addCallback(self.start_loops)

    def open_on_redis(self, spider: Any) -> None:
        """The queue's length read (said when a crawl resumes) and the repair of what
        dead processes left, tried again once a second while Redis is out; past
        ``DEDUP_RETRY_SECONDS`` the crawl does not start (:class:`ServiceUnavailable`)."""
        from redis.exceptions import RedisClusterException, RedisError

        self.spider = spider
        self.queue = ArrivalQueue(server=self.server, spider=spider, key=self.queue_key,
                                  serializer=self.serializer)
        while True:
            try:
                queued = self.server.zcard(self.queue_key)
                self.outage.answered("the shared frontier opens")
                if queued:
                    log.info("the shared frontier holds %d requests: the crawl resumes",
                             queued)
                self.recover_dead_processes(sweep=True)
                return
            except FrontierWaits:
                pass  # a call of the repair met the outage (counted by _call)
            except (RedisError, RedisClusterException) as exc:
                if not redis_outage(exc):
                    raise
                self._failed(exc)  # (its give-up waits for the frontier to be open)
            if self.outage.overdue:
                self.outage.give_up(self.outage.last_error, "it had not started")
                raise self.outage.overdue_error()
            time.sleep(PROBE_SECONDS)

    def start_loops(self, _: Any = None) -> None:
        """The crawl opens: this process's loops on Redis start (in the reactor)."""
        from twisted.internet import task

        self.is_open = True
        # processes may die while this one runs: look again every few seconds
        self._recovery = task.LoopingCall(self._recover_in_thread)
        self._recovery.start(RECOVER_SECONDS, now=False)
        # what waits for Redis (an outage) goes there as soon as it answers again
        self._catching_up = task.LoopingCall(self.catch_up)
        self._catching_up.start(CATCH_UP_SECONDS, now=False)

    # -------------------------------------------------------------- outages
    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One Redis call of the frontier; an outage is counted (and said once) and
        raises :class:`FrontierWaits`, past ``DEDUP_RETRY_SECONDS`` after stopping the
        crawl. While an outage is on, the call is not sent: one probe at a time asks
        Redis from a thread of its own (:meth:`_probe`), and the calls go to Redis
        again once it answers. A Redis that hangs (a partition drops its packets, a
        frozen server) holds each call for the client's timeout (5 s), and the frontier
        is called in the reactor's thread: call after call, the whole process would
        stand still (its disk watch, its progress, a Ctrl-C) until the outage ends."""
        from redis.exceptions import RedisClusterException, RedisError

        if self.outage.since is not None:
            self._probe()
            self._give_up_if_overdue()
            raise FrontierWaits(str(self.outage.last_error))
        try:
            result = fn(*args, **kwargs)
        except (RedisError, RedisClusterException) as exc:
            if not redis_outage(exc):
                raise
            self._failed(exc)
            raise FrontierWaits(str(exc)) from exc
        self.outage.answered("the shared frontier goes on")
        return result

    def _failed(self, exc: BaseException) -> None:
        """A call or a probe met an outage: counted, and past the limit the crawl stops."""
        self.outage.failed(exc, "Redis")
        self.stats.inc_value("dedup/retries/frontier")
        self._give_up_if_overdue()

    def _probe(self) -> None:
        """Ask Redis, from a thread of its own, whether it answers again (one probe at a
        time, at most one every :data:`PROBE_SECONDS`): a read of the queue's key,
        which a cluster routes to the node that holds the crawl's keys."""
        if not self.outage.claim_probe(PROBE_SECONDS):
            return
        threading.Thread(target=self._probe_once, name="simcrawl-frontier-probe",
                         daemon=True).start()

    def _probe_once(self) -> None:
        """One probe (claimed by :meth:`crawler.outage.Outage.claim_probe`)."""
        from redis.exceptions import RedisClusterException, RedisError

        try:
            self.server.exists(self.queue.key)
        except (RedisError, RedisClusterException) as exc:
            if redis_outage(exc):
                self._failed(exc)
                return
            # another failure: the calls go to Redis again and meet it themselves
        except Exception:  # noqa: BLE001 - a probe never ends in a thread's traceback
            log.debug("the shared frontier's probe of Redis failed", exc_info=True)
            return
        finally:
            self.outage.probed()
        self.outage.answered("the shared frontier goes on")

    def _give_up_if_overdue(self) -> None:
        """Past ``DEDUP_RETRY_SECONDS`` of an outage (once): the links waiting for Redis
        are lost (named at the end), and the crawl stops."""
        outage = self.outage
        if not outage.overdue or outage.gave_up or not self.is_open:
            return  # (while it opens, the opening gives up itself: the crawl never starts)
        lost = self._lose_waiting()
        outage.give_up(outage.last_error, f"{len(lost)} links could not be queued; they "
                                          "are named at the end")
        from twisted.internet import reactor

        reactor.callFromThread(  # type: ignore[attr-defined]
            stop_crawl, self.crawler, "service_unavailable")

    def catch_up(self) -> bool:
        """Send what waited for Redis (requests to queue, then requests to settle);
        returns whether nothing waits any more. Once a second (its loop) it also looks
        whether an outage is overdue: the engine may not call the frontier meanwhile
        (nothing in flight ends), and the probe may wait its client's timeout."""
        if self.outage.since is not None:
            self._give_up_if_overdue()
        with self._buffer_lock:
            waiting, self.waiting = self.waiting, []
            unsettled, self.unsettled = self.unsettled, []
        try:
            while waiting:
                self._offer(waiting[0], hold=False)
                waiting.pop(0)
            if unsettled:
                self._call(self.server.hdel, self.inflight_key, *unsettled)
                unsettled = []
        except FrontierWaits:
            pass
        with self._buffer_lock:  # what is still waiting, before anything that came since
            self.waiting[:0], self.unsettled[:0] = waiting, unsettled
            return not self.waiting and not self.unsettled

    def _offer(self, request: Request, hold: bool = True) -> bool:
        """The shared dupefilter and the queue in one step (:data:`_OFFER`; scrapy-redis's
        ``enqueue_request`` takes two calls). Returns whether it was queued.

        One step, because the reply of a call can be lost while the call itself is done
        (a timeout in a partition, the command delivered late; a frozen server that
        runs it when it wakes): the request is offered again, and with two calls a
        dupefilter step done without its push found the request "seen" and dropped it,
        a link lost. Offered again, the step either was done whole (the request is
        queued: "seen" is right) or not at all.

        Raises:
            FrontierWaits: Redis is out; with ``hold`` the request waits in this process
                (:attr:`waiting`) to be queued when Redis answers.
        """
        seen = "" if request.dont_filter else self.df.request_fingerprint(request)
        member = self.queue._encode_request(request)  # noqa: SLF001 - our queue's encoding
        score = arrival_score(request.priority, int(time.time() * 1000))
        try:
            queued = self._call(self._offer_script, keys=[self.df.key, self.queue.key],
                                args=[seen, score, member])
        except FrontierWaits:
            if hold:
                with self._buffer_lock:
                    self.waiting.append(request)
            raise
        if not queued:
            self.df.log(request, self.spider)
            return False
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _recover_in_thread(self) -> Any:
        from twisted.internet.threads import deferToThread

        def failed(failure: Any) -> None:  # an outage: the decisions report it; retried
            log.debug("recovering dead processes failed: %s", failure.value)

        return deferToThread(self.recover_dead_processes).addErrback(failed)

    def recover_dead_processes(self, sweep: bool = False) -> int:
        """Repair what processes that died left (their lease is gone), in this order: the
        pages they admitted but never stored leave the index (:func:`dedup.adapters.journal.recover`),
        the copies whose records named those pages are queued again, and so are the
        requests they had in flight. Returns how many requests were queued again."""
        from dedup.adapters.journal import recover

        state = self.state
        done = recover(self.server, self.namespace, self.pages, self.index,
                       exclude=self.owner)
        copies = list(dict.fromkeys([*state.recovered_copies, *done.copies]))
        state.recovered_copies = []
        for url in copies:  # their records named a page that was never stored
            try:
                self._offer(Request(url, callback=self.spider.parse,  # a project's
                                    errback=getattr(self.spider, "failed", None),  # spider
                                    dont_filter=True))  # has no errback of its own
            except FrontierWaits:
                pass  # it waits in this process, and is queued when Redis answers
        dead = [*state.recovered_owners, *done.dead]
        state.recovered_owners = []
        try:
            moved = len(copies) + self.requeue_dead(dead, sweep)
        except FrontierWaits:  # tried again at the next look
            state.recovered_owners.extend(dead)
            raise
        if moved:
            self.stats.inc_value("frontier/requeued", moved)
            log.warning("put %d requests back into the shared queue: processes that died "
                        "had them in flight, or their records named pages that were lost",
                        moved)
        return moved

    def next_request(self) -> Any:
        if self.ready:
            return self.ready.pop(0)
        if (self.waiting or self.unsettled) and not self.catch_up():
            return None  # Redis is out: the engine asks again at its next beat
        try:  # taken and recorded as in flight in one step: no one ends early
            member = self._call(self._pop, keys=[self.queue.key, self.inflight_key])
        except FrontierWaits:
            return None
        if member is None:
            return None
        # our pop script hands back the raw member, and scrapy-redis offers no public
        # decoding of one (its queues decode inside pop): decoded as they encode it
        request = request_from_dict(JsonSerializer.loads(member), spider=self.spider)
        request.meta[INFLIGHT_ID] = hashlib.sha1(member).hexdigest()
        self.held.add(request.meta[INFLIGHT_ID])
        self.stats.inc_value("scheduler/dequeued/redis")
        count_request(self.stats, request)
        return request

    def enqueue_request(self, request: Any) -> bool:
        # a redirect or a retry carries the in-flight id of the request it replaces:
        # once the new one is queued (or known), the old one is settled
        if request.meta.pop(READY, False):  # taken from the queue already (the idle poll)
            self.ready.append(request)
            return True
        replaced = request.meta.pop(INFLIGHT_ID, None)
        if self.waiting and not self.catch_up():  # Redis is out: it waits behind them
            with self._buffer_lock:
                self.waiting.append(request)
            queued = True
        else:
            try:
                queued = self._offer(request)
            except FrontierWaits:
                queued = True  # it waits in this process for Redis to answer
        if replaced:
            self.settle([replaced])
        return queued

    def settle(self, ids: list[str]) -> None:
        """Requests whose outcome is durable: no longer in flight (from any thread;
        during an outage they wait to be settled)."""
        ids = [i for i in ids if i]
        if not ids:
            return
        self.held.difference_update(ids)
        if not self.unsettled and not self.waiting:  # else after what waits before them
            try:
                self._call(self.server.hdel, self.inflight_key, *ids)
                return
            except FrontierWaits:
                pass
        with self._buffer_lock:
            self.unsettled.extend(ids)

    def __len__(self) -> int:
        """The requests in the shared queue and those waiting in this process to go
        there (the live display's and the crawl record's queue). Through :meth:`_call`:
        while Redis is out, not asked (a call would hold the reactor for the client's
        timeout: the crawl record's periodic write did, 5 s each) and
        :class:`FrontierWaits` raised (the length is unknown)."""
        return int(self._call(len, self.queue)) + len(self.waiting) + len(self.ready)

    def has_pending_requests(self) -> bool:
        if self.waiting or self.ready:
            return True
        try:
            return bool(self._call(len, self.queue))
        except FrontierWaits:
            return True  # not known: not idle

    def settle_request(self, request: Request) -> None:
        """A request whose outcome needs nothing stored (a failure, a skip)."""
        self.settle([request.meta.get(INFLIGHT_ID, "")])

    def requeue_dead(self, dead: list[str], sweep: bool = False) -> int:
        """Put the in-flight requests of dead processes (``dead`` owner tokens) back into
        the queue; with ``sweep``, also those of any process not alive (a key scan, done
        once when the frontier opens). Returns how many."""
        from dedup.adapters.journal import owners

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
        processes recovering the same dead one cannot both queue them); returns how many.

        Raises:
            FrontierWaits: Redis is out (the hash stays; recovery tries again).
        """
        return int(self._call(self._requeue, keys=[self.queue.key, key]))

    def work_left(self) -> bool:
        """Whether the shared crawl has work anywhere: a request queued, in flight in any
        process (a dead one's go back to the queue when it is recovered), or waiting in
        this one.

        Raises:
            FrontierWaits: Redis is out (then nobody can tell: wait).
        """
        from dedup.adapters.journal import owners

        if self.waiting or self.ready or self.unsettled:
            return True
        self.reclaim_orphans()
        if self._call(len, self.queue):
            return True
        tokens = {o.token for o in self._call(owners, self.server, self.namespace)}
        tokens.add(self.owner)
        return bool(self._call(self.server.exists,
                               *[f"{self.inflight_prefix}:{t}" for t in sorted(tokens)]))

    def reclaim_orphans(self) -> int:
        """Put back into the queue the requests recorded in flight for this process that
        it never took: a take whose reply was lost (a timeout while a partition dropped
        it, the script run all the same, or run late when the partition ended) moved a
        request into this process's in-flight hash, where no one fetched it and no one
        recovered it (the process lives), and the shared crawl never ended (a chaos run
        on a cluster). An id counts as never taken when two looks in a row find it in
        the hash and not among the requests this process holds. Returns how many.

        Raises:
            FrontierWaits: Redis is out.
        """
        recorded = {k.decode() if isinstance(k, bytes) else k
                    for k in self._call(self.server.hkeys, self.inflight_key)}
        orphans = recorded - self.held
        gone, self.orphans = orphans & self.orphans, orphans - self.orphans
        if not gone:
            return 0
        moved = int(self._call(self._requeue_ids, keys=[self.queue.key, self.inflight_key],
                               args=sorted(gone)))
        if moved:
            self.stats.inc_value("frontier/reclaimed", moved)
            log.warning("put %d requests back into the shared queue: they were recorded in "
                        "flight for this process, which never took them (a reply lost to "
                        "a timeout)", moved)
        return moved

    def clear_frontier(self) -> None:
        """The crawl is complete: drop its queue and seen-set (the next crawl starts
        afresh)."""
        self._call(self.server.delete, self.queue.key, self.df.key, self.inflight_key)

    def close(self, reason: str) -> None:
        if self.is_open:  # (one that never opened, Redis out past the limit, took nothing)
            self._close_on_redis(reason)
        lost = self._lose_waiting()
        if lost:
            log.error("%d links could not be queued (Redis did not answer): %s", len(lost),
                      ", ".join(lost[:20]))

    def _close_on_redis(self, reason: str) -> None:
        """Stop this process's loops, send what waits, and (stopped early) put what it
        had in flight back into the queue."""
        for loop in (getattr(self, "_recovery", None), getattr(self, "_catching_up", None)):
            if loop is not None and loop.running:
                loop.stop()
        if (self.outage.since is not None and not self.outage.gave_up
                and self.outage.claim_probe(0.0)):
            self._probe_once()  # one last look, here (the probes' thread may not run again)
        try:
            self.catch_up()
            if reason != "finished":  # stopped early: what it had taken goes back at once
                back = self.requeue(self.inflight_key)
                if back:
                    log.info("put the %d requests this process had in flight back into the "
                             "shared queue", back)
        except FrontierWaits:  # what it had in flight goes back when a process recovers it
            log.warning("Redis did not answer while the shared frontier closed: the "
                        "requests this process had in flight go back to the queue when "
                        "another process finds it gone")

    def _lose_waiting(self) -> list[str]:
        """Give up the links still waiting for Redis: counted as lost and named at the
        end of the crawl (``dedup/lost/requests``); returns their URLs."""
        with self._buffer_lock:
            lost, self.waiting = [r.url for r in self.waiting], []
        if lost:
            self.state.lost.extend(lost)
            self.stats.inc_value("dedup/lost/requests", len(lost))
        return lost
