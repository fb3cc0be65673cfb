"""The near-duplicate decision, before any outlink of a page is scheduled (a spider
middleware)."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future

from crawler.extraction import Extractor
from crawler.frontier import INFLIGHT_ID
from crawler.items import FrontierReceipt, PageItem, page_item_of
from crawler.metrics import metrics_port, page_decided
from crawler.middlewares.batches import Batcher, InOrder
from crawler.state import CrawlState
from crawler.extraction import fingerprint_item
from crawler.outage import Outage, sleep
from crawler.skips import page_skipped, skip_reason
from crawler.stopping import stop_crawl
from crawler.rule_learning import RuleLearning, predicted_records
from crawler.wiring import parts_of
from dedup.config import DedupConfig, config_value
from dedup.decide import EXACT, NEW, PINYIN, TEMPLATE_ONLY, UNCHANGED, Decision, Excerpt
from dedup.deduplicator import Deduplicator
from dedup.errors import ServiceUnavailable
from dedup.adapters.mongo import time_limit
from dedup.store.records import MatchRecord

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


#: Why a page was not decided (it counts as lost, not skipped).
LOST = "lost"


def dedup_enabled(settings: Any) -> bool:
    """Whether the crawl decides pages: ``DEDUP_ENABLED`` and the dedup middleware among
    its spider middlewares (a spider that yields its pages, like the site spider, then
    leaves their links to it)."""
    if not config_value("DEDUP_ENABLED", settings.get):
        return False
    from scrapy.utils.misc import load_object

    for name, order in settings.getwithbase("SPIDER_MIDDLEWARES").items():
        cls = load_object(name) if isinstance(name, str) else name
        if cls is NearDuplicateMiddleware:
            return order is not None
    return False


class NearDuplicateMiddleware:
    """Drop near-duplicate pages and their outlinks (a spider middleware).

    It sees a response's whole output: it reads the page's main text
    (:mod:`crawler.extraction`: simcrawl's reading, or trafilatura's), fingerprints it,
    and decides it with the other pages in flight, one batch in one step of the shared
    index (:mod:`dedup.deduplicator`). For an exact or near
    copy it drops the page item and every request the page yielded and emits a
    :class:`~dedup.store.records.MatchRecord` instead; otherwise it passes everything on.

    Settings: DEDUP_ENABLED, DEDUP_MAX_DISTANCE, DEDUP_MIN_TOKENS, DEDUP_DEBUG and the rest
    of :class:`dedup.config.DedupConfig`; REDIS_URL, MONGO_URI.
    """

    def __init__(self, crawler: Crawler, config: DedupConfig, deduplicator: Deduplicator,
                 extractor: Extractor, state: CrawlState,
                 learning: RuleLearning | None = None,
                 gave_up: Callable[[set[str]], None] | None = None,
                 abandoned: set[str] | None = None) -> None:
        self.crawler = crawler
        #: what each decision tells the URL rules (None: DEDUP_URL_RULES is off)
        self.learning = learning
        self.stats = crawler.stats
        self.config = config
        self.extractor = extractor
        self.state = state
        self._first_drop_logged = False
        self._decision_failed = False
        self.outage = Outage("deciding pages", config.retry_seconds, log, gave_up=gave_up,
                             abandoned=abandoned)
        #: pages being read (extracted) now: each will ask for a decision soon
        self._reading = 0
        self.deduplicator = deduplicator
        #: the responses whose callback's output process_spider_output reads now (ids)
        self._outputs_read: set[int] = set()
        #: page URL -> the records of the links held for it, decided with its batch
        self._held: dict[str, list[MatchRecord]] = {}
        #: a spider whose order is the record's has its pages decided in that order
        spider = getattr(crawler, "spider", None)
        self._in_order = InOrder() if getattr(spider, "decide_in_order", False) else None
        if self._in_order is not None:  # and each batch's pages decided in its order
            deduplicator.in_order = True
        self.batcher = Batcher(self._decide_batch, config.batch_size, config.batch_wait,
                               alone=self._alone, serial=self._in_order is not None)
        # each decision's latency goes to the metrics (a signal), when they are served
        self._timed = bool(metrics_port(crawler.settings))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NearDuplicateMiddleware:
        if not dedup_enabled(crawler.settings):
            raise NotConfigured("DEDUP_ENABLED is off")
        parts = parts_of(crawler)
        learning = RuleLearning(parts.urlrules, crawler.stats) if parts.urlrules else None
        parts.state.deciding = True
        return cls(crawler, parts.config, parts.deduplicator, parts.extractor, parts.state,
                   learning, gave_up=parts.gave_up, abandoned=parts.given_up)

    def _decide_batch(self, items: list[PageItem]) -> list[Decision]:
        """Decide a batch (in a worker thread); the URL rules then learn from it in the
        same thread, and the records of the links held for its pages are kept for them."""
        with time_limit(self.outage.left()):  # a probe during an outage: by its limit
            decisions = self.deduplicator.decide(items)
        if self.learning is not None:
            self._held.update(self.learning.learn([
                (item.url, d.page_id or "", (d.original_url or None, d.original_id or None)
                 if d.dropped else None)
                for item, d in zip(items, decisions) if d.dropped or d.kind == NEW]))
        return decisions

    async def _decide(self, item: PageItem) -> Decision | str:
        """Extract and fingerprint off the reactor thread, then decide together with the
        other pages in flight (one batch: one MongoDB query and one Redis script)."""
        started = time.monotonic()
        outcome = await self._extract_and_decide(item)
        if self._timed and isinstance(outcome, Decision):
            self.crawler.signals.send_catch_log(page_decided,
                                                seconds=time.monotonic() - started)
        return outcome

    def _alone(self) -> bool:
        """Whether no other page is on its way to a decision: none being read, none being
        downloaded (its batch then runs at once: waiting would gather no page)."""
        if self._reading:
            return False
        engine = getattr(self.crawler, "engine", None)
        downloader = getattr(engine, "downloader", None)
        return downloader is not None and not downloader.active

    async def _extract_and_decide(self, item: PageItem) -> Decision | str:
        order = self._in_order
        ticket = order.take() if order is not None else None
        try:
            return await self._read_and_decide(item, ticket)
        finally:
            if order is not None and ticket is not None:
                order.passed(ticket)  # on every way out (passing it twice is harmless)

    async def _read_and_decide(self, item: PageItem, ticket: int | None) -> Decision | str:
        self._reading += 1
        try:
            reason = await fingerprint_item(item, self.extractor)
        finally:
            self._reading -= 1
        if reason is not None:
            return reason
        delay = 0.25
        outage = self.outage
        while True:
            probe: bool | None = False
            try:
                order = self._in_order
                if order is not None and ticket is not None:
                    await order.turn(ticket)  # the pages before it joined a batch
                probe = await outage.turn()  # during an outage, one page at a time asks
                if probe is None:
                    raise outage.overdue_error()
                asked = self.batcher.submit(item)
                if order is not None and ticket is not None:
                    order.passed(ticket)
                decision = await (outage.awaited(asked) if probe
                                  else maybe_deferred_to_future(asked))
            except ServiceUnavailable as exc:
                self.stats.inc_value("dedup/retries/decide")
                if probe is None or not outage.failed(exc, "Redis or MongoDB"):
                    outage.give_up(exc, "pages not decided are lost and named at the end")
                    stop_crawl(self.crawler, "service_unavailable")
                    return LOST
                await sleep(delay)
                delay = min(delay * 2, 8.0)
                continue
            except Exception as exc:  # noqa: BLE001 - not an outage: a bug, or a store's refusal
                self._failed(item, exc)
                return LOST
            finally:
                if probe:
                    outage.probed()
            self.outage.answered("deciding pages again")
            if decision.kind == TEMPLATE_ONLY:
                return TEMPLATE_ONLY  # a skip: nothing but the site's own text
            if item.template_lines:  # its fingerprints are the rest's (what the index holds)
                self.stats.inc_value("dedup/template_lines_left_out", item.template_lines)
            return decision

    def _failed(self, item: PageItem, exc: Exception) -> None:
        """A decision failed for a reason that is not an outage (a store refusing the
        crawl, a bug): whatever failed would fail every page after it, so the crawl stops
        as it does past an outage's limit; the page counts as lost and is named at the
        end (exit status 1), and the pages not yet fetched are left for the next crawl.
        Said once, with the traceback; the others are counted."""
        self.stats.inc_value("dedup/errors/decide")
        if not self._decision_failed:
            self._decision_failed = True
            log.error("deciding %s failed (%s: %s); stopping the crawl (pages not decided "
                      "are lost and named at the end)", item.url, type(exc).__name__, exc,
                      exc_info=exc)
            stop_crawl(self.crawler, "decision_failed")

    def _excerpt_record(self, page: PageItem, excerpt: Excerpt) -> MatchRecord:
        """The excerpt record of a kept page that quotes a registered original."""
        self.stats.inc_value("dedup/excerpt")
        if excerpt.source:
            self.stats.inc_value(f"dedup/excerpts_of/{excerpt.source}")
        return MatchRecord.of_excerpt(excerpt, page)

    async def process_spider_output(self, response: scrapy.http.Response,
                                    result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # while the callback's output is read here, a failure in it comes to
        # process_spider_exception and the reading ends: this method goes on
        self._outputs_read.add(id(response))
        try:
            outputs = [o async for o in result]
        finally:
            self._outputs_read.discard(id(response))
        inflight = response.request.meta.get(INFLIGHT_ID, "") if response.request else ""
        records = predicted_records(response)
        if records is not None:  # a request not sent: a predicted copy, or held
            self.state.count_skip()
            for o in records:
                yield o
            if inflight:
                yield FrontierReceipt(inflight)
            return
        page = next((o for o in outputs if isinstance(o, PageItem)), None)
        if page is None and self._judges(response):  # a project's spider (the add-on)
            page = page_item_of(response)
        if page is None:
            for o in outputs:
                yield o
            if inflight:
                yield FrontierReceipt(inflight)
            return
        requests = [o for o in outputs if isinstance(o, scrapy.Request)]
        others = [o for o in outputs if o is not page and not isinstance(o, scrapy.Request)]
        reason = skip_reason(page, isinstance(response, scrapy.http.HtmlResponse),
                             self.config.max_body)
        if reason is None:
            if self.learning is not None:
                self.learning.expect(response.request, page.url)
            outcome = await self._decide(page)
            reason = outcome if isinstance(outcome, str) else None
        page.body = b""
        if reason == LOST:  # not decided: neither stored nor followed; it stays in flight
            self.stats.inc_value("dedup/lost/undecided")
            self.state.lost.append(page.url)
            return
        if reason is not None:
            self.stats.inc_value(f"dedup/skipped/{reason}")
            self.state.count_skip()
            log.debug("skipped %s: %s", page.url, reason)
            self.crawler.signals.send_catch_log(page_skipped, response=response,
                                                reason=reason)
            requests += self._follow(page, response, reason)
            for o in [*others, *requests]:
                yield o
            if inflight:
                yield FrontierReceipt(inflight)
            return
        assert isinstance(outcome, Decision)
        held = self._held.pop(page.url, [])  # links held for it: now its copies
        others += held
        if inflight and outcome.dropped:
            self.state.pending[page.url] = inflight  # settled once its record is stored
        page.page_id, page.decision = outcome.page_id, outcome.kind
        if outcome.dropped:
            spider = self.crawler.spider
            dropped = len(requests) + len(spider.in_scope(self._links(page, response, None))
                                          if self._worker_links(spider) else [])
            kind = {EXACT: "exact_duplicate", PINYIN: "pinyin_copy"}.get(
                outcome.kind, "near_duplicate")
            self.stats.inc_value(f"dedup/{kind}")
            if outcome.source:
                self.stats.inc_value(f"dedup/copies_of/{outcome.source}")
            self.stats.inc_value("dedup/outlinks_dropped", dropped)
            match = MatchRecord.of_copy(outcome, page, dropped)
            msg = "dropped %s: %s copy of %s (page %s), %s, %d outlinks dropped"
            args = (page.url, outcome.kind, outcome.original_url, outcome.original_id,
                    match.measure(), dropped)
            if not self._first_drop_logged:
                self._first_drop_logged = True
                log.info(msg + " (further drops are logged at DEBUG with DEDUP_DEBUG)", *args)
            elif self.config.debug:
                log.info(msg, *args)
            yield match
            for o in held:
                yield o
            return
        if outcome.kind == NEW:
            self.stats.inc_value("dedup/unique")
            if outcome.turn is not None:  # kept as the original of the page stored first
                page.turned = outcome.turn
                self.stats.inc_value(f"dedup/turned/{outcome.turn.reason}")
            if outcome.excerpt is not None:  # kept, quoting a registered original
                others.append(self._excerpt_record(page, outcome.excerpt))
        else:
            self.stats.inc_value("dedup/revisit")
            self.stats.inc_value(f"dedup/revisit/{'unchanged' if outcome.kind == UNCHANGED else 'changed'}")
        if not inflight:  # one process: the page, then its links
            yield page
            for o in [*others, *self._follow(page, response, None), *requests]:
                yield o
            return
        # A shared crawl queues an admitted page's links only once its record is stored
        # (a process killed before then has the page taken out of the index and decided
        # again, perhaps as a copy, whose links must never have been queued), and
        # settles its request only after that (the receipt comes after the links; a kill
        # in between puts the request back, and the page, now a revisit, queues them).
        stored = self.state.when_stored(page.url) if outcome.kind == NEW else None
        yield page
        if stored is not None and not await maybe_deferred_to_future(stored):
            return  # the record is lost: neither followed nor settled (recovery redoes it)
        for o in [*others, *self._follow(page, response, None), *requests]:
            yield o
        yield FrontierReceipt(inflight)

    def process_spider_exception(self, response: scrapy.http.Response, exception: Exception
                                 ) -> list[MatchRecord] | None:
        """A response whose callback failed, or that failed before it (an HTTP error status
        of a request without an errback): it yields nothing more, so its request is settled
        in the shared frontier now (the exception goes on as Scrapy handles it). The empty
        response of a request not sent (a project's callback may fail on it) gives its
        match record all the same."""
        if response.request is not None:
            self.state.settle_request(response.request)
        records = predicted_records(response)
        if records is None:
            return None
        if id(response) in self._outputs_read:
            # the callback failed while process_spider_output read its output (a
            # project's callback on the empty response): that method, which goes on,
            # gives the record (given here too, each was stored twice)
            return []
        self.state.count_skip()
        return records

    def _judges(self, response: scrapy.http.Response) -> bool:
        """Whether a response of a spider that does not yield its pages as PageItems (a
        project's own spider, under the add-on) is read and decided here: an HTML
        response its request did not exempt (``meta={"dont_dedup": True}``)."""
        return (isinstance(response, scrapy.http.HtmlResponse)
                and not getattr(self.crawler.spider, "yields_pages", False)
                and not response.meta.get("dont_dedup"))

    @staticmethod
    def _worker_links(spider: Any) -> bool:
        """Whether the spider leaves each page's links to this middleware: a spider that
        yields its pages as PageItems (the site spider: ``yields_pages``, with ``follow``,
        ``links_of`` and ``in_scope``) does so whenever the middleware runs; the links are
        then read in the extraction workers and followed only for pages that are not
        copies."""
        return bool(getattr(spider, "yields_pages", False))

    def _links(self, page: PageItem, response: scrapy.http.Response,
               reason: str | None) -> list[str]:
        """The links of a page the spider left to the extraction worker (none for pages
        that are not HTML or are binary; parsed here when the worker failed)."""
        if page.encoding is None or reason == "binary":
            return []
        if page.links is not None:
            return page.links
        return self.crawler.spider.links_of(response)  # type: ignore[no-any-return]

    def _follow(self, page: PageItem, response: scrapy.http.Response,
                reason: str | None) -> list[scrapy.Request]:
        """Requests for the links of a page that is not a copy (built only now, after the
        decision: a copy's links never become requests)."""
        spider = self.crawler.spider
        if not self._worker_links(spider):
            return []  # the spider yielded its own requests
        return spider.follow(self._links(page, response, reason),  # type: ignore[no-any-return]
                             page.url, page.depth)
