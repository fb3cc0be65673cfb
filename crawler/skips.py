"""Why a page or a request is skipped: a body not read for its text (not HTML, binary,
too big), a download's network failure, and the signal of a page read and not decided."""

from __future__ import annotations

import re

from crawler.items import PageItem

#: Bytes of a body sniffed for binary content.
_SNIFF = 2048


#: Scrapy signal the dedup middleware sends for a page it read and did not decide (a
#: skip: ``empty_text``, ``template_only``, ``not_html`` ...), with ``response`` and
#: ``reason``: the archive's spider keeps such a page in the deduplicated archive, since
#: it copies nothing (crawler/spiders/warc.py).
page_skipped = object()


#: A download's network failure -> its skip reason (``dedup/skipped/<reason>``): what
#: failed, in the snake_case of every other reason, not an exception's class name.
NETWORK_REASONS = {
    "DNSLookupError": "no_such_host",
    "ConnectionRefusedError": "connection_refused",
    "DownloadConnectionRefusedError": "connection_refused",
    "TCPTimedOutError": "timed_out", "TimeoutError": "timed_out",
    "DownloadTimeoutError": "timed_out", "ConnectError": "connect_failed",
    "ConnectionLost": "connection_lost", "ResponseNeverReceived": "no_response",
    "NoRouteError": "no_route_to_host",
}


#: The skip reasons that are a network's failure.
NETWORK_FAILURES = frozenset(NETWORK_REASONS.values())


def error_reason(exc: BaseException) -> str:
    """The skip reason of a request that failed with ``exc``: its network failure
    (:data:`NETWORK_REASONS`), else the exception's name in snake_case
    (``DownloadFailedError`` -> ``download_failed_error``)."""
    name = type(exc).__name__
    return NETWORK_REASONS.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def skip_reason(item: PageItem, text_response: bool, max_body: int) -> str | None:
    """Why a page is not read for its text: not HTML, a binary body, or a body larger
    than ``max_body`` bytes (``DEDUP_MAX_BODY``); ``None``: it is read."""
    if not text_response:
        return "not_html"
    if len(item.body) > max_body:
        return "too_big"
    head = item.body[:_SNIFF]
    if b"\x00" in head or head.startswith((b"\x89PNG", b"%PDF", b"GIF8", b"\xff\xd8\xff")):
        return "binary"
    return None
