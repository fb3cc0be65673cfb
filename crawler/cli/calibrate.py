"""``simcrawl calibrate``: its options and exit statuses; the work is :mod:`crawler.console.calibration`'s."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from crawler.cli.common import parser as common_parser
from crawler.cli.common import check_k, store_errors, store_failure
from crawler.console.calibration import MAX_DISTANCE, calibrate, figure, page, table
from crawler.console.options import add_service_options, open_database
from dedup.config import DedupConfig

#: The crawl's own settings: the defaults of the options that judge pairs as it does.
CRAWL = DedupConfig()

HELP = "the share of page pairs that are copies at each distance, to choose k"


def build_parser(prog: str = "simcrawl calibrate") -> argparse.ArgumentParser:
    """The command's options (``simcrawl calibrate --help``)."""
    parser = common_parser(
        prog, "Estimate, for each Hamming distance, the share of page "
        "pairs at that distance that are copies, from the crawl's own store, to choose k "
        "with evidence.")
    parser.add_argument("-o", "--output", type=Path, default=None, help="also write "
                        "calibrate.html, calibrate.png and calibrate.json to this folder")
    parser.add_argument("--up-to", type=int, default=MAX_DISTANCE, metavar="D",
                        help="examine the pairs at each Hamming distance 0..D (0-24; "
                        f"default {MAX_DISTANCE}); k itself is -k")
    parser.add_argument("--sample", type=int, default=30,
                        help="pairs judged per distance (default 30)")
    parser.add_argument("--examples", type=int, default=2,
                        help="pairs per distance shown side by side in the HTML (default 2)")
    parser.add_argument("--containment", type=float, default=None,
                        help="the text check's share of one page's three-word shingles in "
                        f"the other's for a copy (default the crawl's, {CRAWL.verify_containment})")
    parser.add_argument("--verify", type=int, default=CRAWL.verify_distance,
                        help="second-opinion distance for pairs without stored texts "
                        f"(default the crawl's, {CRAWL.verify_distance})")
    parser.add_argument("--target", type=float, default=0.9,
                        help="the share of copies k should keep (default 0.9)")
    parser.add_argument("-k", type=int, default=None, help="the crawl's k, marked (default: "
                        "the k its index was built with)")
    parser.add_argument("--seed", type=int, default=1, help="sampling seed (default 1)")
    add_service_options(parser)
    return parser


def main(argv: list[str] | None = None, prog: str = "simcrawl calibrate") -> int:
    """Run ``simcrawl calibrate``; returns the exit status (2: bad arguments, 3: MongoDB
    unreachable)."""


    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if not 0 <= args.up_to <= 24:
        parser.error(f"--up-to must be 0-24, got {args.up_to}")
    check_k(parser, args.k)
    if args.containment is None:
        args.containment = CRAWL.verify_containment
    for name, ok, what in (("--containment", 0 < args.containment <= 1, "in (0, 1]"),
                           ("--target", 0 < args.target <= 1, "in (0, 1]"),
                           ("--sample", args.sample >= 1, "at least 1")):
        if not ok:
            parser.error(f"{name} must be {what}, got {getattr(args, name[2:])}")
    try:
        with open_database(args, ("fingerprints",), "simcrawl calibrate") as reads:
            if sys.stderr.isatty():
                from rich.progress import Progress

                with Progress(transient=True) as bar:
                    task = bar.add_task("reading fingerprints",
                                        total=reads.estimated("fingerprints"))
                    result = calibrate(reads, args.up_to, args.sample, args.examples,
                                       args.containment, args.verify, args.target, args.seed,
                                       progress=lambda n: bar.advance(task, n))
            else:
                result = calibrate(reads, args.up_to, args.sample, args.examples,
                                   args.containment, args.verify, args.target, args.seed)
            if args.k is None:
                args.k = reads.index_k()
    except store_errors() as exc:  # unreachable, or nothing to read: not an empty result
        return store_failure(exc)
    print(table(result, args.k))
    suggestion = result.suggested_k
    print(f"\nsuggested k: {suggestion if suggestion is not None else 'none'} (the largest k "
          f"up to which at least {args.target:.0%} of the judged pairs at every distance "
          f"are copies; the crawl's k: {args.k})")
    if args.output is not None:
        try:
            args.output.mkdir(parents=True, exist_ok=True)
            png = args.output / "calibrate.png"
            figure(result, args.k, png)
            (args.output / "calibrate.html").write_text(
                page(result, args.k, png, args.containment), encoding="utf-8")
            (args.output / "calibrate.json").write_text(json.dumps({
                "found": result.found, "judged": result.judged, "copies": result.copies,
                "suggested_k": suggestion, "k": args.k, "fingerprints": result.fingerprints,
                "containment": args.containment, "target": args.target}, indent=1), encoding="utf-8")
        except OSError as exc:
            print(f"error: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"written: {args.output / 'calibrate.html'} (figure and examples)",
              file=sys.stderr)
    return 0
