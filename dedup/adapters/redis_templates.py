"""Learned template blocks per host in Redis (:class:`HostTemplates`; the rule, the
interface and the memory one are :mod:`dedup.templates`)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable

import redis

from dedup.errors import ServiceUnavailable
from dedup.templates import DEFAULT_MIN_PAGES, KEEP, PAGES, TEMPLATE_SHARE, TTL, template_blocks


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
    """

    def __init__(self, client: redis.Redis, namespace: str,
                 min_pages: int = DEFAULT_MIN_PAGES, keep: int = KEEP, ttl: int = TTL,
                 refresh: float = 0.0, share: float = TEMPLATE_SHARE) -> None:
        if min_pages < 1:
            raise ValueError(f"min_pages must be at least 1, got {min_pages}")
        self.client, self.namespace = client, namespace
        self.min_pages, self.keep, self.ttl, self.refresh = min_pages, keep, ttl, refresh
        self.share = share
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

    def learn(self, pages: Iterable[tuple[str, Iterable[int | None]]]) -> None:
        """Count the distinct blocks of admitted pages (``(host, block keys)``): one
        pipeline of ``ZINCRBY`` and ``EXPIRE`` (plain commands, so a Redis Cluster routes
        each host's key), then a trim of the hosts whose set outgrew ``2 * keep``. A
        host's pages are counted together: a block on several of them (its template) is
        one ``ZINCRBY`` by their number.

        Raises:
            ServiceUnavailable: Redis failed.
        """
        counts: dict[str, Counter[int]] = {}
        pages_of: Counter[str] = Counter()
        for host, keys in pages:
            distinct = {k for k in keys if k is not None}
            if distinct:
                counts.setdefault(host, Counter()).update(distinct)
                pages_of[host] += 1
        try:
            pipe = self.client.pipeline(transaction=False)
            sizes_at: list[tuple[str, int]] = []  # host, position of its ZCARD reply
            at = 0
            for host, blocks in counts.items():
                key = self.key(host)
                for block in sorted(blocks):
                    pipe.zincrby(key, blocks[block], block)
                pipe.zincrby(key, pages_of[host], PAGES)  # the most frequent: never trimmed
                pipe.expire(key, self.ttl)
                pipe.zcard(key)
                at += len(blocks) + 3
                sizes_at.append((host, at - 1))
            if not sizes_at:
                return
            replies = pipe.execute()
            full = {h for h, i in sizes_at if int(replies[i]) > 2 * self.keep}
            if full:
                trim = self.client.pipeline(transaction=False)
                for host in full:
                    trim.zremrangebyrank(self.key(host), 0, -self.keep - 1)
                trim.execute()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed counting template blocks: {exc}",
                                     service="Redis") from exc
