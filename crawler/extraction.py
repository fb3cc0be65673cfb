"""Reading fetched pages (parse, main text, links, fingerprints) off the reactor thread.

Reading a page costs a few milliseconds of pure Python under the GIL (with
``DEDUP_EXTRACTOR=trafilatura``, 10 to 60 ms), so by default it runs in worker processes,
one per core: the crawl process keeps downloading while the workers read. Its links are
resolved by Scrapy's link extractor's rules, remembered from page to page
(:func:`page_links`).
``DEDUP_EXTRACT_WORKERS=0`` reads in a thread of the crawl process instead.

A page is parsed once, in the worker (:func:`dedup.reading.parse_page`): the tree its main
text is read from is also the tree Scrapy's link extractor and the language selector read
(through :class:`ParsedResponse`). The crawl process never parses HTML, and it builds
requests only for the links of pages that are not copies.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlparse, urlsplit

from scrapy.http import HtmlResponse
from scrapy.link import Link
from scrapy.linkextractors import LinkExtractor
from scrapy.selector import Selector
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.response import get_base_url
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread
from w3lib.html import strip_html5_whitespace
from w3lib.url import safe_url_string

from dedup.config import DedupConfig
from dedup.page import Page
from dedup.reading import Params, fingerprint_params, parse_page, read_html, read_tree

if TYPE_CHECKING:
    from crawler.items import PageItem

log = logging.getLogger(__name__)


class ParsedResponse(HtmlResponse):
    """An :class:`~scrapy.http.HtmlResponse` whose selector reads a tree already parsed
    (:func:`dedup.reading.parse_page`), so Scrapy's link extractor and selectors do not parse
    the page a second time."""

    def __init__(self, *args: Any, tree: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the parsed page (``None``: not parsed yet, or not parseable: the selector
        #: parses the text as Scrapy does)
        self.tree = tree
        self._tree_selector: Selector | None = None

    @property
    def selector(self) -> Selector:
        if self.tree is None:
            return super().selector
        if self._tree_selector is None:
            self._tree_selector = Selector(root=self.tree, type="html")
        return self._tree_selector


@lru_cache(maxsize=1)
def link_extractor() -> LinkExtractor:
    """The crawl's link extractor, one per process: Scrapy's, with its default rules but
    the file-extension check, which :func:`page_links` makes instead."""
    return LinkExtractor(deny_extensions=[])


@lru_cache(maxsize=1)
def _denied_suffixes() -> tuple[str, ...]:
    from scrapy.linkextractors import IGNORED_EXTENSIONS

    return tuple(f".{extension}" for extension in IGNORED_EXTENSIONS)


#: Links a process remembers how it resolved (:class:`_Resolved`), at most.
LINK_CACHE = 100_000

#: The elements and attribute Scrapy's default link extractor reads (with the XHTML
#: namespace, which it ignores).
_LINK_TAGS = ("a", "area", "{http://www.w3.org/1999/xhtml}a",
              "{http://www.w3.org/1999/xhtml}area")

#: An href that names its scheme and host (``http://host``...), and one that names a path
#: from the root (``/path``, not ``//host``).
_ABSOLUTE = re.compile(r"https?://[^/?#]")
_ROOTED = re.compile(r"/(?!/)")


class _Resolved:
    """What Scrapy's default link extractor makes of a link, remembered: a site's pages
    repeat their menus' and footers' links, and resolving one (two ``urljoin`` and
    w3lib's ``safe_url_string``, then ``canonicalize_url`` for the duplicates check) costs
    as much as the rest of the page's reading. An href is remembered by what its
    resolution reads: an absolute one by the schemes of the page's base and URL alone,
    one from the root by the base's scheme and host too, any other by the base and the
    URL whole."""

    def __init__(self) -> None:
        #: key -> the link's URL and its duplicates key (``None``: a link Scrapy skips)
        self.links: dict[tuple, tuple[str, str] | None] = {}
        #: URL -> whether the extractor's rules and the file-extension check let it pass
        self.allowed: dict[str, bool] = {}

    def of(self, href: str, base: str, url: str, encoding: str,
           where: tuple[str, str, str]) -> tuple[str, str] | None:
        """The URL of a link (``href``) of a page at ``url`` whose base is ``base``, and
        its duplicates key; ``where``: the base's scheme and host, and the URL's scheme."""
        href = strip_html5_whitespace(href)
        if _ABSOLUTE.match(href):
            key: tuple = (href, where[0], where[2], encoding)
        elif _ROOTED.match(href):
            key = (href, *where, encoding)
        else:
            key = (href, base, url, encoding)
        try:
            return self.links[key]
        except KeyError:
            pass
        try:
            link = urljoin(url, safe_url_string(urljoin(base, href), encoding=encoding))
        except ValueError:
            found = None
        else:
            found = (link, link_extractor().link_extractor.link_key(Link(link)))
        if len(self.links) >= LINK_CACHE:
            self.links.clear()
        self.links[key] = found
        return found

    def passes(self, link: str) -> bool:
        """Whether the extractor's rules and the file-extension check keep a link."""
        allowed = self.allowed.get(link)
        if allowed is None:
            allowed = link_extractor()._link_allowed(Link(link)) \
                and not urlparse(link).path.lower().endswith(_denied_suffixes())
            if len(self.allowed) >= LINK_CACHE:
                self.allowed.clear()
            self.allowed[link] = allowed
        return allowed


_resolved = _Resolved()


def page_links(response: HtmlResponse) -> list[str]:
    """The URLs of a page's links, as Scrapy's default :class:`LinkExtractor` gives them:
    its rules, its order, duplicates left out, and links to files of Scrapy's
    ``IGNORED_EXTENSIONS`` (images, archives, documents...) left out too. Each link's
    resolution is Scrapy's and w3lib's, remembered for the next page that has it
    (:class:`_Resolved`), and the file-extension check is one suffix test (Scrapy's tests
    each of its 200-odd extensions in turn). The test suite holds it to Scrapy's
    extractor."""
    base, url, encoding = get_base_url(response), response.url, response.encoding
    parsed = urlsplit(base)
    where = (parsed.scheme, parsed.netloc, urlsplit(url).scheme)
    seen: set[str] = set()
    out = []
    for element in response.selector.root.iter(*_LINK_TAGS):
        href = element.get("href")
        if href is None:
            continue
        found = _resolved.of(href, base, url, encoding, where)
        if found is None or found[1] in seen:
            continue
        seen.add(found[1])
        if _resolved.passes(found[0]):
            out.append(found[0])
    return out


def read_page(body: bytes, url: str, encoding: str | None, params: Params) -> Page:
    """Parse a page once: its main text, the URL it declares canonical and its
    fingerprints (:mod:`dedup.reading`, the one reading of a page), and its links, title and
    language (Scrapy's link extractor and selectors, on the same tree).

    ``encoding`` is the one the crawl process found (``response.encoding``: HTTP header,
    BOM, ``<meta>``); ``None`` for a page whose links are not wanted (then the body is
    decoded as :func:`dedup.reading.read_html` does and no links are returned).
    """
    if encoding is None:
        return read_html(body, url, params)
    response = ParsedResponse(url, body=body, encoding=encoding)
    text = response.text  # decoded once: the link extractor reads it for <base href>
    response.tree = tree = parse_page(text, params[0])
    return read_tree(text, tree, url, params, links=page_links(response),
                     language=page_language(response))


def read_fetched(body: bytes, url: str, content_type: str | None, params: Params) -> Page:
    """Read a fetched page as the crawl process and its extraction worker read a response
    of that body and ``Content-Type``: decoded as Scrapy decodes it, links included
    (:func:`read_page`). Spark's executors read an archive's pages with it
    (``simcrawl warc --engine spark``: dedup/readahead.py)."""
    headers = {"Content-Type": content_type} if content_type else {}
    response = HtmlResponse(url, body=body, headers=headers)
    return read_page(body, url, response.encoding, params)


def page_language(response: HtmlResponse) -> str | None:
    """The page's ``html::attr(lang)``: read off the parsed page's root when it is the
    ``<html>`` element and has one (the CSS selector's first match), else by the
    selector."""
    root = response.selector.root
    if getattr(root, "tag", None) == "html":
        lang = root.get("lang")
        if lang is not None:
            return lang  # type: ignore[no-any-return]
    return response.css("html::attr(lang)").get()  # type: ignore[no-any-return]


def extract_and_fingerprint(body: bytes, url: str, params: Params,
                            encoding: str | None = None) -> Page:
    """Extract a page's main text and fingerprint it (runs in a worker); with an
    ``encoding``, also its links, title and language from the same parse
    (:func:`read_page`). ``params``: :func:`dedup.reading.fingerprint_params`."""
    return read_page(body, url, encoding, params)


#: A page that exercises every part of the reading (its links, its listing check, the
#: Chinese text's pinyin): :func:`warm_up` reads it.
_WARM_UP_PAGE = (
    "<!doctype html><html lang='en'><head><title>Warm-up</title>"
    "<meta name='description' content='A page read before any other'>"
    "<link rel='canonical' href='/warm-up'></head><body>"
    "<nav class='menu'><ul><li><a href='/'>Home</a></li><li><a href='/news/'>News</a></li>"
    "<li><a href='https://example.org/about'>About</a></li></ul></nav>"
    "<main><h1>Warm-up</h1>"
    + "".join(f"<p>Paragraph {i} of a page that is read once, before any page of the crawl, "
              "so that what the reading sets up at its first page is set up here.</p>"
              for i in range(6))
    + "<p>" + "春天来了，小镇的河边开满了花，孩子们在桥上看船。" * 4 + "</p>"
    + "<ul>" + "".join(f"<li><a href='/item/{i}'>Item {i}</a> a short summary</li>"
                       for i in range(5)) + "</ul>"
    "</main><footer class='site-footer'>Contact</footer></body></html>")


def warm_up() -> None:
    """Read one small page with the default settings, so that what a reading sets up at
    its first page (the pinyin tables and their library, compiled patterns, the kernels)
    is set up already: the extraction workers' fork server calls it once
    (:mod:`crawler.worker_preload`), and every worker forked from it starts ready."""
    read_page(_WARM_UP_PAGE.encode(), "http://localhost/warm-up", "utf-8",
              fingerprint_params(DedupConfig()))


def worker_count(setting: int) -> int:
    """Worker processes for ``DEDUP_EXTRACT_WORKERS`` (-1 = one per core)."""
    return (os.cpu_count() or 1) if setting < 0 else setting


#: Times a page is given to a worker pool that breaks under it (a worker killed, out of
#: memory) before it is skipped.
ATTEMPTS = 3

#: Seconds between a worker's checks that the crawl process still runs.
WATCH_INTERVAL = 1.0


def _init_worker(crawl_pid: int) -> None:
    """Set up an extraction worker: Ctrl-C reaches the whole process group, but the crawl
    process decides when workers stop; and a worker exits by itself when the crawl
    process is gone (SIGKILL, a crash), instead of lingering."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(WATCH_INTERVAL)
            try:
                os.kill(crawl_pid, 0)
            except ProcessLookupError:
                os._exit(0)
            except PermissionError:  # pragma: no cover - the pid was reused by another user
                os._exit(0)

    threading.Thread(target=watch, name="simcrawl-watch-parent", daemon=True).start()


#: Seconds each worker's first task holds it at the start (:meth:`Extractor.start`): while
#: it holds one worker, the pool starts the next instead of handing the task to it.
START_HOLD = 0.05

#: What the workers' fork server imports before it forks a worker: the reading, and a
#: page read once (:mod:`crawler.worker_preload`).
WORKER_PRELOAD = [__name__, "crawler.worker_preload"]


def start_fork_server(workers: int) -> None:
    """Start the extraction workers' fork server now, if the crawl will have workers
    (``workers``: ``DEDUP_EXTRACT_WORKERS``): it imports the reading and reads a page
    (about half a second) on the other core while the crawl process sets itself up. The
    crawl command calls it before Scrapy builds the crawl; the workers are forked from it
    when the crawl opens (:meth:`Extractor.start`). Without it they start from there."""
    if worker_count(workers) == 0:
        return
    from multiprocessing import forkserver

    multiprocessing.get_context("forkserver").set_forkserver_preload(WORKER_PRELOAD)
    forkserver.ensure_running()


def _started() -> None:
    """The task that starts a worker (:meth:`Extractor.start`)."""
    time.sleep(START_HOLD)


class Extractor:
    """Runs :func:`extract_and_fingerprint` in worker processes (or a thread) and hands
    the result back to the reactor as a Deferred.

    A worker that dies (killed, out of memory) breaks the pool, and every page the pool
    had fails with it; the pool is started again and those pages are extracted again in
    it. A page whose worker dies :data:`ATTEMPTS` times (a page that exhausts a worker's
    memory each time) fails, and is skipped as ``extract_failed``.
    """

    def __init__(self, config: DedupConfig) -> None:
        self.params = fingerprint_params(config)
        self.workers = worker_count(config.extract_workers)
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False  # closed: a pool is started by a page only, not by start()
        #: set while start() starts the workers: the pages that come meanwhile are read
        #: in a thread of the crawl process
        self._starting = threading.Event()

    def _executor(self, starting: bool = False) -> ProcessPoolExecutor | None:
        """The pool, started if need be (``starting``: for :meth:`start`, which starts
        none once the extractor is closed)."""
        with self._lock:
            if starting and self._closed:
                return None
            if self._pool is None:
                context = multiprocessing.get_context("forkserver")
                # the fork server imports the reading once and reads a page
                # (crawler.worker_preload); each worker is forked from it ready (a worker
                # importing it itself costs a second and more, and its first pages a
                # quarter of a second more)
                context.set_forkserver_preload(WORKER_PRELOAD)
                self._pool = ProcessPoolExecutor(
                    self.workers, mp_context=context,
                    initializer=_init_worker, initargs=(os.getpid(),))
            return self._pool

    def start(self) -> None:
        """Start the workers now, in a background thread, instead of at the first page: the
        fork server imports the reading (about a second of CPU) on one core while the crawl
        process starts (connects to its services, opens the spider) on the other. Without
        workers (``DEDUP_EXTRACT_WORKERS=0``) there is nothing to start. A pool that
        cannot start here fails at the first page as it would have."""
        if self.workers == 0:
            return
        self._starting.set()

        def start() -> None:
            try:
                pool = self._executor(starting=True)
                if pool is None:  # closed before it started
                    self._starting.clear()
                    return
                # each task holds its worker a moment, so that the pool starts a worker
                # for each (it starts one only when none is idle); the first that is done
                # ends the start
                for _ in range(self.workers):
                    pool.submit(_started).add_done_callback(self._worker_started)
            except Exception as exc:  # noqa: BLE001  (the first page meets it again)
                self._starting.clear()
                log.debug("the extraction workers did not start early: %s", exc)

        threading.Thread(target=start, name="simcrawl-start-workers", daemon=True).start()

    def _worker_started(self, _task: Future) -> None:
        if self._starting.is_set():
            self._starting.clear()
            log.debug("the extraction workers are ready")

    def reads_here(self) -> bool:
        """Whether a page given now is read in a thread of the crawl process: without
        workers, and while they start (:meth:`start`: the crawl's first page, whose links
        every other page waits for, does not wait for the workers' start)."""
        return self.workers == 0 or self._starting.is_set()

    def submit(self, body: bytes, url: str, encoding: str | None = None) -> Deferred:
        """A Deferred that fires with the page's :class:`Page` (or fails with the
        extraction's error), in the reactor thread. With the page's ``encoding`` the
        result carries its links, title and language too."""
        if self.reads_here():
            return deferToThread(extract_and_fingerprint, body, url, self.params, encoding)
        from twisted.internet import reactor

        d: Deferred = Deferred()

        def settle(f: Future) -> None:
            exc = f.exception()
            if exc is None:
                d.callback(f.result())
            else:
                d.errback(exc)

        self.submit_future(body, url, encoding).add_done_callback(
            lambda f: reactor.callFromThread(settle, f))  # type: ignore[attr-defined]
        return d

    def submit_future(self, body: bytes, url: str, encoding: str | None = None) -> Future:
        """Run the extraction in a worker process; a :class:`concurrent.futures.Future`.

        When the pool breaks (a worker died) the page is extracted again in the new pool,
        up to :data:`ATTEMPTS` times in all; past that the future fails with
        ``BrokenProcessPool``.
        """
        outer: Future = Future()
        self._attempt(outer, (body, url, encoding), ATTEMPTS)
        return outer

    def _attempt(self, outer: Future, page: tuple[bytes, str, str | None], left: int) -> None:
        """Give ``page`` to the pool; ``outer`` settles with its result. The callbacks are
        plain methods, not closures that name themselves: a page's futures and its result
        form no reference cycle, and are freed as soon as the crawl is done with them, not
        at the garbage collector's next turn."""
        try:
            inner = self._submit_once(*page)
        except Exception as exc:  # noqa: BLE001  (the pool could not take it: fail the page)
            outer.set_exception(exc)
            return
        inner.add_done_callback(partial(self._attempted, outer, page, left))

    def _attempted(self, outer: Future, page: tuple[bytes, str, str | None], left: int,
                   inner: Future) -> None:
        exc = inner.exception()
        if exc is None:
            outer.set_result(inner.result())
        elif isinstance(exc, BrokenProcessPool) and left > 1:
            self._attempt(outer, page, left - 1)
        else:
            outer.set_exception(exc)

    def _submit_once(self, body: bytes, url: str, encoding: str | None) -> Future:
        pool = self._executor()
        assert pool is not None
        try:
            future = pool.submit(extract_and_fingerprint, body, url, self.params, encoding)
        except BrokenProcessPool:
            self._restart(pool)
            pool = self._executor()
            assert pool is not None
            future = pool.submit(extract_and_fingerprint, body, url, self.params, encoding)

        def check(f: Future) -> None:
            if isinstance(f.exception(), BrokenProcessPool):
                self._restart(pool)

        future.add_done_callback(check)
        return future

    def _restart(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is not broken:
                return
            self._pool = None
        log.error("an extraction worker died; the worker pool starts again and extracts "
                  "its pages again (a page is skipped when its worker dies %d times)",
                  ATTEMPTS)
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Stop the workers (pages still queued are abandoned)."""
        with self._lock:
            pool, self._pool = self._pool, None
            self._closed = True
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self) -> str:
        return f"Extractor(workers={self.workers})"


async def fingerprint_item(item: PageItem, extractor: Extractor) -> str | None:
    """Extract the item's main text and fingerprint it (in place, off the reactor thread).

    Returns:
        ``None``, or the reason to skip the page: ``"empty_text"`` (no text at all) or
        ``"extract_failed"`` (the extractor raised or its worker died; logged).
    """
    if item.checksum:  # read already (an archive's page read ahead: dedup.readahead)
        return None if item.tokens > 0 else "empty_text"
    try:
        page = await maybe_deferred_to_future(extractor.submit(item.body, item.url,
                                                               item.encoding))
    except Exception as exc:  # noqa: BLE001  (one bad page must not stop the crawl)
        log.error("extracting %s failed: %s: %s", item.url, type(exc).__name__, exc)
        return "extract_failed"
    item.take_reading(page)
    return None if page.tokens > 0 else "empty_text"

