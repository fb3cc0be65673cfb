"""``simcrawl clusters``: the batch search over the stored corpus, written back: every
stored page's cluster, and every pair the crawl admitted twice that its own rule calls a
copy recorded as a ``batch`` match (:mod:`dedup.reconcile`)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

from crawler.cli.common import (
    check_engine_options,
    check_k,
    engine_options,
    open_spark,
    parser,
    run,
)

HELP = "give every stored page a cluster and record the copies the crawl let through"

#: Pairs judged per read of the store.
JUDGE_BATCH = 2_000


def _pairs_local(store: Any, k: int, counts: dict[str, int]
                 ) -> Iterator[tuple[str, str, int]]:
    """The in-process engine's candidates, from one pass over the store: the pairs within
    k (:func:`dedup.all_pairs.find_all`), then the text anchors' pairs that are not among them
    (:func:`dedup.reconcile.anchor_pairs`)."""
    from dedup import all_pairs
    from dedup.reconcile import anchor_pairs
    from dedup.sketch import TextSketch

    ids: list[str] = []
    prints: list[int] = []
    anchors: dict[str, list[int]] = {}
    for fp, page_id, sketch in store.iter_fingerprints():
        ids.append(page_id)
        prints.append(fp)
        if sketch:
            try:
                anchors[page_id] = TextSketch.from_bytes(sketch).anchors
            except ValueError:
                pass  # an unreadable sketch: no anchors
    extra = anchor_pairs(anchors)
    del anchors
    if ids:
        for i, j, d in all_pairs.find_all(np.array(prints, dtype=np.uint64), k):
            a, b = ids[i], ids[j]
            extra.discard((min(a, b), max(a, b)))
            counts["within_k"] += 1
            yield a, b, int(d)
    counts["by_anchors"] = len(extra)
    fp_of = dict(zip(ids, prints))
    for a, b in sorted(extra):
        yield a, b, (fp_of[a] ^ fp_of[b]).bit_count()


def _judged(pairs: Iterator[tuple[str, str, int]], store: Any, templates: Any, rules: Any,
            counts: dict[str, int]) -> Iterator[Any]:
    """The pairs judged copies (:func:`dedup.reconcile.judge`), read and judged
    :data:`JUDGE_BATCH` at a time."""
    from dedup.reconcile import judge

    def flush(chunk: list[tuple[str, str, int]]) -> Iterator[Any]:
        facts = store.stored_pages({p for a, b, _ in chunk for p in (a, b)})
        known = templates.known({f.host for f in facts.values()}) if templates else {}
        for a, b, d in chunk:
            if a not in facts or b not in facts:
                counts["pairs_without_page"] += 1
                continue
            found = judge(facts[a], facts[b], d, rules, known)
            counts["pairs"] += 1
            if found is None:
                counts["kept_apart"] += 1
            else:
                yield found

    chunk: list[tuple[str, str, int]] = []
    for pair in pairs:
        chunk.append(pair)
        if len(chunk) >= JUDGE_BATCH:
            yield from flush(chunk)
            chunk = []
    if chunk:
        yield from flush(chunk)


def reconcile(args: argparse.Namespace) -> int:
    from crawler.console.options import choose_database, require_crawl
    from dedup.adapters.redis_templates import HostTemplates
    from dedup.config import DedupConfig, namespace_of
    from dedup.decide import Rules
    from dedup.reconcile import batch_copies, clusters_of, union_find
    from dedup.adapters.servers.embedded_limits import check_whole_read
    from dedup.adapters.servers.services import connect_mongo, connect_redis, resolve

    started = time.perf_counter()
    counts = dict.fromkeys(("pairs", "kept_apart", "pairs_without_page", "within_k",
                            "by_anchors"), 0)
    with ExitStack() as stack:
        redis_url, mongo_uri, services = resolve(args.redis_url, args.mongo_uri, args.data_dir)
        if services is not None:
            stack.callback(services.stop)
        reads = require_crawl(choose_database(connect_mongo(mongo_uri), args.database))
        check_whole_read(reads, ("fingerprints", "pages"), "simcrawl clusters")
        store = reads.page_store()
        namespace = namespace_of(reads.name, args.namespace)
        if args.k is None:  # the k the crawl's index was built with
            args.k = reads.index_k(args.namespace)
        config = DedupConfig(max_distance=args.k)
        templates = HostTemplates(connect_redis(redis_url), namespace,
                                  config.template_pages) if config.template_pages else None
        rules = Rules.from_config(config)
        say = (lambda m: print(f"simcrawl clusters: {m}", file=sys.stderr))
        say(f"judging the pairs within k = {args.k} and the text anchors' pairs "
            f"({args.engine} engine) ...")
        if args.engine == "spark":
            pairs, components = _spark(args, store, stack, counts)
        else:
            pairs = _pairs_local(store, args.k, counts)
            components = union_find
        copies = list(_judged(pairs, store, templates, rules, counts))
        label = components((c.original, c.copy) for c in copies)
        facts = store.stored_pages(label)  # every page of a copy pair is in a component
        crawled = {p: f.crawled for p, f in facts.items()}
        clusters = clusters_of({p: c for p, c in label.items() if p in crawled}, crawled)
        cluster_of = {m: c.original for c in clusters for m in c.members}
        best = batch_copies(copies)
        written = store.save_clusters(clusters, args.k)
        recorded = store.save_batch_matches(best, cluster_of, facts)
        pages = reads.estimated("pages")
    print(f"{pages:,} pages in {len(clusters):,} clusters of two or more "
          f"({sum(len(c.members) for c in clusters):,} pages) and "
          f"{pages - sum(len(c.members) for c in clusters):,} alone; k = {args.k}, "
          f"{args.engine} engine, {time.perf_counter() - started:.1f} s")
    print(f"candidate pairs: {counts['within_k']:,} within k and {counts['by_anchors']:,} "
          f"more by text anchors; {len(copies):,} copies the crawl let through, "
          f"{counts['kept_apart']:,} kept apart by the crawl's rule (different own texts)")
    print(f"batch match records: {recorded['written']:,} written, {recorded['unchanged']:,} "
          f"unchanged, {recorded['deleted']:,} deleted"
          + (f", {recorded['kept_crawl_record']:,} URLs keep their crawl record"
             if recorded["kept_crawl_record"] else ""))
    print(f"changed: {written['clusters_written']:,} clusters written, "
          f"{written['clusters_deleted']:,} deleted, {written['pages_changed']:,} pages and "
          f"{written['matches_changed']:,} crawl match records given their cluster")
    if counts["pairs_without_page"]:
        print(f"skipped: {counts['pairs_without_page']:,} pairs naming a fingerprint without "
              "a page (simcrawl rebuild-index reports them)")
    return 0


def _spark(args: argparse.Namespace, store: Any, stack: ExitStack, counts: dict[str, int]
           ) -> tuple[Any, Any]:
    """The Spark engine: the candidate pairs (within k and by text anchors) streamed from
    the job, and components found in Spark."""
    from dedup.index.core import ANCHOR_MATCHES, ANCHOR_READ
    from dedup.spark import job, stage

    spark, folder = open_spark(args, stack, "simcrawl-clusters")
    source, edges = folder / "fingerprints", folder / "copies"
    if not stage.write(stage.store_chunks(store), source):
        return iter(()), lambda pairs: {}
    points = spark.read.parquet(str(source))
    if stage.write(stage.anchor_chunks(store), folder / "anchors"):
        anchors = spark.read.parquet(str(folder / "anchors")).withColumnRenamed("fp", "anchor")
    else:
        anchors = spark.createDataFrame([], "id string, anchor long")
    pairs = job.candidates(points, anchors, args.k, ANCHOR_READ, ANCHOR_MATCHES)

    def stream() -> Iterator[tuple[str, str, int]]:
        for r in pairs.toLocalIterator():
            counts["within_k" if r.by == "k" else "by_anchors"] += 1
            yield r.i, r.j, r.distance

    def components(copies: Any) -> dict[str, str]:
        written = _write_edges(copies, edges)
        if not written:
            return {}
        found = job.components(spark.read.parquet(str(edges)))
        return {r.id: r.cluster for r in found.toLocalIterator()}

    return stream(), components


def _write_edges(copies: Any, folder: Path, size: int = 100_000) -> int:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    total, part, chunk = 0, 0, []
    for edge in copies:
        chunk.append(edge)
        if len(chunk) >= size:
            pq.write_table(pa.table({"i": [a for a, _ in chunk], "j": [b for _, b in chunk]}),
                           folder / f"part-{part:05d}.parquet")
            total, part, chunk = total + len(chunk), part + 1, []
    if chunk:
        pq.write_table(pa.table({"i": [a for a, _ in chunk], "j": [b for _, b in chunk]}),
                       folder / f"part-{part:05d}.parquet")
        total += len(chunk)
    return total


def main(argv: list[str], prog: str = "simcrawl clusters") -> int:
    from crawler.console.options import add_service_options
    from dedup.config import DEFAULT_MAX_DISTANCE

    p = parser(prog, "Find every pair of stored pages within k bits (in process, or as a "
               "Spark job), judge each by the crawl's rule, and write back: every page's "
               "cluster id (pages.cluster; a clusters collection for clusters of two or "
               "more, named by their original, the page crawled first), the crawl's match "
               "records' cluster, and each copy the crawl admitted as a match record of "
               "kind 'batch'. Pages are never deleted; a second run changes nothing.")
    p.add_argument("-k", type=int, default=None,
                   help="largest Hamming distance (default: the k the crawl's index was "
                   f"built with, else {DEFAULT_MAX_DISTANCE})")
    engine_options(p, "in this process")
    add_service_options(p, redis=True)
    args = p.parse_args(argv)
    check_k(p, args.k)
    check_engine_options(p, args)
    return run(reconcile, args)
