"""The admission journal: the index and the store agree after any kill.

A crawl admits a page in Redis (the index's atomic check-and-add, the exact-copy checksum
registry) and writes it to MongoDB a moment later, in batches. A process killed in
between would leave the index holding pages the store never got: later copies of them
would be dropped naming a page that does not exist, and the lost pages' own URLs would
be dropped as copies of themselves.

So every page a process may admit is first written to its journal, a Redis hash
``{namespace}:inflight:{owner}`` (page id -> simhash, checksum, second-opinion simhash,
host and URL), *before* any admission
step runs; the entry is removed when MongoDB holds the page and its fingerprint
(:meth:`AdmissionJournal.confirm`), or when the page turned out to be a copy. The owner
holds a lease, ``{namespace}:owner:{owner}`` (its host, process id and start time), kept
alive by a heartbeat thread. :func:`recover` runs when a crawl starts, before its first
decision: for each journal whose owner is gone (lease expired, or a process id on this
host that no longer runs), every page it names that is not fully stored is taken out of
the index and the checksum registry, its partial documents are deleted, and so are
match records that name it (their copies are decided again when next fetched). The
index and the store then agree again, and a re-crawl finds every lost page anew.

A process that stops running without dying (frozen, swapped out, its host suspended)
for longer than its lease is taken for dead: the others recover its journal and put its
requests back. When it runs again its heartbeat takes the lease and registers it anew
(:attr:`AdmissionJournal.lapses` counts it), and before it stores what it admitted it
asks which of those pages a recovery removed meanwhile (:func:`lost_pages`): those are
withdrawn (:func:`withdraw`: out of the index and the checksum registry, anything stored
of them deleted), and their URLs are fetched again by whichever process takes them.

The same leases tell a crawl that another one is running on its namespace
(:func:`live_owners`). And the journals say, to every process of a shared crawl, what a
page admitted elsewhere and not stored yet is (:func:`journaled`): a copy decided against
it is recorded with its original's URL, and checked with its second-opinion simhash.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from dedup.adapters.redis_registry import checksum_key
from dedup.config import DEFAULT_LEASE_SECONDS
from dedup.errors import ServiceUnavailable
from dedup.index import NearDuplicateIndex
from dedup.registry import Claim
from dedup.adapters.servers.services import process_alive
from dedup.store import PageRecords

log = logging.getLogger(__name__)

#: Seconds an owner's lease lasts without a heartbeat (``DEDUP_LEASE_SECONDS``).
DEFAULT_LEASE = DEFAULT_LEASE_SECONDS

#: Seconds the ids of pages removed by a recovery are remembered (``{ns}:lost``).
TOMBSTONE_SECONDS = 86_400

# Delete a checksum registration only if it still names this page.
_RELEASE_CHECKSUM = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


def _this_host() -> str:
    return socket.gethostname()


@dataclass
class Owner:
    """A process holding (or having held) a journal on a namespace."""

    token: str
    host: str = ""
    pid: int = 0
    started: str = ""
    alive: bool = False

    def describe(self) -> str:
        """``pid 123 on host-a, started 2026-11-23T10:00:00+00:00``."""
        return f"pid {self.pid} on {self.host or '?'}, started {self.started or '?'}"


class AdmissionJournal:
    """One process's journal of pages admitted but not yet stored (see the module doc).

    Args:
        client: redis-py client of the index's server.
        namespace: the index's key prefix.
        lease: seconds the lease lasts without a heartbeat (renewed every third of it).
        owner: a stable token for this process (default: random).
    """

    def __init__(self, client: redis.Redis, namespace: str, lease: float = DEFAULT_LEASE,
                 owner: str | None = None) -> None:
        if lease <= 0:
            raise ValueError(f"lease must be positive, got {lease}")
        self.client = client
        self.namespace = namespace
        self.lease = lease
        self.owner = owner or uuid.uuid4().hex[:16]
        self.key = f"{namespace}:inflight:{self.owner}"
        self.lease_key = f"{namespace}:owner:{self.owner}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        #: Times the heartbeat found the lease run out (the process did not run for
        #: longer than the lease, or Redis lost the key).
        self.lapses = 0
        self._renewed = time.monotonic()
        self._info = json.dumps({"host": _this_host(), "pid": os.getpid(),
                                 "started": dt.datetime.now(dt.timezone.utc).isoformat(
                                     timespec="seconds")})

    def _renew(self) -> bool:
        """Renew the lease, and register the owner again should a recovery have taken
        it for dead. Returns whether the lease had run out."""
        pipe = self.client.pipeline(transaction=False)
        pipe.exists(self.lease_key)
        pipe.set(self.lease_key, self._info, px=int(self.lease * 1000))
        pipe.sadd(registry_key(self.namespace), self.owner)
        existed = pipe.execute()[0]
        self._renewed = time.monotonic()
        return not existed

    def in_doubt(self) -> bool:
        """Whether the other processes may have taken this one for dead: its lease ran
        out once (:attr:`lapses`), or its last renewal is overdue (half the lease ago).
        A process in doubt checks what it admitted against the recoveries' tombstones
        (:func:`lost_pages`) before it keeps it."""
        return self.lapses > 0 or time.monotonic() - self._renewed > self.lease / 2

    def open(self) -> AdmissionJournal:
        """Take the lease and start the heartbeat. Returns ``self``.

        Raises:
            ServiceUnavailable: Redis failed.
        """
        try:
            self._renew()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while opening the journal: {exc}",
                                     service="Redis") from exc
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="simcrawl-lease", daemon=True)
        self._thread.start()
        return self

    def _beat(self) -> None:
        while not self._stop.wait(self.lease / 3):
            try:
                self.renew()
            except redis.RedisError as exc:  # an outage: the decisions report it
                log.debug("renewing the journal lease failed: %s", exc)

    def renew(self) -> bool:
        """One heartbeat: renew the lease (registering again if a recovery took this
        process for dead). Returns whether the lease had run out (counted in
        :attr:`lapses`, and logged).

        Raises:
            redis.RedisError: Redis failed.
        """
        lapsed = self._renew()
        if lapsed:
            self.lapses += 1
            log.warning("this process's lease ran out (it did not run, or could not "
                            "reach Redis, for more than %.0f s): the other processes may "
                            "have taken it for dead and repaired its work; the pages it "
                            "admitted meanwhile are checked before they are stored",
                            self.lease)
        return lapsed

    def record(self, pipe: Any, entries: Iterable[Claim | JournalEntry]) -> None:
        """Queue, on a redis-py pipeline, the journal entries of pages about to be
        decided. The caller runs the pipeline before any admission step."""
        mapping = {e.page_id: JournalEntry(e.page_id, e.simhash, e.checksum, e.url, e.host,
                                           e.verify).encode() for e in entries}
        if mapping:
            pipe.hset(self.key, mapping=mapping)

    def forget(self, pipe: Any, page_ids: Sequence[str]) -> None:
        """Queue the removal of entries (pages that were copies after all) on a pipeline."""
        if page_ids:
            pipe.hdel(self.key, *page_ids)

    def confirm(self, page_ids: Sequence[str]) -> None:
        """The pages are stored (page and fingerprint): drop their entries.

        Raises:
            ServiceUnavailable: Redis failed (the entries stay; recovery finds the pages
                stored and only clears them).
        """
        if not page_ids:
            return
        try:
            self.client.hdel(self.key, *page_ids)
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while confirming stored pages: {exc}",
                                     service="Redis") from exc

    def clear_settled(self, pages: PageRecords, index: NearDuplicateIndex) -> int:
        """At a clean close, after every page was written: clear the entries whose pages
        are settled all the same, and return how many. A stored page's confirmation may
        have failed; and a write that timed out reaches Redis after its retry (the
        socket closed, the kernel still sends what it held: a partition that ends), so
        an entry its retry removed comes back for a page that was a copy. A copy's
        entry (its URL recorded as a copy, no page of its id stored) leaves the index
        and the checksum registry too, should a late write have put it there. Entries of
        pages neither stored nor recorded stay for the next crawl's recovery.

        Raises:
            ServiceUnavailable: Redis or MongoDB failed (the entries stay: a recovery
                clears them).
        """
        try:
            raw: dict[bytes, bytes] = self.client.hgetall(self.key)  # type: ignore[assignment]
            if not raw:
                return 0
            entries = {k.decode(): JournalEntry.decode(k.decode(), v.decode())
                       for k, v in raw.items()}
            stored = pages.complete_pages(entries)
            left = {pid: e for pid, e in entries.items() if pid not in stored}
            recorded = pages.recorded_copies({e.url for e in left.values() if e.url})
            copies = {pid: e for pid, e in left.items() if e.url in recorded}
            _take_out(self.client, self.namespace, index, copies.values())
            if stored or copies:
                self.client.hdel(self.key, *stored, *copies)
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while clearing the journal: {exc}",
                                     service="Redis") from exc
        if copies:
            log.info("the journal held %d entries of pages recorded as copies (a write that "
                     "timed out reached Redis after its retry): cleared, e.g. %s",
                     len(copies), next(iter(copies.values())).url)
        return len(stored) + len(copies)

    def pending(self) -> int:
        """Entries not yet confirmed."""
        return int(self.client.hlen(self.key))

    def close(self, release: bool = True) -> None:
        """Stop the heartbeat and give up the lease (not when ``release`` is false: a
        crawl that gave up on Redis does not wait for it again; the lease runs out by
        itself). Unconfirmed entries stay, so that the next crawl on the namespace
        recovers them at once."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if not release:
            log.info("the journal lease %s is left to run out (%.0f s): Redis was given up "
                     "on", self.lease_key, self.lease)
            return
        try:
            if not self.client.hlen(self.key):  # nothing to recover: leave the registry
                self.client.srem(registry_key(self.namespace), self.owner)
            self.client.delete(self.lease_key)
        except redis.RedisError as exc:
            log.warning("could not release the journal lease %s: %s", self.lease_key, exc)


