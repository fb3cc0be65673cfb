"""The floor a Scrapy crawl process cannot go below: a bare spider on Scrapy's default
settings that only follows links (Scrapy's link extractor) and yields nothing else. The
crawl benchmarks run it on the same site as simcrawl, as the named peer of the crawl
process's CPU per page.

    scrapy runspider bench/bare_spider.py -a start=http://127.0.0.1:8080/ -a out=stats.json
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, ClassVar
from urllib.parse import urlsplit

import scrapy
from scrapy.linkextractors import LinkExtractor


class BareSpider(scrapy.Spider):
    """Follow every link on the start URL's host (loopback ports included)."""

    name = "bare"
    custom_settings: ClassVar[dict[str, Any]] = {
        "AUTOTHROTTLE_ENABLED": False, "CONCURRENT_REQUESTS": 32,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 32, "DEPTH_LIMIT": 5, "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False}

    def __init__(self, start: str, out: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [start]
        self.out = out
        self.host = urlsplit(start).hostname
        self.links = LinkExtractor()

    def parse(self, response: Any, **kwargs: Any) -> Iterator[scrapy.Request]:
        if not isinstance(response, scrapy.http.HtmlResponse):
            return
        for link in self.links.extract_links(response):
            if urlsplit(link.url).hostname == self.host:
                yield scrapy.Request(link.url, callback=self.parse)

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats.get_stats() if self.crawler.stats else {}
        with open(self.out, "w", encoding="utf-8") as fh:
            json.dump({k: v for k, v in stats.items() if isinstance(v, (int, float))}, fh)
