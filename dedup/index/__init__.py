"""The near-duplicate index: permuted tables over a store (in memory or in Redis).

    >>> from dedup.index import MemoryStore, NearDuplicateIndex
    >>> index = NearDuplicateIndex(MemoryStore(), capacity=1000)
    >>> index.check_and_add(0xFFFF0000FFFF0000, "a") is None
    True
    >>> index.query(0xFFFF0000FFFF0007)
    [Match(fingerprint=18446462603027742720, page_id='a', distance=3)]
"""

from typing import Any

from ..config import check_namespace
from .cluster_store import ClusterStore
from .core import (
    DEFAULT_BATCH,
    DEFAULT_CAPACITY,
    IndexStore,
    Match,
    NearDuplicateIndex,
    Probe,
    check_fingerprint,
    check_page_id,
)
from .layout import IndexLayout, IndexMismatchError
from .memory import MemoryStore
from .redis_store import DEFAULT_NAMESPACE, RedisStore
from .sharded import ShardedIndex


def redis_store(client: Any, namespace: str = DEFAULT_NAMESPACE, url: str | None = None
                ) -> RedisStore | ClusterStore:
    """The index store for what ``client`` is connected to: one Redis node keeps the
    whole index and decides in one script (:class:`RedisStore`); a Redis Cluster spreads
    it over its slots (:class:`ClusterStore`)."""
    from ..services import is_cluster

    if is_cluster(client):
        return ClusterStore(client, namespace, url=url)
    return RedisStore(client, namespace, url=url)


def open_index(store: Any, k: int | None = None, **kwargs: Any) -> NearDuplicateIndex:
    """The index over ``store`` (:class:`NearDuplicateIndex`'s arguments): a
    :class:`ShardedIndex` on a :class:`ClusterStore`."""
    if isinstance(store, ClusterStore):
        return ShardedIndex(store, k, **kwargs)
    return NearDuplicateIndex(store, k, **kwargs)


__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_CAPACITY",
    "DEFAULT_NAMESPACE",
    "ClusterStore",
    "IndexLayout",
    "IndexMismatchError",
    "IndexStore",
    "Match",
    "MemoryStore",
    "NearDuplicateIndex",
    "Probe",
    "RedisStore",
    "ShardedIndex",
    "check_fingerprint",
    "check_namespace",
    "check_page_id",
    "open_index",
    "redis_store",
]
