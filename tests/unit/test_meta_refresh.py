"""The meta-refresh redirect (crawler.middlewares.meta_refresh.MetaRefresh) decides as Scrapy's does on
every page, reading only the start of the pages that have no refresh."""

from __future__ import annotations

import pytest
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware
from scrapy.http import HtmlResponse, Request
from scrapy.utils.test import get_crawler

from crawler.middlewares.meta_refresh import REFRESH_BYTES, MetaRefresh

FILLER = "<p>" + "The harbour wall reopened on Monday after the storm. " * 40 + "</p>"
REFRESH = '<meta http-equiv="refresh" content="0; url=/moved">'


def page(head: str, body: str = FILLER * 20, encoding: str = "utf-8") -> HtmlResponse:
    html = f"<html><head><title>A page</title>{head}</head><body>{body}</body></html>"
    return HtmlResponse("http://site.example/a", body=html.encode(encoding),
                        headers={"Content-Type": f"text/html; charset={encoding}"},
                        request=Request("http://site.example/a"))


def outcome(middleware, response: HtmlResponse):  # type: ignore[no-untyped-def]
    got = middleware.process_response(response.request, response)
    return ("redirect", got.url) if isinstance(got, Request) else ("kept", got is response)


PAGES = {
    "no refresh": page(""),
    "a refresh": page(REFRESH),
    "written with a character reference": page(REFRESH.replace("refresh", "&#114;efresh")),
    "in capitals, content first": page('<META CONTENT="1;URL=/moved" HTTP-EQUIV="Refresh">'),
    "in a script, which Scrapy ignores": page(f"<script>'{REFRESH}'</script>"),
    "past the characters Scrapy reads": page("", FILLER * 3 + REFRESH + FILLER * 20),
    "in UTF-16": page(REFRESH, encoding="utf-16"),
    "after wide characters": page("", "😀" * 5000 + REFRESH + FILLER * 20),
    "a small page": page(REFRESH, ""),
    "a small page without": page("", ""),
    "a refresh too slow to follow": page(REFRESH.replace("0;", "999;")),
}


@pytest.mark.parametrize("name", list(PAGES))
def test_the_redirect_is_scrapys_on_every_page(name: str) -> None:
    ours, scrapys = made(MetaRefresh), made(MetaRefreshMiddleware)
    assert outcome(ours, PAGES[name]) == outcome(scrapys, page_copy(PAGES[name]))


def made(cls):  # type: ignore[no-untyped-def]
    return cls.from_crawler(get_crawler())


def page_copy(response: HtmlResponse) -> HtmlResponse:
    return response.replace(request=response.request)


def test_the_pages_without_a_refresh_are_not_decoded_whole() -> None:
    response = page("")
    assert len(response.body) > REFRESH_BYTES
    assert outcome(made(MetaRefresh), response) == ("kept", True)
    assert response._cached_ubody is None  # Scrapy's decodes every page whole
    assert outcome(made(MetaRefresh), page(REFRESH)) == ("redirect",
                                                               "http://site.example/moved")
