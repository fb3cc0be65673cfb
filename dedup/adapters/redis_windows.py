"""The registered originals' pinyin window postings in Redis
(:class:`RedisWindowStore`; the index, the interface and the memory store are
:mod:`dedup.index.windows`).

Redis keys (``ns`` is the namespace):

- ``ns:pw:params``: the fingerprint parameters as JSON (``SET NX``); a fingerprinter with
  other parameters is refused (:class:`~dedup.index.IndexMismatchError`).
- ``ns:pw:layout``: ``{"bucket_bits": b}``, planned from the capacity (``SET NX``).
- ``ns:pw:{bucket hex}``: a hash per bucket (the top ``b`` bits of the code times a
  64-bit odd constant), about 64 postings each so that Redis keeps it as a compact
  listpack: field = the code (8 bytes, big-endian), value = its pages, each a length
  byte and the page id packed as in the simhash tables (a 24-hex id in 13 bytes).
- ``ns:pwc:{page id}``: the page's distinct codes, 8 bytes each, big-endian (for
  idempotent adds and removal).

Adding and removing a page are each one Lua script (all keys in KEYS), so a page's
postings and its ``pwc`` marker appear and disappear together.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import redis

from dedup.config import check_namespace
from dedup.errors import ServiceUnavailable
from dedup.index.core import pack_page_id, unpack_page_id
from dedup.index.windows import WindowIndex
from dedup.pinyin import PinyinFingerprinter

#: Postings per bucket hash the layout aims at (Redis keeps hashes this small as compact
#: listpacks).
BUCKET_TARGET = 64

#: Windows per registered original the layout plans for.
WINDOWS_PER_ORIGINAL = 128

_ADD = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 2, #KEYS do
  local v = redis.call('HGET', KEYS[i], ARGV[i]) or ''
  redis.call('HSET', KEYS[i], ARGV[i], v .. ARGV[1])
end
redis.call('SET', KEYS[1], ARGV[#KEYS + 1])
return 1
"""