@dataclass(frozen=True)
class JournalEntry:
    """A page about to be decided, as its journal keeps it (see the module docstring)."""

    page_id: str
    simhash: int
    checksum: str
    url: str = ""
    host: str = ""
    verify: int | None = None

    def encode(self) -> str:
        """``simhash (16 hex) + checksum``, then lines: verifier (hex or empty), host, URL."""
        verify = "" if self.verify is None else f"{self.verify:016x}"
        return f"{self.simhash:016x}{self.checksum}\n{verify}\n{self.host}\n{self.url}"

    @classmethod
    def decode(cls, page_id: str, value: str) -> JournalEntry:
        """Read an entry (entries written before URLs were kept have only the head)."""
        head, _, rest = value.partition("\n")
        verify, host, url = (rest.split("\n", 2) + ["", "", ""])[:3] if rest else ("", "", "")
        return cls(page_id, int(head[:16], 16), head[16:], url, host,
                   int(verify, 16) if verify else None)


def journaled(client: redis.Redis, namespace: str, page_ids: Iterable[str]
              ) -> dict[str, JournalEntry]:
    """The journal entries of ``page_ids`` in every registered process's journal:
    pages admitted (or being decided) there and not yet stored.

    Raises:
        ServiceUnavailable: Redis failed.
    """
    ids = list(dict.fromkeys(page_ids))
    if not ids:
        return {}
    try:
        tokens = sorted(_text(t) for t in client.smembers(registry_key(namespace)))
        if not tokens:
            return {}
        pipe = client.pipeline(transaction=False)
        for token in tokens:
            pipe.hmget(f"{namespace}:inflight:{token}", ids)
        found: dict[str, JournalEntry] = {}
        for values in pipe.execute():
            for pid, value in zip(ids, values):
                if value is not None and pid not in found:
                    found[pid] = JournalEntry.decode(pid, _text(value))
        return found
    except redis.RedisError as exc:
        raise ServiceUnavailable(f"Redis failed while reading the journals: {exc}",
                                 service="Redis") from exc


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def registry_key(namespace: str) -> str:
    """The set of every process that opened a journal on ``namespace`` and has not been
    recovered yet (so that finding them costs no key scan)."""
    return f"{namespace}:owners"


