"""``simcrawl find-all [FILE | --store]``: every pair (or cluster) of fingerprints within k,
in this process (NumPy, :mod:`dedup.all_pairs`) or on Spark (:mod:`dedup.spark`)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from crawler.cli.common import (
    InputError,
    check_engine_options,
    check_k,
    engine_options,
    open_spark,
    parser,
    run,
)
from dedup.config import DEFAULT_MAX_DISTANCE

HELP = "all pairs (or clusters) of fingerprints within k bits, here or on Spark"

#: Lines per chunk when a file is handed to Spark.
CHUNK = 1_000_000


def parse_fingerprint(token: str) -> int:
    """Parse one fingerprint: 16 hex digits (optionally ``0x``-prefixed) or a decimal."""
    token = token.strip()
    if re.fullmatch(r"(0x)?[0-9a-fA-F]{16}", token):
        return int(token, 16)
    if token.lower().startswith("0x"):
        value = int(token, 16) if re.fullmatch(r"0x[0-9a-fA-F]{1,16}", token, re.IGNORECASE) else -1
    elif token.isdigit():
        value = int(token)
    else:
        raise ValueError("expected 16 hex digits or a decimal integer")
    if not 0 <= value < 1 << 64:
        raise ValueError("outside the unsigned 64-bit range")
    return value


def fingerprint_chunks(stream: TextIO, name: str, size: int = CHUNK
                       ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Read one fingerprint per line (blank lines and ``#`` comments skipped), ``size``
    at a time.

    Yields:
        ``(line_numbers, fingerprints)`` as ``int64`` and ``uint64`` arrays.

    Raises:
        InputError: naming the file and line of the first bad value.
    """
    values: list[int] = []
    lines: list[int] = []
    for lineno, line in enumerate(stream, 1):
        token = line.split("#", 1)[0].strip()
        if not token:
            continue
        try:
            values.append(parse_fingerprint(token))
        except ValueError as exc:
            raise InputError(f"{name}:{lineno}: bad fingerprint {token[:40]!r}: {exc}") from None
        lines.append(lineno)
        if len(values) >= size:
            yield np.array(lines, dtype=np.int64), np.array(values, dtype=np.uint64)
            values, lines = [], []
    if values:
        yield np.array(lines, dtype=np.int64), np.array(values, dtype=np.uint64)


def _chunks(args: argparse.Namespace, stack: ExitStack
            ) -> Iterator[tuple[np.ndarray | list[str], np.ndarray]]:
    """The input as ``(ids, fingerprints)`` chunks: line numbers of the file, or page ids
    of the store's indexed fingerprints."""
    if args.store:
        from crawler.console.options import open_database
        from dedup.spark.stage import store_chunks

        reads = stack.enter_context(open_database(args, ("fingerprints",), "simcrawl find-all"))
        if args.k is None:  # the k the crawl's index was built with
            args.k = reads.index_k()
        return store_chunks(reads.page_store())
    if args.k is None:
        args.k = DEFAULT_MAX_DISTANCE
    if args.input == "-":
        return fingerprint_chunks(sys.stdin, "<stdin>")
    try:
        fh = stack.enter_context(open(args.input, encoding="utf-8", errors="replace"))
    except OSError as exc:
        raise InputError(f"{args.input}: {exc.strerror}") from None
    return fingerprint_chunks(fh, args.input)


