"""``simcrawl crawl [URL ...]`` (also ``simcrawl URL ...``, and ``simcrawl`` alone: the
demo): crawl the URLs on REDIS_URL / MONGO_URI or the embedded servers; the work is
:mod:`crawler.run`'s."""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from pathlib import Path

from crawler.run import (
    CrawlDidNotRun,
    bad_start_url,
    crawl,
    demo,
    hint_options,
    log_files,
    own_settings,
    print_summary,
    query_hint,
    stop_seconds,
    unreachable,
)

HELP = "crawl the URLs (no URL: the bundled demo site, compared with its known outcome)"


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


#: Crawl processes a core, at most (``--processes``). A process and its extraction
#: workers fill about two cores (docs/scaling.md), so past the cores more processes only
#: wait for each other; up to four a core is allowed, for a crawl that waits on slow hosts.
PROCESSES_PER_CORE = 4


def most_processes() -> int:
    """The most crawl processes ``--processes`` starts on this machine."""
    return PROCESSES_PER_CORE * (os.cpu_count() or 1)


def urls_of_file(name: str) -> tuple[list[str], list[str]]:
    """The start URLs a file lists (``-``: standard input) and a line for each that is
    not one (``FILE:LINE: text (why)``).

    Raises:
        ValueError: the file cannot be read (it says why).
    """
    from crawler.spiders.site import start_urls_in

    try:
        text = sys.stdin.read() if name == "-" else Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}"
                         ) from None
    urls, bad = [], []
    for n, line in enumerate(text.splitlines(), 1):
        for url in start_urls_in([line]):
            why = bad_start_url(url)
            if why:
                bad.append(f"{name}:{n}: {url} ({why})")
            else:
                urls.append(url)
    return urls, bad


def stopped_how(stats: dict) -> str:
    """How an interrupted crawl stopped, for its last line: what it did not reach and how
    to go on."""
    from dedup.progress_line import counted

    forced = stats.get("forced", 0)
    said = "the pages it had not reached were not fetched (the summary above is what it did)"
    if forced:
        said += (f"; {counted(forced, 'crawl process', 'crawl processes')} did not stop "
                 f"within SIMCRAWL_STOP_SECONDS and {'was' if forced == 1 else 'were'} "
                 "forced out (what it decided is stored or taken back, never half)")
    return said + ". Crawl again to go on (with -s JOBDIR=DIR, from where it stopped)."


def services_left(services: object) -> str:
    """What became of the embedded servers a stopped command left: stopped (it was their
    last user) or still up for the other processes using them."""
    if not getattr(services, "left_to", None):  # EmbeddedServices.stop: no one else
        return "the embedded services are stopped"
    return ("the embedded services stay up: other processes use them (simcrawl services "
            "stop stops them)")


