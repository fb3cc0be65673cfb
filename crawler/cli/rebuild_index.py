"""``simcrawl rebuild-index``: reload the Redis index from MongoDB (the source of truth)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from typing import Any

from crawler.cli.common import check_k, connect, parser, run, service_options

HELP = "reload the Redis index from MongoDB"


def _rebuild_windows(redis_client: Any, namespace: str, pages: Any) -> tuple[int, int]:
    """Reload the registered originals' pinyin windows; ``(loaded, skipped)`` (skipped:
    computed with parameters other than the first original's)."""
    from dedup.adapters.redis_windows import RedisWindowStore
    from dedup.index.windows import WindowIndex
    from dedup.pinyin import PinyinFingerprint

    index: WindowIndex | None = None
    loaded = skipped = 0
    for page_id, codes, params in pages.iter_pinyin():
        if index is None:
            index = WindowIndex(RedisWindowStore(redis_client, namespace), params)
        if params != index.params:
            skipped += 1
            continue
        loaded += index.add(page_id, PinyinFingerprint(codes))
    return loaded, skipped


def rebuild(args: argparse.Namespace) -> int:
    from dedup.adapters.index import open_index, redis_store
    from dedup.adapters.redis_registry import register_checksums
    from dedup.config import DEFAULT_MAX_DISTANCE
    from dedup.index import IndexLayout
    from dedup.progress_line import Progress
    from dedup.adapters.servers.embedded_limits import check_whole_read
    from dedup.adapters.mongo.reads import MongoReads

    redis_client, pages, services = connect(args, op_timeout=None)  # one long scan
    try:
        check_whole_read(MongoReads(pages.db), ("fingerprints", "pages"),
                         "simcrawl rebuild-index")
        store = redis_store(redis_client, args.namespace)
        total = pages.estimated_fingerprints()
        legacy = getattr(store, "legacy_layout", lambda: None)()  # one slot, on a cluster
        old = store.read_layout() or legacy or pages.load_layout(args.namespace)
        if old is not None and args.capacity is None and args.k is None:
            layout = IndexLayout.from_description(old)  # the same index again
        else:
            previous = IndexLayout.from_description(old) if old is not None else None
            capacity = args.capacity or max(total, previous.capacity if previous else 1)
            k = args.k if args.k is not None else (previous.k if previous
                                                   else DEFAULT_MAX_DISTANCE)
            layout = IndexLayout.plan(capacity, k, table_limit=store.compact_limit())
        print(f"rebuild-index: about {total:,} fingerprints from {pages.url} "
              f"(database {pages.db.name!r}) into {store.describe()}; design "
              f"{layout.design.name}, {len(layout.tables)} tables, capacity "
              f"{layout.capacity:,}", file=sys.stderr)
        audit = pages.audit()
        # what the index held: its fingerprints, and the pages they name (a fingerprint
        # that several stored pages share names the first of them only)
        before = dict(open_index(store).entries()) if store.read_layout() else {}
        store.clear()
        index = open_index(store, layout=layout, batch_size=1024)
        pages.save_layout(args.namespace, layout.describe())
        progress = Progress("rebuild-index", total)
        started = time.monotonic()
        orphans = audit.fingerprints_without_page
        stored: dict[str, int] = {}  # page id -> fingerprint, of the pages indexed
        left_out = 0

        def rows() -> Iterator[tuple[int, str, bytes | None]]:  # streams; orphans left out
            nonlocal left_out
            for fp, pid, sketch in pages.iter_fingerprints():
                if pid in orphans:
                    left_out += 1
                    continue
                stored[pid] = fp
                yield fp, pid, sketch

        # every page is stored: an index that keeps sketches only until then gets none
        added = index.add_many(rows(), progress=progress, stored=True)
        progress.total = progress.done  # the estimate counted every document
        progress.close()
        sums = register_checksums(redis_client, args.namespace, pages.iter_checksums())
        windows, other = _rebuild_windows(redis_client, args.namespace, pages)
        took = time.monotonic() - started
        print(f"rebuilt: {added:,} fingerprints, {sums:,} text checksums and the pinyin "
              f"windows of {windows:,} registered originals in {took:.1f} s "
              f"({added / max(took, 1e-9):,.0f}/s); index holds {len(index):,}")
        removed = pages.count_unindexed()
        short = pages.count_fingerprints(indexed_only=False) - len(stored) - left_out - removed
        shared = len(stored) - added
        not_indexed = [f"{short:,} of short texts (matched by their checksum only)"
                       if short > 0 else "",
                       f"{removed:,} removed from the index (simcrawl remove --fingerprint)"
                       if removed > 0 else "",
                       f"{shared:,} equal to another page's (indexed once, for the first)"
                       if shared > 0 else "",
                       f"{left_out:,} without a page (see below)" if left_out else ""]
        if any(not_indexed):
            print("fingerprints stored but not indexed, as it should be: "
                  + "; ".join(n for n in not_indexed if n))
        problems = audit.problems()
        if before:
            ghosts = sum(1 for pid in set(before.values()) if pid not in stored)
            lost = len(set(stored.values()) - before.keys())  # by fingerprint
            if ghosts:
                problems.append(f"the index held {ghosts:,} fingerprints of pages that are "
                                "not stored (admitted, never written): now gone from it")
            if lost:
                problems.append(f"the index lacked {lost:,} stored fingerprints (lost by "
                                "Redis): restored")
        for problem in problems:
            print(f"warning: {problem}", file=sys.stderr)
        print("the store and the index " + (f"disagreed in {len(problems)} ways (above); "
                                            "the index now follows the store"
                                            if problems else "agreed"))
        if other:
            print(f"warning: {other:,} registered originals have pinyin windows computed "
                  "with other parameters than the first one's; register them again",
                  file=sys.stderr)
        if index.over_capacity():
            print("warning: the index holds more than twice its capacity; rebuild with "
                  "--capacity for faster, smaller buckets", file=sys.stderr)
    finally:
        if services is not None:
            services.stop()
    return 0



def main(argv: list[str], prog: str = "simcrawl rebuild-index") -> int:
    from dedup.config import DEFAULT_MAX_DISTANCE

    p = parser(prog, "Clear the near-duplicate index in Redis and load every fingerprint "
               "of the MongoDB 'fingerprints' collection into it, and every page's text "
               "checksum into the exact-copy registry (MongoDB is the source of truth). "
               "Keeps the index's design unless --capacity or -k is given. Stop crawlers "
               "that use the index first.")
    p.add_argument("--capacity", type=int, default=None,
                   help="plan the design and buckets for this many fingerprints")
    p.add_argument("-k", type=int, default=None,
                   help="largest Hamming distance of the new design (default: the index's, "
                   f"or {DEFAULT_MAX_DISTANCE}, the crawl's, for a new one)")
    service_options(p)
    args = p.parse_args(argv)
    check_k(p, args.k)
    return run(rebuild, args)
