"""The crawl's factory: it builds, once per crawl and from its settings, the objects the
crawl uses (:class:`Parts`): the configuration, the services (external or embedded), the
Redis index, the MongoDB store, the admission journal, the deduplicator, the extraction
workers, the shared frontier when ``SIMCRAWL_FRONTIER=redis``, and the crawl's shared
state (:class:`crawler.state.CrawlState`).

Each component asks for them once, in its ``from_crawler`` (:func:`parts_of`), and keeps
what it uses from its ``__init__`` on, as Scrapy's own components keep the stats and the
settings. The first to ask builds them; they are kept for that crawler only (a weak
mapping, so nothing is set on Scrapy's crawler) and stopped when its engine stops. No
component reads or sets another's attributes: what they share is the
:class:`~crawler.state.CrawlState`, and the frontier's ``settle`` is handed to it here."""

from __future__ import annotations

import logging
import os
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crawler.extraction import Extractor
from crawler.frontier import SharedFrontier, frontier_of
from crawler.logs import quiet_third_party
from crawler.state import CrawlState
from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import open_index, redis_store
from dedup.adapters.journal import AdmissionJournal, live_owners, recover
from dedup.adapters.redis_templates import HostTemplates
from dedup.adapters.redis_url_rules import RedisUrlRules
from dedup.adapters.redis_windows import open_window_index
from dedup.config import DedupConfig
from dedup.decide import Rules
from dedup.deduplicator import Deduplicator
from dedup.errors import ServiceUnavailable, redact
from dedup.index import NearDuplicateIndex
from dedup.index.windows import WindowIndex
from dedup.adapters.servers.services import (
    EmbeddedServices,
    connect_mongo,
    connect_redis,
    durability_warning,
    resolve,
    cut_short,
)
from dedup.setting_names import value
from dedup.adapters.mongo import PageStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


#: Seconds a Redis call waits at most once the crawl has given up on Redis
#: (:meth:`Parts.gave_up`): its goodbyes (the journal's confirmations) are worth a try,
#: not a wait; a round trip of a Redis that answers is a millisecond or so.
CLOSING_TIMEOUT = 0.5


@dataclass
class Parts:
    """The objects one crawl uses, built once (:func:`parts_of`)."""

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
    #: what the components share while the crawl runs
    state: CrawlState = field(default_factory=CrawlState)
    #: the shared frontier (crawler.frontier.SharedFrontier) when SIMCRAWL_FRONTIER=redis
    frontier: Any = None
    #: the namespace's URL rules, shared by its crawls (None: DEDUP_URL_RULES is off)
    urlrules: RedisUrlRules | None = None
    #: the services the crawl has given up on ("Redis", "MongoDB"): it stops
    given_up: set[str] = field(default_factory=set)

    def gave_up(self, services: set[str]) -> None:
        """The crawl gave up on ``services`` (past ``DEDUP_RETRY_SECONDS``) and stops:
        Redis's calls while it closes wait :data:`CLOSING_TIMEOUT` at most each, not
        the client's 5 s (:func:`dedup.adapters.servers.services.cut_short`), and the
        last write does not wait for them."""
        self.given_up |= services
        if "Redis" in services and self.client is not None:
            cut_short(self.client, CLOSING_TIMEOUT)

    def close(self) -> None:
        """Stop the extraction workers, give up the journal's lease, and stop the
        embedded services this crawl started."""
        self.extractor.close()
        if self.journal is not None:
            # every page written: what is settled leaves; after giving up on a service,
            # the next crawl's recovery clears it (not tried against a store that failed)
            if self.state.closed_cleanly and not self.given_up:
                try:
                    self.journal.clear_settled(self.pages, self.index)
                except ServiceUnavailable as exc:  # the next crawl's recovery clears it
                    log.warning("the journal keeps its entries: %s", exc)
            self.journal.close(release="Redis" not in self.given_up)
            self.journal = None
        if self.services is not None:
            self.services.stop()
            self.services = None


#: crawler -> its parts (weak: a crawler that is gone takes its entry with it)
_BUILT: weakref.WeakKeyDictionary[Any, Parts] = weakref.WeakKeyDictionary()


def parts_of(crawler: Crawler) -> Parts:
    """The crawl's :class:`Parts`, built at the first call (see :func:`build`) and
    closed when the crawler's engine stops."""
    parts = _BUILT.get(crawler)
    if parts is None:
        from scrapy import signals

        parts = build(crawler)
        _BUILT[crawler] = parts
        crawler.signals.connect(parts.close, signal=signals.engine_stopped)
    return parts


