"""``scrapy crawl``, with clear start-up errors and exit codes that say whether the
record is complete.

- A crawl that cannot start says why in one sentence on stderr (and in the log), with
  the traceback only at DEBUG: exit status 2 for a bad setting or spider argument
  (``ValueError``), 3 for a server that cannot be reached, 1 for anything else (another
  crawl running on the namespace, an index built with other settings).
- A crawl that lost pages (Redis or MongoDB stayed unreachable past
  ``DEDUP_RETRY_SECONDS``) exits 1: the log and ``DEDUP_SUMMARY_FILE`` name them, and
  the next crawl fetches them again.
- A crawl forced out before it closed (a second Ctrl-C or SIGTERM: Scrapy's "forcing
  unclean shutdown") exits 130, never 0; one signal is a clean stop (exit 0, resumable).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import sys
from typing import TYPE_CHECKING

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError

from dedup.config import DedupConfig
from dedup.errors import EXIT_INTERRUPTED
from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: Finish reasons that mean the crawl stopped on a fault, not because it was done.
FAULTS = ("service_unavailable", "store_unavailable", "decision_failed", "disk_full")



class Command(ScrapyCrawl):
    """``scrapy crawl SPIDER``; see the module docstring for its errors and exit codes."""

    def process_options(self, args: list[str], opts: argparse.Namespace) -> None:
        super().process_options(args, opts)
        assert self.settings is not None
        from crawler.scrapy_settings import bad_values

        # Scrapy's own settings, read as Scrapy reads them, before anything starts (Scrapy
        # would fail where a component reads one, naming no setting)
        bad = bad_values((name, self.settings.get(name)) for name in self.settings
                         if self.settings.getpriority(name) != 0)
        if bad:  # one line, as every start error (report_start_failure), and exit 2
            print(f"error: {'; '.join(bad)}", file=sys.stderr)
            raise SystemExit(2)
        try:
            threshold = value("SIMCRAWL_GC_THRESHOLD", self.settings.get)
        except ValueError as exc:
            raise UsageError(str(exc), print_help=False) from None
        if threshold > 0:
            gc.set_threshold(threshold, *gc.get_threshold()[1:])
        # the extraction workers' fork server imports the reading while Scrapy builds the
        # crawl (a bad setting is said when the crawl opens, as ever)
        try:  # through the registry, validated (-1 = one per core)
            workers = DedupConfig.from_settings(self.settings.get).extract_workers
        except ValueError:
            return
        from crawler.extraction import start_fork_server

        start_fork_server(workers)

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one spider name: scrapy crawl site -a start_urls=URL")
        assert self.crawler_process
        crawler = self._create_crawler(args[0])
        failures: list[BaseException] = []
        started = self.crawler_process.crawl(crawler, **opts.spargs)
        if isinstance(started, asyncio.Future):
            started.add_done_callback(lambda task: _retrieve(task, failures))
        else:  # a Twisted Deferred (Scrapy's non-asyncio crawler process)
            started.addErrback(  # type: ignore[attr-defined]
                lambda failure: failures.append(failure.value))
        self.crawler_process.start()
        close_unopened(crawler)
        if failures:
            self.exitcode = report_start_failure(failures[0])
        elif self.crawler_process.bootstrap_failed or lost_pages(crawler):
            self.exitcode = 1
        elif forced_out(crawler):
            log.error("the crawl was forced out before it closed: its last pages may not "
                      "be stored; crawl again to complete the record")
            self.exitcode = EXIT_INTERRUPTED


def _retrieve(task: asyncio.Future, failures: list[BaseException]) -> None:
    # retrieving the exception keeps asyncio from printing "Task exception was never
    # retrieved" with the whole traceback
    if not task.cancelled() and task.exception() is not None:
        failures.append(task.exception())  # type: ignore[arg-type]


def close_unopened(crawler: Crawler) -> None:
    """Close the crawl's parts when they were built but the crawl never ran its engine
    (a component after them failed to build, a bad setting of its): their extraction
    workers would keep the process from exiting, and a worker still starting when the
    process exits prints a traceback (its semaphores gone)."""
    from crawler.wiring import built_parts

    parts = built_parts(crawler)
    if parts is not None:
        parts.close()  # closing twice is harmless: each part is closed once


def report_start_failure(exc: BaseException) -> int:
    """Say in one line why the crawl could not start; return the exit status."""
    from dedup.errors import ServiceUnavailable

    log.debug("the crawl could not start", exc_info=exc)
    message = str(exc).strip() or type(exc).__name__
    log.error("the crawl could not start: %s", message)
    print(f"error: {message}", file=sys.stderr)
    if isinstance(exc, ServiceUnavailable):
        return 3
    if isinstance(exc, ValueError):
        return 2
    return 1


def forced_out(crawler: Crawler) -> bool:
    """Whether the crawl opened but never closed cleanly (its storage pipeline did not
    finish: a forced shutdown)."""
    from crawler.wiring import built_parts

    if crawler.stats is None or crawler.stats.get_value("start_time") is None:
        return False  # it never opened
    parts = built_parts(crawler)
    return parts is not None and not parts.state.closed_cleanly


def lost_pages(crawler: Crawler) -> bool:
    """Whether the crawl lost pages or stopped on a fault."""
    stats = crawler.stats
    if stats is None:
        return False
    lost = sum(v for k, v in stats.get_stats().items() if k.startswith("dedup/lost/"))
    return bool(lost) or stats.get_value("finish_reason") in FAULTS