def main(argv: list[str] | None = None, prog: str = "simcrawl crawl") -> int:
    """The main job (``./simcrawl``, ``simcrawl crawl``); returns the exit status."""
    from dedup.errors import EXIT_STATUSES

    parser = argparse.ArgumentParser(
        prog=prog, description="Crawl with inline near-duplicate dropping. With no "
        "URL: crawl the bundled demo site and compare the result with its known outcome. "
        "Exit status: " + "; ".join(f"{c} {w}" for c, w in EXIT_STATUSES) + ".",
        epilog="Other commands: report, export, web, register, services, scan, ... "
        "('simcrawl help' lists them; 'simcrawl VERB --help' shows each one's options).")
    parser.add_argument("urls", nargs="*", help="start URLs (http or https)")
    parser.add_argument("--depth", type=positive, default=None,
                        help="depth limit (default 5)")
    parser.add_argument("--processes", type=positive, default=1,
                        help="crawl processes sharing one crawl through the frontier in Redis "
                        "(default 1); the services are started once for all")
    parser.add_argument("--data-dir", default=None,
                        help="embedded services' data (default $SIMCRAWL_DATA or ./simcrawl-data)")
    parser.add_argument("--database", default=None,
                        help="the MongoDB database the crawl stores into (default simcrawl; "
                        "the demo: simcrawl_demo); the same as -s DEDUP_DATABASE=NAME")
    parser.add_argument("--warc", default=None, metavar="DIR",
                        help="also write the crawl as WARC files in DIR, with a CDXJ index "
                        "beside each (the same as -s DEDUP_WARC_DIR=DIR; docs/warc.md)")
    parser.add_argument("-i", "--input-file", metavar="FILE", default=None,
                        help="also start from the URLs in FILE, one a line (blank lines and "
                        "# comments skipped; - reads standard input), as wget -i")
    parser.add_argument("--include", action="append", default=[], metavar="REGEX",
                        help="follow only links whose URL this Python regular expression "
                        "finds (repeatable: any one of them; start URLs are always fetched)")
    parser.add_argument("--exclude", action="append", default=[], metavar="REGEX",
                        help="never follow a link whose URL this regular expression finds "
                        "(repeatable; wins over --include)")
    parser.add_argument("--sitemaps", action="store_true",
                        help="also crawl the pages the start hosts' sitemaps list (the "
                        "robots.txt's Sitemap: lines, else /sitemap.xml), after the start "
                        "URLs")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        dest="settings", help="a Scrapy setting, as scrapy crawl takes it "
                        "(repeatable: -s DOWNLOAD_DELAY=1 -s DEDUP_MAX_DISTANCE=3)")
    args = parser.parse_args(argv)
    most = most_processes()
    if args.processes > most:
        parser.error(f"--processes {args.processes} is more than this machine can run: it has "
                     f"{os.cpu_count() or 1} cores, and each crawl process needs about one "
                     f"for itself and one for its extraction workers; at most {most} here "
                     "(docs/scaling.md: more machines, not more processes)")
    bad = [f"{u} ({why})" for u in args.urls if (why := bad_start_url(u))]
    if bad:
        parser.error(f"not a start URL: {', '.join(bad)}")
    if args.input_file is not None:
        try:
            listed, bad = urls_of_file(args.input_file)
        except ValueError as exc:
            parser.error(str(exc))
        if bad:
            parser.error("not a start URL: " + ", ".join(bad[:5])
                         + (f" and {len(bad) - 5} more" if len(bad) > 5 else ""))
        if not listed:
            parser.error(f"{args.input_file} lists no start URL")
        args.urls = list(dict.fromkeys([*args.urls, *listed]))
    if (args.include or args.exclude or args.sitemaps) and not args.urls:
        parser.error("--include, --exclude and --sitemaps are for a crawl of URLs; the demo "
                     "crawls its own site")
    from crawler.scope import UrlPatterns

    try:
        UrlPatterns(args.include, args.exclude)
    except ValueError as exc:
        parser.error(str(exc).replace("SIMCRAWL_INCLUDE", "--include")
                     .replace("SIMCRAWL_EXCLUDE", "--exclude"))
    for setting in args.settings:
        name, equals, _ = setting.partition("=")
        if not equals or not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
            parser.error(f"-s takes NAME=VALUE, a Scrapy setting in capitals: got {setting!r}")
        if not args.urls and name in ("DEDUP_DATABASE", "DEDUP_NAMESPACE"):
            parser.error(f"the demo crawls into its own database and namespace: {name} is "
                         "for a crawl of URLs")
    if args.database is not None and not args.urls:
        parser.error("the demo crawls into its own database (simcrawl_demo): --database is "
                     "for a crawl of URLs")

    from dedup.errors import (
        EXIT_FAILED,
        EXIT_INTERRUPTED,
        EXIT_OK,
        EXIT_USAGE,
        ServiceUnavailable,
        exit_status,
    )
    from dedup.adapters.servers.services import (
        DataDirError,
        data_folder,
        private_folder,
        resolve,
        stop_on_signals,
    )
    from dedup.config import unknown
    from dedup.setting_names import ENVIRONMENT, SETTING

    from crawler.scrapy_settings import bad_values, mistyped

    given = [s.partition("=")[::2] for s in args.settings]
    for line in unknown((name for name, _ in given), SETTING) \
            + mistyped(name for name, _ in given) + unknown(os.environ, ENVIRONMENT):
        print(f"warning: {line}", file=sys.stderr)
    bad = bad_values(given)  # the last value of each wins, as Scrapy takes them
    try:
        stop_seconds(dict(given).get)
    except ValueError as exc:
        bad.append(str(exc))
    if bad:  # before any service or process starts
        print(f"error: {'; '.join(bad)}", file=sys.stderr)
        return EXIT_USAGE
    log_dir = Path(data_folder(args.data_dir))
    extra = [] if args.depth is None else ["-s", f"DEPTH_LIMIT={args.depth}"]
    for setting in args.settings:
        extra += ["-s", setting]
    database = args.database or next(
        (v.split("=", 1)[1] for v in reversed(args.settings) if v.startswith("DEDUP_DATABASE=")),
        None)
    if args.database:
        extra += ["-s", f"DEDUP_DATABASE={args.database}"]
    if args.warc:
        extra += ["-s", f"DEDUP_WARC_DIR={Path(args.warc).resolve()}"]
    if args.include:
        extra += ["-s", f"SIMCRAWL_INCLUDE={json.dumps(args.include)}"]
    if args.exclude:
        extra += ["-s", f"SIMCRAWL_EXCLUDE={json.dumps(args.exclude)}"]
    if args.sitemaps:
        extra += ["-s", "SIMCRAWL_SITEMAPS=1"]
    services = None
    interrupted = False
    with stop_on_signals():  # SIGTERM / SIGHUP stop the crawl and the services too
        try:
            private_folder(log_dir)
            redis_url, mongo_uri, services = resolve(data_dir=args.data_dir)
            if args.urls:
                # a log a database: two crawls of two databases in one data folder
                # wrote one log, interleaved
                named = re.sub(r"[^\w.-]", "_", database or "simcrawl")
                own_log = log_dir / ("crawl.log" if named == "simcrawl" else f"crawl-{named}.log")
                log = Path(own_settings(extra)[1].get("LOG_FILE") or own_log)
                named_urls = ", ".join(args.urls) if len(args.urls) <= 3 else \
                    f"{len(args.urls):,} start URLs ({args.urls[0]}, ...)"
                print(f"crawling {named_urls} (log: "
                      f"{', '.join(map(str, log_files(log, args.processes)))}) ...")
                stats = crawl(args.urls, redis_url, mongo_uri, extra, own_log,
                              args.processes)
                print_summary(stats)
                why = unreachable(stats)
                if why:
                    print(f"error: {why}", file=sys.stderr)
                    return EXIT_FAILED
                stored_in = database or "simcrawl"
                print(f"\nmatch records (MongoDB, database \"{stored_in}\"). "
                      + query_hint(stored_in, hint_options(stored_in, args.data_dir)))
                if stats.get("failed_processes"):
                    print(f"error: {stats['failed_processes']} of {args.processes} crawl "
                          "processes ended without a summary (above); the totals are the "
                          "others'. Crawl again to finish their pages.", file=sys.stderr)
                    return EXIT_FAILED
                return EXIT_FAILED if stats.get("lost_urls") else EXIT_OK
            return demo(redis_url, mongo_uri, extra, log_dir, args.processes,
                        hint_options(data_dir=args.data_dir))
        except CrawlDidNotRun as exc:
            if not exc.said:  # a bad setting or an unreachable server said so already
                print(f"error: {exc}", file=sys.stderr)
            return exc.status
        except DataDirError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (ServiceUnavailable, ValueError) as exc:  # unreachable; a malformed URL
            print(f"error: {exc}", file=sys.stderr)
            return exit_status(exc)
        except KeyboardInterrupt as exc:
            interrupted = True
            stats = getattr(exc, "stats", None)  # crawler.run.CrawlInterrupted's
            if stats and stats.get("per_process"):  # what was done before the stop
                print_summary(stats)
            elif stats:  # none of them left a summary: their last counters
                print(f"  what was done: {stats.get('last_counters')}")
            print("interrupted" + (f": {stopped_how(stats)}" if stats else ""),
                  file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            if services is not None:
                services.stop()
                if interrupted:  # say what became of them: they may serve others still
                    print(services_left(services), file=sys.stderr)


