"""``scrapy crawl``, exiting non-zero when the crawl lost pages.

Scrapy's own ``crawl`` exits 1 only when the spider cannot start. simcrawl's version
also exits 1 when pages could not be decided or stored (Redis or MongoDB stayed
unreachable past ``DEDUP_RETRY_SECONDS``): the log and ``DEDUP_SUMMARY_FILE`` name them,
and the next crawl fetches them again.
"""

from __future__ import annotations

import argparse
from typing import Any

from scrapy.commands.crawl import Command as ScrapyCrawl
from scrapy.exceptions import UsageError

#: Finish reasons that mean the crawl stopped on a fault, not because it was done.
FAULTS = ("service_unavailable", "store_unavailable")


class Command(ScrapyCrawl):
    """``scrapy crawl SPIDER``; exit status 1 when pages were lost."""

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if len(args) != 1:
            raise UsageError("give one spider name: scrapy crawl site -a start_urls=URL")
        assert self.crawler_process
        crawler = self._create_crawler(args[0])
        self.crawler_process.crawl(crawler, **opts.spargs)
        self.crawler_process.start()
        if self.crawler_process.bootstrap_failed or lost_pages(crawler):
            self.exitcode = 1


def lost_pages(crawler: Any) -> bool:
    """Whether the crawl lost pages or stopped on a fault."""
    stats = crawler.stats
    if stats is None:
        return False
    lost = sum(v for k, v in stats.get_stats().items() if k.startswith("dedup/lost/"))
    return bool(lost) or stats.get_value("finish_reason") in FAULTS
