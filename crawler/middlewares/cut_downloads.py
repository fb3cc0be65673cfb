"""A download the stop cut put back in the frontier, not failed (a downloader
middleware)."""

from __future__ import annotations

from typing import Any

from crawler.extensions import CUT


class CutDownloads:
    """The failure of a download :class:`crawler.extensions.put_back.PutBackOnStop` cut (Scrapy's
    ``StopDownload``) is a :class:`crawler.stopping.PutBack`: an ``IgnoreRequest``, which no
    spider's errback takes for a page that failed, and Scrapy logs no error for. A
    downloader middleware, last in ``DOWNLOADER_MIDDLEWARES``, so its
    ``process_exception`` runs first."""

    def process_exception(self, request: Any, exception: Exception,
                          spider: Any = None) -> None:
        from scrapy.exceptions import StopDownload

        from crawler.stopping import PutBack

        if isinstance(exception, StopDownload) and request.meta.get(CUT):
            raise PutBack(f"put back: {request.url} (its download cut by the stop)")
