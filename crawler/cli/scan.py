"""``simcrawl scan PATH ...``: the crawl's decision over files, in the order given."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from crawler.cli.common import (
    InputError,
    check_k,
    documents,
    fingerprint_options,
    iter_files,
    parser,
    run,
)

HELP = "decide text and HTML files as the crawl would and report their copies"


def samples() -> list[Path]:
    """The sample documents shipped with simcrawl (crawler/examples/), each original before its
    copies (``SAMPLE_ORDER``; any other sample after them, by name)."""
    from crawler.examples import DOCUMENTS, SAMPLE_ORDER

    found = sorted(p for p in DOCUMENTS.iterdir() if p.suffix in (".html", ".txt"))
    rank = {name: n for n, name in enumerate(SAMPLE_ORDER)}
    return sorted(found, key=lambda p: (rank.get(p.name, len(rank)), p.name))


#: How ``--order`` sorts the files (the first met of two copies is the original).
ORDERS = {"given": "as given, a folder's files by name",
          "mtime": "by modification time, oldest first"}


def ordered(files: list[Path], order: str) -> list[Path]:
    """``files`` in the ``order`` asked (:data:`ORDERS`)."""
    if order == "mtime":
        return sorted(files, key=lambda p: (p.stat().st_mtime, str(p)))
    return files


def scan(args: argparse.Namespace) -> int:
    from dedup.config import DedupConfig
    from dedup.decide import EXACT, NEAR
    from dedup.reading import decide_read, fingerprint_params, fingerprint_text
    from dedup.simhash import KERNEL
    from dedup.text import ExtractedText

    files = ordered(list(iter_files(args.paths or samples())), args.order)
    if not files:
        raise InputError("no files to scan")
    config = DedupConfig(max_distance=args.k, shingle=args.shingle,
                         drop_numbers=args.drop_numbers, min_tokens=args.min_tokens)
    params = fingerprint_params(config)
    started = time.perf_counter()
    skipped: list[tuple[Path, str]] = []
    read = [(path, method, fingerprint_text(ExtractedText(text, method), params,
                                            path.resolve().as_uri()))
            for path, text, method in documents(files, args.max_size, skipped)]
    verdicts = decide_read((page for _, _, page in read), config,
                           capacity=max(len(read), 1000))
    elapsed = time.perf_counter() - started
    out = sys.stdout
    print(f"{len(read)} documents fingerprinted and decided in {elapsed:.2f} s (kernel: "
          f"{KERNEL}; k = {config.max_distance}, the crawl's rules), in this order: "
          + (ORDERS[args.order] if args.paths or args.order != "given"
             else "the samples' originals first")
          + (f"; {len(skipped)} files skipped" if skipped else "") + "\n", file=out)
    for path, reason in skipped:
        print(f"skipped ({reason}): {path}", file=out)
    if skipped:
        print(file=out)
    print(f"{'simhash':<16}  {'tokens':>7}  {'text from':<11}  file", file=out)
    for path, method, page in read:
        note = "  (short: checksum only)" if page.short else ""
        print(f"{page.simhash:016x}  {page.tokens:>7}  {method:<11}  {path}{note}", file=out)
    print(file=out)
    by_url = {path.resolve().as_uri(): path for path, _, _ in read}
    found = 0
    for (path, _, _), v in zip(read, verdicts):
        d = v.decision
        if d is None or d.kind not in (EXACT, NEAR):
            if v.decision is None:
                print(f"skipped ({v.kind}): {path}", file=out)
            continue
        found += 1
        original = by_url.get(d.original_url or "", d.original_url)
        if d.kind == EXACT:
            print(f"exact duplicate   {path}  =  {original}", file=out)
        else:
            how = f"distance {d.distance}" + (f", containment {d.containment:.2f}"
                                              if d.containment is not None else "")
            print(f"near duplicate    {path}  ~  {original}  ({how})", file=out)
    if not found:
        print("no duplicates found", file=out)
    return 0


def main(argv: list[str], prog: str = "simcrawl scan") -> int:
    from dedup.config import DEFAULT_MAX_DISTANCE

    p = parser(prog, "Decide text and HTML files (folders recursively), in order (the "
               "first of two copies is the original), as the "
               "crawl decides pages (its k, second opinion, text check and template lines; "
               "in memory, no server), and report each exact and near copy with the file "
               "it copies. With no paths, scans the bundled examples.")
    p.add_argument("paths", nargs="*", type=Path, help="files or folders")
    p.add_argument("-k", type=int, default=DEFAULT_MAX_DISTANCE,
                   help=f"largest Hamming distance of a candidate (default "
                   f"{DEFAULT_MAX_DISTANCE}, the crawl's)")
    p.add_argument("--order", choices=sorted(ORDERS), default="given",
                   help="the order the files are decided in, the first of two copies "
                   "being the original: " + "; ".join(f"{k}: {v}" for k, v in ORDERS.items())
                   + " (default given)")
    fingerprint_options(p)
    args = p.parse_args(argv)
    check_k(p, args.k)
    return run(scan, args)