def owners(client: redis.Redis, namespace: str) -> list[Owner]:
    """Every process with a journal on ``namespace`` (the registry), alive or not."""
    tokens = sorted(t.decode() if isinstance(t, bytes) else str(t)
                    for t in client.smembers(registry_key(namespace)))  # type: ignore[union-attr]
    leases = client.mget([f"{namespace}:owner:{t}" for t in tokens]) if tokens else []
    found = []
    for token, raw in zip(tokens, leases):  # type: ignore[arg-type]
        owner = Owner(token)
        found.append(owner)
        if raw is None:  # the lease ran out (or was given up): dead
            continue
        try:
            info = json.loads(raw)
        except ValueError:
            info = {}
        owner.host, owner.pid = str(info.get("host", "")), int(info.get("pid", 0))
        owner.started = str(info.get("started", ""))
        # a lease on this host whose process is gone is dead, whatever its TTL says
        owner.alive = not (owner.host == _this_host() and owner.pid
                           and not process_alive(owner.pid))
    return found


def live_owners(client: redis.Redis, namespace: str, exclude: str | None = None
                ) -> list[Owner]:
    """Processes other than ``exclude`` that hold a live lease on ``namespace``."""
    return [o for o in owners(client, namespace) if o.alive and o.token != exclude]


@dataclass
class Recovery:
    """What :func:`recover` found and did."""

    journals: int = 0
    confirmed: int = 0
    removed: list[str] = field(default_factory=list)
    #: URLs of the match records removed (copies of the lost pages, to decide again)
    copies: list[str] = field(default_factory=list)
    #: the owner tokens of the dead processes recovered (their other state, such as
    #: requests in flight, is theirs to repair too)
    dead: list[str] = field(default_factory=list)

    @property
    def matches_removed(self) -> int:
        """How many match records named a lost page and were removed."""
        return len(self.copies)

    def __str__(self) -> str:
        return (f"{self.journals} journals of stopped crawls: {self.confirmed} pages were "
                f"stored, {len(self.removed)} were not and left the index "
                f"({self.matches_removed} match records naming them removed)")


