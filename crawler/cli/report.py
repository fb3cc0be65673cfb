"""``simcrawl report``: its options and exit statuses; the work is :mod:`crawler.console.report_file`'s."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crawler.cli.common import parser as common_parser
from crawler.cli.common import store_errors, store_failure
from crawler.console.report_file import write_report
from crawler.console.options import add_options, open_database
from dedup.progress_line import counted

HELP = "one self-contained HTML report with plots of the store"


def build_parser(prog: str = "simcrawl report") -> argparse.ArgumentParser:
    """The command's options (``simcrawl report --help``)."""
    parser = common_parser(
        prog, "Write what the crawls found as one self-contained HTML "
        "file (report.html, opens offline), the figures as PNG files and their numbers as "
        "report.json.")
    parser.add_argument("-o", "--output", default="simcrawl-report",
                        help="folder to write to (default ./simcrawl-report)")
    parser.add_argument("-k", type=int, default=None, help="k, marked on the distance "
                        "histogram (default: the k the crawl's index was built with)")
    add_options(parser)
    return parser


def main(argv: list[str] | None = None, prog: str = "simcrawl report") -> int:
    """Run ``simcrawl report``; returns the exit status (2: bad arguments or output
    folder, 3: MongoDB unreachable)."""


    args = build_parser(prog).parse_args(argv)
    out = Path(args.output)
    if out.exists() and not out.is_dir():
        print(f"error: {out} exists and is not a folder", file=sys.stderr)
        return 2
    try:
        with open_database(args, ("pages", "matches"), "simcrawl report") as reads:
            if sys.stderr.isatty():
                from rich.progress import Progress

                # the store's counts (a count reads it all on SecantusDB)
                total = reads.estimated("pages") + reads.estimated("matches")
                with Progress(transient=True) as bar:
                    task = bar.add_task("reading the store", total=total)
                    found = write_report(reads, out, args.k, args.crawl_id, args.since,
                                         args.until, progress=lambda n: bar.advance(task, n))
            else:
                found = write_report(reads, out, args.k, args.crawl_id, args.since, args.until)
    except store_errors() as exc:  # unreachable, or nothing to read: not an empty result
        return store_failure(exc)
    except OSError as exc:
        print(f"error: cannot write {out}: {exc.strerror}", file=sys.stderr)
        return 2
    registered = f", {counted(found.registered, 'registered original')}" \
        if found.registered else ""
    print(f"report of {counted(found.pages, 'page')} stored{registered} and "
          f"{counted(found.matches, 'copy', 'copies')}: "
          f"{out / 'report.html'} (figures beside it)", file=sys.stderr)
    return 0