class Output:
    """Where the records go: JSON lines on standard output or in a file, or a Parquet
    file (``-o NAME.parquet``; a folder of part files with the Spark engine)."""

    def __init__(self, target: str, id_name: str) -> None:
        self.target = target
        self.id_name = id_name
        self.parquet = target.endswith(".parquet")
        self.count = 0

    def json_lines(self, records: Iterable[dict[str, Any]]) -> None:
        out = sys.stdout if self.target == "-" else None
        try:
            fh = out or open(self.target, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise InputError(f"cannot write {self.target}: {exc.strerror}") from None
        try:
            for record in records:
                fh.write(json.dumps(record) + "\n")
                self.count += 1
        finally:
            if fh is not sys.stdout:
                fh.close()


def _pair_record(i: Any, j: Any, distance: int, a: str, b: str, id_name: str
                 ) -> dict[str, Any]:
    return {"a": a, "b": b, "distance": int(distance), id_name: [i, j]}


def _cluster_record(members: list[Any], fingerprints: list[str], id_name: str
                    ) -> dict[str, Any]:
    return {"size": len(members), id_name: members, "fingerprints": fingerprints}


def run_local(args: argparse.Namespace, chunks: Iterable[tuple[Any, np.ndarray]],
              out: Output) -> int:
    """The in-process engine: the whole set in memory, :func:`dedup.all_pairs.find_all`."""
    from dedup import all_pairs

    parts = list(chunks)
    ids = [i for c in parts for i in (c[0].tolist() if isinstance(c[0], np.ndarray) else c[0])]
    values = np.concatenate([c[1] for c in parts]) if parts else np.empty(0, np.uint64)
    if args.clusters:
        groups = all_pairs.clusters(values, args.k)
        records = [_cluster_record([ids[i] for i in g], [f"{int(values[i]):016x}" for i in g],
                                   out.id_name) for g in groups]
        columns = {"size": [r["size"] for r in records],
                   "members": [r[out.id_name] for r in records],
                   "fingerprints": [r["fingerprints"] for r in records]}
    else:
        pairs = all_pairs.find_all(values, args.k)
        records = [_pair_record(ids[i], ids[j], d, f"{int(values[i]):016x}",
                                f"{int(values[j]):016x}", out.id_name) for i, j, d in pairs]
        columns = {"i": [r[out.id_name][0] for r in records],
                   "j": [r[out.id_name][1] for r in records],
                   "distance": [r["distance"] for r in records],
                   "a": [r["a"] for r in records], "b": [r["b"] for r in records]}
    if out.parquet:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError("Parquet output needs pyarrow: pip install 'simcrawl[spark]'"
                             ) from None
        pq.write_table(pa.table(columns), out.target)
        out.count = len(records)
    else:
        out.json_lines(records)
    return len(values)


def run_spark(args: argparse.Namespace, chunks: Iterable[tuple[Any, np.ndarray]],
              out: Output, stack: ExitStack) -> int:
    """The Spark engine: the input staged as Parquet, :mod:`dedup.spark.job` on the master."""
    from dedup.spark import job, stage

    spark, folder = open_spark(args, stack, "simcrawl-find-all")
    folder = folder / f"input-{time.strftime('%Y%m%dT%H%M%S')}"
    n = stage.write(chunks, folder)
    if args.stage:
        stack.callback(_remove_tree, folder)
    if not n:
        out.json_lines([])
        return 0
    points = spark.read.parquet(str(folder))
    pairs = job.find_all(points, args.k)
    if args.clusters:
        table = job.cluster_records(points, pairs)
        make = lambda r: _cluster_record(list(r.members), list(r.fingerprints),
                                         out.id_name)
    else:
        table = job.pair_records(pairs)
        make = lambda r: _pair_record(r.i, r.j, r.distance, r.a, r.b, out.id_name)
    if out.parquet:
        table.write.mode("overwrite").parquet(out.target)
        out.count = spark.read.parquet(out.target).count()
    else:  # one partition at a time: the driver never holds all the pairs
        out.json_lines(make(r) for r in table.toLocalIterator())
    return n


def _remove_tree(folder: Path) -> None:
    import shutil

    shutil.rmtree(folder, ignore_errors=True)


def find_all(args: argparse.Namespace) -> int:
    out = Output(args.output, "pages" if args.store else "lines")
    started = time.perf_counter()
    with ExitStack() as stack:
        chunks = _chunks(args, stack)
        if args.engine == "spark":
            n = run_spark(args, chunks, out, stack)
        else:
            n = run_local(args, chunks, out)
    what = "clusters" if args.clusters else "pairs"
    where = "" if args.output == "-" else f" to {args.output}"
    engine = f"Spark ({args.master})" if args.engine == "spark" else "in process"
    print(f"{n:,} fingerprints, {out.count:,} {what} within k = {args.k}{where} "
          f"in {time.perf_counter() - started:.2f} s ({engine})", file=sys.stderr)
    return 0


def main(argv: list[str], prog: str = "simcrawl find-all") -> int:
    from crawler.console.options import add_service_options

    p = parser(prog, "Read fingerprints, one per line (16 hex digits or a decimal), or the "
               "store's indexed fingerprints (--store), and print every pair within k bits "
               "as JSON lines; --clusters prints connected components instead. "
               "--engine spark runs the same search as a Spark job (pip install "
               "'simcrawl[spark]' and Java 17).")
    p.add_argument("input", nargs="?", default="-", help="file to read (default: stdin)")
    p.add_argument("-k", type=int, default=None,
                   help=f"largest Hamming distance (default {DEFAULT_MAX_DISTANCE}, the "
                   "crawl's; with --store, the k the store's index was built with)")
    p.add_argument("--clusters", action="store_true", help="print clusters, not pairs")
    p.add_argument("--store", action="store_true",
                   help="read the stored fingerprints (MongoDB) instead of a file; records "
                   "name page ids ('pages') instead of line numbers ('lines')")
    p.add_argument("-o", "--output", default="-",
                   help="write here instead of standard output: JSON lines, or Parquet when "
                   "the name ends in .parquet")
    engine_options(p, "in this process, NumPy")
    add_service_options(p)
    args = p.parse_args(argv)
    check_k(p, args.k)
    if args.store and args.input != "-":
        p.error("give a FILE or --store, not both")
    check_engine_options(p, args)
    return run(find_all, args)
