"""A downloader middleware for the robots.txt tests: it refuses (IgnoreRequest) every
robots.txt request before it is sent, as a forbidden port or another project's rule
would; the crawl must then disallow the host, not allow it."""

from __future__ import annotations

from typing import Any

from scrapy.exceptions import IgnoreRequest


class RefuseRobotsTxt:
    def process_request(self, request: Any, spider: Any = None) -> None:
        if request.url.endswith("/robots.txt"):
            raise IgnoreRequest(f"refused by a test rule: {request.url}")
