"""Text extraction, link extraction and fingerprinting of fetched pages, off the reactor
thread.

trafilatura is the costliest step of a crawl (10 to 60 ms a page, pure Python under the
GIL), so by default it runs in worker processes, one per core: the crawl process keeps
downloading while the workers extract. ``DEDUP_EXTRACT_WORKERS=0`` runs it in a thread of
the crawl process instead.

A page is parsed once, in the worker: the tree trafilatura reads is also the tree
Scrapy's link extractor and the title and language selectors read (through
:class:`ParsedResponse`). The crawl process never parses HTML, and it builds requests
only for the links of pages that are not copies.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import lru_cache
from typing import Any

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor
from scrapy.selector import Selector
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread

from dedup.config import DedupConfig
from dedup.listing import is_listing
from dedup.page import Page
from dedup.pages import (
    Params,
    declared_canonical,
    extract_main,
    fingerprint_params,
    fingerprint_text,
    page_description,
    page_title,
    read_html,
)
from dedup.text import parse_html

log = logging.getLogger(__name__)


class ParsedResponse(HtmlResponse):
    """An :class:`~scrapy.http.HtmlResponse` whose selector reads a tree already parsed
    (:func:`dedup.text.parse_html`), so Scrapy's link extractor and selectors do not parse
    the page a second time."""

    def __init__(self, *args: Any, tree: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._tree = tree
        self._tree_selector: Selector | None = None

    @property
    def selector(self) -> Selector:
        if self._tree_selector is None:
            self._tree_selector = Selector(root=self._tree, type="html")
        return self._tree_selector


@lru_cache(maxsize=1)
def link_extractor() -> LinkExtractor:
    """The site spider's link extractor (Scrapy's, default rules), one per process."""
    return LinkExtractor()


def read_page(body: bytes, url: str, encoding: str | None, params: Params) -> Page:
    """Parse a page once: its main text, the URL it declares canonical and its
    fingerprints (:mod:`dedup.pages`, the one reading of a page), and its links, title and
    language (Scrapy's link extractor and selectors, on the same tree).

    ``encoding`` is the one the crawl process found (``response.encoding``: HTTP header,
    BOM, ``<meta>``); ``None`` for a page whose links are not wanted (then the body is
    decoded as :func:`dedup.pages.read_html` does and no links are returned).
    """
    if encoding is None:
        return read_html(body, url, params)
    response = HtmlResponse(url, body=body, encoding=encoding)
    text = response.text
    tree = parse_html(text)
    if tree is not None:
        response = ParsedResponse(url, body=body, encoding=encoding, tree=tree)
    links = [lk.url for lk in link_extractor().extract_links(response)]
    title = page_title(tree)
    language = response.css("html::attr(lang)").get()
    read = extract_main(text, url, params[0], tree)
    return fingerprint_text(read, params, url, canonical=declared_canonical(tree, url, text),
                            links=links, title=title, description=page_description(tree),
                            language=language, listing=is_listing(tree, read.text))


def extract_and_fingerprint(body: bytes, url: str, params: Params,
                            encoding: str | None = None) -> Page:
    """Extract a page's main text and fingerprint it (runs in a worker); with an
    ``encoding``, also its links, title and language from the same parse
    (:func:`read_page`). ``params``: :func:`dedup.pages.fingerprint_params`."""
    return read_page(body, url, encoding, params)


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

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    self.workers, mp_context=multiprocessing.get_context("forkserver"),
                    initializer=_init_worker, initargs=(os.getpid(),))
            return self._pool

    def submit(self, body: bytes, url: str, encoding: str | None = None) -> Deferred:
        """A Deferred that fires with the page's :class:`Page` (or fails with the
        extraction's error), in the reactor thread. With the page's ``encoding`` the
        result carries its links, title and language too."""
        if self.workers == 0:
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

        def attempt(left: int) -> None:
            try:
                inner = self._submit_once(body, url, encoding)
            except Exception as exc:  # noqa: BLE001  (the pool could not take it: fail the page)
                outer.set_exception(exc)
                return

            def done(f: Future) -> None:
                exc = f.exception()
                if exc is None:
                    outer.set_result(f.result())
                elif isinstance(exc, BrokenProcessPool) and left > 1:
                    attempt(left - 1)
                else:
                    outer.set_exception(exc)

            inner.add_done_callback(done)

        attempt(ATTEMPTS)
        return outer

    def _submit_once(self, body: bytes, url: str, encoding: str | None) -> Future:
        pool = self._executor()
        try:
            future = pool.submit(extract_and_fingerprint, body, url, self.params, encoding)
        except BrokenProcessPool:
            self._restart(pool)
            pool = self._executor()
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
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __repr__(self) -> str:
        return f"Extractor(workers={self.workers})"
