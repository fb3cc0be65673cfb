"""The index on a real Redis Cluster (three ``redis-server --cluster-enabled yes`` nodes
joined by ``redis-cli --cluster create``; the ``redis_cluster`` fixture): the client
finds the cluster from one node, the namespace's hash tag keeps every key of a crawl in
one slot, and check-and-add stays atomic across processes."""

from __future__ import annotations

import multiprocessing
import random
import uuid

import pytest

from dedup.index import Match, NearDuplicateIndex, RedisStore
from dedup.services import connect_redis, is_cluster

pytestmark = pytest.mark.integration


def test_the_client_finds_the_cluster_from_one_node(redis_cluster: str) -> None:
    client = connect_redis(redis_cluster)
    assert is_cluster(client)
    assert len(client.get_nodes()) == 3  # type: ignore[attr-defined]


def test_a_namespace_without_a_hash_tag_is_refused(redis_cluster: str) -> None:
    with pytest.raises(ValueError, match=r"DEDUP_NAMESPACE=\{plain\}"):
        RedisStore(connect_redis(redis_cluster), "plain")


def test_the_index_decides_on_a_cluster_with_all_keys_in_one_slot(redis_cluster: str
                                                                   ) -> None:
    client = connect_redis(redis_cluster)
    namespace = f"{{c-{uuid.uuid4().hex[:8]}}}"
    store = RedisStore(client, namespace)
    index = NearDuplicateIndex(store, k=3, capacity=10_000)
    rng = random.Random(7)
    fps = [rng.getrandbits(64) for _ in range(300)]
    assert index.check_and_add_many((fp, f"p{i}") for i, fp in enumerate(fps)) == [None] * 300
    assert index.check_and_add(fps[5] ^ 0b101, "copy") == Match(fps[5], "p5", 2)
    assert len(index) == 300
    keys = list(client.scan_iter(match=f"{namespace}:*", count=1000))
    assert len(keys) > 3  # layout, count and table buckets
    slots = {client.keyslot(k) for k in keys}  # type: ignore[attr-defined]
    assert len(slots) == 1
    store.clear()
    assert not list(client.scan_iter(match=f"{namespace}:*", count=1000))


def _offer(url: str, namespace: str, items: list[tuple[int, str]], out: multiprocessing.Queue
           ) -> None:
    index = NearDuplicateIndex(RedisStore(connect_redis(url), namespace), k=3,
                               capacity=10_000)
    out.put([(page, m is None) for (_, page), m in zip(items, index.check_and_add_many(items))])


def test_check_and_add_is_atomic_across_processes_on_a_cluster(redis_cluster: str) -> None:
    """Two processes offer, at the same time, the two members of 400 pairs of pages
    within k of each other: exactly one of each pair is admitted."""
    namespace = f"{{race-{uuid.uuid4().hex[:8]}}}"
    index = NearDuplicateIndex(RedisStore(connect_redis(redis_cluster), namespace), k=3,
                               capacity=10_000)  # creates the layout once
    rng = random.Random(11)
    pairs = [(fp, fp ^ (1 << rng.randrange(64))) for fp in
             (rng.getrandbits(64) for _ in range(400))]
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_offer, args=(
        redis_cluster, namespace, [(pair[side], f"{side}-{i}") for i, pair in enumerate(pairs)],
        out)) for side in (0, 1)]
    for proc in procs:
        proc.start()
    results = [out.get(timeout=120) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    admitted = {page for result in results for page, ok in result if ok}
    assert all((f"0-{i}" in admitted) != (f"1-{i}" in admitted) for i in range(len(pairs)))
    assert len(index) == len(pairs)
    index.store.clear()
