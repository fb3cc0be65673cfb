"""The meta-refresh redirect, read from a page's beginning (a downloader middleware)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from w3lib.encoding import html_to_unicode
from w3lib.html import get_meta_refresh


if TYPE_CHECKING:
    from scrapy.crawler import Crawler


REFRESH_CHARS = 4096
REFRESH_BYTES = 4 * REFRESH_CHARS


class MetaRefresh(MetaRefreshMiddleware):
    """Scrapy's meta-refresh redirect, asked only of pages that have a refresh where it
    looks. Scrapy's reads the first 4,096 characters of a page for a ``<meta
    http-equiv="refresh">`` (w3lib's ``get_meta_refresh``), but decodes the whole page to
    have them: about 0.2 ms of the crawl process a real page of 100 KiB, for the one or
    two pages in a thousand that have one. This one decodes only the page's first 16 KiB
    as Scrapy decodes the page (``html_to_unicode`` with the response's encoding) and asks
    w3lib's same reader of the same 4,096 characters: a page without a refresh there
    passes on unchanged, as Scrapy's middleware would pass it; a page with one, a page of
    16 KiB or less, or one whose first 16 KiB do not decode to more than those characters
    goes to Scrapy's middleware, which decides as it always does."""

    def __init__(self, settings: Any) -> None:
        super().__init__(settings)
        self.ignore_tags: list[str] = settings.getlist("METAREFRESH_IGNORE_TAGS")

    def process_response(self, request: scrapy.Request, response: scrapy.http.Response,
                         spider: Any = None) -> scrapy.Request | scrapy.http.Response:
        if isinstance(response, scrapy.http.HtmlResponse) \
                and not self.may_refresh(response):
            return response
        return super().process_response(request, response)  # type: ignore[no-any-return]

    def may_refresh(self, response: scrapy.http.HtmlResponse) -> bool:
        """Whether the characters Scrapy reads for a refresh may hold one: ``False`` only
        when they are known and do not."""
        body = response.body
        if len(body) <= REFRESH_BYTES:
            return True
        head = html_to_unicode(f"charset={response.encoding}", body[:REFRESH_BYTES])[1]
        # the last character may be one cut in two: the ones before it are the page's
        if len(head) <= REFRESH_CHARS + 1:
            return True
        return get_meta_refresh(head[:REFRESH_CHARS], response.url, response.encoding,
                                ignore_tags=self.ignore_tags) != (None, None)
