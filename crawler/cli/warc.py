"""``simcrawl warc FILE_OR_FOLDER ...``: WARC files deduplicated as a crawl, their HTML
responses decided in file order by the crawl's own decision and stored as a crawl stores
them (crawler/spiders/warc.py); ``--warc DIR`` writes the deduplicated archive too."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

HELP = "decide the HTML responses of WARC files as a crawl would, and store the record"


def writable(folder: Path) -> None:
    """Make sure the archive can be written in ``folder`` before anything starts.

    Raises:
        ValueError: naming the folder and why.
    """
    import tempfile

    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise ValueError(f"--warc {folder} cannot be written: {exc.strerror or exc}") from None


def reading_params(settings: list[str]) -> Any:
    """How the crawl will read its pages (:func:`dedup.reading.fingerprint_params`) with the
    crawl's settings and these ``NAME=VALUE`` ones, as its processes will build them."""
    from scrapy.settings import Settings

    from dedup.config import DedupConfig
    from dedup.reading import fingerprint_params

    built = Settings()
    built.setmodule("crawler.settings", priority="project")
    for item in settings:
        name, _, value = item.partition("=")
        built.set(name.strip(), value, priority="cmdline")
    return fingerprint_params(DedupConfig.from_settings(built.get))


def read_on_spark(args: argparse.Namespace, files: list[Path], stack: Any) -> Path:
    """``--engine spark``: every page of ``files`` read on Spark (dedup/spark/read_archives.py) into
    a staging folder (``--stage``, else a temporary one removed with ``stack``), which
    the decision takes them from; Spark is stopped before the decision starts."""
    from crawler.cli.common import open_spark
    from crawler.extraction import read_fetched
    from dedup.spark.read_archives import read_archives

    params = reading_params(args.settings)
    started = time.perf_counter()
    print(f"reading the pages of {len(files)} archive file{'s' if len(files) > 1 else ''} "
          f"on Spark ({args.master}) ...", flush=True)
    spark, folder = open_spark(args, stack, "simcrawl-warc")
    try:
        reads = read_archives(spark, files, params, folder, read_fetched)
        cores = spark.sparkContext.defaultParallelism
    finally:
        spark.stop()
    pages, records = sum(r.pages for r in reads), sum(r.records for r in reads)
    cpu = sum(r.seconds for r in reads)
    print(f"read {pages} pages of {records} records on Spark in "
          f"{time.perf_counter() - started:.1f} s ({cpu:.1f} CPU s in its executors, "
          f"{cores} core{'s' if cores > 1 else ''}); deciding them in file order ...",
          flush=True)
    return folder


def main(argv: list[str] | None = None, prog: str = "simcrawl warc") -> int:
    from crawler.cli.common import InputError, check_engine_options, engine_options
    from crawler.cli.common import parser as verb_parser
    from crawler.run import CrawlDidNotRun, crawl, hint_options, print_summary, query_hint
    from dedup.archive import archive_files, check_archive
    from dedup.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, ServiceUnavailable, exit_status
    from dedup.adapters.servers.services import (
        DataDirError,
        data_folder,
        private_folder,
        resolve,
        stop_on_signals,
    )

    parser = verb_parser(
        prog, "Decide every HTML page of WARC and ARC files (gzip or not, "
        "WARC 0.17 to 1.1; folders searched for .warc, .warc.gz, .arc and .arc.gz) in "
        "file order, dated as captured, as a "
        "crawl decides its pages, and store pages, fingerprints and match records as a "
        "crawl does, under a crawl id of its own. A record that cannot be read is named "
        "with its file and offset, and the run goes on with the next file (exit status 1 "
        "at the end); a record that fails its digest is decided, skipped or stops the "
        "run (-s DEDUP_WARC_DIGESTS=decide|skip|raise).")
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
    engine_options(parser, "the pages read by the crawl's extraction workers")
    args = parser.parse_args(argv)
    check_engine_options(parser, args)
    try:
        files = archive_files(args.paths)
        for name in args.paths:  # a file named is an archive (a folder's are read as found)
            if Path(name).is_file():
                check_archive(Path(name))
        if args.warc:
            writable(Path(args.warc))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    import os

    log_dir = Path(data_folder(args.data_dir))
    extra: list[str] = []
    for setting in args.settings:
        extra += ["-s", setting]
    if args.database:
        extra += ["-s", f"DEDUP_DATABASE={args.database}"]
    if args.warc:
        extra += ["-s", f"DEDUP_WARC_DIR={Path(args.warc).resolve()}"]
    spider = ["warc", "-a", "files=" + ",".join(str(f.resolve()) for f in files)]
    stack = contextlib.ExitStack()
    with stop_on_signals(), stack:
        try:
            if args.engine == "spark":
                spider += ["-a", f"read={read_on_spark(args, files, stack)}"]
            private_folder(log_dir)
            redis_url, mongo_uri, services = resolve(data_dir=args.data_dir)
            try:
                print(f"deciding the HTML pages of {len(files)} archive file"
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
        except InputError as exc:  # Spark cannot start here: what to install
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
    print_summary(stats)
    for line in archive_lines(stats):
        print(line)
    stored_in = args.database or "simcrawl"
    print(f"\nmatch records (MongoDB, database \"{stored_in}\"). "
          + query_hint(stored_in, hint_options(stored_in, args.data_dir)))
    failed = stats.get("lost_urls") or stats.get("dedup/warc/bad_records") \
        or stats.get("dedup/warc/stopped_at_digest")
    return EXIT_FAILED if failed else EXIT_OK


def archive_lines(stats: dict[str, int]) -> list[str]:
    """What the summary says of the archive's records that were not pages decided, each
    named in the log (crawler/spiders/warc.py)."""
    def n(key: str) -> int:
        return int(stats.get(f"dedup/warc/{key}", 0) or 0)

    lines = [f"records not decided (not HTML pages): {n('other_records')}; files cut short "
             f"by a record that cannot be read: {n('bad_records')} (named in the log)"]
    if n("revisits") or n("revisits_unresolved"):
        lines.append(f"revisit records decided as the response they repeat: {n('revisits')}; "
                     f"repeating a response not in the files: {n('revisits_unresolved')} "
                     "(named in the log, not decided)")
    if n("digest_mismatch"):
        how = ("the run stopped at the first (DEDUP_WARC_DIGESTS=raise)"
               if n("stopped_at_digest") else "per DEDUP_WARC_DIGESTS")
        lines.append(f"records whose digest does not match their bytes: "
                     f"{n('digest_mismatch')}, {how} (named in the log)")
    if n("read_ahead"):
        lines.append(f"pages read ahead on Spark, not read again: {n('read_ahead')}")
    if n("undecodable"):
        lines.append(f"page records whose payload cannot be decoded: {n('undecodable')} "
                     "(skipped, named in the log)")
    return lines
