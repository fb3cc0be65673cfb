"""Learned template blocks per host in Redis (:class:`HostTemplates`; the rule, the
interface and the memory one are :mod:`dedup.templates`)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

import redis

from dedup.errors import ServiceUnavailable
from dedup.adapters.servers.services import is_cluster
from dedup.templates import (
    DEFAULT_MIN_PAGES,
    KEEP,
    OWN_CHARS,
    PAGES,
    TEMPLATE_SHARE,
    TTL,
    template_blocks,
)

#: One host's admitted pages taught, in order (KEYS[1]: its sorted set; ARGV: the least
#: characters of a page's own text, the TTL, the blocks kept, then each page: its number
#: of lines and each line's block and weight). A page teaches when the weight of its lines
#: not yet counted reaches the least or half its own (dedup.templates.teaches, the same
#: rule): its distinct blocks and the host's "pages" are counted by one. Then the TTL,
#: and the least frequent blocks trimmed once the set holds twice the blocks kept.
_LEARN = """
local key = KEYS[1]
local least, ttl, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local i, taught = 4, 0
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local own, total, blocks = 0, 0, {}
  for j = i + 1, i + 2 * n, 2 do
    local weight = tonumber(ARGV[j + 1])
    total = total + weight
    if not redis.call('ZSCORE', key, ARGV[j]) then own = own + weight end
    blocks[ARGV[j]] = true
  end
  i = i + 1 + 2 * n
  if own > 0 and own >= math.min(least, total / 2) then
    for block in pairs(blocks) do redis.call('ZINCRBY', key, 1, block) end
    redis.call('ZINCRBY', key, 1, 'pages')
    taught = taught + 1
  end
end
if taught > 0 then
  redis.call('EXPIRE', key, ttl)
  if redis.call('ZCARD', key) > 2 * keep then
    redis.call('ZREMRANGEBYRANK', key, 0, -keep - 1)
  end
end
return taught
"""


class HostTemplates:
    """Learned template blocks per host, in Redis (see the module docstring).

    Args:
        client: Redis.
        namespace: the index's key prefix.
        min_pages, share: admitted pages a block must appear on to be template text, and
            the least share of the host's admitted pages.
        keep, ttl: blocks kept per host, and seconds before an idle host's counts expire.
        refresh: seconds a process may keep a host's learned blocks before reading again
            (default 0: read for every batch, the same state for every process).
        own_chars: the characters of its own text an admitted page needs to teach
            (:func:`dedup.templates.teaches`).
    """

    def __init__(self, client: redis.Redis, namespace: str,
                 min_pages: int = DEFAULT_MIN_PAGES, keep: int = KEEP, ttl: int = TTL,
                 refresh: float = 0.0, share: float = TEMPLATE_SHARE,
                 own_chars: int = OWN_CHARS) -> None:
        if min_pages < 1:
            raise ValueError(f"min_pages must be at least 1, got {min_pages}")
        self.client, self.namespace = client, namespace
        self.min_pages, self.keep, self.ttl, self.refresh = min_pages, keep, ttl, refresh
        self.share, self.own_chars = share, own_chars
        self._learn = client.register_script(_LEARN)
        self._cluster = is_cluster(client)
        self._cache: dict[str, tuple[float, frozenset[int]]] = {}

    def key(self, host: str) -> str:
        """The host's sorted set."""
        return f"{self.namespace}:tpl:{host}"

    def known(self, hosts: Iterable[str]) -> dict[str, frozenset[int]]:
        """Each host's template blocks (read from Redis, or at most ``refresh`` s old).

        Raises:
            ServiceUnavailable: Redis failed.
        """
        now = time.monotonic()
        out: dict[str, frozenset[int]] = {}
        stale = []
        for host in set(hosts):
            cached = self._cache.get(host)
            if self.refresh > 0 and cached is not None and now - cached[0] < self.refresh:
                out[host] = cached[1]
            else:
                stale.append(host)
        if stale:
            try:
                pipe = self.client.pipeline(transaction=False)
                for host in stale:  # the blocks seen often enough, and the host's pages
                    pipe.zrangebyscore(self.key(host), self.min_pages, "+inf",
                                       withscores=True)
                replies = pipe.execute()
            except redis.RedisError as exc:
                raise ServiceUnavailable(f"Redis failed reading template blocks: {exc}",
                                         service="Redis") from exc
            for host, members in zip(stale, replies):
                seen = {m.decode() if isinstance(m, bytes) else str(m): n for m, n in members}
                pages = seen.pop(PAGES, 0.0)
                blocks = template_blocks(((int(m), n) for m, n in seen.items()), pages,
                                         self.min_pages, self.share)
                if self.refresh > 0:
                    self._cache[host] = (now, blocks)
                out[host] = blocks
            if len(self._cache) > 100_000:  # hosts seen long ago
                self._cache = {h: v for h, v in self._cache.items()
                               if now - v[0] < self.refresh}
        return out

    def learn(self, pages: Iterable[tuple[str, Sequence[int | None], Sequence[int]]]
              ) -> None:
        """Count the distinct blocks of the admitted pages (``(host, block keys, weight of
        each block)``) that :func:`dedup.templates.teaches` says teach: one script a host
        (:data:`_LEARN`: its pages in order, each judged against the lines counted before
        it, atomically, so two processes teaching one host count as one process would;
        one key, so a Redis Cluster routes it), in one pipeline; on a Redis Cluster, whose
        pipeline runs no script, one call a host.

        Raises:
            ServiceUnavailable: Redis failed.
        """
        by_host: dict[str, list[str]] = {}
        for host, keys, weights in pages:
            args = by_host.setdefault(host, [])
            lines = [(str(k), n) for k, n in zip(keys, weights) if k is not None]
            args.append(str(len(lines)))
            for key, n in lines:
                args += (key, str(n))
        if not by_host:
            return
        try:
            pipe = None if self._cluster else self.client.pipeline(transaction=False)
            for host, args in by_host.items():  # a cluster's pipeline runs no script:
                self._learn(keys=[self.key(host)],  # there, one call a host
                            args=[self.own_chars, self.ttl, self.keep, *args], client=pipe)
            if pipe is not None:
                pipe.execute()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed counting template blocks: {exc}",
                                     service="Redis") from exc
