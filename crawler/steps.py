"""Steps that the dedup middleware and the storage pipeline both take with a page or
the crawl: sniff a body, extract and fingerprint a page off the reactor thread, wait,
stop the crawl."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.utils.defer import maybe_deferred_to_future

from crawler.extraction import Extractor
from crawler.items import PageItem

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: Bytes of a body sniffed for binary content.
_SNIFF = 2048


def stop_crawl(crawler: Crawler, reason: str) -> None:
    """Close the spider (once; later calls join the first) with ``reason``."""
    from scrapy.utils.defer import deferred_from_coro

    engine = crawler.engine
    if engine is not None and engine.spider is not None:
        deferred_from_coro(engine.close_spider_async(reason=reason))


async def sleep(seconds: float) -> None:
    """Wait without blocking the reactor."""
    from twisted.internet import reactor, task

    await maybe_deferred_to_future(task.deferLater(reactor, seconds, lambda: None))


async def fingerprint_item(item: PageItem, extractor: Extractor) -> str | None:
    """Extract the item's main text and fingerprint it (in place, off the reactor thread).

    Returns:
        ``None``, or the reason to skip the page: ``"empty_text"`` (no text at all) or
        ``"extract_failed"`` (the extractor raised or its worker died; logged).
    """
    try:
        page = await maybe_deferred_to_future(extractor.submit(item.body, item.url,
                                                               item.encoding))
    except Exception as exc:  # noqa: BLE001  (one bad page must not stop the crawl)
        log.error("extracting %s failed: %s: %s", item.url, type(exc).__name__, exc)
        return "extract_failed"
    item.take_reading(page)
    return None if page.tokens > 0 else "empty_text"


def skip_reason(item: PageItem, text_response: bool) -> str | None:
    if not text_response:
        return "not_html"
    head = item.body[:_SNIFF]
    if b"\x00" in head or head.startswith((b"\x89PNG", b"%PDF", b"GIF8", b"\xff\xd8\xff")):
        return "binary"
    return None
