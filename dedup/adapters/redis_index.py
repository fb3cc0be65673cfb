"""The index in Redis: permuted tables as bucketed, lexicographically ordered sorted sets.

Keys (``ns`` is the namespace, explicit and stable; default ``simcrawl``):

``ns:layout``
    JSON of the :class:`~dedup.index.layout.IndexLayout` (design and bucketing), written
    once with ``SET NX``; a process with another layout gets ``IndexMismatchError``.
``ns:t{i}:{bucket}``
    Table ``i``, bucket = the leading ``bucket_bits`` of the permuted fingerprint, in hex.
    A sorted set whose scores are all 0 and whose members are the remaining bits,
    big-endian and fixed-width, so ``ZRANGEBYLEX`` walks them in numeric order and a
    prefix probe is one range. No fingerprint is ever a score (scores are doubles and
    lose bits above 2^53). In table 0 (only), the page id follows the fixed-width part of
    the member, so the original of a match needs no other key; a page id of lowercase hex
    digits (a MongoDB ObjectId, say) is stored as bytes after a NUL marker, half the size.
``ns:s:{bucket}``
    Text sketches (:mod:`dedup.sketch`): a hash per table-0 bucket, from the table-0
    member (without its page id) to the records of the admitted pages with that
    fingerprint and a text, each ``[page id length (1 byte)][packed page id][sketch
    length (2 bytes, little-endian)][sketch]``: the page the entry names, and any page
    admitted later with the same fingerprint (it is not indexed again, but it is a
    candidate). Written in the same script as the admission, deleted with the entry.
    Where the layout releases sketches, a stored page's record keeps the one byte
    ``RELEASED`` instead of its sketch (:meth:`RedisStore.release`).
``ns:a:{lo}``
    Text anchors (:attr:`dedup.sketch.TextSketch.anchors`, 64-bit), a key per low
    ``anchor_bits`` bits of an anchor (its *slot*, planned with the layout). A string of
    packed records, each :data:`~dedup.index.layout.ANCHOR_RECORD_BYTES` long: the anchor's
    *tag* (its next 16 bits above the slot's) and the fingerprint of an admitted page filed
    under it (8 bytes, big-endian), about 64 records a string at the planned capacity; a
    probe reads the string with one ``GET`` and finds the records under its tag with a
    substring search. (An index planned before keeps a sorted set per slot, whose members
    are the whole anchor and the fingerprint, 16 bytes, found with ``ZRANGEBYLEX``.) A probe
    passes over an anchor with more than :data:`~dedup.index.core.ANCHOR_READ` pages, and a
    page filed under at least :data:`~dedup.index.core.ANCHOR_MATCHES` of the probe's
    anchors is a candidate. Written in the same script as the admission, deleted with the
    entry.
``ns:count``
    Number of fingerprints.

Probe, decision and insert run as one Lua script per batch of fingerprints, so Redis
executes them atomically: two crawler processes can never both admit two near duplicates
of each other. An admission after a text check also counts the sketch records under each
judged candidate's fingerprint: a page admitted under that fingerprint meanwhile, or a
copy's sketch attached to it, is judged before the page is admitted. Every key a script
touches is passed in ``KEYS``.

Redis Cluster: one script call touches keys in many buckets, which hash to different
slots, so it is refused there. To run on a cluster, put the whole namespace in one slot
with a hash tag (``namespace="{simcrawl}"``), which keeps the atomic check but not the
sharding; sharding by table would make check-and-add two-phase (probe every shard, then
insert), and two processes could then both admit a pair of near duplicates in the gap.
``find-all`` over the stored fingerprints reconciles such pairs afterwards.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np
import redis

from dedup.config import DEFAULT_NAMESPACE, check_namespace
from dedup.errors import ServiceUnavailable, redact
from dedup.index.core import (
    ANCHOR_MATCHES,
    ANCHOR_READ,
    EVIDENCE_BYTES,
    Hit,
    Probe,
    pack_page_id,
    records_in_order,
    unpack_page_id,
)
from dedup.index.layout import ANCHOR_RECORD_BYTES, IndexLayout
from dedup.tables import F

#: Default key prefix.

_pack: Any
try:  # hiredis packs a command with many arguments at C speed
    from hiredis import pack_command as _pack
except ImportError:  # pragma: no cover - redis-py packs it then
    _pack = None

_HEX_ID = re.compile(r"^(?:[0-9a-f]{2})+$")

# The scripts' arguments. ARGV[1..4]: k, insert flag (1/0), T (tables), n (fingerprints).
# Then per fingerprint: its T members (the fixed-width rest of each permuted value), for
# DECIDE also the T range starts and T range ends of its probes ("[" + bytes), then the
# packed page id ("" for none), the text sketch ("" for none), for DECIDE the number of
# table hits that still let it be inserted (those of candidates already judged), the
# fingerprint (8 bytes, big-endian), the number of its text anchors and each anchor (8
# bytes), and for DECIDE the judged candidates (8 bytes each), their number and per
# judged candidate its table-0 member and the number of sketch records it had. KEYS[1] is
# the count, then per fingerprint its T table keys, its sketch key, its anchors' keys and
# for DECIDE its judged candidates' sketch keys.
# Python computes every string; the scripts call Redis and compare candidates. A table-0
# member is the rest followed by the page id, so its range end gets 256 bytes of 0xFF
# appended (page ids are at most 255 bytes).
_LUA_COMMON = r"""
local T = tonumber(ARGV[3])
local n = tonumber(ARGV[4])
local TOP = string.rep('\255', 256)
local FP_TOP = string.rep('\255', 8)
-- A page's sketch record, added to its fingerprint's field unless it is there already
local function keep_sketch(key, member, pid, sketch)
  if sketch == '' then return end
  local n = #sketch
  local record = string.char(#pid) .. pid .. string.char(n % 256, math.floor(n / 256)) .. sketch
  -- a new fingerprint's field (nearly every admission): one call
  if redis.call('HSETNX', key, member, record) == 1 then return end
  local have = redis.call('HGET', key, member)
  if not string.find(have, record, 1, true)
     and not string.find(have, string.char(#pid) .. pid .. '\1\0\0', 1, true) then
    redis.call('HSET', key, member, have .. record)
  end
end
__ANCHOR_FUNCTIONS__
-- File a page with a text under its anchors (args from 'at': count, then the anchors)
local function file_anchors(sketch, kb, at, fp)
  if sketch == '' then return end
  for j = 1, tonumber(ARGV[at]) do
    anchor_add(KEYS[kb + j], ARGV[at + j], fp)
  end
end
"""

# The text anchors' keys, in an index planned before they were packed: a sorted set per
# slot, members the whole anchor (8 bytes) and the fingerprint (8 bytes).
_LUA_ANCHOR_SETS = r"""
local function anchor_add(key, anchor, fp)
  redis.call('ZADD', key, 0, anchor .. fp)
end
local function anchor_drop(key, anchor, fp)
  redis.call('ZREM', key, anchor .. fp)
end
-- the fingerprints filed under an anchor, at most __ANCHOR_READ__ + 1 of them
local function anchor_pages(key, anchor)
  local found = redis.call('ZRANGEBYLEX', key, '[' .. anchor, '[' .. anchor .. FP_TOP,
                           'LIMIT', 0, __ANCHOR_READ__ + 1)
  for i, c in ipairs(found) do found[i] = string.sub(c, 9) end
  return found
end
"""

# Where a record starts in a string of packed records of R bytes, or nil: a plain
# substring search, kept where it starts on a record's boundary.
_LUA_RECORD_AT = r"""
local R = __RECORD__
local function record_at(have, record)
  local from = 1
  while true do
    local at = string.find(have, record, from, true)
    if not at then return nil end
    if at % R == 1 then return at end
    from = at + 1
  end
end
"""

# Packed: a string per slot, records of __RECORD__ bytes: the anchor's tag, then the
# fingerprint. A string is written whole (SET): APPEND would leave it room to grow as
# large again.
_LUA_ANCHOR_RECORDS = _LUA_RECORD_AT + r"""
-- the strings this script read or wrote (false: none), so that a page's admission files
-- its anchors in the strings its probe read without reading them again; every write of
-- the script goes through here
local strings = {}
local function string_of(key)
  local have = strings[key]
  if have == nil then
    have = redis.call('GET', key)
    strings[key] = have
  end
  return have
end
local function put(key, value)
  if value == '' then redis.call('DEL', key) else redis.call('SET', key, value) end
  strings[key] = value ~= '' and value
end
local function anchor_add(key, tag, fp)
  local have = string_of(key)
  if not have then
    put(key, tag .. fp)
  elseif not record_at(have, tag .. fp) then
    put(key, have .. tag .. fp)
  end
end
local function anchor_drop(key, tag, fp)
  local have = string_of(key)
  if not have then return end
  local at = record_at(have, tag .. fp)
  if at then put(key, string.sub(have, 1, at - 1) .. string.sub(have, at + R)) end
end
-- the fingerprints filed under an anchor, at most __ANCHOR_READ__ + 1 of them
local function anchor_pages(key, tag)
  local found = {}
  local have = string_of(key)
  if not have then return found end
  local from, t = 1, #tag
  while #found <= __ANCHOR_READ__ do
    local at = string.find(have, tag, from, true)
    if not at then break end
    if at % R == 1 then
      found[#found + 1] = string.sub(have, at + t, at + R - 1)
      from = at + R
    else
      from = at + 1
    end
  end
  return found
end
"""

_LUA_DECIDE = _LUA_COMMON + r"""
local k = tonumber(ARGV[1])
local insert = ARGV[2] == '1'
local function distance(m, c, limit)
  local d = 0
  for j = 1, #m do
    local x = bit.bxor(string.byte(m, j), string.byte(c, j))
    while x ~= 0 do
      x = bit.band(x, x - 1)
      d = d + 1
    end
    if d > limit then return d end
  end
  return d
end
-- The sketch records a fingerprint's field holds
local function records(key, member)
  local have = redis.call('HGET', key, member)
  if not have then return 0 end
  local count, at = 0, 1
  while at <= #have do
    local idlen = string.byte(have, at)
    at = at + 3 + idlen + string.byte(have, at + idlen + 1) + 256 * string.byte(have, at + idlen + 2)
    count = count + 1
  end
  return count
end
local function judged_has(judged, fp)
  for p = 1, #judged, 8 do
    if string.sub(judged, p, p + 7) == fp then return true end
  end
  return false
end
local out = {}
local added = 0
local a = 4
local kb = 1
for i = 0, n - 1 do
  local hits = {}
  local table_hits = 0
  for t = 1, T do
    local hi = ARGV[a + 2 * T + t]
    if t == 1 then hi = hi .. TOP end
    local found = redis.call('ZRANGEBYLEX', KEYS[kb + t], ARGV[a + T + t], hi)
    for _, c in ipairs(found) do
      local d = distance(ARGV[a + t], c, k)
      if d <= k then
        hits[#hits + 1] = t - 1
        hits[#hits + 1] = c
        hits[#hits + 1] = d
        table_hits = table_hits + 1
      end
    end
  end
  local pid, sketch = ARGV[a + 3 * T + 1], ARGV[a + 3 * T + 2]
  local fp = ARGV[a + 3 * T + 4]
  local na = tonumber(ARGV[a + 3 * T + 5])
  local judged = ARGV[a + 3 * T + 6 + na]
  -- the pages filed under at least two of the text anchors (one, for a text with one), at
  -- any distance
  local unjudged = false
  local shared = {}
  local order = {}
  local usable = 0
  for j = 1, na do
    local found = anchor_pages(KEYS[kb + T + 1 + j], ARGV[a + 3 * T + 5 + j])
    -- an anchor more pages share is a common phrase, not evidence: passed over
    if #found > __ANCHOR_READ__ then found = {} else usable = usable + 1 end
    for _, other in ipairs(found) do
      if not shared[other] then
        shared[other] = 0
        order[#order + 1] = other
      end
      shared[other] = shared[other] + 1
    end
  end
  local need = math.min(__ANCHOR_MATCHES__, usable)
  for _, other in ipairs(order) do
    if shared[other] >= need then
      hits[#hits + 1] = -1
      hits[#hits + 1] = other
      hits[#hits + 1] = distance(fp, other, 64)
      if not judged_has(judged, other) then unjudged = true end
    end
  end
  -- a judged candidate whose sketches changed (a page admitted under its fingerprint, a
  -- copy attached to it) is judged again
  local nj = tonumber(ARGV[a + 3 * T + 7 + na])
  for j = 1, nj do
    local at = a + 3 * T + 6 + na + 2 * j
    if records(KEYS[kb + T + 1 + na + j], ARGV[at]) ~= tonumber(ARGV[at + 1]) then
      local other = string.sub(judged, 8 * j - 7, 8 * j)
      hits[#hits + 1] = -2
      hits[#hits + 1] = other
      hits[#hits + 1] = distance(fp, other, 64)
      unjudged = true
    end
  end
  if insert and table_hits == tonumber(ARGV[a + 3 * T + 3]) and not unjudged then
    -- with judged candidates allowed, one may be this very fingerprint (another page's):
    -- it stays indexed once, for the first page, as ADD does
    local new
    if T > 1 then
      new = redis.call('ZADD', KEYS[kb + 2], 0, ARGV[a + 2]) == 1
    else
      new = #redis.call('ZRANGEBYLEX', KEYS[kb + 1], '[' .. ARGV[a + 1],
                        '[' .. ARGV[a + 1] .. TOP, 'LIMIT', 0, 1) == 0
    end
    if new then
      redis.call('ZADD', KEYS[kb + 1], 0, ARGV[a + 1] .. pid)
      for t = 3, T do
        redis.call('ZADD', KEYS[kb + t], 0, ARGV[a + t])
      end
      added = added + 1
    end
    keep_sketch(KEYS[kb + T + 1], ARGV[a + 1], pid, sketch)
    file_anchors(sketch, kb + T + 1, a + 3 * T + 5, fp)
  end
  out[i + 1] = hits
  a = a + 3 * T + 7 + na + 2 * nj
  kb = kb + T + 1 + na + nj
end
if added > 0 then redis.call('INCRBY', KEYS[1], added) end
return out
"""

_LUA_ADD = _LUA_COMMON + r"""
local out = {}
local added = 0
local a = 4
local kb = 1
for i = 0, n - 1 do
  local m = ARGV[a + 1]
  local na = tonumber(ARGV[a + T + 4])
  -- A fingerprint is stored iff its member is in table 1 (no page id there, so ZADD
  -- itself says whether it was new); with a single table, look in table 0.
  local new
  if T > 1 then
    new = redis.call('ZADD', KEYS[kb + 2], 0, ARGV[a + 2]) == 1
  else
    new = #redis.call('ZRANGEBYLEX', KEYS[kb + 1], '[' .. m, '[' .. m .. TOP, 'LIMIT', 0, 1) == 0
  end
  if new then
    redis.call('ZADD', KEYS[kb + 1], 0, m .. ARGV[a + T + 1])
    for t = 3, T do
      redis.call('ZADD', KEYS[kb + t], 0, ARGV[a + t])
    end
    added = added + 1
    out[i + 1] = 1
  else
    out[i + 1] = 0
  end
  keep_sketch(KEYS[kb + T + 1], m, ARGV[a + T + 1], ARGV[a + T + 2])
  file_anchors(ARGV[a + T + 2], kb + T + 1, a + T + 4, ARGV[a + T + 3])
  a = a + T + 4 + na
  kb = kb + T + 1 + na
end
if added > 0 then redis.call('INCRBY', KEYS[1], added) end
return out
"""

_LUA_REMOVE = _LUA_COMMON + r"""
local out = {}
local removed = 0
local a = 4
local kb = 1
for i = 0, n - 1 do
  local m = ARGV[a + 1]
  local want = ARGV[a + T + 1]
  local fp = ARGV[a + T + 3]
  local na = tonumber(ARGV[a + T + 4])
  local have = redis.call('ZRANGEBYLEX', KEYS[kb + 1], '[' .. m, '[' .. m .. TOP, 'LIMIT', 0, 1)[1]
  if have and (want == '' or want == string.sub(have, #m + 1)) then
    redis.call('ZREM', KEYS[kb + 1], have)
    for t = 2, T do
      redis.call('ZREM', KEYS[kb + t], ARGV[a + t])
    end
    redis.call('HDEL', KEYS[kb + T + 1], m)
    for j = 1, na do
      anchor_drop(KEYS[kb + T + 1 + j], ARGV[a + T + 4 + j], fp)
    end
    removed = removed + 1
    out[i + 1] = 1
  else
    out[i + 1] = 0
  end
  a = a + T + 4 + na
  kb = kb + T + 1 + na
end
if removed > 0 then redis.call('DECRBY', KEYS[1], removed) end
return out
"""

_LUA_ATTACH = _LUA_COMMON + r"""
local out = {}
local a = 4
local kb = 1
for i = 0, n - 1 do
  local m = ARGV[a + 1]
  local na = tonumber(ARGV[a + T + 4])
  local sketch = ARGV[a + T + 2]
  out[i + 1] = 0
  -- only under a fingerprint still indexed, and while its field has room
  if #redis.call('ZRANGEBYLEX', KEYS[kb + 1], '[' .. m, '[' .. m .. TOP, 'LIMIT', 0, 1) == 1 then
    local have = redis.call('HGET', KEYS[kb + T + 1], m) or ''
    if #have + #sketch <= __EVIDENCE_BYTES__ then
      keep_sketch(KEYS[kb + T + 1], m, ARGV[a + T + 1], sketch)
      file_anchors(sketch, kb + T + 1, a + T + 4, ARGV[a + T + 3])
      out[i + 1] = 1
    end
  end
  a = a + T + 4 + na
  kb = kb + T + 1 + na
end
return out
"""

# RELEASE: per row, KEYS[i] its sketch key, ARGV its table-0 member and packed page id:
# the page's record keeps its id and the one-byte sketch RELEASED (0). Returns 1 per row
# where a sketch was replaced.
_LUA_RELEASE = r"""
local out = {}
for i = 1, #KEYS do
  local member, pid = ARGV[2 * i - 1], ARGV[2 * i]
  local have = redis.call('HGET', KEYS[i], member)
  out[i] = 0
  local at = 1
  while have and at <= #have do
    local idlen = string.byte(have, at)
    local n = string.byte(have, at + idlen + 1) + 256 * string.byte(have, at + idlen + 2)
    if string.sub(have, at + 1, at + idlen) == pid
       and not (n == 1 and string.byte(have, at + idlen + 3) == 0) then
      redis.call('HSET', KEYS[i], member, string.sub(have, 1, at + idlen) .. '\1\0\0'
                 .. string.sub(have, at + idlen + 3 + n))
      out[i] = 1
      break
    end
    at = at + idlen + 3 + n
  end
end
return out
"""



def _scripts(packed: bool) -> dict[str, str]:
    """The scripts for an index whose anchors are packed records (or sorted sets)."""
    anchors = (_LUA_ANCHOR_RECORDS if packed else _LUA_ANCHOR_SETS) \
        .replace("__RECORD__", str(ANCHOR_RECORD_BYTES))
    out = {}
    for name, body in (("decide", _LUA_DECIDE), ("add", _LUA_ADD), ("remove", _LUA_REMOVE),
                       ("attach", _LUA_ATTACH)):
        out[name] = body.replace("__ANCHOR_FUNCTIONS__", anchors) \
            .replace("__ANCHOR_READ__", str(ANCHOR_READ)) \
            .replace("__ANCHOR_MATCHES__", str(ANCHOR_MATCHES)) \
            .replace("__EVIDENCE_BYTES__", str(EVIDENCE_BYTES))
    return out


_SCRIPTS = {packed: _scripts(packed) for packed in (False, True)}

# One packed anchor record on its own key (a cluster files anchors key by key): KEYS[1]
# the string, ARGV the record (tag and fingerprint); ADD files it unless it is there, DROP
# takes it out. Short on purpose: a crawl sends six a page.
_LUA_ONE_RECORD = (_LUA_RECORD_AT + r"""
local record = ARGV[1]
local have = redis.call('GET', KEYS[1]) or ''
local at = record_at(have, record)
""").replace("__RECORD__", str(ANCHOR_RECORD_BYTES))

#: File a packed anchor record (``KEYS[1]``, ``ARGV[1]``: tag and fingerprint).
LUA_ANCHOR_ADD = _LUA_ONE_RECORD + """
if not at then redis.call('SET', KEYS[1], have .. record) end
return 1
"""

#: Take a packed anchor record out (the same arguments).
LUA_ANCHOR_DROP = _LUA_ONE_RECORD + """
if at then
  local left = string.sub(have, 1, at - 1) .. string.sub(have, at + R)
  if left == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], left) end
end
return 1
"""


def anchor_records(have: bytes | None, tag: bytes) -> list[int]:
    """The fingerprints a packed anchor string files under ``tag`` (the scripts'
    ``anchor_pages``, for a probe that reads the string with ``GET``), at most
    :data:`ANCHOR_READ` + 1 of them."""
    found: list[int] = []
    if not have:
        return found
    at = have.find(tag)
    while at >= 0 and len(found) <= ANCHOR_READ:
        if at % ANCHOR_RECORD_BYTES == 0:
            found.append(int.from_bytes(have[at + len(tag):at + ANCHOR_RECORD_BYTES], "big"))
            at = have.find(tag, at + ANCHOR_RECORD_BYTES)
        else:
            at = have.find(tag, at + 1)
    return found


class LayoutKey:
    """An index's layout in one Redis key, written once (``SET NX``): the one-node and the
    cluster store each keep theirs in one.

    Args:
        call: the store's guarded call (its errors become ``ServiceUnavailable``).
        client: the store's client.
        key: the key.
    """

    def __init__(self, call: Any, client: Any, key: str) -> None:
        self.call, self.client, self.key = call, client, key

    def read(self) -> dict | None:
        """The stored layout description, or ``None``."""
        raw = self.call(self.client.get, self.key)
        return None if raw is None else json.loads(raw)

    def create(self, description: dict) -> dict:
        """Store ``description`` unless one is stored; return the stored one."""
        self.call(self.client.set, self.key, json.dumps(description), nx=True)
        stored = self.read()
        assert stored is not None
        return stored


class RedisStore:
    """Index data in Redis (see the module docstring for the keys).

    Args:
        client: a ``redis.Redis`` (see :func:`dedup.adapters.servers.services.connect_redis`, which pings
            and gives a clear error for a wrong URL). Must not decode responses.
        namespace: the key prefix; explicit and stable, so a restart finds its index.
        url: the server's URL, for messages.

    Raises:
        ValueError: a bad namespace, a client that decodes responses, or on a Redis
            Cluster a namespace without a hash tag (``{crawl}``).
    """

    def __init__(self, client: redis.Redis, namespace: str = DEFAULT_NAMESPACE,
                 url: str | None = None) -> None:
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("RedisStore needs a client with decode_responses=False")
        from dedup.adapters.servers.services import check_cluster_namespace

        self.client = client
        self.namespace = check_cluster_namespace(client, check_namespace(namespace))
        self.url = redact(url) if url else _client_url(client)
        self._layout: IndexLayout | None = None

    # ------------------------------------------------------------------ errors
    def _unavailable(self, exc: Exception) -> ServiceUnavailable:
        return ServiceUnavailable(
            f"Redis at {self.url} is unreachable ({exc}). Nothing was admitted or dropped. "
            "Start the server or fix REDIS_URL; unset REDIS_URL to use the embedded server.",
            service="Redis")

    def _outage(self, exc: BaseException) -> ServiceUnavailable | None:
        """What a redis-py error means for the crawl: the server unreachable, or up but not
        serving now (loading, failing over, at its ``maxmemory``, read-only), each a
        :class:`ServiceUnavailable`; ``None`` for an error that is no outage."""
        from dedup.adapters.servers.services import redis_outage

        if isinstance(exc, (redis.ConnectionError, redis.TimeoutError)):
            return self._unavailable(exc)
        if redis_outage(exc):
            return ServiceUnavailable(f"Redis at {self.url} is not ready: {exc}",
                                      service="Redis")
        return None

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from redis.exceptions import RedisClusterException

        try:
            return fn(*args, **kwargs)
        except (redis.RedisError, RedisClusterException) as exc:
            if (outage := self._outage(exc)) is not None:
                raise outage from exc
            raise

    # ----------------------------------------------------------------- layout
    @property
    def _layout_key(self) -> str:
        return f"{self.namespace}:layout"

    def read_layout(self) -> dict | None:
        return LayoutKey(self._call, self.client, self._layout_key).read()

    def create_layout(self, description: dict) -> dict:
        return LayoutKey(self._call, self.client, self._layout_key).create(description)

    def compact_limit(self) -> int:
        """The server's compact-encoding limit for sorted sets (Redis 7
        ``zset-max-listpack-entries``, 6 ``zset-max-ziplist-entries``); 128 when ``CONFIG``
        is not allowed (managed services)."""
        for name in ("zset-max-listpack-entries", "zset-max-ziplist-entries"):
            try:
                got = self._call(self.client.config_get, name)
            except redis.ResponseError:
                break
            if got:
                return max(2, int(next(iter(got.values()))))
        return 128

    def attach(self, layout: IndexLayout) -> None:
        self._layout = layout
        self._free = np.array([(1 << (F - t.prefix_bits)) - 1 for t in layout.tables],
                              dtype=np.uint64)
        bd = max(1, -(-layout.bucket_bits // 4))
        ns = self.namespace.replace("{", "{{").replace("}", "}}")  # a hash tag's braces
        self._table_keys = [f"{ns}:t{t}:{{:0{bd}x}}".format for t in range(len(layout.tables))]
        self._sketch_key = f"{ns}:s:{{:0{bd}x}}".format
        ad = max(1, -(-layout.anchor_bits // 4))
        self._anchor_key = f"{ns}:a:{{:0{ad}x}}".format
        self._scripts = _SCRIPTS[layout.packed_anchors]

    # ------------------------------------------------------------------ batches
    def _split(self, values: np.ndarray, lead: bytes = b"") -> list[bytes]:
        """Each ``uint64`` as its last ``member_bytes`` big-endian bytes, after ``lead``."""
        assert self._layout is not None
        nb = self._layout.member_bytes
        raw = values.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - nb:]
        if lead:
            raw = np.concatenate([np.full((raw.shape[0], len(lead)), lead[0], np.uint8), raw],
                                 axis=1)
        blob = np.ascontiguousarray(raw).tobytes()
        width = raw.shape[1]
        return [blob[j:j + width] for j in range(0, len(blob), width)]

    def _args(self, probe: Probe, page_ids: Sequence[str | None] | None, ranges: bool
              ) -> tuple[list[Any], list[Any]]:
        layout = self._layout
        assert layout is not None, "attach() a layout first"
        tables = len(layout.tables)
        members = self._split(probe.rests)
        if ranges:
            lo = probe.rests & ~self._free
            los, his = self._split(lo, b"["), self._split(lo | self._free, b"[")
        keys: list[Any] = [f"{self.namespace}:count"]
        args: list[Any] = []
        names, sketches = self._table_keys, probe.sketches
        for i, row in enumerate(probe.buckets.tolist()):
            anchors = probe.anchors[i] if probe.anchors is not None else ()
            keys.extend([name(bucket) for name, bucket in zip(names, row)])
            keys.append(self._sketch_key(row[0]))
            keys.extend(self._anchor_key(layout.anchor_slot(a)) for a in anchors)
            at = i * tables
            args.extend(members[at:at + tables])
            if ranges:
                args.extend(los[at:at + tables])
                args.extend(his[at:at + tables])
            pid = page_ids[i] if page_ids is not None else None
            args.append(b"" if pid is None else pack_page_id(pid))
            args.append((sketches[i] or b"") if sketches is not None else b"")
            if ranges:
                args.append(probe.expect[i] if probe.expect is not None else 0)
            args.append(probe.fps[i].to_bytes(8, "big"))
            args.append(len(anchors))
            args.extend(layout.anchor_tag(a) for a in anchors)
            if ranges:
                judged = probe.judged[i] if probe.judged is not None else {}
                args.append(b"".join(fp.to_bytes(8, "big") for fp in judged))
                args.append(len(judged))
                if judged:
                    buckets, rests = layout.coordinates(np.fromiter(
                        judged, dtype=np.uint64, count=len(judged)))
                    keys.extend(self._sketch_key(b) for b in buckets[:, 0].tolist())
                    for member, records in zip(self._split(rests[:, 0]), judged.values()):
                        args.extend((member, records))
        return keys, args

    def _pool(self) -> Any:
        """The connection pool of the server that holds the namespace's keys (on a Redis
        Cluster, the node that serves the hash tag's slot; moving that slot while a crawl
        runs fails its decisions with a MOVED error, which a restart resolves)."""
        from dedup.adapters.servers.services import is_cluster

        if is_cluster(self.client):
            cluster: Any = self.client
            node = cluster.get_node_from_key(self._layout_key)
            return cluster.get_redis_connection(node).connection_pool
        return self.client.connection_pool

    def _eval(self, script: str, calls: Iterable[tuple[list[Any], list[Any]]]
              ) -> Iterator[Any]:
        """Run ``script`` once per ``(keys, args)``, in order, on one connection, keeping
        two calls in flight: the next call's arguments are built (by the lazy ``calls``)
        while Redis runs the previous one. ``EVAL`` (not ``EVALSHA``), so a restarted
        server that lost its script cache needs no second round trip."""
        pool = self._pool()
        conn = self._call(pool.get_connection)
        in_flight = 0
        body = script.encode()

        def send(keys: list[Any], args: list[Any]) -> None:
            command = (b"EVAL", body, len(keys), *keys, *args)
            packed = _pack(command) if _pack else conn.pack_command(*command)
            conn.send_packed_command([packed] if isinstance(packed, bytes) else packed)

        try:
            for keys, args in calls:
                send(keys, args)
                in_flight += 1
                if in_flight == 2:
                    in_flight -= 1
                    yield conn.read_response()
            while in_flight:
                in_flight -= 1
                yield conn.read_response()
        except GeneratorExit:
            # the caller took the replies it wanted (one call's: ``next(iter(...))``) and
            # let go: with none still in flight the connection is clean and goes back to
            # the pool; with one, its reply would be read by the next user: closed
            if in_flight:
                conn.disconnect()
            raise
        except BaseException as exc:
            conn.disconnect()  # replies may still be in flight: do not reuse
            if isinstance(exc, redis.RedisError) and (outage := self._outage(exc)) is not None:
                raise outage from exc
            raise
        finally:
            pool.release(conn)

    def decide_many(self, probes: Iterable[tuple[Probe, Sequence[str] | None]], k: int
                    ) -> Iterator[list[list[Hit]]]:
        """The ``decide`` script (probe, and insert the pages given ids) for a stream of
        batches, pipelined (see :meth:`_eval`)."""
        def calls() -> Iterator[tuple[list[Any], list[Any]]]:
            for probe, page_ids in probes:
                keys, args = self._args(probe, page_ids, ranges=True)
                insert = 1 if page_ids is not None else 0
                yield keys, [k, insert, len(self._table_keys), len(probe.fps), *args]

        assert self._layout is not None, "attach() a layout first"
        nb = self._layout.member_bytes
        for reply in self._eval(self._scripts["decide"], calls()):
            yield [[(int(h[j]), int.from_bytes(h[j + 1] if int(h[j]) < 0  # ANCHOR, CHANGED
                                               else h[j + 1][:nb], "big"), int(h[j + 2]))
                    for j in range(0, len(h), 3)] for h in reply]

    def add_many(self, probes: Iterable[tuple[Probe, Sequence[str]]]) -> Iterator[list[bool]]:
        """The ``add`` script (insert without probing) for a stream of batches,
        pipelined."""
        def calls() -> Iterator[tuple[list[Any], list[Any]]]:
            for probe, page_ids in probes:
                keys, args = self._args(probe, page_ids, ranges=False)
                yield keys, [0, 1, len(self._table_keys), len(probe.fps), *args]

        for reply in self._eval(self._scripts["add"], calls()):
            yield [bool(x) for x in reply]

    def keep_evidence(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        keys, args = self._args(probe, page_ids, ranges=False)
        head = [0, 1, len(self._table_keys), len(probe.fps)]
        reply = next(iter(self._eval(self._scripts["attach"], [(keys, head + args)])))
        return [bool(x) for x in reply]

    def remove(self, probe: Probe, page_ids: Sequence[str | None]) -> list[bool]:
        keys, args = self._args(probe, page_ids, ranges=False)
        head = [0, 0, len(self._table_keys), len(probe.fps)]
        reply = next(iter(self._eval(self._scripts["remove"], [(keys, head + args)])))
        return [bool(x) for x in reply]

    def release(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        keys = [self._sketch_key(b) for b in probe.buckets[:, 0].tolist()]
        args = [x for m, p in zip(self._split(probe.rests[:, 0]), page_ids)
                for x in (m, pack_page_id(p))]
        return [bool(x) for x in next(iter(self._eval(_LUA_RELEASE, [(keys, args)])))]

    def lookup(self, fps: Sequence[int]) -> list[str | None]:
        return [pid for pid, _ in self._read(fps, sketches=False)]  # type: ignore[misc]

    def evidence(self, fps: Sequence[int]) -> list[list[tuple[str | None, bytes | None]]]:
        return [_pages(pid, records) for pid, records in self._read(fps, sketches=True)]

    def _read(self, fps: Sequence[int], sketches: bool
              ) -> list[tuple[str | None, bytes | None]]:
        """Each fingerprint's page id (from its table-0 member) and, if asked, its sketch,
        in one pipeline."""
        if not fps:
            return []
        layout = self._layout
        assert layout is not None, "attach() a layout first"
        nb, shift = layout.member_bytes, F - layout.bucket_bits
        pipe = self.client.pipeline(transaction=False)
        for fp in fps:  # the page id lives in table 0 only
            permuted = layout.tables[0].permute(fp)
            member = (permuted & ((1 << shift) - 1)).to_bytes(nb, "big")
            bucket = permuted >> shift if shift < F else 0
            pipe.zrangebylex(self._table_keys[0](bucket), b"[" + member,
                             b"[" + member + b"\xff" * 256, 0, 1)
            if sketches:
                pipe.hget(self._sketch_key(bucket), member)
        replies = self._call(pipe.execute)
        step = 2 if sketches else 1
        return [(unpack_page_id(replies[j][0][nb:]) if replies[j] else None,
                 replies[j + 1] if sketches else None) for j in range(0, len(replies), step)]

    def count(self) -> int:
        return int(self._call(self.client.get, f"{self.namespace}:count") or 0)

    def entries(self) -> Iterator[tuple[int, str]]:
        layout = self._layout
        assert layout is not None, "attach() a layout first"
        nb = layout.member_bytes
        prefix = f"{self.namespace}:t0:"
        for key in self._call(lambda: list(self.client.scan_iter(match=prefix + "*",
                                                                 count=1000))):
            bucket = int(key.decode()[len(prefix):], 16)
            for member in self._call(self.client.zrange, key, 0, -1):
                rest = int.from_bytes(member[:nb], "big")
                yield layout.fingerprint_of(0, bucket, rest), unpack_page_id(member[nb:])

    def clear(self) -> None:
        """Delete every key of the namespace (in batches, with ``UNLINK``)."""
        def run() -> None:
            batch = []
            for key in self.client.scan_iter(match=f"{self.namespace}:*", count=1000):
                batch.append(key)
                if len(batch) >= 1000:
                    self.client.unlink(*batch)
                    batch = []
            if batch:
                self.client.unlink(*batch)
        self._call(run)

    def describe(self) -> str:
        return f"Redis at {self.url} (namespace {self.namespace!r})"


def _client_url(client: redis.Redis) -> str:
    kw = client.get_connection_kwargs()
    if kw.get("path"):
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', '?')}:{kw.get('port', '?')}/{kw.get('db', 0)}"


def _pages(first: str | None, records: bytes | None) -> list[tuple[str | None, bytes | None]]:
    """The pages a fingerprint's sketch field holds (see the module docstring), the page
    its entry names first (``None`` as its sketch when it has none)."""
    sketched: list[tuple[str, bytes]] = []
    at, raw = 0, records or b""
    while at < len(raw):
        n = raw[at]
        pid = unpack_page_id(raw[at + 1:at + 1 + n])
        size = int.from_bytes(raw[at + 1 + n:at + 3 + n], "little")
        sketched.append((pid, raw[at + 3 + n:at + 3 + n + size]))
        at += 3 + n + size
    return records_in_order(first, sketched)
