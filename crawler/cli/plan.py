"""``simcrawl plan --docs N``: the permuted-table designs for a corpus size."""

from __future__ import annotations

import argparse

from crawler.cli.common import check_k, parser, run

HELP = "choose a table design for a corpus size"


def parse_size(text: str) -> int:
    """Parse ``"64GB"``, ``"512 MiB"``, ``"1000000"`` into bytes."""
    from dedup.adapters.servers.embedded_limits import parse_size as parse

    try:
        return parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


#: Corpus sizes of the scale table (``simcrawl plan`` without ``--docs``).
SCALE = (1_000_000, 10_000_000, 100_000_000, 1_000_000_000, 8_000_000_000)


def plan(args: argparse.Namespace) -> int:
    import json

    from dedup import tables
    from dedup.adapters.servers.embedded_limits import embedded_serves

    if args.docs is None:  # the crawl's index from 1M to 8B pages
        print(scale_table(args.k, args.max_tables))
        return 0
    if args.json:
        chosen = tables.crawl_plan(args.docs, args.k, args.max_tables)
        print(json.dumps({"docs": args.docs, "k": args.k, "design": chosen.design.name,
                          "tables": chosen.tables, "memory_bytes": chosen.memory,
                          "bytes_per_page": chosen.bytes_per_fp,
                          "candidates_per_probe": round(chosen.candidates, 3),
                          "anchor_reads_per_probe": anchor_reads(),
                          "sketches": sketches_place(args.docs, args.k),
                          "embedded_mongodb_serves_pages": embedded_serves()}))
        return 0
    released = tables.sketches_leave_redis(args.docs, args.k)
    extra = tables.crawl_extra_bytes(released) if args.crawl else 0
    entry = args.bytes_per_entry if args.bytes_per_entry is not None else (
        tables.REDIS_ENTRY_BYTES if args.crawl else 8)
    chosen, plans = tables.plan(args.docs, args.k, args.memory, entry, args.max_tables, extra)
    print(tables.format_plans(chosen, plans, args.docs))
    if args.crawl:
        print(f"bytes/fp: {entry} per table entry in Redis, plus {extra} per page for its "
              f"text sketch{' record (the sketch out of Redis once stored)' if released else ''}"
              f", text anchors and checksum; a probe also reads at most "
              f"{anchor_reads()} pages under its text anchors")
        crawl = tables.crawl_plan(args.docs, args.k, args.max_tables)
        if crawl.design.name != chosen.design.name:
            print(f"the crawl's index uses {crawl.design.name} ({crawl.tables} tables, "
                  f"{tables.human_bytes(crawl.memory)}): past one node, the fewest tables "
                  f"whose probe expects at most {tables.MAX_CANDIDATES:,} candidates")
        print(embedded_note())
    return 0


def sketches_place(docs: int, k: int) -> str:
    """Where the crawl's index at ``docs`` pages keeps its text sketches."""
    from dedup import tables

    return "until-stored" if tables.sketches_leave_redis(docs, k) else "redis"


def anchor_reads() -> int:
    """Pages a probe reads under its text anchors at most (six anchors, eight each)."""
    from dedup.index.core import ANCHOR_READ
    from dedup.sketch import ANCHORS

    return ANCHORS * ANCHOR_READ


def scale_table(k: int, max_tables: int) -> str:
    """The crawl's index (tables, sketches, anchors, checksums in Redis) at each of
    :data:`SCALE`: the design the planner picks, its memory and its candidates."""
    from dedup import tables

    head = (f"{'pages':>14} {'design':<26} {'tables':>6} {'sketches':>12} "
            f"{'bytes/page':>10} {'memory':>10} {'candidates/probe':>16}")
    title = (f"The crawl's index, k = {k}: tables in Redis ({tables.REDIS_ENTRY_BYTES} B an "
             f"entry) + a page's text sketch ({tables.SKETCH_BYTES} B; "
             f"{tables.RELEASED_BYTES} B once it leaves for MongoDB, past one node of "
             f"{tables.human_bytes(tables.NODE_BYTES)}), six text anchors "
             f"({tables.ANCHOR_BYTES} B) and checksum ({tables.CHECKSUM_BYTES} B); at most "
             f"{tables.MAX_CANDIDATES:,} candidates and {anchor_reads()} anchor reads a probe")
    lines = [title, head, "-" * len(head)]
    for docs in SCALE:
        p = tables.crawl_plan(docs, k, max_tables)
        lines.append(f"{docs:>14,} {p.design.name:<26} {p.tables:>6} "
                     f"{sketches_place(docs, k):>12} {p.bytes_per_fp:>10} "
                     f"{tables.human_bytes(p.memory):>10} {p.candidates:>16.3g}")
    return "\n".join(lines) + "\n\n" + embedded_note()


def embedded_note() -> str:
    """Where the embedded MongoDB stops serving on this machine
    (:mod:`dedup.adapters.servers.embedded_limits`)."""
    import textwrap

    from dedup.adapters.servers.embedded_limits import (
        READ_BYTES_PER_DOC,
        WRITE_BYTES_PER_PAGE,
        available_memory,
        embedded_serves,
    )

    return textwrap.fill(
        f"The store: the embedded MongoDB (SecantusDB, when MONGO_URI is unset) holds about "
        f"{WRITE_BYTES_PER_PAGE / 1024:.0f} KiB a page a crawl writes until it restarts, and "
        f"a whole read (export, report, clusters, rebuild-index) takes about "
        f"{READ_BYTES_PER_DOC['pages'] / 1024:.0f} KiB a page; this machine's "
        f"{available_memory() / 2**30:.1f} GiB available serve about {embedded_serves():,} "
        "pages with their text. Past that, a real MongoDB (MONGO_URI; docker compose runs "
        "one).", width=100)


def main(argv: list[str], prog: str = "simcrawl plan") -> int:
    from dedup.config import DEFAULT_MAX_DISTANCE
    from dedup.tables import REDIS_ENTRY_BYTES, crawl_extra_bytes

    p = parser(prog, "Print the trade-off of the permuted-table designs (Manku et al. §3) "
               "for a corpus and mark the one chosen.")
    p.add_argument("--docs", type=int, default=None,
                   help="expected number of fingerprints (default: a table of the crawl's "
                   "index from 1M to 8B pages)")
    p.add_argument("--k", "-k", type=int, default=DEFAULT_MAX_DISTANCE,
                   help=f"largest Hamming distance (default {DEFAULT_MAX_DISTANCE}, the "
                   "crawl's)")
    p.add_argument("--memory", type=parse_size, default=None,
                   help="memory budget for the index, e.g. 64GB (default: no limit)")
    p.add_argument("--bytes-per-entry", type=int, default=None,
                   help="bytes per fingerprint per table (default 8, in memory; "
                   f"{REDIS_ENTRY_BYTES} with --crawl, Redis)")
    p.add_argument("--crawl", action="store_true",
                   help=f"plan the crawl's whole index in Redis: table entries of "
                   f"{REDIS_ENTRY_BYTES} bytes and each page's text sketch, anchors and "
                   f"checksum ({crawl_extra_bytes()} bytes)")
    p.add_argument("--json", action="store_true",
                   help="with --docs: one JSON object for the crawl's index at that size "
                   "(design, memory_bytes, candidates_per_probe)")
    p.add_argument("--max-tables", type=int, default=100,
                   help="leave out designs with more tables (default 100)")
    args = p.parse_args(argv)
    check_k(p, args.k)
    return run(plan, args)
