"""Failed requests settled in the frontier (a downloader middleware)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.exceptions import NotConfigured

from crawler.frontier import frontier_of
from crawler.state import CrawlState
from crawler.stopping import PutBack
from crawler.wiring import parts_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class SettleFailures:
    """Settle in the shared frontier a request whose download failed for good (a network
    error after the retries, a request refused by robots.txt or another middleware), for
    any spider: the request then has no response to carry its receipt. A downloader
    middleware, first in ``DOWNLOADER_MIDDLEWARES`` so its ``process_exception`` runs
    last, after the retry middleware has given up; active with
    ``SIMCRAWL_FRONTIER=redis``."""

    def __init__(self, state: CrawlState) -> None:
        self.state = state

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SettleFailures:
        if frontier_of(crawler.settings) != "redis":
            raise NotConfigured("SIMCRAWL_FRONTIER is memory: nothing is in flight")
        return cls(parts_of(crawler).state)

    def process_exception(self, request: scrapy.Request, exception: Exception,
                          spider: Any = None) -> None:
        if not isinstance(exception, PutBack):  # that one stays in flight: recovered
            self.state.settle_request(request)
