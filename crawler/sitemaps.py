"""The pages a site lists in its sitemaps (``simcrawl crawl --sitemaps``,
``SIMCRAWL_SITEMAPS``), read as Scrapy's ``SitemapSpider`` reads them.

A page no link reaches (an old article off every index page) is found only through the
site's sitemap. For each host of the start URLs the crawl reads its robots.txt's
``Sitemap:`` lines (RFC 9309 section 2.3.5), or ``/sitemap.xml`` when there are none; a
sitemap index names further sitemaps, read in turn (:data:`NESTING` levels at most, each
sitemap once). Scrapy parses them (:class:`scrapy.utils.sitemap.Sitemap`: no entities
resolved, a broken file read as far as it goes) and ungzips ``.xml.gz`` files within the
download size cap. The listed pages are requested as start URLs are (depth 0), after the
start URLs themselves, within the allowed domains and the URL patterns
(:class:`crawler.scope.UrlPatterns`).

This module reads; :meth:`crawler.spiders.site.SiteSpider.start` fetches.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

#: Levels of sitemap indexes followed below the first sitemap (the protocol allows one;
#: a site that nests deeper, or loops, is read this far).
NESTING = 3


def origins(urls: Iterable[str]) -> list[str]:
    """The scheme and host (with port) of each URL, once each, in their order."""
    seen: dict[str, None] = {}
    for url in urls:
        parts = urlsplit(url)
        seen.setdefault(f"{parts.scheme}://{parts.netloc}", None)
    return list(seen)


def sitemaps_in_robots(body: bytes, robots_url: str) -> list[str]:
    """The sitemap URLs a robots.txt names (``Sitemap:`` lines, relative ones resolved)."""
    from scrapy.utils.sitemap import sitemap_urls_from_robots

    return list(dict.fromkeys(sitemap_urls_from_robots(body, base_url=robots_url)))


def sitemap_body(body: bytes, max_size: int) -> bytes | None:
    """A sitemap's XML: the body, ungzipped when it is a gzip file (at most ``max_size``
    bytes after it, 0: no cap). ``None``: the body grows past the cap, or is a broken
    gzip file."""
    from scrapy.utils.gz import gunzip

    if body[:2] != b"\x1f\x8b":
        return body
    try:
        return gunzip(body, max_size=max_size)
    except ValueError:  # past the cap (_DecompressionMaxSizeExceeded is a ValueError)
        return None
    except (OSError, EOFError, zlib.error):  # not a whole gzip file after all
        return None


@dataclass
class Listing:
    """What one sitemap file lists: pages (a ``urlset``) or further sitemaps (a
    ``sitemapindex``); ``kind`` is ``"urlset"``, ``"sitemapindex"`` or what else its root
    element was (``""``: not XML)."""

    kind: str
    pages: list[str]
    sitemaps: list[str]


def read_sitemap(xml: bytes) -> Listing:
    """The ``<loc>`` of each entry of a sitemap or sitemap index."""
    from lxml.etree import XMLSyntaxError
    from scrapy.utils.sitemap import Sitemap

    try:
        sitemap = Sitemap(xml)
        entries = [e["loc"] for e in sitemap if e.get("loc")]
    except (XMLSyntaxError, StopIteration, ValueError):
        return Listing("", [], [])
    if sitemap.type == "sitemapindex":
        return Listing(sitemap.type, [], entries)
    if sitemap.type == "urlset":
        return Listing(sitemap.type, entries, [])
    return Listing(sitemap.type or "", [], [])
