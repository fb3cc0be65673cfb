"""The turn ledger in Redis (:class:`RedisTurns`; the interface and the memory one are
:mod:`dedup.turns`): one hash per namespace, ``{ns}:turned``, page id -> the holder's URL
and host (a tab between them)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import redis

from dedup.errors import ServiceUnavailable
from dedup.turns import TurnClaim

# KEYS[1]: the hash; ARGV: page id, holder read, new URL, new value (URL TAB host)
_CLAIM = """
local now = redis.call('HGET', KEYS[1], ARGV[1])
if now then
  local url = string.match(now, '^[^\\t]*')
  if url ~= ARGV[2] and url ~= ARGV[3] then return 0 end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
return 1
"""


def turned_key(namespace: str) -> str:
    """The hash of a namespace's turned ids."""
    return f"{namespace}:turned"


class RedisTurns:
    """The ledger in Redis, shared by a namespace's crawl processes (one hash: one node
    of a cluster holds it).

    Args:
        client: redis-py client (one server, or a cluster).
        namespace: the index's key prefix.
    """

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self.client = client
        self.key = turned_key(namespace)
        self._claim: Any = client.register_script(_CLAIM)

    def claim(self, claims: Sequence[TurnClaim]) -> list[bool]:
        """See :meth:`dedup.turns.TurnLedger.claim`."""
        try:
            return [bool(self._claim(keys=[self.key],
                                     args=[c.page_id, c.holder, c.url, f"{c.url}\t{c.host}"]))
                    for c in claims]
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while turning a match round: {exc}",
                                     service="Redis") from exc

    def holders(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """See :meth:`dedup.turns.TurnLedger.holders`."""
        ids = list(dict.fromkeys(page_ids))
        if not ids:
            return {}
        try:
            values = self.client.hmget(self.key, ids)
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while reading turned originals: {exc}",
                                     service="Redis") from exc
        out = {}
        for pid, value in zip(ids, values):
            if value is not None:
                url, _, host = (value.decode() if isinstance(value, bytes) else value
                                ).partition("\t")
                out[pid] = (url, host)
        return out
