"""``simcrawl find-all [FILE]``: every pair (or cluster) of fingerprints within k."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from typing import TextIO

import numpy as np

from cli.common import InputError, check_k, parser, run

HELP = "all pairs (or clusters) of fingerprints within k bits"


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


def read_fingerprints(stream: TextIO, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Read one fingerprint per line (blank lines and ``#`` comments skipped).

    Returns:
        ``(fingerprints, line_numbers)`` as ``uint64`` and ``int64`` arrays.

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
    return np.array(values, dtype=np.uint64), np.array(lines, dtype=np.int64)


def find_all(args: argparse.Namespace) -> int:
    from dedup import batch

    if args.input == "-":
        values, lines = read_fingerprints(sys.stdin, "<stdin>")
    else:
        try:
            with open(args.input, encoding="utf-8", errors="replace") as fh:
                values, lines = read_fingerprints(fh, args.input)
        except OSError as exc:
            raise InputError(f"{args.input}: {exc.strerror}") from None
    started = time.perf_counter()
    if args.clusters:
        groups = batch.clusters(values, args.k)
        for group in groups:
            print(json.dumps({"size": len(group), "lines": [int(lines[i]) for i in group],
                              "fingerprints": [f"{int(values[i]):016x}" for i in group]}))
        count, what = len(groups), "clusters"
    else:
        pairs = batch.find_all(values, args.k)
        for i, j, dist in pairs:
            print(json.dumps({"a": f"{int(values[i]):016x}", "b": f"{int(values[j]):016x}",
                              "distance": int(dist), "lines": [int(lines[i]), int(lines[j])]}))
        count, what = len(pairs), "pairs"
    print(f"{len(values):,} fingerprints, {count:,} {what} within k = {args.k} "
          f"in {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return 0


def main(argv: list[str], prog: str = "simcrawl find-all") -> int:
    from dedup.config import DEFAULT_MAX_DISTANCE

    p = parser(prog, "Read fingerprints, one per line (16 hex digits or a decimal), and "
               "print every pair within k bits as JSON lines; --clusters prints connected "
               "components instead.")
    p.add_argument("input", nargs="?", default="-", help="file to read (default: stdin)")
    p.add_argument("-k", type=int, default=DEFAULT_MAX_DISTANCE,
                   help=f"largest Hamming distance (default {DEFAULT_MAX_DISTANCE}, the "
                   "crawl's)")
    p.add_argument("--clusters", action="store_true", help="print clusters, not pairs")
    args = p.parse_args(argv)
    check_k(p, args.k)
    return run(find_all, args)
