"""robots.txt as RFC 9309 reads it (a downloader middleware)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler
from twisted.internet.defer import Deferred

from crawler.skips import error_reason
from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


class RobotsTxt(RobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, with RFC 9309's rule for a robots.txt that cannot
    be had (§2.3.1.3-4): a server error (5xx, and 429 as search engines treat it) or a
    network error means *complete disallow*, never "allow all" as Scrapy assumes.

    The host's requests wait while its robots.txt is asked for again
    ``SIMCRAWL_ROBOTS_RETRIES`` times (default 3; Scrapy's retry middleware already tried
    each time), ``SIMCRAWL_ROBOTS_RETRY_SECONDS`` apart (default 1, doubling). If it
    still cannot be had, none of the host's pages is requested: each is skipped as
    ``robots_txt`` and the host is named once in the log, in ``dedup/robots/unreachable``
    (hosts) and ``dedup/robots/error/<why>`` in the stats. A 4xx other than 429 means
    there are no rules (allow all), as RFC 9309 says.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.retries = value("SIMCRAWL_ROBOTS_RETRIES", crawler.settings.get)
        self.delay = value("SIMCRAWL_ROBOTS_RETRY_SECONDS", crawler.settings.get)
        self._tries: dict[str, int] = {}
        self._scheme: dict[str, str] = {}

    async def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        parts = urlparse_cached(request)
        self._scheme.setdefault(parts.netloc, parts.scheme)
        await super().process_request(request)

    async def robot_parser(self, request: scrapy.Request) -> Any:
        """The host's parser, for every request that waited for it. Scrapy's hands it to
        the first waiter only: each waits on a Future made from the one Deferred
        (``asFuture``), whose callback returns None, so every later waiter got None,
        "allow all", and a disallowed page among them was requested. Once the Deferred
        has fired the parser is in ``_parsers``: read it from there."""
        parser = await super().robot_parser(request)
        settled = self._parsers.get(urlparse_cached(request).netloc, parser)
        return parser if isinstance(settled, Deferred) else settled

    async def _parse_robots(self, response: Any, netloc: str, request: scrapy.Request
                            ) -> None:
        if response.status >= 500 or response.status == 429:
            self._robots_error(RobotsUnavailable(response.status), netloc)
            return
        await super()._parse_robots(response, netloc, request)

    def _robots_error(self, exc: Exception, netloc: str) -> None:
        # A robots.txt request refused before it was sent (IgnoreRequest: a forbidden
        # port, another middleware's rule) is no answer either: Scrapy allows the whole
        # host then, which let a disallowed page through; here it disallows it, at once
        # (asking again would be refused again).
        refused = isinstance(exc, IgnoreRequest)
        tries = self._tries[netloc] = self._tries.get(netloc, 0) + 1
        if not refused and tries <= self.retries and self.crawler.engine \
                and self.crawler.engine.spider:
            wait = self.delay * 2 ** (tries - 1)
            log.warning("robots.txt of %s could not be had (%s): its pages wait; asking "
                        "again in %.1f s (%d of %d)", netloc, exc, wait, tries, self.retries)
            from twisted.internet import reactor
            from twisted.internet.task import deferLater

            deferLater(reactor, wait, lambda: deferred_from_coro(self._again(netloc)))
            return
        if refused:
            log.warning("robots.txt of %s was refused before it was asked for (%s): none "
                        "of its pages is requested", netloc, exc)
        else:
            log.warning("robots.txt of %s could not be had after %d tries (%s): none of "
                        "its pages is requested (RFC 9309: an unreachable robots.txt "
                        "disallows all)", netloc, tries, exc)
        self._stats.inc_value("dedup/robots/unreachable")
        name = exc.name if isinstance(exc, RobotsUnavailable) else error_reason(exc)
        self._stats.inc_value(f"dedup/robots/error/{name}")
        waiting = self._parsers[netloc]
        parser = build_from_crawler(self._parserimpl, self.crawler,
                                    b"User-agent: *\nDisallow: /\n")
        self._parsers[netloc] = parser
        if isinstance(waiting, Deferred):
            waiting.callback(parser)

    async def _again(self, netloc: str) -> None:
        url = f"{self._scheme.get(netloc, 'http')}://{netloc}/robots.txt"
        again = scrapy.Request(url, priority=self.DOWNLOAD_PRIORITY, callback=NO_CALLBACK,
                               meta={"dont_obey_robotstxt": True}, dont_filter=True)
        try:
            response = await self.crawler.engine.download_async(again)
            self._stats.inc_value("robotstxt/request_count")
            await self._parse_robots(response, netloc, again)
        except Exception as exc:  # noqa: BLE001 - any failure is "could not be had"
            self._robots_error(exc, netloc)


class RobotsUnavailable(Exception):
    """A robots.txt answered with a server error (RFC 9309: unreachable)."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.name = f"http_{status}"


#: The characters at a page's start that Scrapy's meta-refresh check reads
#: (``scrapy.utils.response.get_meta_refresh``), and the bytes that hold them: at most
#: four a character in the encodings a page is decoded from.
