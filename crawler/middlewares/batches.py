"""Calls gathered from the reactor thread and run in batches in a worker thread
(:class:`Batcher`), and decisions handed out in the order their pages came
(:class:`InOrder`): the decision's batches, for :mod:`crawler.middlewares.near_duplicates`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThread


if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class Batcher:
    """Collect calls from the reactor thread and run them in batches in a worker thread.

    ``submit(x)`` returns a Deferred that fires with ``fn(batch)[i]`` for its item; a batch
    runs when ``size`` items are waiting, or ``wait`` seconds after the first one came, or
    as an item comes when ``alone()`` says no other item is on its way (waiting would
    gather none: a crawl's first page, its last ones, a slow crawl's pages).

    With ``serial``, a batch runs only once the one before it has: the batches are
    decided in the order their items came (else several may run at once, each in a
    thread of the pool).
    """

    def __init__(self, fn: Any, size: int, wait: float, clock: Any = None,
                 run: Any = deferToThread, alone: Any = None, serial: bool = False) -> None:
        self.fn, self.size, self.wait, self.alone = fn, size, wait, alone
        self.serial = serial
        self.pending: list[tuple[Any, Deferred]] = []
        self._call: Any = None
        self._running = False
        #: what schedules the wait (the reactor; a test's clock) and runs a batch (a
        #: thread of the reactor's pool)
        self.clock, self.run = clock, run

    def submit(self, value: Any) -> Deferred:
        d: Deferred = Deferred()
        self.pending.append((value, d))
        if len(self.pending) >= self.size or (self.alone is not None and self.alone()):
            self.flush()
        elif self._call is None:
            clock = self.clock
            if clock is None:
                from twisted.internet import reactor as clock
            self._call = clock.callLater(self.wait, self.flush)
        return d

    def flush(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        if self.serial and self._running:
            return  # the batch running flushes again when it is done
        batch, self.pending = self.pending[:self.size], self.pending[self.size:]
        if not batch:
            return
        self._running = True

        def next_batch() -> None:
            self._running = False
            if self.serial and self.pending:
                self.flush()

        def done(results: list[Any]) -> None:
            next_batch()
            for (_, d), result in zip(batch, results):
                d.callback(result)

        def failed(failure: Any) -> None:
            next_batch()
            for _, d in batch:
                d.errback(failure)

        self.run(self.fn, [v for v, _ in batch]).addCallbacks(done, failed)


class InOrder:
    """Pages asking for their decision in the order they came, whatever each takes to be
    read (for a spider whose order is the record's: :class:`crawler.spiders.warc.WarcSpider`,
    whose files' first page of a text is its original): each page takes a ticket as it
    comes (:meth:`take`), waits for its turn before it joins a batch (:meth:`turn`), and
    passes its turn once it has joined one or will not (:meth:`passed`: every ticket is
    passed, on every way out)."""

    def __init__(self) -> None:
        self._next = 0  # the next ticket to hand out
        self._turn = 0  # the ticket whose turn it is
        self._passed: set[int] = set()  # tickets passed before their turn
        self._waiting: dict[int, Deferred] = {}

    def take(self) -> int:
        ticket, self._next = self._next, self._next + 1
        return ticket

    async def turn(self, ticket: int) -> None:
        if ticket > self._turn:
            d: Deferred = Deferred()
            self._waiting[ticket] = d
            await maybe_deferred_to_future(d)

    def passed(self, ticket: int) -> None:
        if ticket < self._turn:
            return  # passed already
        self._passed.add(ticket)
        while self._turn in self._passed:
            self._passed.discard(self._turn)
            self._turn += 1
        waiter = self._waiting.pop(self._turn, None)
        if waiter is not None:
            waiter.callback(None)
