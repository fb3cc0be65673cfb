"""A request the URL rules predict to be a copy is not sent (a downloader
middleware; the rules: :mod:`crawler.rule_learning`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure

from crawler.state import CrawlState
from crawler.rule_learning import (
    HELD,
    META,
    NOT_SENT,
    PREDICTED,
    carry_of,
    not_downloaded,
    rule_texts,
    rules_parts,
)
from dedup.adapters.redis_url_rules import RedisUrlRules
from dedup.errors import ServiceUnavailable
from dedup.url_rules import host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


class UrlRuleGate:
    """Do not send a request the URL rules predict to be a copy (a downloader middleware;
    see the module docstring). Its response is an empty one made here, marked, which the
    dedup middleware turns into the copy's match record (as Scrapy's HTTP cache answers a
    request from its cache); it counts as a skip, ``dedup/skipped/url_rule``, or
    ``dedup/skipped/url_rule_held`` while its page is not decided. Redirects, retries,
    requests sent again and requests sent to check a rule pass."""

    def __init__(self, rules: RedisUrlRules, stats: Any, state: CrawlState,
                 crawler: Crawler | None = None) -> None:
        self.rules, self.stats, self.state, self.crawler = rules, stats, state, crawler
        self._failed_logged = False
        #: the links that came while a screen was out (URL, depth, what the request
        #: carries, its answer): screened together, next
        self._batch: list[tuple[str, int, str, Deferred]] = []
        self._screening = False
        self._looking: set[str] = set()  # hosts without a rule being read again

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlRuleGate:
        parts = rules_parts(crawler)
        return cls(parts.urlrules, crawler.stats, parts.state, crawler)  # type: ignore[arg-type]

    def _screen_next(self, _: Any = None) -> None:
        """Screen every link that came while the last screen was out, in one call (one
        round trip a host: a crawl at full speed pays for a screen once a batch, and one
        at a walk waits for nothing), then the links that come meanwhile."""
        batch, self._batch = self._batch, []
        self._screening = bool(batch)
        if not batch:
            return
        self.stats.inc_value("dedup/url_rules/screens")
        self.stats.inc_value("dedup/url_rules/screened", len(batch))
        screened = deferToThread(self.rules.screen,
                                 [(url, depth, carry) for url, depth, carry, _ in batch])

        def answer(held: list[Any]) -> None:
            for (*_, done), one in zip(batch, held):
                done.callback(one)

        def fail(failure: Any) -> None:
            for *_, done in batch:
                done.errback(failure)

        screened.addCallbacks(answer, fail)
        screened.addBoth(self._screen_next)

    def _look(self, host: str) -> None:
        """Read again the rules of a host that had none, in a worker thread, once at a
        time: the requests to it meanwhile are sent (waiting for the read, every
        request in flight stalled while the threads were busy: 9% of a crawl's pages a
        second on a site without rules)."""
        if host in self._looking:
            return
        self._looking.add(host)

        def done(result: Any) -> None:
            self._looking.discard(host)
            if isinstance(result, Failure):  # its requests go on being sent unscreened
                self.stats.inc_value("dedup/url_rules/errors")
                if not result.check(ServiceUnavailable):
                    log.error("reading the URL rules of %s failed: %s", host,
                              result.getTraceback())

        deferToThread(self.rules.look, [host]).addBoth(done)

    @staticmethod
    def _asks(request: scrapy.Request) -> bool:
        meta = request.meta
        return (request.method == "GET" and not request.dont_filter
                and request.callback is not NO_CALLBACK
                and request.url.startswith(("http://", "https://"))
                and not any(meta.get(k) for k in ("redirect_urls", "retry_times", META,
                                                  "dont_dedup", "dont_obey_robotstxt")))

    async def process_request(self, request: scrapy.Request, spider: Any = None
                              ) -> scrapy.http.Response | None:
        if not self.state.deciding or not self._asks(request) \
                or self.rules.unruled(request.url):
            return None
        if self.rules.unruled(request.url, lapsed=True):  # sent while its host is read
            self._look(host_of(request.url))
            return None
        done: Deferred = Deferred()
        self._batch.append((request.url, int(request.meta.get("depth", 0) or 0),
                            carry_of(request, getattr(self.crawler, "spider", None) or spider),
                            done))
        if not self._screening:
            self._screen_next()
        try:
            held = await maybe_deferred_to_future(done)
        except ServiceUnavailable as exc:
            self.stats.inc_value("dedup/url_rules/errors")
            if not self._failed_logged:
                self._failed_logged = True
                log.warning("URL rules could not be read (%s): requests are sent without "
                            "them (further failures counted in dedup/url_rules/errors)", exc)
            return None
        if held is None:
            return None
        if held.explore:
            self.stats.inc_value("dedup/url_rules/explored")
            request.meta[META] = {"claimant": held.claimant, "rules": rule_texts(held.rules)}
            return None
        request.meta[PREDICTED] = {"claimant": held.claimant,
                                   "rules": rule_texts(held.rules),
                                   "original_url": held.original_url,
                                   "original_id": held.original_id}
        if held.decided:
            self.stats.inc_value("dedup/url_rule")
        self.stats.inc_value(NOT_SENT if held.decided else HELD)
        log.debug("not requested: %s, predicted a copy of %s by %s", request.url,
                  held.original_url or f"{held.claimant} (not decided yet: held)",
                  ", ".join(map(str, held.rules)))
        return scrapy.http.Response(request.url, status=200, request=request,
                                    flags=["url_rule"])

    def process_response(self, request: scrapy.Request, response: scrapy.http.Response,
                         spider: Any = None) -> scrapy.http.Response:
        """A response made here (:meth:`process_request`) was never downloaded: Scrapy's
        downloader stats, which count every response the middlewares hand back, and its
        response count (``response_received_count``, "Crawled N pages") do not count it.
        Its request was never counted, as the stats middleware is after this one."""
        if request.meta.get(PREDICTED) is not None and "url_rule" in response.flags:
            for key, by in not_downloaded(response, self.crawler):
                self.stats.inc_value(key, -by)
        return response
