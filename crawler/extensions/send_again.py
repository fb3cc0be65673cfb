"""The requests the URL rules kept that must be sent after all (:class:`SendAgain`): those
of a rule dropped since, within seconds, and, when the crawl goes idle, those held for a
page that never got decided. A document is never lost to a rule (crawler/rule_learning.py,
the crawl's side of the rules)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from twisted.internet.threads import deferToThread

from crawler.rule_learning import RELEASE_SECONDS, SEND_SECONDS, request_again, rules_parts
from dedup.adapters.redis_url_rules import Link, RedisUrlRules
from dedup.errors import ServiceUnavailable

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


class SendAgain:
    """Request the links the URL rules kept that must be requested after all: those of a
    rule dropped since (every few seconds), and, when the crawl goes idle, those held for
    a page that never got decided. Counted in ``dedup/url_rules/resent``."""

    def __init__(self, crawler: Crawler, rules: RedisUrlRules) -> None:
        self.crawler, self.rules = crawler, rules
        self._loop: Any = None
        self._releasing = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SendAgain:
        ext = cls(crawler, rules_parts(crawler).urlrules)  # type: ignore[arg-type]
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    def spider_opened(self, spider: Any = None) -> None:
        from twisted.internet import task

        self._loop = task.LoopingCall(self._send_dropped)
        self._loop.start(SEND_SECONDS, now=False)

    def spider_closed(self, spider: Any = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()

    def _send_dropped(self) -> Any:
        def take() -> list[Link]:
            try:
                return self.rules.take_resend()
            except ServiceUnavailable as exc:
                log.debug("could not read links to send again: %s", exc)
                return []

        return deferToThread(take).addCallback(self._send)

    def spider_idle(self, spider: Any = None) -> None:
        """Links to send again are sent; links held for pages not decided are released a
        little later (the last pages' records, written within ``DEDUP_FLUSH_SECONDS``,
        decide most of them), and the crawl waits for that."""
        try:
            links = self.rules.take_resend()
            waiting = self.rules.waiting()
        except ServiceUnavailable as exc:
            log.warning("could not read held links at the crawl's end: %s", exc)
            return
        if links:
            self._send(links)
        if waiting and not self._releasing:
            from twisted.internet import reactor

            self._releasing = True
            reactor.callLater(RELEASE_SECONDS, self._release)
        if links or waiting:
            raise DontCloseSpider

    def _release(self) -> None:
        self._releasing = False
        try:
            links = self.rules.release()
        except ServiceUnavailable as exc:
            log.warning("could not release held links: %s", exc)
            return
        self._send(links)

    def _send(self, links: list[Link]) -> None:
        engine, spider = self.crawler.engine, self.crawler.spider
        if not links or engine is None or spider is None:
            return
        for url, depth, carry in links:
            try:
                request = request_again(url, depth, carry, spider)
            except (ValueError, KeyError, TypeError) as exc:  # a spider that changed since
                self.crawler.stats.inc_value("dedup/url_rules/errors")
                log.warning("%s is sent as the spider's plain request: what its request "
                            "carried cannot be read again (%s)", url, exc)
                request = request_again(url, depth, "", spider)
            engine.crawl(request)
        self.crawler.stats.inc_value("dedup/url_rules/resent", len(links))
        log.info("sending %d links the URL rules had kept (a rule dropped, or the page "
                 "they were held for never decided)", len(links))
