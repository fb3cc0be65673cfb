"""Living through an outage of Redis or MongoDB: one attempt at a time while a service
fails, a probe, and the crawl stopped past ``DEDUP_RETRY_SECONDS``; waiting without
blocking the reactor."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.python.failure import Failure

from dedup.errors import ServiceUnavailable
from dedup.progress_line import counted

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

log = logging.getLogger(__name__)


#: Seconds between looks of an attempt waiting for an outage's probe.
PROBE_WAIT = 0.1


class Outage:
    """One activity's view of an outage of Redis or MongoDB (deciding pages, writing
    them, the shared frontier: each keeps one). The outage is said once when it starts,
    its failed attempts are counted, and it is said once more, with the count and the
    service that failed, when that service answers again; after ``retry_seconds`` the
    caller gives up (:meth:`failed` returns ``False``), and ``gave_up`` is told which
    services failed (:meth:`crawler.wiring.Parts.gave_up`). Safe from any thread.
    """

    def __init__(self, activity: str, retry_seconds: float, logger: logging.Logger,
                 wait: Callable[[float], Awaitable[Any]] | None = None,
                 gave_up: Callable[[set[str]], None] | None = None,
                 abandoned: set[str] | None = None) -> None:
        self.activity = activity
        self._gave_up = gave_up
        #: the services the crawl has given up on (shared by the crawl's outages, filled
        #: by ``gave_up``: :attr:`crawler.wiring.Parts.given_up`): an outage of one of
        #: them is overdue at once, not ``retry_seconds`` after this activity met it
        self.abandoned = abandoned if abandoned is not None else set()
        self._wait = wait or sleep  # how an attempt waits for the probe (the reactor's)
        self.retry_seconds = retry_seconds
        self.log = logger
        self.since: float | None = None
        self.failing: set[str] = set()  # "Redis", "MongoDB"
        self.failures = 0
        self.gave_up = False
        self._lock = threading.Lock()
        self._probing = False  # an attempt is out while the outage is on
        self._next_probe = 0.0  # no probe from a thread before (claim_probe)
        self.last_error: BaseException | None = None

    @property
    def overdue(self) -> bool:
        """Whether an outage is on and has lasted ``retry_seconds``, or is of a service
        the crawl has given up on already (another activity's outage)."""
        return self.since is not None and (self.lasted >= self.retry_seconds
                                           or bool(self.failing & self.abandoned))

    async def turn(self) -> bool | None:
        """An attempt's turn (in the reactor's thread). While an outage is on, one attempt
        at a time probes the service: the others wait for its outcome instead of each
        holding a thread of the reactor's pool for a client's whole timeout (pymongo's
        server selection: 5 s), and give up as soon as the outage has lasted
        ``retry_seconds``, while the probe may still be waiting.

        Returns:
            ``None``: give up (the outage is overdue); ``True``: this attempt is the
            probe (end it with :meth:`probed`); ``False``: no outage, go on.
        """
        while self.since is not None:
            if self.overdue:
                return None
            if not self._probing:
                self._probing = True
                return True
            await self._wait(PROBE_WAIT)
        return False

    def left(self) -> float | None:
        """Seconds left before an outage that is on is overdue (``None``: none is on)."""
        return None if self.since is None else self.retry_seconds - self.lasted

    def overdue_error(self) -> ServiceUnavailable:
        """What an attempt that gives up without trying (:meth:`turn`) fails with: the
        outage's last failure."""
        exc = self.last_error
        if isinstance(exc, ServiceUnavailable):
            return exc
        return ServiceUnavailable(f"{self.services or 'a service'} failed: {exc}")

    async def awaited(self, attempt: Deferred) -> Any:
        """The probe's ``attempt`` (a Deferred), or :meth:`overdue_error` as soon as the
        outage has lasted ``retry_seconds`` while it waits: a client's timeout (pymongo's
        server selection, 5 s) does not hold the crawl past its limit. The attempt's
        thread is left to end; its outcome is not used."""
        outcome: list[Any] = []
        attempt.addBoth(outcome.append)  # its outcome is kept here, not handed on
        while not outcome:
            if self.overdue:
                raise self.overdue_error()
            await self._wait(PROBE_WAIT)
        if isinstance(outcome[0], Failure):
            outcome[0].raiseException()
        return outcome[0]

    def claim_probe(self, every: float) -> bool:
        """From any thread: whether the caller may probe now (none is out, and none
        began in the last ``every`` seconds); end it with :meth:`probed`. For callers
        that cannot wait their :meth:`turn` in the reactor (the shared frontier's
        synchronous calls)."""
        with self._lock:
            now = time.monotonic()
            if self._probing or now < self._next_probe:
                return False
            self._probing, self._next_probe = True, now + every
            return True

    def probed(self) -> None:
        """The probe's attempt is over (succeeded or failed): the next may go."""
        self._probing = False

    @property
    def services(self) -> str:
        """The services that failed: ``Redis``, ``MongoDB`` or ``MongoDB and Redis``."""
        return " and ".join(sorted(self.failing))

    @property
    def lasted(self) -> float:
        """Seconds since the outage began (0 when there is none)."""
        return 0.0 if self.since is None else time.monotonic() - self.since

    def failed(self, exc: BaseException, service: str, said: str | None = None) -> bool:
        """Count a failed attempt (the first one is logged: ``said``, or "ACTIVITY
        failed; the crawl waits and retries ..."); returns whether to keep trying (the
        outage has lasted less than ``retry_seconds``)."""
        with self._lock:
            first = self.since is None
            if first:
                self.since = time.monotonic()
            self.failing.add(getattr(exc, "service", "") or service)
            self.failures += 1
            self.last_error = exc
        if first:
            self.log.warning("%s", said or (
                f"{self.activity} failed; the crawl waits and retries for up to "
                f"{self.retry_seconds:.0f} s (DEDUP_RETRY_SECONDS): {exc}"))
        return not self.overdue

    def answered(self, then: str) -> None:
        """An attempt succeeded: if an outage was on, say it is over and ``then`` what
        goes on."""
        if self.since is None:
            return
        with self._lock:
            if self.since is None:
                return
            took, failures = time.monotonic() - self.since, self.failures
            services = self.services
            self.since, self.failing, self.failures = None, set(), 0
            self.gave_up = False
        self.log.warning("%s %s again after %.1f s (%s failed); %s", services,
                         "answer" if " and " in services else "answers", took,
                         counted(failures, "attempt"), then)

    def give_up(self, exc: Any, lost: str) -> None:
        """Say (once) that the outage lasted past ``retry_seconds`` and what is
        ``lost``."""
        with self._lock:
            if self.gave_up:
                return
            self.gave_up = True
            failing = set(self.failing)
        services = " and ".join(sorted(failing))
        why = ("DEDUP_RETRY_SECONDS" if self.lasted >= self.retry_seconds
               else "the crawl gave up on it")
        self.log.error("%s %s failed for %.0f s (%s); stopping the crawl (%s): %s",
                       services, "have" if " and " in services else "has", self.lasted,
                       why, lost, exc)
        if self._gave_up is not None:
            self._gave_up(failing)


async def sleep(seconds: float) -> None:
    """Wait without blocking the reactor."""
    from twisted.internet import reactor, task

    await maybe_deferred_to_future(task.deferLater(reactor, seconds, lambda: None))
