"""``simcrawl warc FILE_OR_FOLDER ...``: WARC files deduplicated as a crawl, their HTML
responses decided in file order by the crawl's own decision and stored as a crawl stores
them (crawler/spiders/warc.py); ``--warc DIR`` writes the deduplicated archive too."""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "decide the HTML responses of WARC files as a crawl would, and store the record"


def main(argv: list[str] | None = None, prog: str = "simcrawl warc") -> int:
    from crawler.cli.common import parser as verb_parser
    from crawler.run import CrawlDidNotRun, crawl, hint_options, print_summary, query_hint
    from crawler.spiders.warc import warc_files
    from dedup.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, ServiceUnavailable, exit_status
    from dedup.servers.services import DataDirError, private_folder, resolve, stop_on_signals

    parser = verb_parser(
        prog, "Decide every HTML response of WARC files (gzip or not, "
        "WARC 1.0 and 1.1; folders searched for .warc and .warc.gz) in file order, as a "
        "crawl decides its pages, and store pages, fingerprints and match records as a "
        "crawl does, under a crawl id of its own. A record that cannot be read is named "
        "with its file and offset, and the run goes on with the next file (exit status 1 "
        "at the end).")
    parser.add_argument("paths", nargs="+", help="WARC files or folders of them")
    parser.add_argument("--data-dir", default=None,
                        help="embedded services' data (default $SIMCRAWL_DATA or ./simcrawl-data)")
    parser.add_argument("--database", default=None,
                        help="the MongoDB database to store into (default simcrawl)")
    parser.add_argument("--warc", default=None, metavar="DIR",
                        help="also write the deduplicated archive: the originals, and a "
                        "record naming its original for each copy (docs/warc.md)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        dest="settings", help="a Scrapy or simcrawl setting (repeatable)")
    args = parser.parse_args(argv)
    try:
        files = warc_files(args.paths)
    except ValueError as exc:
        parser.error(str(exc))
    import os

    log_dir = Path(args.data_dir or os.environ.get("SIMCRAWL_DATA") or "simcrawl-data")
    extra: list[str] = []
    for setting in args.settings:
        extra += ["-s", setting]
    if args.database:
        extra += ["-s", f"DEDUP_DATABASE={args.database}"]
    if args.warc:
        extra += ["-s", f"DEDUP_WARC_DIR={Path(args.warc).resolve()}"]
    spider = ["warc", "-a", "files=" + ",".join(str(f.resolve()) for f in files)]
    with stop_on_signals():
        try:
            private_folder(log_dir)
            redis_url, mongo_uri, services = resolve(data_dir=args.data_dir)
            try:
                print(f"deciding the HTML responses of {len(files)} WARC file"
                      f"{'s' if len(files) > 1 else ''} (log: {log_dir / 'warc.log'}) ...")
                stats = crawl([], redis_url, mongo_uri, extra, log_dir / "warc.log", 1,
                              spider=spider)
            finally:
                if services is not None:
                    services.stop()
        except CrawlDidNotRun as exc:
            if not exc.said:
                print(f"error: {exc}", file=sys.stderr)
            return exc.status
        except DataDirError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (ServiceUnavailable, ValueError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return exit_status(exc)
    print_summary(stats)
    other, bad = stats.get("dedup/warc/other_records", 0), stats.get("dedup/warc/bad_records", 0)
    revisits = stats.get("dedup/warc/revisits", 0)
    unresolved = stats.get("dedup/warc/revisits_unresolved", 0)
    print(f"records not decided (not HTML responses): {other}; files cut short by a record "
          f"that cannot be read: {bad} (named in the log)")
    if revisits or unresolved:
        print(f"revisit records decided as the response they repeat: {revisits}; repeating "
              f"a response not in the files: {unresolved} (named in the log, not decided)")
    stored_in = args.database or "simcrawl"
    print(f"\nmatch records (MongoDB, database \"{stored_in}\"). "
          + query_hint(stored_in, hint_options(stored_in, args.data_dir)))
    return EXIT_FAILED if stats.get("lost_urls") or bad else EXIT_OK
