"""The generic site spider: start URLs, allowed domains, Scrapy's link extractor."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import DownloadCancelledError, IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.http.request import NO_CALLBACK
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.python.failure import Failure

from crawler.extraction import page_language, page_links
from crawler.items import page_item_of
from crawler.scope import UrlPatterns
from crawler.state import CrawlState
from crawler.skips import error_reason
from crawler.stopping import PutBack
from dedup.setting_names import value


#: Link URLs a spider remembers having requested (:meth:`SiteSpider.follow`), at most.
REQUESTED_CACHE = 500_000

#: Scheme-and-authority prefixes whose scope a spider remembers (:meth:`SiteSpider._allowed`).
SCOPE_CACHE = 10_000

#: A URL's scheme and authority (``urlsplit`` reads its host from these alone).
_ORIGIN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*")


class SiteSpider(scrapy.Spider):
    """Crawl from start URLs, following links within the allowed domains.

    Arguments (``scrapy crawl site -a name=value``):
        start_urls: comma-separated URLs (or ``START_URLS`` in the environment).
        start_file: a file with one URL per line (blank lines and ``#`` comments skipped).
        allowed_domains: comma-separated domains (default: the start URLs' hosts).

    Settings of its own: ``SIMCRAWL_INCLUDE`` / ``SIMCRAWL_EXCLUDE``, the URL patterns a
    link must match / must not match to be requested (:mod:`crawler.scope`), and
    ``SIMCRAWL_SITEMAPS``, to request the pages the start hosts' sitemaps list as well
    (:mod:`crawler.sitemaps`).

    The depth limit is Scrapy's ``DEPTH_LIMIT`` setting; robots.txt, throttling and the
    body-size cap come from the project settings. ``SIMCRAWL_MAX_OUTLINKS`` (default
    10,000, 0 = no cap: index and sitemap pages can list thousands; the cap bounds what
    one hostile page can queue) caps the links followed from one page (counted in
    ``dedup/outlinks_capped/pages`` and ``.../links``).
    """

    name = "site"
    #: It yields each page as a PageItem, decided by the dedup middleware and exported in
    #: the crawl's feed; the add-on's other spiders have their pages read for them. With
    #: the middleware on, it yields a page alone and the middleware builds the requests
    #: for its links (read in the extraction workers) with :meth:`follow`, only for pages
    #: that are not copies.
    yields_pages = True

    def __init__(self, start_urls: str | None = None, start_file: str | None = None,
                 allowed_domains: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        import os

        given = start_urls if start_urls or start_file else os.environ.get("START_URLS")
        urls = [u.strip() for u in (given or "").split(",") if u.strip()]
        if start_file:
            try:
                lines = Path(start_file).read_text(encoding="utf-8").splitlines()
            except OSError as exc:
                raise ValueError(f"cannot read start_file {start_file!r}: {exc}") from exc
            urls += start_urls_in(lines)
        bad = [u for u in urls if urlsplit(u).scheme not in ("http", "https")]
        if bad or not urls:
            raise ValueError(f"give http(s) start URLs (-a start_urls=... or START_URLS); got "
                             f"{bad or 'none'}")
        self.start_urls = urls
        if allowed_domains:
            self.allowed_domains = [d.strip() for d in allowed_domains.split(",") if d.strip()]
        else:
            self.allowed_domains = sorted({urlsplit(u).hostname or "" for u in urls})
        # Domains are matched on the host name (ports ignored), like Scrapy's offsite check.
        self._start_state()

    def _start_state(self) -> None:
        """What the spider keeps while it crawls (a subclass without start URLs calls it
        itself)."""
        self._capped_logged = False
        #: the crawl's shared state (crawler.state), handed over in from_crawler
        self.state: CrawlState | None = None
        #: whether the dedup middleware reads each page's links in its workers (else
        #: the page is parsed here)
        self.links_from_workers = False
        # link URL -> the shallowest depth this process requested it at (see follow)
        self._requested: dict[str, int] = {}
        # a URL's scheme and authority -> whether its host is in scope (see _allowed)
        self._scope: dict[str, bool] = {}
        #: which found URLs are requested (SIMCRAWL_INCLUDE / _EXCLUDE), from the settings
        self.patterns = UrlPatterns()

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> SiteSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.patterns = UrlPatterns.from_settings(crawler.settings)  # ValueError: exit 2
        crawler.signals.connect(spider.dropped, signal=scrapy.signals.request_dropped)
        crawler.signals.connect(spider.opened, signal=scrapy.signals.spider_opened)
        return spider  # type: ignore[no-any-return]

    def opened(self, spider: Any = None) -> None:
        """Once the crawl's components are built (Scrapy makes the spider before the
        add-ons apply): the crawl's shared state, and whether the dedup middleware reads
        each page's links in its extraction workers."""
        from crawler.middlewares.near_duplicates import dedup_enabled
        from crawler.wiring import parts_of

        self.state = parts_of(self.crawler).state
        self.links_from_workers = dedup_enabled(self.crawler.settings)

    def dropped(self, request: scrapy.Request, spider: Any = None) -> None:
        """A redirect whose target the crawl requested already never reaches a callback
        (the duplicate filter drops it): count it as a skip, ``redirect_loop`` when the
        target is one of its own earlier URLs, else ``redirect_to_known`` (the page was or
        will be fetched under its own URL)."""
        chain = request.meta.get("redirect_urls")
        if not chain:
            return  # a plain duplicate: the request it repeats has its own outcome
        reason = "redirect_loop" if request.url in chain else "redirect_to_known"
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(f"dedup/skipped/{reason}")
        if self.state is not None:
            self.state.count_skip()
        self.logger.info("skipped %s: %s (to %s)", chain[0], reason, request.url)

    async def start(self) -> AsyncIterator[Any]:
        """The start URLs, then (``SIMCRAWL_SITEMAPS``) the pages their hosts' sitemaps
        list."""
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse, errback=self.failed)
        if value("SIMCRAWL_SITEMAPS", self.settings.get):
            async for url in self.sitemap_pages():
                yield scrapy.Request(url, callback=self.parse, errback=self.failed)

    async def sitemap_pages(self) -> AsyncIterator[str]:
        """The pages the start hosts' sitemaps list, within the allowed domains and the
        URL patterns, each once (:mod:`crawler.sitemaps`). The robots.txt and the sitemaps
        are fetched through the downloader's middlewares (robots.txt rules, retries, the
        size cap), outside the crawl's queue: they are no pages to decide. Each host's
        outcome is logged; the stats count ``dedup/sitemaps/read``, ``.../failed`` and
        ``.../pages``."""
        from crawler.sitemaps import NESTING, origins, read_sitemap, sitemap_body, sitemaps_in_robots

        stats = self.crawler.stats
        max_size = self.settings.getint("DOWNLOAD_MAXSIZE")
        seen_sitemaps: set[str] = set()
        listed: set[str] = set(self.start_urls)
        for origin in origins(self.start_urls):
            robots = await self._fetch(f"{origin}/robots.txt", robots=True)
            named = sitemaps_in_robots(robots.body, robots.url) \
                if robots is not None and robots.status == 200 else []
            todo = [(url, 0) for url in named or [f"{origin}/sitemap.xml"]]
            pages = 0
            while todo:
                url, level = todo.pop(0)
                if url in seen_sitemaps:
                    continue
                seen_sitemaps.add(url)
                response = await self._fetch(url)
                xml = None if response is None or response.status != 200 else \
                    sitemap_body(response.body, max_size)
                listing = read_sitemap(xml) if xml else None
                if listing is None or listing.kind not in ("urlset", "sitemapindex"):
                    if named or url != f"{origin}/sitemap.xml" or (
                            response is not None and response.status != 404):
                        # a sitemap the site names, or one that is there but unreadable
                        stats.inc_value("dedup/sitemaps/failed")
                        self.logger.warning("sitemap %s could not be read (%s)", url,
                                            _why_not(response, xml, listing))
                    continue
                stats.inc_value("dedup/sitemaps/read")
                if level < NESTING:
                    todo += [(u, level + 1) for u in listing.sitemaps]
                for page in self.in_scope(listing.pages):
                    if page not in listed:
                        listed.add(page)
                        pages += 1
                        stats.inc_value("dedup/sitemaps/pages")
                        yield page
            self.logger.info("sitemaps of %s: %d pages listed to crawl", origin, pages)

    async def _fetch(self, url: str, robots: bool = False) -> Response | None:
        """A response for ``url`` through the downloader (``None``: no response, said in the
        log)."""
        request = scrapy.Request(url, callback=NO_CALLBACK, dont_filter=True,
                                 meta={"dont_obey_robotstxt": True} if robots else {})
        try:
            response = await self.crawler.engine.download_async(request)  # type: ignore[union-attr]
            self.crawler.stats.inc_value("dedup/sitemaps/responses")  # type: ignore[union-attr]
            return response  # type: ignore[no-any-return]
        except Exception as exc:  # noqa: BLE001 - any failure is "no response"
            if not robots:
                self.logger.warning("sitemap %s could not be fetched: %s", url,
                                    error_reason(exc))
            return None

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        """The page as a :class:`~crawler.items.PageItem`, then requests for its links.

        With dedup on, an HTML page is parsed once, in the extraction worker, for its
        text, links, title and language together; the dedup middleware then asks
        :meth:`follow` for the requests, only when the page is not a copy. With dedup off
        the page is parsed here.
        """
        item = page_item_of(response)
        # HTML only: JSON, plain text and other text types are counted as not_html by the
        # dedup middleware (a JSON response has no CSS selectors at all).
        html = isinstance(response, HtmlResponse)
        if html:
            if self.links_from_workers:
                yield item
                return
            item.title = (response.css("title::text").get() or "").strip() or None
            item.language = page_language(response)
        yield item
        if html and not self._at_depth_limit(item.depth):
            yield from self.follow(self.links_of(response), response.url,
                                   item.depth)

    def links_of(self, response: Response) -> list[str]:
        """The links of an HTML page, parsed here (dedup off, or its worker failed)."""
        if not isinstance(response, HtmlResponse):
            return []
        return page_links(response)

    def in_scope(self, urls: list[str]) -> list[str]:
        """The links within the allowed domains and the URL patterns."""
        return self._wanted([u for u in urls if self._allowed(u)])

    def _wanted(self, urls: list[str]) -> list[str]:
        """Those of ``urls`` the URL patterns keep (all when there are none)."""
        return list(self.patterns.keep(urls)) if self.patterns else urls

    @cached_property
    def _max_outlinks(self) -> int:
        """``SIMCRAWL_MAX_OUTLINKS``, read once (the settings do not change once the crawl
        runs), not at every page."""
        return int(value("SIMCRAWL_MAX_OUTLINKS", self.settings.get))

    def follow(self, urls: list[str], source: str, depth: int = 0) -> list[scrapy.Request]:
        """Requests for the links of page ``source`` (at ``depth``): those within the
        allowed domains, at most ``SIMCRAWL_MAX_OUTLINKS`` of them, and none this process
        already requested from a page as deep or shallower.

        Links every page repeats (menus, footers) would otherwise become a request each
        time, pass Scrapy's spider middlewares and signals, and be thrown away by the
        dupefilter, which never forgets a URL it was given during a crawl. Skipping those
        here changes nothing but the cost (and the ``dupefilter/filtered`` count). The
        depth is kept because ``DEPTH_LIMIT`` drops a too-deep request before the
        dupefilter sees it. The memory is bounded: past :data:`REQUESTED_CACHE` URLs the
        record starts again.

        A page at ``DEPTH_LIMIT`` gets no requests at all: Scrapy's depth middleware would
        drop each of them (without a count), after they were built and passed through
        the spider middlewares before it. In a crawl that stops at a depth, the pages at
        the limit are most of the pages.
        """
        if self._at_depth_limit(depth):
            return []
        allowed = [u for u in urls if self._allowed(u)]
        links = self._wanted(allowed)
        if len(links) < len(allowed) and self.crawler.stats is not None:
            # counted apart from the links to other sites
            self.crawler.stats.inc_value("dedup/outlinks_excluded", len(allowed) - len(links))
        cap = self._max_outlinks
        if 0 < cap < len(links):
            stats = self.crawler.stats
            if stats is not None:
                stats.inc_value("dedup/outlinks_capped/pages")
                stats.inc_value("dedup/outlinks_capped/links", len(links) - cap)
            if not self._capped_logged:
                self._capped_logged = True
                self.logger.warning("%s has %d links; following the first %d "
                                    "(SIMCRAWL_MAX_OUTLINKS; later pages counted in "
                                    "dedup/outlinks_capped)", source, len(links), cap)
            links = links[:cap]
        known = self._requested
        fresh = [u for u in links if known.get(u, depth + 1) > depth]
        if len(known) + len(fresh) > REQUESTED_CACHE:
            known.clear()
        for url in fresh:
            known[url] = depth
        if len(fresh) < len(links) and self.crawler.stats is not None:
            self.crawler.stats.inc_value("dedup/outlinks_known", len(links) - len(fresh))
        return [scrapy.Request(url, callback=self.parse, errback=self.failed)
                for url in fresh]

    def _at_depth_limit(self, depth: int) -> bool:
        """Whether a page at ``depth`` is at ``DEPTH_LIMIT`` (0: none): its links would
        all be too deep."""
        return 0 < self.settings.getint("DEPTH_LIMIT") <= depth

    def _allowed(self, url: str) -> bool:
        """Whether a URL's host is one of the allowed domains or under one. Known by the
        URL's scheme and authority (a page's links lead to a few hosts): a regular
        expression's match instead of a parse of each link."""
        origin = _ORIGIN.match(url)
        key = origin.group() if origin else url
        allowed = self._scope.get(key)
        if allowed is None:
            host = urlsplit(key).hostname or ""
            allowed = any(host == d or host.endswith("." + d) for d in self.allowed_domains)
            if len(self._scope) >= SCOPE_CACHE:
                self._scope.clear()
            self._scope[key] = allowed
        return allowed

    def failed(self, failure: Failure) -> None:
        """Count a failed request as a skip with its reason (one put back as the crawl
        stops is none: :class:`crawler.stopping.PutBack`)."""
        stats = self.crawler.stats
        if failure.check(PutBack):
            return
        if failure.check(HttpError):
            reason = f"http_{failure.value.response.status}"
        elif failure.check(DownloadCancelledError):  # larger than DOWNLOAD_MAXSIZE
            reason = "too_big"
        elif failure.check(IgnoreRequest):
            text = str(failure.value)
            reason = getattr(failure.value, "reason", None) or ("robots_txt" if "robots" in text.lower() else
                      "too_big" if "DOWNLOAD_MAXSIZE" in text else
                      "forbidden_port" if text.startswith("forbidden port") else
                      "too_many_redirects" if "max redirections" in text else "ignored")
        else:
            reason = error_reason(failure.value)
        if stats is not None:
            stats.inc_value(f"dedup/skipped/{reason}")
        if self.state is not None:
            self.state.count_skip()
            self.state.settle_request(failure.request)  # type: ignore[attr-defined]
        self.logger.info("skipped %s: %s", failure.request.url,  # type: ignore[attr-defined]
                         reason)


def start_urls_in(lines: list[str]) -> list[str]:
    """The URLs of a start file's lines: each line's text, blank lines and ``#`` comments
    skipped."""
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def _why_not(response: Response | None, xml: bytes | None, listing: Any) -> str:
    """Why a sitemap was not read, for the log."""
    if response is None:
        return "no response"
    if response.status != 200:
        return f"HTTP {response.status}"
    if xml is None:
        return "larger than DOWNLOAD_MAXSIZE once ungzipped"
    kind = getattr(listing, "kind", "")
    return f"its root element is <{kind}>, not <urlset> or <sitemapindex>" if kind \
        else "not XML"
