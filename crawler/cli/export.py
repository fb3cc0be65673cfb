"""``simcrawl export``: its options and exit statuses; the work is :mod:`crawler.console.export_records`'s."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from crawler.cli.common import parser as common_parser
from crawler.cli.common import store_errors, store_failure
from crawler.console.export_records import FIELDS, rows, write
from crawler.console.options import add_options, open_database
from dedup.store.reads import Span, StoreReads

HELP = "stream the store's match records or pages to CSV or JSON lines"


def build_parser(prog: str = "simcrawl export") -> argparse.ArgumentParser:
    """The command's options (``simcrawl export --help``)."""
    parser = common_parser(
        prog, "Stream the store's match records or pages to CSV or JSON "
        "lines (one cursor in _id order: constant memory on any store size).")
    parser.add_argument("what", choices=sorted(FIELDS), help="which records")
    parser.add_argument("--format", choices=["csv", "jsonl"], default="csv",
                        help="csv (a header row, lists joined with ';') or jsonl (default csv)")
    parser.add_argument("-o", "--output", default="-",
                        help="file to write (default: standard output)")
    parser.add_argument("--text", action="store_true",
                        help="pages: each page's text too (the originals' texts of a crawl "
                        "or of simcrawl warc: a deduplicated dataset; docs/warc.md)")
    add_options(parser)
    return parser


def main(argv: list[str] | None = None, prog: str = "simcrawl export") -> int:
    """Run ``simcrawl export``; returns the exit status (2: bad arguments or output file,
    3: MongoDB unreachable)."""


    args = build_parser(prog).parse_args(argv)
    try:
        with open_database(args, (args.what,), "simcrawl export") as reads:
            span = Span(args.crawl_id, args.since, args.until)
            try:
                out = sys.stdout if args.output == "-" else open(  # noqa: SIM115
                    args.output, "w", encoding="utf-8", newline="")
            except OSError as exc:
                print(f"error: cannot write {args.output}: {exc.strerror}", file=sys.stderr)
                return 2
            try:
                n = _export(reads, args, span, out)
            finally:
                if out is not sys.stdout:
                    out.close()
    except store_errors() as exc:  # unreachable, or nothing to read: not an empty result
        return store_failure(exc)
    except BrokenPipeError:
        return 0
    where_to = "standard output" if args.output == "-" else args.output
    print(f"exported {n:,} {args.what} to {where_to}", file=sys.stderr)
    return 0


def _export(reads: StoreReads, args: argparse.Namespace, span: Span, out: TextIO) -> int:
    text = args.text and args.what == "pages"
    records = rows(reads, args.what, span, text)
    if not sys.stderr.isatty():
        return write(out, args.what, args.format, records, text=text)
    from rich.progress import Progress

    total = reads.count(args.what, span)  # the store's count when the span is everything
    with Progress(transient=True) as progress:
        task = progress.add_task(f"export {args.what}", total=total)
        return write(out, args.what, args.format, records,
                     step=lambda: progress.advance(task), text=text)
