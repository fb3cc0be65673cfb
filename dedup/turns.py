"""Which page holds an original's id once a match has been turned round.

A copy fetched after its original is kept as the original when the pages say so
(:func:`dedup.decide.turned_round`): it takes over the stored page's id, with its index
entries and its copies, and that page is recorded as its copy. The ledger makes each turn
one atomic step shared by every process of a crawl: a turn is claimed only from the page
that holds the id as the claiming process read it, so two processes never turn the same
original at once, and a process that read an older holder does not turn it again. It also
names the holder of a turned id for the match records of processes that read the older
one (:meth:`TurnLedger.holders`).

:class:`MemoryTurns` keeps it in this process; :class:`dedup.adapters.redis_turns.RedisTurns`
in the crawl's Redis.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TurnClaim:
    """One turn asked for: the page id ``page_id``, held by ``holder`` as the claiming
    process read it, is to be held by ``url`` (on ``host``)."""

    page_id: str
    holder: str
    url: str
    host: str


class TurnLedger(Protocol):
    """What the decision needs of the ledger."""

    def claim(self, claims: Sequence[TurnClaim]) -> list[bool]:
        """Claim each turn in order, atomically each: granted when the id was never
        turned, or when it is held by the claim's ``holder`` (or by its ``url`` already:
        the same turn asked again, after a process died before storing it).

        Raises:
            ServiceUnavailable: the ledger's server failed; nothing was claimed.
        """

    def holders(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``page id -> (url, host)`` of the page holding each turned id among
        ``page_ids``.

        Raises:
            ServiceUnavailable: the ledger's server failed.
        """


class MemoryTurns:
    """The ledger in this process (a dict)."""

    def __init__(self) -> None:
        self.held: dict[str, tuple[str, str]] = {}

    def claim(self, claims: Sequence[TurnClaim]) -> list[bool]:
        """See :meth:`TurnLedger.claim`."""
        out = []
        for c in claims:
            now = self.held.get(c.page_id)
            ok = now is None or now[0] in (c.holder, c.url)
            if ok:
                self.held[c.page_id] = (c.url, c.host)
            out.append(ok)
        return out

    def holders(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """See :meth:`TurnLedger.holders`."""
        return {p: self.held[p] for p in page_ids if p in self.held}
