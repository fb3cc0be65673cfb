"""The index sharded over a Redis Cluster's slots, admitted without one atomic script.

One Redis node runs the probe, the decision and the insert as one Lua script
(:class:`~dedup.adapters.redis_index.RedisStore`). A cluster runs a script only over keys of
one slot, and putting the whole index in one slot puts it on one node. This store spreads
every key by its own name (no hash tag), so the tables' buckets, the text sketches and the
text anchors fall on all the nodes' slots, and keeps the promise "never two admitted near
duplicates" with a protocol instead of a script (docs/scaling.md, "Sharded index"):

1. **Pending.** A page's fingerprint is written to every table and its text anchors, and
   its record (page id and text sketch) to its fingerprint's field, marked *unnumbered*
   with a lease.
2. **Numbered.** Only then does the page take a number from one counter (``INCRBY``), and
   its mark becomes *pending* with that number.
3. **Probe.** The page probes its tables and anchors and reads each candidate's records.
   An admitted candidate, or a pending one with a **smaller** number, is a candidate like
   any other (the decision judges it by its text). A pending candidate with a larger
   number is passed over: it numbered itself after this page was written, so its own
   probe sees this page and it yields if the two are copies. An unnumbered candidate is
   waited for (it is between its two steps, a fraction of a millisecond) until it has a
   number or its lease runs out.
4. **Settled.** A page none of whose candidates is its original is *admitted* (its mark
   removed); a page judged a copy is *withdrawn* (its entries and record removed).

Why it holds: of two near duplicates, the one numbered first (``a``) finished writing
before it took its number, which was before ``b`` took its number, which was before ``b``
probed: ``b``'s probe sees ``a``'s entries in the table (or anchor) key they share, and
``b`` judges ``a``. ``a``
passes ``b`` over. So the later one always judges the earlier, exactly as one process
deciding in number order would, and the two are never both admitted by their judgement.
Nobody waits for a larger number, so waits end; a process killed mid-decision leaves
marks whose lease (:data:`LEASE_MS`, server time of the node that holds them) runs out:
others then pass them over and remove them. A page whose lease ran out before it settled
is decided again (a slow process never admits on a stale number).

Keys (``ns`` is the namespace with its hash tag's braces removed, then ``:ix``; no key
has a hash tag, so each hashes to a slot of its own):

``ns:layout``, ``ns:count``, ``ns:seq``
    The layout (JSON), the number of fingerprints with an admitted page, the counter.
``ns:t{i}:{bucket}``
    Table ``i``'s bucket: a sorted set of the permuted fingerprints' rests (scores 0,
    members big-endian, so a prefix probe is one ``ZRANGEBYLEX``), as in one-node Redis,
    but table 0 carries no page id: the records do.
``ns:s:{bucket}``
    A hash per table-0 bucket: field = the table-0 rest, value = the records of every page
    under the fingerprint, each ``[page id length][packed page id][sketch length, 2 bytes
    little-endian][sketch]`` (the one-node format); the field ``rest + "?"`` holds the
    marks of the pages not yet settled, each ``[page id length][packed page id][state
    U/P][number, 8 bytes][lease end in ms, 8 bytes]``. Every change to one fingerprint is
    one script on this one key.
``ns:a:{lo}``
    Text anchors, as in one-node Redis (a string of packed records per low
    ``anchor_bits`` bits of an anchor, each record filed or taken out by a script on its
    one key; a sorted set in an index planned before).

Known window: the entries of a fingerprint are removed when its last record goes; a page
written under the same fingerprint at that moment (two different texts with one simhash,
decided at once while a third page withdraws it) is written back, but a probe in between
misses it. Exact copies never get there (the checksum registry decides them first).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import redis
from redis.exceptions import RedisClusterException

from dedup.adapters.redis_index import LUA_ANCHOR_ADD, LUA_ANCHOR_DROP, LayoutKey, anchor_records
from dedup.config import DEFAULT_NAMESPACE, check_namespace
from dedup.errors import ServiceUnavailable, redact
from dedup.index.core import (
    ANCHOR,
    ANCHOR_MATCHES,
    ANCHOR_READ,
    EVIDENCE_BYTES,
    Hit,
    Probe,
    pack_page_id,
    records_in_order,
    unpack_page_id,
)
from dedup.index.layout import IndexLayout
from dedup.tables import F

#: How long a page's mark holds without being settled (ms, the node's clock): a process
#: killed mid-decision blocks others' decisions at most this long.
LEASE_MS = 5000

#: How often a decision looks again at an unnumbered candidate (seconds).
POLL_S = 0.002

UNNUMBERED, PENDING = b"U", b"P"

_LUA_COMMON = r"""
local member = ARGV[1]
local mark = member .. '?'
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function split_records(raw)
  local out = {}
  local at = 1
  while raw and at <= #raw do
    local idlen = string.byte(raw, at)
    local n = string.byte(raw, at + idlen + 1) + 256 * string.byte(raw, at + idlen + 2)
    out[#out + 1] = {string.sub(raw, at + 1, at + idlen), string.sub(raw, at, at + idlen + 2 + n)}
    at = at + idlen + 3 + n
  end
  return out
end
local function split_marks(raw)
  local out = {}
  local at = 1
  while raw and at <= #raw do
    local idlen = string.byte(raw, at)
    out[#out + 1] = {string.sub(raw, at + 1, at + idlen), string.sub(raw, at, at + idlen + 17)}
    at = at + idlen + 18
  end
  return out
end
local function join(items, skip)
  local parts = {}
  for _, it in ipairs(items) do
    if it[1] ~= skip then parts[#parts + 1] = it[2] end
  end
  return table.concat(parts)
end
local function store(field, value)
  if value == '' then redis.call('HDEL', KEYS[1], field) else redis.call('HSET', KEYS[1], field, value) end
end
local function be8(x)
  local s = ''
  for _ = 1, 8 do
    s = string.char(x % 256) .. s
    x = math.floor(x / 256)
  end
  return s
end
local function from_be8(s, at)
  local x = 0
  for j = at, at + 7 do x = x * 256 + string.byte(s, j) end
  return x
end
local function mark_of(marks, pid)
  for _, m in ipairs(marks) do
    if m[1] == pid then return m end
  end
  return nil
end
"""

# BEGIN(member, pid, record, lease): the page's record and an unnumbered mark. Returns 2
# when the page is admitted under the fingerprint already (an earlier try whose reply was
# lost), else 1.
_LUA_BEGIN = _LUA_COMMON + r"""
local pid, record, lease = ARGV[2], ARGV[3], tonumber(ARGV[4])
local records = redis.call('HGET', KEYS[1], member) or ''
local marks = split_marks(redis.call('HGET', KEYS[1], mark))
local have = string.find(records, record, 1, true)
if have and not mark_of(marks, pid) then return 2 end
if not have then redis.call('HSET', KEYS[1], member, records .. record) end
store(mark, join(marks, pid) .. string.char(#pid) .. pid .. 'U' .. be8(0) .. be8(now + lease))
return 1
"""

# NUMBER(member, pid, seq, lease): the page's mark becomes pending with its number; 0 when
# the mark is gone (its lease ran out and somebody removed it).
_LUA_NUMBER = _LUA_COMMON + r"""
local pid, seq, lease = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local marks = split_marks(redis.call('HGET', KEYS[1], mark))
local m = mark_of(marks, pid)
if not m or from_be8(m[2], #pid + 3 + 8) < now then return 0 end
store(mark, join(marks, pid) .. string.char(#pid) .. pid .. 'P' .. be8(seq) .. be8(now + lease))
return 1
"""

# READ(member): {records, marks, now}
_LUA_READ = _LUA_COMMON + r"""
return {redis.call('HGET', KEYS[1], member) or '', redis.call('HGET', KEYS[1], mark) or '', now}
"""

# ADMIT(member, pid, seq): the page's pending mark removed, if it is still its own and its
# lease holds. Returns -1 when not (decide again), 1 when it is the fingerprint's first
# admitted page, else 0.
_LUA_ADMIT = _LUA_COMMON + r"""
local pid, seq = ARGV[2], tonumber(ARGV[3])
local marks = split_marks(redis.call('HGET', KEYS[1], mark))
local m = mark_of(marks, pid)
if not m or string.sub(m[2], #pid + 2, #pid + 2) ~= 'P' or from_be8(m[2], #pid + 3) ~= seq
   or from_be8(m[2], #pid + 11) < now then
  return -1
end
store(mark, join(marks, pid))
local others = 0
for _, r in ipairs(split_records(redis.call('HGET', KEYS[1], member))) do
  if r[1] ~= pid and not mark_of(marks, r[1]) then others = others + 1 end
end
if others == 0 then return 1 end
return 0
"""

# WITHDRAW(member, pid, seq, expired_only): the page's record and mark removed (a copy, or
# a dead process's page whose lease ran out, when expired_only is 1 and seq is its
# number). Returns the records left under the fingerprint, -1 when nothing was removed.
_LUA_WITHDRAW = _LUA_COMMON + r"""
local pid, seq, expired_only = ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1'
local marks = split_marks(redis.call('HGET', KEYS[1], mark))
local m = mark_of(marks, pid)
if not m then return -1 end
if expired_only and (from_be8(m[2], #pid + 3) ~= seq or from_be8(m[2], #pid + 11) >= now) then
  return -1
end
store(mark, join(marks, pid))
local records = split_records(redis.call('HGET', KEYS[1], member))
store(member, join(records, pid))
local left = 0
for _, r in ipairs(records) do
  if r[1] ~= pid then left = left + 1 end
end
return left
"""

# ADD(member, pid, record): an admitted record (a rebuild, a page admitted without a last
# check); the page's mark removed. Returns 1 when the fingerprint had no admitted page.
_LUA_ADD = _LUA_COMMON + r"""
local pid, record = ARGV[2], ARGV[3]
local marks = split_marks(redis.call('HGET', KEYS[1], mark))
local records = split_records(redis.call('HGET', KEYS[1], member))
local admitted = 0
for _, r in ipairs(records) do
  if not mark_of(marks, r[1]) then admitted = admitted + 1 end
end
store(mark, join(marks, pid))
local raw = redis.call('HGET', KEYS[1], member) or ''
if not string.find(raw, record, 1, true) then redis.call('HSET', KEYS[1], member, raw .. record) end
if admitted == 0 then return 1 end
return 0
"""

# ATTACH(member, pid, record, limit): a dropped copy's record kept under its original's
# fingerprint while the original (pid) is admitted there and the field has room (a record
# under a page that is pending, withdrawn or gone would make it look admitted).
_LUA_ATTACH = _LUA_COMMON + r"""
local pid, record, limit = ARGV[2], ARGV[3], tonumber(ARGV[4])
local raw = redis.call('HGET', KEYS[1], member)
if not raw or #raw + #record > limit or string.find(raw, record, 1, true) then return 0 end
if mark_of(split_marks(redis.call('HGET', KEYS[1], mark)), pid) then return 0 end
local admitted = false
for _, r in ipairs(split_records(raw)) do
  if r[1] == pid then admitted = true end
end
if not admitted then return 0 end
redis.call('HSET', KEYS[1], member, raw .. record)
return 1
"""

# REMOVE(member, pid): every record of the page (of any page when pid is ''), and marks.
# Returns the records left, -1 when there were none to remove.
_LUA_REMOVE = _LUA_COMMON + r"""
local pid = ARGV[2]
local records = split_records(redis.call('HGET', KEYS[1], member))
if #records == 0 then return -1 end
if pid == '' then
  redis.call('HDEL', KEYS[1], member, mark)
  return 0
end
local left = join(records, pid)
if #left == #(redis.call('HGET', KEYS[1], member)) then return -1 end
store(member, left)
store(mark, join(split_marks(redis.call('HGET', KEYS[1], mark)), pid))
return #split_records(left)
"""


# RELEASE(member, pid): the admitted page's record keeps its id and the one-byte sketch
# RELEASED (0) instead of its sketch (MongoDB holds it). Returns 1 when replaced.
_LUA_RELEASE = _LUA_COMMON + r"""
local pid = ARGV[2]
if mark_of(split_marks(redis.call('HGET', KEYS[1], mark)), pid) then return 0 end
local released = string.char(#pid) .. pid .. '\1\0\0'
local parts, done = {}, 0
for _, r in ipairs(split_records(redis.call('HGET', KEYS[1], member))) do
  if done == 0 and r[1] == pid and r[2] ~= released then
    parts[#parts + 1] = released
    done = 1
  else
    parts[#parts + 1] = r[2]
  end
end
if done == 1 then redis.call('HSET', KEYS[1], member, table.concat(parts)) end
return done
"""


class _Moved(Exception):
    """A node answered MOVED or ASK: the cluster's slots changed."""


#: Each script's SHA-1, for ``EVALSHA`` (computed once: the crawl decides from several
#: threads at once).
_SHA: dict[str, str] = {body: hashlib.sha1(body.encode()).hexdigest() for body in (
    _LUA_BEGIN, _LUA_NUMBER, _LUA_READ, _LUA_ADMIT, _LUA_WITHDRAW, _LUA_ADD, _LUA_ATTACH,
    _LUA_REMOVE, _LUA_RELEASE)}


def _sha(command: tuple[Any, ...]) -> tuple[Any, ...]:
    """An ``EVAL`` of one of the store's scripts as ``EVALSHA`` (others as they are)."""
    sha = _SHA.get(command[1]) if command[0] == "EVAL" else None
    return command if sha is None else ("EVALSHA", sha, *command[2:])


def _packed(commands: list[tuple[Any, ...]], conn: Any) -> Any:
    """Many commands as one write (hiredis packs them at C speed when it is there)."""
    try:
        from hiredis import pack_command
    except ImportError:  # pragma: no cover - redis-py packs them then
        return conn.pack_commands(commands)
    return [b"".join(pack_command(c) for c in commands)]


@dataclass
class Record:
    """One page under a fingerprint, as read: its id, text sketch (``None``: none), and,
    while it is not settled, its state (``U``/``P``), number and lease end."""

    page_id: str
    sketch: bytes | None
    state: bytes | None = None
    seq: int = 0
    lease_end: int = 0


@dataclass
class Entry:
    """What one fingerprint's field holds when read: its records, and the node's clock."""

    records: list[Record]
    now: int

    def admitted(self) -> list[Record]:
        """The records of admitted pages (no mark), in the order they were written."""
        return [r for r in self.records if r.state is None]


def _record(page_id: str, sketch: bytes | None) -> bytes:
    pid = pack_page_id(page_id)
    body = sketch or b""
    return bytes([len(pid)]) + pid + len(body).to_bytes(2, "little") + body


def parse(records: bytes, marks: bytes, now: int) -> Entry:
    """Read a fingerprint's field and marks (see the module docstring)."""
    states: dict[bytes, tuple[bytes, int, int]] = {}
    at = 0
    while at < len(marks):
        n = marks[at]
        pid = marks[at + 1:at + 1 + n]
        state = marks[at + 1 + n:at + 2 + n]
        seq = int.from_bytes(marks[at + 2 + n:at + 10 + n], "big")
        end = int.from_bytes(marks[at + 10 + n:at + 18 + n], "big")
        states[pid] = (state, seq, end)
        at += 18 + n
    out = []
    at = 0
    while at < len(records):
        n = records[at]
        pid = records[at + 1:at + 1 + n]
        size = int.from_bytes(records[at + 1 + n:at + 3 + n], "little")
        sketch = records[at + 3 + n:at + 3 + n + size]
        mark = states.get(pid)
        out.append(Record(unpack_page_id(pid), sketch or None, *mark) if mark
                   else Record(unpack_page_id(pid), sketch or None))
        at += 3 + n + size
    return Entry(out, int(now))


def index_prefix(namespace: str) -> str:
    """The sharded index's key prefix for a crawl's namespace: its hash tag's braces
    removed (so each key hashes by its own name), then ``:ix``."""
    return namespace.replace("{", "").replace("}", "") + ":ix"


class ClusterStore:
    """Index data spread over a Redis Cluster's slots (see the module docstring).

    Args:
        client: a ``redis.RedisCluster`` that does not decode responses.
        namespace: the crawl's namespace (``{crawl}``: the other keys of the crawl share
            one slot; the index's keys do not).
        url: for messages.
        lease_ms: how long an unsettled page's mark holds.
    """

    def __init__(self, client: Any, namespace: str = DEFAULT_NAMESPACE,
                 url: str | None = None, lease_ms: int = LEASE_MS) -> None:
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("ClusterStore needs a client with decode_responses=False")
        from dedup.adapters.servers.services import check_cluster_namespace

        self.client = client
        # the crawl's other keys (journal, frontier) share the namespace's one slot
        self.namespace = check_cluster_namespace(client, check_namespace(namespace))
        self.prefix = index_prefix(self.namespace)
        self.url = redact(url) if url else "a Redis Cluster"
        self.lease_ms = lease_ms
        self._layout: IndexLayout | None = None

    # ------------------------------------------------------------------ errors
    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from dedup.adapters.servers.services import redis_outage

        try:
            return fn(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            raise ServiceUnavailable(
                f"Redis Cluster at {self.url} is unreachable ({exc}). Nothing was admitted "
                "or dropped.", service="Redis") from exc
        except (redis.RedisError, RedisClusterException) as exc:
            if redis_outage(exc):
                raise ServiceUnavailable(f"Redis Cluster at {self.url} is not ready: {exc}",
                                         service="Redis") from exc
            raise

    def _pipeline(self, commands: Iterable[tuple[Any, ...]]) -> list[Any]:
        """Run ``commands`` (each ``(name, *args)``; a script as ``("EVAL", body, 1, key,
        *args)``), replies in order: one pipeline per node, all sent before any is read
        (:meth:`_by_node`). Where a slot moved (a failover, a reshard), the topology is
        read again and the commands run through redis-py's cluster pipeline, which follows
        MOVED and ASK: every command here may run twice (each is idempotent, or a script
        that says it has nothing to do)."""
        batch = list(commands)
        if not batch:
            return []
        try:
            return self._call(self._by_node, batch)
        except _Moved:
            self.client.nodes_manager.initialize()
        except ServiceUnavailable:
            # a node that does not answer may have been failed over: the next round asks
            # the cluster again where each slot is (the caller retries)
            with contextlib.suppress(redis.RedisError, RedisClusterException):
                self.client.nodes_manager.initialize()
            raise

        def run() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for command in batch:
                pipe.execute_command(*command)
            return pipe.execute()
        return self._call(run)

    def _by_node(self, batch: list[tuple[Any, ...]]) -> list[Any]:
        """Group ``batch`` by the node that serves each command's key, send each node its
        share (scripts as ``EVALSHA``, loaded where a node lacks them), then read.

        Raises:
            _Moved: a node no longer serves a key's slot.
        """
        from redis.crc import key_slot

        manager = self.client.nodes_manager
        shares: dict[str, tuple[Any, list[int]]] = {}
        for i, command in enumerate(batch):
            key = command[3] if command[0] == "EVAL" else command[1]
            raw = key if isinstance(key, bytes) else key.encode()
            node = manager.get_node_from_slot(key_slot(raw))
            shares.setdefault(node.name, (node, []))[1].append(i)
        sent = []
        try:
            for node, rows in shares.values():
                conn = self.client.get_redis_connection(node).connection_pool.get_connection()
                sent.append((conn, node, rows))
                conn.send_packed_command(_packed([_sha(batch[i]) for i in rows], conn))
            out: list[Any] = [None] * len(batch)
            missing: list[tuple[Any, int]] = []
            moved = False
            for conn, node, rows in sent:
                for i in rows:
                    try:
                        out[i] = conn.read_response()
                    except redis.exceptions.NoScriptError:
                        missing.append((node, i))
                    except (redis.exceptions.AskError, redis.exceptions.TryAgainError):
                        # redis-py parses MOVED (an AskError) and ASK replies into these,
                        # their message without the word: the slot moved, or is moving
                        moved = True
                    except redis.ResponseError as exc:
                        if str(exc).startswith(("MOVED", "ASK", "TRYAGAIN")):
                            moved = True
                        else:
                            out[i] = exc
            if moved:
                raise _Moved()
            if missing:  # a node without the scripts (new, restarted, failed over)
                for node in {id(n): n for n, _ in missing}.values():
                    for body in _SHA:
                        self.client.get_redis_connection(node).script_load(body)
                again = self._by_node([batch[i] for _, i in missing])
                for (_, i), value in zip(missing, again):
                    out[i] = value
            for value in out:
                if isinstance(value, Exception):
                    raise value
            return out
        except BaseException:
            for conn, _, _ in sent:
                conn.disconnect()  # replies may still be in flight
            raise
        finally:
            for conn, node, _ in sent:
                self.client.get_redis_connection(node).connection_pool.release(conn)

    # ----------------------------------------------------------------- layout
    def read_layout(self) -> dict | None:
        return LayoutKey(self._call, self.client, f"{self.prefix}:layout").read()

    def create_layout(self, description: dict) -> dict:
        return LayoutKey(self._call, self.client, f"{self.prefix}:layout").create(description)

    def legacy_layout(self) -> dict | None:
        """The layout of an index an earlier simcrawl kept in the namespace's one hash
        slot on this cluster (``None``: there is none)."""
        return LayoutKey(self._call, self.client, f"{self.namespace}:layout").read()

    def compact_limit(self) -> int:
        try:
            got = self._call(self.client.config_get, "zset-max-listpack-entries")
        except redis.ResponseError:
            return 128
        values = list(got.values()) if isinstance(got, dict) else []
        first = values[0] if values else 128
        if isinstance(first, dict):  # some clients answer per node
            first = next(iter(first.values()), 128)
        return max(2, int(first))

    def attach(self, layout: IndexLayout) -> None:
        self._layout = layout
        self._free = np.array([(1 << (F - t.prefix_bits)) - 1 for t in layout.tables],
                              dtype=np.uint64)
        bd = max(1, -(-layout.bucket_bits // 4))
        self._table_keys = [f"{self.prefix}:t{t}:{{:0{bd}x}}".format
                            for t in range(len(layout.tables))]
        self._sketch_key = f"{self.prefix}:s:{{:0{bd}x}}".format
        ad = max(1, -(-layout.anchor_bits // 4))
        self._anchor_key = f"{self.prefix}:a:{{:0{ad}x}}".format

    @property
    def layout(self) -> IndexLayout:
        assert self._layout is not None, "attach() a layout first"
        return self._layout

    # -------------------------------------------------------------- coordinates
    def _member(self, rest: int) -> bytes:
        return int(rest).to_bytes(self.layout.member_bytes, "big")

    def where(self, fp: int) -> tuple[list[int], list[int]]:
        """The buckets and rests of one fingerprint in every table."""
        buckets, rests = self.layout.coordinates(np.array([fp], dtype=np.uint64))
        return buckets[0].tolist(), rests[0].tolist()

    def field(self, fp: int) -> tuple[str, bytes]:
        """The sketch key and field of a fingerprint."""
        buckets, rests = self.where(fp)
        return self._sketch_key(buckets[0]), self._member(rests[0])

    def _on_fields(self, script: str, fps: Sequence[int], *columns: Sequence[Any]) -> list[Any]:
        """Run ``script`` on each fingerprint's field (its sketch key and table-0 rest,
        then that row's value of each of ``columns``), in one pipeline."""
        return self._pipeline(self._field_commands(script, fps, *columns))

    def _entries(self, fp: int, anchors: Sequence[int]) -> list[tuple[Any, ...]]:
        """The ``ZADD`` of a fingerprint's table entries, and its anchors filed."""
        buckets, rests = self.where(fp)
        return [("ZADD", name(b), 0, self._member(r))
                for name, b, r in zip(self._table_keys, buckets, rests)] \
            + self._anchor_commands(fp, anchors, drop=False)

    def _anchor_commands(self, fp: int, anchors: Sequence[int], drop: bool
                         ) -> list[tuple[Any, ...]]:
        """A fingerprint filed under (or taken from) its anchors: one command per anchor
        key (a script on a packed string, ``ZADD``/``ZREM`` on an earlier index's set)."""
        layout, fpb = self.layout, fp.to_bytes(8, "big")
        if layout.packed_anchors:
            script = LUA_ANCHOR_DROP if drop else LUA_ANCHOR_ADD
            return [("EVAL", script, 1, self._anchor_key(layout.anchor_slot(a)),
                     layout.anchor_tag(a) + fpb) for a in anchors]
        if drop:
            return [("ZREM", self._anchor_key(layout.anchor_slot(a)), layout.anchor_tag(a) + fpb)
                    for a in anchors]
        return [("ZADD", self._anchor_key(layout.anchor_slot(a)), 0, layout.anchor_tag(a) + fpb)
                for a in anchors]

    def _drop_entries(self, fp: int, anchors: Sequence[int]) -> list[tuple[Any, ...]]:
        buckets, rests = self.where(fp)
        return [("ZREM", name(b), self._member(r))
                for name, b, r in zip(self._table_keys, buckets, rests)] \
            + self._anchor_commands(fp, anchors, drop=True)

    # ---------------------------------------------------------- the protocol
    def _field_commands(self, script: str, fps: Sequence[int], *columns: Sequence[Any]
                        ) -> list[tuple[Any, ...]]:
        if not fps:
            return []
        # table 0's coordinates of the whole batch at once
        buckets, rests = self.layout.coordinates(np.array(fps, dtype=np.uint64))
        return [("EVAL", script, 1, self._sketch_key(b), self._member(r), *args)
                for b, r, *args in zip(buckets[:, 0].tolist(), rests[:, 0].tolist(), *columns)]

    def begin(self, rows: Sequence[tuple[int, str, bytes | None, Sequence[int]]]) -> list[bool]:
        """Step 1 for each ``(fp, page id, sketch, anchors)``: record, unnumbered mark and
        entries, in one pipeline (a probe that finds an entry before its record passes it
        over: its page is numbered after the prober, and sees it). ``False`` where the
        page is admitted under that fingerprint already."""
        if not rows:
            return []
        commands = self._field_commands(
            _LUA_BEGIN, [r[0] for r in rows], [pack_page_id(r[1]) for r in rows],
            [_record(r[1], r[2]) for r in rows], [self.lease_ms] * len(rows))
        commands += [c for fp, _, _, anchors in rows for c in self._entries(fp, anchors)]
        return [int(r) == 1 for r in self._pipeline(commands)[:len(rows)]]

    def number(self, rows: Sequence[tuple[int, str]]) -> list[int | None]:
        """Step 2: a number for each row (from one ``INCRBY``), written to its mark;
        ``None`` where the mark is gone (its lease ran out)."""
        return self.number_and_probe(rows, [], [], 0)[0]

    def number_and_probe(self, rows: Sequence[tuple[int, str]], fps: Sequence[int],
                         anchors: Sequence[Sequence[int]], k: int
                         ) -> tuple[list[int | None], list[dict[int, tuple[int, int]]]]:
        """:meth:`number` ``rows``, then :meth:`probe` ``fps`` in the same pipeline as the
        numbers are written (a probe needs only to follow the ``INCRBY``)."""
        seqs: list[int] = []
        if rows:
            last = int(self._call(self.client.incrby, f"{self.prefix}:seq", len(rows)))
            seqs = list(range(last - len(rows) + 1, last + 1))
        commands = self._field_commands(_LUA_NUMBER, [fp for fp, _ in rows],
                                        [pack_page_id(pid) for _, pid in rows], seqs,
                                        [self.lease_ms] * len(rows))
        probes, parse_probe = self._probe_commands(fps, anchors, k)
        replies = self._pipeline(commands + probes)
        numbered = [seq if int(ok) else None for seq, ok in zip(seqs, replies)]
        return numbered, parse_probe(replies[len(commands):])

    def probe(self, fps: Sequence[int], anchors: Sequence[Sequence[int]], k: int
              ) -> list[dict[int, tuple[int, int]]]:
        """Every fingerprint each row's tables find within ``k`` bits and each one its
        anchors find (filed under at least :data:`ANCHOR_MATCHES` of them, an anchor with
        more than :data:`ANCHOR_READ` pages passed over): ``{fp: (table or ANCHOR,
        distance)}`` per row."""
        commands, parse_replies = self._probe_commands(fps, anchors, k)
        return parse_replies(self._pipeline(commands))

    def _probe_commands(self, fps: Sequence[int], anchors: Sequence[Sequence[int]], k: int
                        ) -> tuple[list[tuple[Any, ...]],
                                   Callable[[list[Any]], list[dict[int, tuple[int, int]]]]]:
        """:meth:`probe`'s commands, and the function that reads their replies."""
        layout = self.layout
        if not fps:
            return [], lambda replies: []
        arr = np.array(fps, dtype=np.uint64)
        buckets, rests = layout.coordinates(arr)
        lo = rests & ~self._free
        hi = lo | self._free
        commands: list[tuple[Any, ...]] = []
        for i in range(len(fps)):
            for t, name in enumerate(self._table_keys):
                commands.append(("ZRANGEBYLEX", name(int(buckets[i, t])),
                                 b"[" + self._member(int(lo[i, t])),
                                 b"[" + self._member(int(hi[i, t]))))
            for a in anchors[i]:
                key, tag = self._anchor_key(layout.anchor_slot(a)), layout.anchor_tag(a)
                if layout.packed_anchors:
                    commands.append(("GET", key))
                else:
                    commands.append(("ZRANGEBYLEX", key, b"[" + tag, b"[" + tag + b"\xff" * 8,
                                     "LIMIT", 0, ANCHOR_READ + 1))

        def parse_replies(raw: list[Any]) -> list[dict[int, tuple[int, int]]]:
            return self._found(fps, anchors, k, buckets, iter(raw))
        return commands, parse_replies

    def _found(self, fps: Sequence[int], anchors: Sequence[Sequence[int]], k: int,
               buckets: np.ndarray, replies: Iterator[Any]) -> list[dict[int, tuple[int, int]]]:
        layout = self.layout
        out = []
        for i, fp in enumerate(fps):
            found: dict[int, tuple[int, int]] = {}
            for t in range(len(self._table_keys)):
                for member in next(replies):
                    other = layout.fingerprint_of(t, int(buckets[i, t]),
                                                  int.from_bytes(member, "big"))
                    d = (other ^ fp).bit_count()
                    if d <= k and other not in found:
                        found[other] = (t, d)
            shared: dict[int, int] = {}
            usable = 0
            for a in anchors[i]:
                reply = next(replies)
                pages = anchor_records(reply, layout.anchor_tag(a)) if layout.packed_anchors \
                    else [int.from_bytes(m[8:16], "big") for m in reply]
                if len(pages) > ANCHOR_READ:
                    continue
                usable += 1
                for other in pages:
                    shared[other] = shared.get(other, 0) + 1
            need = min(ANCHOR_MATCHES, usable)
            for other, n in shared.items():
                if n >= need and other not in found:
                    found[other] = (ANCHOR, (other ^ fp).bit_count())
            out.append(found)
        return out

    def read(self, fps: Sequence[int]) -> list[Entry]:
        """Each fingerprint's records and marks, with its node's clock."""
        return [parse(r[0], r[1], int(r[2])) for r in self._on_fields(_LUA_READ, fps)]

    def admit(self, rows: Sequence[tuple[int, str, int]]) -> list[bool]:
        """Step 4 for pages none of whose candidates is their original: ``False`` where
        the page's lease ran out first (it is decided again)."""
        replies = [int(r) for r in self._on_fields(
            _LUA_ADMIT, [r[0] for r in rows], [pack_page_id(r[1]) for r in rows],
            [r[2] for r in rows])]
        first = sum(1 for r in replies if r == 1)
        if first:  # (not deferred to a later round: a process may never send another)
            self._call(self.client.incrby, f"{self.prefix}:count", first)
        return [r >= 0 for r in replies]

    def withdraw(self, rows: Sequence[tuple[int, str, int, Sequence[int]]],
                 expired_only: bool = False) -> int:
        """Remove unsettled pages (copies; with ``expired_only``, pages whose lease ran
        out, identified by their number): their records and marks, and the fingerprint's
        entries when no record is left. Returns how many were removed."""
        left = [int(r) for r in self._on_fields(
            _LUA_WITHDRAW, [r[0] for r in rows], [pack_page_id(r[1]) for r in rows],
            [r[2] for r in rows], [1 if expired_only else 0] * len(rows))]
        self._forget([(fp, anchors) for (fp, _, _, anchors), n in zip(rows, left) if n == 0])
        return sum(1 for n in left if n >= 0)

    def _forget(self, gone: Sequence[tuple[int, Sequence[int]]]) -> None:
        """Remove the entries of fingerprints left without records, then write back those
        a page was written under meanwhile (see "Known window")."""
        if not gone:
            return
        self._pipeline(c for fp, anchors in gone for c in self._drop_entries(fp, anchors))
        back = [(fp, anchors) for (fp, anchors), e in zip(gone, self.read([fp for fp, _ in gone]))
                if e.records]
        if back:
            self._pipeline(c for fp, anchors in back for c in self._entries(fp, anchors))

    # ------------------------------------------------------------ IndexStore
    def decide_many(self, probes: Iterable[tuple[Probe, Sequence[str] | None]], k: int
                    ) -> Iterator[list[list[Hit]]]:
        """Queries only (``page_ids`` ``None``): the admitted fingerprints within ``k``
        (admission goes through :class:`~dedup.adapters.sharded.ShardedIndex`)."""
        for probe, page_ids in probes:
            if page_ids is not None:
                raise TypeError("a sharded index admits through ShardedIndex, not in one call")
            anchors = probe.anchors or [[] for _ in probe.fps]
            found = self.probe(probe.fps, anchors, k)
            fps = list(dict.fromkeys(f for row in found for f in row))
            live = {fp for fp, e in zip(fps, self.read(fps)) if e.admitted()}
            yield [[(ANCHOR, f, d) for f, (_, d) in row.items() if f in live] for row in found]

    def add_many(self, probes: Iterable[tuple[Probe, Sequence[str]]]) -> Iterator[list[bool]]:
        for probe, page_ids in probes:
            sketches = probe.sketches or [None] * len(probe.fps)
            anchors = probe.anchors or [[] for _ in probe.fps]
            new = [int(r) == 1 for r in self._on_fields(
                _LUA_ADD, probe.fps, [pack_page_id(p) for p in page_ids],
                [_record(p, s) for p, s in zip(page_ids, sketches)])]
            self._pipeline(c for fp, a in zip(probe.fps, anchors) for c in self._entries(fp, a))
            if sum(new):
                self._call(self.client.incrby, f"{self.prefix}:count", sum(new))
            yield new

    def keep_evidence(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        sketches = probe.sketches or [None] * len(probe.fps)
        anchors = probe.anchors or [[] for _ in probe.fps]
        done = [bool(int(r)) for r in self._on_fields(
            _LUA_ATTACH, probe.fps, [pack_page_id(p) for p in page_ids],
            [_record(p, s) for p, s in zip(page_ids, sketches)],
            [EVIDENCE_BYTES] * len(page_ids))]
        self._pipeline(c for ok, fp, row in zip(done, probe.fps, anchors) if ok
                       for c in self._anchor_commands(fp, row, drop=False))
        return done

    def remove(self, probe: Probe, page_ids: Sequence[str | None]) -> list[bool]:
        anchors = probe.anchors or [[] for _ in probe.fps]
        left = [int(r) for r in self._on_fields(
            _LUA_REMOVE, probe.fps, [b"" if p is None else pack_page_id(p) for p in page_ids])]
        gone = [(fp, a) for fp, a, n in zip(probe.fps, anchors, left) if n == 0]
        if gone:
            self._call(self.client.decrby, f"{self.prefix}:count", len(gone))
        self._forget(gone)
        return [n >= 0 for n in left]

    def release(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        return [bool(int(r)) for r in self._on_fields(
            _LUA_RELEASE, probe.fps, [pack_page_id(p) for p in page_ids])]

    def lookup(self, fps: Sequence[int]) -> list[str | None]:
        return [e.admitted()[0].page_id if e.admitted() else None for e in self.read(fps)]

    def evidence(self, fps: Sequence[int]) -> list[list[tuple[str | None, bytes | None]]]:
        out: list[list[tuple[str | None, bytes | None]]] = []
        for e in self.read(fps):
            admitted = e.admitted()
            if not admitted:
                out.append([(None, None)])
                continue
            out.append(records_in_order(admitted[0].page_id, [
                (r.page_id, r.sketch or b"") for r in admitted]))
        return [[(p, s or None) for p, s in rows] for rows in out]

    def count(self) -> int:
        return int(self._call(self.client.get, f"{self.prefix}:count") or 0)

    def _keys(self, pattern: str) -> list[bytes]:
        return self._call(lambda: list(self.client.scan_iter(match=pattern, count=1000)))

    def entries(self) -> Iterator[tuple[int, str]]:
        layout = self.layout
        prefix = f"{self.prefix}:s:"
        for key in self._keys(prefix + "*"):
            bucket = int(key.decode()[len(prefix):], 16)
            fields = self._call(self.client.hgetall, key)
            for member, raw in fields.items():
                if member.endswith(b"?") and len(member) == layout.member_bytes + 1:
                    continue
                entry = parse(raw, fields.get(member + b"?", b""), 0)
                admitted = entry.admitted()
                if admitted:
                    fp = layout.fingerprint_of(0, bucket, int.from_bytes(member, "big"))
                    yield fp, admitted[0].page_id

    def clear(self) -> None:
        """Delete every key of the index (on every node), and the one-slot index an
        earlier simcrawl wrote under the namespace."""
        def run() -> None:
            for pattern in (f"{self.prefix}:*", f"{self.namespace}:t*:*",
                            f"{self.namespace}:s:*", f"{self.namespace}:a:*",
                            f"{self.namespace}:layout", f"{self.namespace}:count"):
                for key in list(self.client.scan_iter(match=pattern, count=1000)):
                    self.client.unlink(key)
        self._call(run)

    def describe(self) -> str:
        return f"{self.url} (index sharded under {self.prefix}:*)"

    def node_of(self, key: str) -> str:
        """The address of the node serving ``key`` (for the benchmark's balance)."""
        node = self.client.get_node_from_key(key)
        return f"{node.host}:{node.port}"