_REMOVE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local entry = ARGV[1]
for i = 2, #KEYS do
  local v = redis.call('HGET', KEYS[i], ARGV[i])
  if v then
    local out, pos = {}, 1
    while pos <= #v do
      local n = string.byte(v, pos)
      local e = string.sub(v, pos, pos + n)
      if e ~= entry then out[#out + 1] = e end
      pos = pos + n + 1
    end
    if #out == 0 then redis.call('HDEL', KEYS[i], ARGV[i])
    else redis.call('HSET', KEYS[i], ARGV[i], table.concat(out)) end
  end
end
redis.call('DEL', KEYS[1])
return 1
"""


def bucket_bits_for(capacity: int) -> int:
    """Bucket bits for ``capacity`` registered originals: about :data:`BUCKET_TARGET`
    postings per bucket when they are all in."""
    postings = max(1, capacity) * WINDOWS_PER_ORIGINAL
    return max(0, min(32, math.ceil(math.log2(max(postings / BUCKET_TARGET, 1)))))


def _entry(page_id: str) -> bytes:
    packed = pack_page_id(page_id)
    return bytes((len(packed),)) + packed


def _entries(value: bytes) -> list[str]:
    out, pos = [], 0
    while pos < len(value):
        n = value[pos]
        out.append(unpack_page_id(value[pos + 1:pos + 1 + n]))
        pos += n + 1
    return out


class RedisWindowStore:
    """Postings in Redis hashes, bucketed (see the module's key list).

    Args:
        client: a ``redis.Redis`` (bytes responses).
        namespace: the key prefix (the crawl's ``DEDUP_NAMESPACE``).
        url: for messages.
        capacity: registered originals to plan the buckets for, when the index is new
            (an existing index keeps its bucketing).

    Raises:
        ServiceUnavailable: from any call when Redis cannot be reached.
    """

    def __init__(self, client: redis.Redis, namespace: str, url: str = "redis",
                 capacity: int = 100_000) -> None:
        check_namespace(namespace)
        self.client, self.ns, self.url = client, namespace, url
        key = f"{namespace}:pw:layout"

        def run() -> Any:
            self.client.set(key, json.dumps({"bucket_bits": bucket_bits_for(capacity)}),
                            nx=True)
            return self.client.get(key)

        self.bucket_bits = int(json.loads(self._call(run))["bucket_bits"])
        self._add = client.register_script(_ADD)
        self._remove = client.register_script(_REMOVE)

    def _call(self, fn: Any) -> Any:
        try:
            return fn()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis at {self.url} failed: {exc}", service="Redis") from exc

    def _where(self, code: int) -> tuple[str, bytes]:
        mixed = (code * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
        bucket = mixed >> (64 - self.bucket_bits) if self.bucket_bits else 0
        return f"{self.ns}:pw:{bucket:x}", code.to_bytes(8, "big")

    def params(self, wanted: dict[str, Any]) -> dict[str, Any]:
        key = f"{self.ns}:pw:params"
        text = json.dumps(wanted, sort_keys=True)

        def run() -> Any:
            self.client.set(key, text, nx=True)
            return self.client.get(key)

        return json.loads(self._call(run))

    def add(self, page_id: str, codes: Sequence[int]) -> bool:
        distinct = sorted(set(codes))
        where = [self._where(c) for c in distinct]
        keys = [f"{self.ns}:pwc:{page_id}", *(k for k, _ in where)]
        args = [_entry(page_id), *(f for _, f in where),
                b"".join(c.to_bytes(8, "big") for c in distinct)]
        return bool(self._call(lambda: self._add(keys=keys, args=args)))

    def postings(self, codes: Sequence[int]) -> dict[int, set[str]]:
        by_bucket: dict[str, list[tuple[int, bytes]]] = {}
        for c in sorted(set(codes)):
            key, field_ = self._where(c)
            by_bucket.setdefault(key, []).append((c, field_))

        def run() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for key, items in by_bucket.items():
                pipe.hmget(key, [f for _, f in items])
            return pipe.execute()

        replies = self._call(run) if by_bucket else []
        out: dict[int, set[str]] = {}
        for items, values in zip(by_bucket.values(), replies):
            for (code, _), value in zip(items, values):
                if value:
                    out[code] = set(_entries(value))
        return out

    def remove(self, page_id: str) -> bool:
        def run() -> bool:
            packed: bytes | None = self.client.get(  # type: ignore[assignment]
                f"{self.ns}:pwc:{page_id}")
            if packed is None:
                return False
            where = [self._where(int.from_bytes(packed[i:i + 8], "big"))
                     for i in range(0, len(packed), 8)]
            return bool(self._remove(keys=[f"{self.ns}:pwc:{page_id}",
                                           *(k for k, _ in where)],
                                     args=[_entry(page_id), *(f for _, f in where)]))

        return bool(self._call(run))

    def count(self) -> int:
        def run() -> int:
            return sum(1 for _ in self.client.scan_iter(f"{self.ns}:pwc:*", count=1000))

        return int(self._call(run))


def open_window_index(config: Any, client: redis.Redis, url: str = "redis",
                      capacity: int = 100_000) -> tuple[WindowIndex | None, dict[str, Any]]:
    """The registered originals' pinyin window index in Redis for a
    :class:`~dedup.config.DedupConfig` (``None`` when ``DEDUP_PINYIN`` is off), and the
    fingerprint parameters; ``capacity`` plans the buckets of a new index.

    Raises:
        IndexMismatchError: the index was built with other ``DEDUP_PINYIN_*`` settings.
    """
    if not config.pinyin:
        return None, {}
    params = PinyinFingerprinter.from_config(config).describe()
    store = RedisWindowStore(client, config.namespace, url, capacity=capacity)
    return WindowIndex(store, params, config.pinyin_min_share, config.pinyin_min_run), params
