"""What one crawl's components share while it runs, as one explicit object.

:class:`CrawlState` is built by the crawl's factory (:mod:`crawler.wiring`) and handed to
the components that use it, in their ``from_crawler``: the dedup middleware, the storage
pipeline, the shared frontier and the site spider. It holds

- the pages that could not be decided or stored (the crawl exits non-zero, naming them);
- the requests of copies waiting for their match record before they are settled in the
  shared frontier, and the admitted pages waiting for their record before their links
  are queued;
- the skips per minute (for the crawl's summary);
- what recovery at start found (copies to decide again, dead processes' requests);
- whether the storage pipeline closed cleanly.

Requests are settled in the shared frontier through the ``settle`` function the factory
gives it (the frontier's own), so no component holds another.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from crawler.frontier import INFLIGHT_ID


def _settle_nothing(ids: list[str]) -> None:
    """Scrapy's own frontier keeps nothing in flight."""


@dataclass
class CrawlState:
    """The crawl's shared, changing state (see the module docstring)."""

    #: settles in-flight ids in the shared frontier (a no-op without one)
    settle_ids: Callable[[list[str]], None] = _settle_nothing
    #: URLs of pages that could not be decided or stored (the crawl exits non-zero)
    lost: list[str] = field(default_factory=list)
    #: page URL -> the in-flight id of its request, settled once its record is stored
    pending: dict[str, str] = field(default_factory=dict)
    #: page URL -> a Deferred fired when its record is stored (shared frontier: an
    #: admitted page's links are queued only then, see NearDuplicateMiddleware)
    stored_waiters: dict[str, Any] = field(default_factory=dict)
    #: copies whose records named a page a killed crawl never stored: decided again
    #: (the shared frontier queues them; a crawl from the start finds them anyway)
    recovered_copies: list[str] = field(default_factory=list)
    #: dead processes whose journals this process recovered at start (the shared
    #: frontier puts back their requests in flight)
    recovered_owners: list[str] = field(default_factory=list)
    #: "YYYY-MM-DDTHH:MM" (UTC) -> pages skipped in that minute, for reports
    skips_per_minute: dict[str, int] = field(default_factory=dict)
    #: the storage pipeline closed: everything written, the summary too (a crawl forced
    #: out, by a second signal, never gets here: it exits 130)
    closed_cleanly: bool = False
    #: the dedup middleware decides this crawl's pages (it says so when it is built; the
    #: URL rules' gate sends every request when no one would record what it keeps)
    deciding: bool = False
    #: the folder whose disk is full while the crawl waits for room (crawler.disk), for
    #: the live display
    disk_full: str = ""

    def count_skip(self) -> None:
        """A page was skipped now (kept per minute in the crawl's summary)."""
        minute = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M")
        self.skips_per_minute[minute] = self.skips_per_minute.get(minute, 0) + 1

    def settle_request(self, request: Any) -> None:
        """A request whose outcome needs nothing stored (a failure, a skip): settle it in
        the shared frontier, if any."""
        if request is not None:
            self.settle_ids([request.meta.get(INFLIGHT_ID, "")])

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
        if ids:
            self.settle_ids(ids)

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


def _fire(waiter: Any, value: bool) -> None:
    """Fire a Deferred in the reactor thread (the storage pipeline writes in another)."""
    from twisted.internet import reactor

    reactor.callFromThread(waiter.callback, value)  # type: ignore[attr-defined]