def recover(client: redis.Redis, namespace: str, pages: PageRecords, index: NearDuplicateIndex,
            exclude: str | None = None) -> Recovery:
    """Make the index agree with the store after crawls that stopped without storing
    what they admitted (see the module doc). Journals of live owners are left alone.

    Raises:
        ServiceUnavailable: Redis or MongoDB failed (run it again: every step is
            idempotent).
    """
    result = Recovery()
    try:
        for owner in owners(client, namespace):
            if owner.alive or owner.token == exclude:
                continue
            key = f"{namespace}:inflight:{owner.token}"
            raw: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]
            entries = {k.decode(): v.decode() for k, v in raw.items()}
            result.journals += 1
            if entries:
                _recover_entries(client, namespace, pages, index, entries, result)
            client.delete(key, f"{namespace}:owner:{owner.token}")
            client.srem(registry_key(namespace), owner.token)
            result.dead.append(owner.token)
    except redis.RedisError as exc:
        raise ServiceUnavailable(f"Redis failed during recovery: {exc}", service="Redis") from exc
    if result.removed:
        log.warning("recovered the index: %s", result)
    return result


def _recover_entries(client: redis.Redis, namespace: str, pages: PageRecords,
                     index: NearDuplicateIndex, entries: dict[str, str],
                     result: Recovery) -> None:
    stored = pages.complete_pages(entries)
    result.confirmed += len(stored)
    lost = [pid for pid in entries if pid not in stored]
    if not lost:
        return
    _take_out(client, namespace, index, [JournalEntry.decode(pid, entries[pid]) for pid in lost])
    result.copies.extend(pages.forget_pages(lost))
    result.removed.extend(lost)
    # tombstones: a live process that decided a copy against one of these pages before
    # this recovery must not write that record afterwards (see lost_pages)
    tomb = f"{namespace}:lost"
    client.sadd(tomb, *lost)
    client.expire(tomb, TOMBSTONE_SECONDS)


