"""``simcrawl register PATH ... --source NAME``: originals to track."""

from __future__ import annotations

import argparse
from pathlib import Path

from crawler.cli.common import InputError, connect, iter_files, parser, run, service_options

HELP = "register originals (text or HTML files) to track"


def register(args: argparse.Namespace) -> int:
    from dedup.adapters.registered_originals import register_files
    from dedup.config import DedupConfig
    from dedup.index import IndexMismatchError
    from dedup.progress_line import Progress

    files = list(iter_files(args.paths))
    if not files:
        raise InputError("no files to register")
    if not args.source.strip():
        raise InputError("--source must name the originals' owner or collection")
    config = DedupConfig(namespace=args.namespace, database=args.database)
    redis_client, pages, services = connect(args)
    try:
        progress = Progress("register", len(files))
        try:
            done = register_files(files, args.source, pages, redis_client, config,
                                  capacity=args.capacity, progress=progress)
        except IndexMismatchError as exc:
            raise InputError(str(exc)) from None
        progress.close()
    finally:
        if services is not None:
            services.stop()
    print(f"register {args.source!r} into database {args.database!r}: {done.added:,} added, "
          f"{done.unchanged:,} already "
          f"registered, {len(done.changed):,} changed since, {len(done.skipped):,} skipped")
    for path in done.changed:
        print(f"  changed (kept as first registered; remove its page to register the new "
              f"text): {path}")
    for path, reason in done.skipped:
        print(f"  skipped ({reason}): {path}")
    return 0



def main(argv: list[str], prog: str = "simcrawl register") -> int:
    p = parser(prog, "Load text and HTML files (folders recursively) as originals of "
               "SOURCE: stored in MongoDB with their fingerprints (simhash, and pinyin "
               "windows for Chinese), added to the Redis index, so that a crawl drops pages "
               "that copy them and names the source. Registering a file again changes "
               "nothing. Text files are read as UTF-8, else GB18030.")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders")
    p.add_argument("--source", required=True, help="the owner or collection, e.g. 'novels'")
    p.add_argument("--capacity", type=int, help="plan new indexes for this many pages "
                   "(default: the crawl's 1,000,000 for simhash, 100,000 originals for the "
                   "pinyin windows)")
    service_options(p)
    return run(register, p.parse_args(argv))
