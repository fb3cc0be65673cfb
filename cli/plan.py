"""``simcrawl plan --docs N``: the permuted-table designs for a corpus size."""

from __future__ import annotations

import argparse
import re

from cli.common import check_k, parser, run

HELP = "choose a table design for a corpus size"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Parse ``"64GB"``, ``"512 MiB"``, ``"1000000"`` into bytes."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (try 512MB or 8GiB)")
    number, unit = float(match.group(1)), (match.group(2) or "").lower()
    base = 1024 if "i" in unit else 1000
    power = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}[unit[:1] if unit[:1] != "b" else ""]
    return int(number * base ** power)


def plan(args: argparse.Namespace) -> int:
    from dedup import tables

    chosen, plans = tables.plan(args.docs, args.k, args.memory, args.bytes_per_entry,
                                args.max_tables)
    print(tables.format_plans(chosen, plans, args.docs))
    return 0


def main(argv: list[str], prog: str = "simcrawl plan") -> int:
    from dedup.config import DEFAULT_MAX_DISTANCE

    p = parser(prog, "Print the trade-off of the permuted-table designs (Manku et al. §3) "
               "for a corpus and mark the one chosen.")
    p.add_argument("--docs", type=int, required=True, help="expected number of fingerprints")
    p.add_argument("--k", "-k", type=int, default=DEFAULT_MAX_DISTANCE,
                   help=f"largest Hamming distance (default {DEFAULT_MAX_DISTANCE}, the "
                   "crawl's)")
    p.add_argument("--memory", type=parse_size, default=None,
                   help="memory budget for the index, e.g. 64GB (default: no limit)")
    p.add_argument("--bytes-per-entry", type=int, default=8,
                   help="bytes per fingerprint per table (8 in memory, ~16 in Redis)")
    p.add_argument("--max-tables", type=int, default=100,
                   help="leave out designs with more tables (default 100)")
    args = p.parse_args(argv)
    check_k(p, args.k)
    return run(plan, args)
