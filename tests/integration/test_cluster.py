"""The index on a real Redis Cluster (three ``redis-server --cluster-enabled yes`` nodes
joined by ``redis-cli --cluster create``; the ``redis_cluster`` fixture): the client
finds the cluster from one node; the index spreads over every node's slots
(:class:`dedup.adapters.redis_cluster.ClusterStore`) and its numbered pending entries keep "never two
admitted near duplicates" for eight processes at once, and when one of them is killed
mid-decision (:mod:`dedup.adapters.redis_cluster`); a one-slot index (an earlier version's)
is refused with a clear message."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
import uuid
from collections import Counter

import pytest

from dedup.adapters.index import ClusterStore, RedisStore, ShardedIndex, open_index, redis_store
from dedup.index import IndexMismatchError, Match, NearDuplicateIndex
from dedup.adapters.servers.services import connect_redis, is_cluster

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


def _marks(client, store) -> int:  # type: ignore[no-untyped-def]
    """Fingerprints with pages left unsettled in the index (their marks' fields: the
    table-0 rest and "?")."""
    width = store.layout.member_bytes + 1
    return sum(1 for key in client.scan_iter(match=f"{store.prefix}:s:*", count=1000)
               for f in client.hkeys(key) if len(f) == width and f.endswith(b"?"))


def test_the_index_spreads_over_every_node_and_decides_as_on_one(redis_cluster: str) -> None:
    client = connect_redis(redis_cluster)
    namespace = f"{{c-{uuid.uuid4().hex[:8]}}}"
    store = redis_store(client, namespace)
    assert isinstance(store, ClusterStore)  # chosen by what the client is connected to
    index = open_index(store, k=3, capacity=20_000)
    assert isinstance(index, ShardedIndex)
    rng = random.Random(7)
    fps = [rng.getrandbits(64) for _ in range(2000)]
    assert index.check_and_add_many((fp, f"p{i}") for i, fp in enumerate(fps)) == [None] * 2000
    assert index.check_and_add(fps[5] ^ 0b101, "copy") == Match(fps[5], "p5", 2)
    assert index.query(fps[7] ^ 1) == [Match(fps[7], "p7", 1)]
    assert len(index) == 2000 and dict(index.entries())[fps[9]] == "p9"
    keys = [k.decode() for k in client.scan_iter(match=f"{store.prefix}:*", count=1000)]
    per_node = Counter(store.node_of(k) for k in keys)
    assert len(per_node) == 3  # every node holds a share of the index
    assert max(per_node.values()) / min(per_node.values()) <= 1.2
    assert _marks(client, store) == 0  # the copy was withdrawn, nothing pending
    assert index.remove(fps[3], "p3") and index.query(fps[3]) == []
    store.clear()
    assert not list(client.scan_iter(match=f"{store.prefix}:*", count=1000))


def test_an_index_an_earlier_version_kept_in_one_slot_is_not_read_silently(
        redis_cluster: str) -> None:
    client = connect_redis(redis_cluster)
    namespace = f"{{old-{uuid.uuid4().hex[:8]}}}"
    NearDuplicateIndex(RedisStore(client, namespace), k=3, capacity=1000).check_and_add(1, "a")
    with pytest.raises(IndexMismatchError, match="rebuild-index"):
        open_index(redis_store(client, namespace), k=3)
    redis_store(client, namespace).clear()  # what rebuild-index does first: both go
    assert not list(client.scan_iter(match=f"{namespace}:*", count=1000))
    assert open_index(redis_store(client, namespace), k=3).check_and_add(1, "a") is None


def _groups(n: int, size: int, seed: int) -> list[list[int]]:
    """``n`` groups of ``size`` fingerprints, each two of a group 2 bits apart (one bit
    each from the group's centre), groups far apart."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        centre = rng.getrandbits(64)
        out.append([centre ^ (1 << bit) for bit in rng.sample(range(64), size)])
    return out


def _decider(url: str, namespace: str, items: list[tuple[int, str]], seed: int,
             out: multiprocessing.Queue) -> None:
    index = open_index(redis_store(connect_redis(url), namespace), k=3)
    random.Random(seed).shuffle(items)
    results = []
    for at in range(0, len(items), 8):
        chunk = items[at:at + 8]
        results += [(page, m.page_id if m else None)
                    for (_, page), m in zip(chunk, index.check_and_add_many(chunk))]
    out.put((results, index.met_pending))  # type: ignore[attr-defined]


def _run_deciders(url: str, namespace: str, groups: list[list[int]], members: range
                  ) -> tuple[dict[str, str | None], int]:
    """Each page's original (``None``: admitted), and how many candidates the deciders
    met while they were pending (the races the protocol settles)."""
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = ctx.Queue()
    procs = [ctx.Process(target=_decider, args=(
        url, namespace, [(g[j], f"{j}-{i}") for i, g in enumerate(groups)], j, out))
        for j in members]
    for proc in procs:
        proc.start()
    results: dict[str, str | None] = {}
    met = 0
    for _ in procs:
        got, n = out.get(timeout=240)
        results.update(got)
        met += n
    for proc in procs:
        proc.join(timeout=60)
    return results, met


def test_eight_deciders_at_once_admit_one_page_of_each_group(redis_cluster: str) -> None:
    """Eight processes offer, at the same time and in their own orders, the eight members
    of 400 groups of near duplicates: exactly one of each group is admitted, and every
    other member names an admitted page of its group as its original."""
    client = connect_redis(redis_cluster)
    namespace = f"{{race-{uuid.uuid4().hex[:8]}}}"
    index = open_index(redis_store(client, namespace), k=3, capacity=10_000)  # the layout
    groups = _groups(400, 8, seed=11)
    results, met = _run_deciders(redis_cluster, namespace, groups, range(8))
    assert met > 0  # the deciders did meet each other's pages mid-decision
    admitted = {page for page, original in results.items() if original is None}
    for i in range(len(groups)):
        members = {f"{j}-{i}" for j in range(8)}
        assert len(members & admitted) == 1, i
    assert all(original in admitted and original.split("-")[1] == page.split("-")[1]
               for page, original in results.items() if original is not None)
    assert len(index) == len(groups)
    assert _marks(client, index.store) == 0
    index.store.clear()


def _killed_mid_decision(url: str, namespace: str, items: list[tuple[int, str]]) -> None:
    """Write pages as pending and numbered, then die before settling them (SIGKILL)."""
    store = ClusterStore(connect_redis(url), namespace, lease_ms=2000)
    ShardedIndex(store, k=3)  # attaches the layout
    store.begin([(fp, page, None, []) for fp, page in items])
    store.number(items)
    os.kill(os.getpid(), signal.SIGKILL)


def test_a_decider_killed_mid_decision_blocks_nobody_for_longer_than_its_lease(
        redis_cluster: str) -> None:
    client = connect_redis(redis_cluster)
    namespace = f"{{kill-{uuid.uuid4().hex[:8]}}}"
    index = open_index(redis_store(client, namespace), k=3, capacity=10_000)
    groups = _groups(60, 8, seed=5)
    ctx = multiprocessing.get_context("spawn")
    victim = ctx.Process(target=_killed_mid_decision, args=(
        redis_cluster, namespace, [(g[0], f"0-{i}") for i, g in enumerate(groups)]))
    victim.start()
    victim.join(timeout=60)
    assert victim.exitcode == -signal.SIGKILL
    assert _marks(client, index.store) == 60
    started = time.monotonic()
    results, _ = _run_deciders(redis_cluster, namespace, groups, range(1, 8))
    took = time.monotonic() - started
    admitted = {page for page, original in results.items() if original is None}
    for i in range(len(groups)):  # the dead process's pages stayed out; one other each
        assert len({f"{j}-{i}" for j in range(1, 8)} & admitted) == 1, \
            (i, {f"{j}-{i}": results[f"{j}-{i}"] for j in range(1, 8)})
    assert all(original in admitted for original in results.values() if original is not None)
    assert _marks(client, index.store) == 0
    assert len(index) == len(groups)
    assert took < 60, f"the deciders took {took:.0f} s: blocked past the 2 s lease"
    index.store.clear()


def test_a_copys_text_is_kept_only_under_an_admitted_original(redis_cluster: str) -> None:
    """Two pages with one fingerprint, one admitted and one withdrawn: a copy's text
    filed under the withdrawn one would make it look admitted (a copy later recorded
    against a page never stored), so only the admitted one takes it; a pending one
    neither."""
    import numpy as np

    from dedup.sketch import TextSketch

    client = connect_redis(redis_cluster)
    store = ClusterStore(client, f"{{ghost-{uuid.uuid4().hex[:8]}}}")
    index = ShardedIndex(store, k=3, capacity=1000)
    fp = random.Random(3).getrandbits(64)
    sketch = TextSketch.of_values(np.arange(1, 200, dtype=np.uint64) * 7919).to_bytes()
    rows = [(fp, "kept"), (fp, "withdrawn"), (fp, "pending")]
    store.begin([(f, page, None, []) for f, page in rows])
    seqs = store.number(rows)
    assert store.admit([(fp, "kept", seqs[0])]) == [True]
    assert store.withdraw([(fp, "withdrawn", seqs[1], [])]) == 1
    assert index.attach_copies([(fp, "withdrawn", sketch)]) == 0
    assert index.attach_copies([(fp, "pending", sketch)]) == 0
    assert index.attach_copies([(fp, "kept", sketch)]) == 1
    assert [p for p, _ in store.evidence([fp])[0]] == ["kept", "kept"]
    store.clear()


@pytest.mark.parametrize("earlier", [False, True], ids=["packed-anchors", "earlier-layout"])
def test_released_sketches_are_read_from_the_store_on_a_cluster(redis_cluster: str,
                                                                 earlier: bool) -> None:
    """The sharded index releases a stored page's sketch as one node does, and files and
    finds text anchors as one node does (tests/integration/test_index.py,
    ``check_released_sketches``), in packed strings and in an earlier layout's sorted
    sets."""
    from test_index import check_released_sketches

    store = ClusterStore(connect_redis(redis_cluster), f"{{rel-{uuid.uuid4().hex[:8]}}}")
    store.earlier_layout = earlier  # type: ignore[attr-defined]
    try:
        check_released_sketches(store, ShardedIndex)
    finally:
        store.clear()


def test_the_index_follows_a_slot_that_moved(redis_cluster: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A process whose map of the cluster is out of date (a primary failed over and came
    back as a replica, a reshard) sends commands to a node that answers MOVED. The index
    reads the map again and decides as before: the chaos run found the MOVED reply raised
    as a spider error instead, and the page neither decided nor counted."""
    client = connect_redis(redis_cluster)
    namespace = f"{{m-{uuid.uuid4().hex[:8]}}}"
    index = open_index(redis_store(client, namespace), k=3, capacity=20_000)
    rng = random.Random(11)
    fps = [rng.getrandbits(64) for _ in range(300)]
    assert index.check_and_add_many((fp, f"p{i}") for i, fp in enumerate(fps)) == [None] * 300
    manager = client.nodes_manager
    real = manager.get_node_from_slot
    nodes = {n.name: n for n in manager.nodes_cache.values()}
    stale = {"on": True}

    def out_of_date(slot, *args, **kwargs):  # type: ignore[no-untyped-def]
        node = real(slot, *args, **kwargs)
        if not stale["on"]:
            return node
        return next(n for name, n in sorted(nodes.items()) if name != node.name)

    monkeypatch.setattr(manager, "get_node_from_slot", out_of_date)
    real_initialize = manager.initialize

    def initialize(*args, **kwargs):  # type: ignore[no-untyped-def]
        stale["on"] = False  # reading the map again gives the right one
        return real_initialize(*args, **kwargs)

    monkeypatch.setattr(manager, "initialize", initialize)
    copies = index.check_and_add_many((fp ^ 0b11, f"c{i}") for i, fp in enumerate(fps[:50]))
    assert copies == [Match(fp, f"p{i}", 2) for i, fp in enumerate(fps[:50])]
    assert not stale["on"]  # the move was seen and the map read again