def built_parts(crawler: Crawler) -> Parts | None:
    """The crawl's :class:`Parts` if any component has asked for them, else ``None``."""
    return _BUILT.get(crawler)


def _reach(config: DedupConfig, redis_url: str, mongo_uri: str) -> tuple[Any, PageStore]:
    """Redis's client and the page store, once both answer: a server that does not is
    tried again, a second apart, for ``DEDUP_START_WAIT`` seconds (said once in the log:
    a server restarting or briefly frozen does not end the crawl at its start).

    Raises:
        ServiceUnavailable: a server still does not answer at the end of the wait.
    """
    deadline = time.monotonic() + config.start_wait
    said = False
    while True:
        try:
            client = connect_redis(redis_url)  # each checked with a ping
            pages = PageStore(connect_mongo(mongo_uri), config.database, redact(mongo_uri),
                              lazy_sizes=True)  # written with the crawl's record
            pages.ensure_indexes()
            return client, pages
        except ServiceUnavailable as exc:
            if time.monotonic() >= deadline:
                raise
            if not said:
                log.warning("dedup: %s; trying again for up to %.0f s (DEDUP_START_WAIT)",
                            exc, config.start_wait)
                said = True
            time.sleep(1.0)


def build(crawler: Crawler) -> Parts:
    """The crawl's :class:`Parts`, built from the crawler's settings.

    Before the first decision it recovers what crawls killed on this namespace left
    half-done (:func:`dedup.adapters.journal.recover`), and it refuses to run beside another live
    crawl on the namespace unless ``DEDUP_CONCURRENT`` is set.

    Raises:
        ValueError: a bad ``DEDUP_*`` setting.
        ServiceUnavailable: Redis or MongoDB cannot be reached (the message names the URL).
        RuntimeError: another crawl is live on the namespace.
    """
    quiet_third_party()
    config = DedupConfig.from_settings(crawler.settings.get)
    extractor = Extractor(config)
    extractor.start()  # the workers start while the services are reached
    redis_url, mongo_uri, services = resolve(config.redis_url or None,
                                             config.mongo_uri or None, config.data_dir)
    journal: AdmissionJournal | None = None
    try:
        client, pages = _reach(config, redis_url, mongo_uri)
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
        journal = AdmissionJournal(client, config.namespace, lease=config.lease_seconds)
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
        extractor.close()
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
    state = CrawlState(recovered_copies=list(recovered.copies),
                       recovered_owners=list(recovered.dead))
    parts = Parts(config, deduplicator, pages, index, services,
                  value("DEDUP_CRAWL_ID", crawler.settings.get) or uuid.uuid4().hex[:12],
                  redact(redis_url), redact(mongo_uri), extractor, client,
                  windows, params, journal, state)
    if config.url_rules:
        parts.urlrules = RedisUrlRules(client, config.namespace, config.url_rules_support,
                                       config.url_rules_confidence, config.url_rules_explore)
    if shared:  # the scheduler Scrapy asks for (crawler.scheduler.Scheduler) is this one
        parts.frontier = SharedFrontier.build(crawler, parts)
        state.settle_ids = parts.frontier.settle
    if recovered.journals:
        crawler.stats.set_value("dedup/recovered/pages_removed", len(recovered.removed))
        log.info("dedup: %s", recovered)
    log.info("simcrawl add-on active (crawler.Addon): crawl %s; index in %s (namespace %r, "
             "%s, k=%d), pages in %s database %r, %d extraction workers", parts.crawl_id,
             parts.redis_url, config.namespace,
             index.layout.design.name, index.k, parts.mongo_uri, config.database,
             parts.extractor.workers)
    from dedup.config import unknown
    from dedup.setting_names import ENVIRONMENT, SETTING

    from scrapy.settings import SETTINGS_PRIORITIES

    from crawler.scrapy_settings import mistyped

    given = [name for name in crawler.settings  # -s NAME=VALUE: a typo of Scrapy's own
             if crawler.settings.getpriority(name) == SETTINGS_PRIORITIES["cmdline"]]
    for line in unknown(crawler.settings, SETTING) + mistyped(given) \
            + unknown(os.environ, ENVIRONMENT):
        log.warning("simcrawl: %s", line)
    return parts
