"""The index over what a Redis client is connected to: one node
(:class:`~dedup.adapters.redis_index.RedisStore`) or a Redis Cluster
(:class:`~dedup.adapters.redis_cluster.ClusterStore` under a
:class:`~dedup.adapters.sharded.ShardedIndex`)."""

from __future__ import annotations

from typing import Any

from dedup.adapters.redis_cluster import ClusterStore
from dedup.adapters.redis_index import DEFAULT_NAMESPACE, RedisStore
from dedup.adapters.sharded import ShardedIndex
from dedup.index.core import NearDuplicateIndex


def redis_store(client: Any, namespace: str = DEFAULT_NAMESPACE, url: str | None = None
                ) -> RedisStore | ClusterStore:
    """The index store for what ``client`` is connected to: one Redis node keeps the
    whole index and decides in one script (:class:`RedisStore`); a Redis Cluster spreads
    it over its slots (:class:`ClusterStore`)."""
    from dedup.adapters.servers.services import is_cluster

    if is_cluster(client):
        return ClusterStore(client, namespace, url=url)
    return RedisStore(client, namespace, url=url)


def open_index(store: Any, k: int | None = None, **kwargs: Any) -> NearDuplicateIndex:
    """The index over ``store`` (:class:`NearDuplicateIndex`'s arguments): a
    :class:`ShardedIndex` on a :class:`ClusterStore`."""
    if isinstance(store, ClusterStore):
        return ShardedIndex(store, k, **kwargs)
    return NearDuplicateIndex(store, k, **kwargs)
