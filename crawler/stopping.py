"""Stopping a crawl: close its spider once, and the requests put back (not sent) when it
was asked to stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import IgnoreRequest

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def stop_crawl(crawler: Crawler, reason: str) -> None:
    """Close the spider (once; later calls join the first) with ``reason``."""
    from scrapy.utils.defer import deferred_from_coro

    engine = crawler.engine
    if engine is not None and engine.spider is not None:
        deferred_from_coro(engine.close_spider_async(reason=reason))


class PutBack(IgnoreRequest):
    """A request that waited in the downloader's queue (a download delay or AutoThrottle
    spacing a host's requests) when the crawl was asked to stop: put back, not sent
    (:class:`crawler.extensions.put_back.PutBackOnStop`). It is no skip and settles nothing: the
    memory frontier queues it again (a ``JOBDIR`` keeps it), the shared one recovers it
    from this process's requests in flight. An ``IgnoreRequest``: Scrapy logs no error
    for it, for any spider."""
