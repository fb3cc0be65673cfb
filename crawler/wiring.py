"""The one place that wires a crawl: a Scrapy extension (:class:`Wiring`, first in
``EXTENSIONS``) builds, from the settings, the configuration, the services (external or
embedded), the Redis index, the MongoDB store, the admission journal, the deduplicator
and the extraction workers, and holds what the crawl's components share (requests in
flight, pages waiting for their record, lost pages). The middlewares, the pipeline, the
frontier and the spider get it with :func:`wiring_of` (Scrapy's
``crawler.get_extension``): nothing is hung on Scrapy's crawler, and no component reads
another's attributes.

Scrapy builds the extensions before the engine (scheduler, middlewares, pipelines), so
the wiring is complete before any of them asks for it."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crawler.extraction import Extractor
from crawler.logs import quiet_third_party
from dedup.config import DedupConfig
from dedup.decide import Rules
from dedup.deduplicator import Deduplicator, on_servers
from dedup.errors import redact
from dedup.index import NearDuplicateIndex, open_index, redis_store
from dedup.index.windows import WindowIndex, open_window_index
from dedup.journal import AdmissionJournal, live_owners, recover
from dedup.services import (
    EmbeddedServices,
    connect_mongo,
    connect_redis,
    durability_warning,
    resolve,
)
from dedup.store import PageStore
from dedup.templates import HostTemplates

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


#: ``SIMCRAWL_FRONTIER``: Scrapy's own queue, or one in Redis shared by the namespace's
#: processes (crawler/frontier.py).
FRONTIERS = ("memory", "redis")


def frontier_of(settings: Any) -> str:
    """``SIMCRAWL_FRONTIER``, checked.

    Raises:
        ValueError: not ``memory`` or ``redis``.
    """
    kind = str(settings.get("SIMCRAWL_FRONTIER") or "memory").strip().lower()
    if kind not in FRONTIERS:
        raise ValueError(f"SIMCRAWL_FRONTIER must be memory or redis, got {kind!r}")
    return kind


@dataclass
class Wiring:
    """The objects one crawl uses, built once (:meth:`from_crawler`)."""

    config: DedupConfig
    deduplicator: Deduplicator
    pages: PageStore
    index: NearDuplicateIndex
    services: EmbeddedServices | None
    crawl_id: str
    redis_url: str
    mongo_uri: str
    extractor: Extractor
    #: the index's Redis client (the frontier, the journal and recovery use it too)
    client: Any = None
    windows: WindowIndex | None = None
    pinyin_params: dict[str, Any] = field(default_factory=dict)
    journal: AdmissionJournal | None = None
    #: URLs of pages that could not be decided or stored (the crawl exits non-zero)
    lost: list[str] = field(default_factory=list)
    #: the shared frontier (crawler.frontier.SharedFrontier), when SIMCRAWL_FRONTIER=redis:
    #: it attaches itself (:meth:`attach_frontier`)
    frontier: Any = None
    #: page URL -> the in-flight id of its request, settled once its record is stored
    pending: dict[str, str] = field(default_factory=dict)
    #: copies whose records named a page a killed crawl never stored: decided again
    #: (the shared frontier queues them; a crawl from the start finds them anyway)
    recovered_copies: list[str] = field(default_factory=list)
    #: dead processes whose journals this process recovered at start (the shared frontier
    #: puts back their requests in flight)
    recovered_owners: list[str] = field(default_factory=list)
    #: the dedup middleware reads each page's links in its extraction workers
    worker_links: bool = False
    #: page URL -> a Deferred fired when its record is stored (shared frontier: an
    #: admitted page's links are queued only then, see NearDuplicateMiddleware)
    stored_waiters: dict[str, Any] = field(default_factory=dict)
    #: "YYYY-MM-DDTHH:MM" (UTC) -> pages skipped in that minute, for reports
    skips_per_minute: dict[str, int] = field(default_factory=dict)
    #: the storage pipeline closed: everything written, the summary too (a crawl
    #: forced out, by a second signal, never gets here: it exits 130)
    closed_cleanly: bool = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Wiring:
        """Build the crawl's objects from its settings (see :func:`build`) and stop them
        when the spider closes."""
        from scrapy import signals

        wiring = build(crawler)
        crawler.signals.connect(wiring.close, signal=signals.engine_stopped)
        return wiring

    def attach_frontier(self, frontier: Any) -> None:
        """The shared frontier of this crawl (the middleware and the pipeline settle its
        requests through :meth:`settle` and :meth:`settle_request`)."""
        self.frontier = frontier

    def settle_request(self, request: Any) -> None:
        """A request whose outcome needs nothing stored (a failure, a skip): settle it in
        the shared frontier, if any."""
        if self.frontier is not None and request is not None:
            self.frontier.settle_request(request)

    def count_skip(self) -> None:
        """A page was skipped now (kept per minute in the crawl's summary)."""
        minute = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
        self.skips_per_minute[minute] = self.skips_per_minute.get(minute, 0) + 1

    def settle(self, urls: Iterable[str]) -> None:
        """The records of these pages are stored (called from the storage thread): the
        requests of copies are no longer in flight in the shared frontier, and admitted
        pages waiting for their record (:meth:`when_stored`) may now queue their links."""
        ids = []
        for url in urls:
            waiter = self.stored_waiters.pop(url, None)
            if waiter is not None:
                _fire(waiter, True)
            elif url in self.pending:
                ids.append(self.pending.pop(url))
        if ids and self.frontier is not None:
            self.frontier.settle(ids)

    def when_stored(self, url: str) -> Any:
        """A Deferred that fires with ``True`` once the page's record is stored, or with
        ``False`` if it is lost (MongoDB gave up: :meth:`abandon`)."""
        from twisted.internet.defer import Deferred

        waiter: Deferred = Deferred()
        self.stored_waiters[url] = waiter
        return waiter

    def abandon(self, urls: Iterable[str]) -> None:
        """These pages will not be stored: their waiters fire with ``False``."""
        for url in urls:
            waiter = self.stored_waiters.pop(url, None)
            if waiter is not None:
                _fire(waiter, False)

    def close(self) -> None:
        """Stop the extraction workers, give up the journal's lease, and stop the
        embedded services this crawl started."""
        self.extractor.close()
        if self.journal is not None:
            self.journal.close()
            self.journal = None
        if self.services is not None:
            self.services.stop()
            self.services = None


def _fire(waiter: Any, value: bool) -> None:
    """Fire a Deferred in the reactor thread (the storage pipeline writes in another)."""
    from twisted.internet import reactor

    reactor.callFromThread(waiter.callback, value)  # type: ignore[attr-defined]


def wiring_of(crawler: Crawler) -> Wiring:
    """The crawl's :class:`Wiring` (Scrapy's ``crawler.get_extension``).

    Raises:
        RuntimeError: ``crawler.wiring.Wiring`` is not among the ``EXTENSIONS``.
    """
    wiring = crawler.get_extension(Wiring)
    if wiring is None:
        raise RuntimeError("crawler.wiring.Wiring is not in EXTENSIONS: the crawl's "
                           "components need it (see crawler/settings.py)")
    return wiring


def build(crawler: Crawler) -> Wiring:
    """The crawl's :class:`Wiring`, built from the crawler's settings.

    Before the first decision it recovers what crawls killed on this namespace left
    half-done (:func:`dedup.journal.recover`), and it refuses to run beside another live
    crawl on the namespace unless ``DEDUP_CONCURRENT`` is set.

    Raises:
        ValueError: a bad ``DEDUP_*`` setting.
        ServiceUnavailable: Redis or MongoDB cannot be reached (the message names the URL).
        RuntimeError: another crawl is live on the namespace.
    """
    quiet_third_party()
    config = DedupConfig.from_settings(crawler.settings.get)
    redis_url, mongo_uri, services = resolve(config.redis_url or None,
                                             config.mongo_uri or None, config.data_dir)
    journal: AdmissionJournal | None = None
    try:
        client = connect_redis(redis_url)
        pages = PageStore(connect_mongo(mongo_uri), config.database, redact(mongo_uri),
                          lazy_sizes=True)  # written with the crawl's record
        pages.ensure_indexes()
        index = open_index(redis_store(client, config.namespace, url=redis_url),
                           k=config.max_distance, capacity=config.capacity,
                           batch_size=config.batch_size,
                           release_sketches=config.release_sketches)
        index.sketch_source = pages.sketches_of  # released sketches (recovery reads them too)
        pages.save_layout(config.namespace, index.layout.describe())
        if index.layout.k > index.k:
            log.info("dedup: the index in %s was built for k = %d (%d tables); the crawl "
                     "decides at k = %d: `simcrawl rebuild-index -k %d` gives it the "
                     "smaller, faster design", redact(redis_url), index.layout.k,
                     len(index.layout.tables), index.k, index.k)
        windows, params = open_window_index(config, client, redact(redis_url))
        journal = AdmissionJournal(client, config.namespace)
        others = live_owners(client, config.namespace)
        shared = frontier_of(crawler.settings) == "redis"  # processes share one crawl
        if others and not config.concurrent and not shared:
            raise RuntimeError(
                f"another crawl is running on namespace {config.namespace!r} in "
                f"{redact(redis_url)} ({others[0].describe()}). Without a shared frontier "
                "both would fetch every page: wait for it, use another DEDUP_NAMESPACE, or "
                "set DEDUP_CONCURRENT=1 to run beside it anyway; to share one crawl between "
                "processes, run every one with SIMCRAWL_FRONTIER=redis.")
        journal.open()
        warning = durability_warning(client)
        if warning:
            log.warning("dedup: %s", warning)
        recovered = recover(client, config.namespace, pages, index, exclude=journal.owner)
    except BaseException:
        if journal is not None:
            journal.close()
        if services is not None:
            services.stop()
        raise
    deduplicator = on_servers(
        index, client, pages, config.namespace, Rules.from_config(config), journal=journal,
        windows=windows,
        templates=HostTemplates(client, config.namespace, config.template_pages)
        if config.template_pages else None)
    runtime = Wiring(config, deduplicator, pages, index, services,
                      crawler.settings.get("DEDUP_CRAWL_ID") or uuid.uuid4().hex[:12],
                      redact(redis_url), redact(mongo_uri), Extractor(config), client,
                      windows, params, journal)
    runtime.recovered_copies = list(recovered.copies)
    runtime.recovered_owners = list(recovered.dead)
    if recovered.journals:
        crawler.stats.set_value("dedup/recovered/pages_removed", len(recovered.removed))
        log.info("dedup: %s", recovered)
    log.info("dedup: crawl %s; index in %s (namespace %r, %s, k=%d), pages in %s database "
             "%r, %d extraction workers", runtime.crawl_id, runtime.redis_url, config.namespace,
             index.layout.design.name, index.k, runtime.mongo_uri, config.database,
             runtime.extractor.workers)
    return runtime