def _take_out(client: redis.Redis, namespace: str, index: NearDuplicateIndex,
              entries: Iterable[JournalEntry]) -> None:
    """Each entry's page leaves the index and the checksum registry (where they still
    name it)."""
    release = client.register_script(_RELEASE_CHECKSUM)
    for entry in entries:
        index.remove(entry.simhash, entry.page_id)
        if len(entry.checksum) == 32:
            key, field_ = checksum_key(namespace, entry.checksum)
            release(keys=[key], args=[field_, entry.page_id])


def withdraw(client: redis.Redis, namespace: str, pages: PageRecords,
             index: NearDuplicateIndex, admitted: dict[str, tuple[int, str] | None]
             ) -> list[str]:
    """Withdraw pages this process admitted that a recovery has removed since (it took
    the process for dead: :func:`lost_pages`): each leaves the index (it may have been
    added after the recovery looked) and the checksum registry, and whatever is stored
    of it is deleted, with the match records naming it. ``admitted``: page id ->
    (simhash, checksum), or None for a page without a fingerprint. Returns the URLs of those match records: copies to decide
    again.

    Raises:
        ServiceUnavailable: Redis or MongoDB failed (run it again: every step is
            idempotent).
    """
    if not admitted:
        return []
    try:
        release = client.register_script(_RELEASE_CHECKSUM)
        for pid, found in admitted.items():
            if found is None:
                continue
            fp, checksum = found
            index.remove(fp, pid)
            if len(checksum) == 32:
                key, field_ = checksum_key(namespace, checksum)
                release(keys=[key], args=[field_, pid])
    except redis.RedisError as exc:
        raise ServiceUnavailable(f"Redis failed while withdrawing pages: {exc}",
                                 service="Redis") from exc
    return pages.forget_pages(list(admitted))


def lost_pages(client: redis.Redis, namespace: str, page_ids: Sequence[str]) -> set[str]:
    """The ids among ``page_ids`` that a recovery removed (admitted by a process that
    died before storing them): a match record must not name them.

    Raises:
        ServiceUnavailable: Redis failed.
    """
    ids = [p for p in dict.fromkeys(page_ids) if p]
    if not ids:
        return set()
    try:
        flags = client.smismember(f"{namespace}:lost", ids)
    except redis.RedisError as exc:
        raise ServiceUnavailable(f"Redis failed while checking recovered pages: {exc}",
                                 service="Redis") from exc
    return {p for p, f in zip(ids, flags) if f}


class LostPages:
    """What the records' writer asks of the recoveries (:class:`dedup.store.writer.Recoveries`),
    over Redis: which pages a recovery removed (:func:`lost_pages`), and withdraw those this
    process admitted (:func:`withdraw`)."""

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client, self.namespace = client, namespace

    def lost(self, page_ids: Sequence[str]) -> set[str]:
        return lost_pages(self.client, self.namespace, page_ids)

    def withdraw(self, pages: PageRecords, index: NearDuplicateIndex,
                 admitted: dict[str, tuple[int, str] | None]) -> list[str]:
        return withdraw(self.client, self.namespace, pages, index, admitted)

