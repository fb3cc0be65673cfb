"""The near-duplicate index over a sharded store: admission by numbered pending entries.

:class:`ShardedIndex` is :class:`~dedup.index.core.NearDuplicateIndex` with the
admission of :mod:`dedup.adapters.redis_cluster`'s protocol instead of one atomic script:
a page is written as pending, numbered, probed, and then admitted or withdrawn. The
decision sees the same candidates as on one node (every admitted page, and every page
numbered before it that is not settled yet), so the crawl's rules run unchanged; what
changes is that a page that turns out to be a copy must be withdrawn
(:meth:`ShardedIndex.withdraw`, which the deduplicator calls for every copy).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence

from dedup.adapters.redis_cluster import POLL_S, UNNUMBERED, ClusterStore
from dedup.errors import ServiceUnavailable
from dedup.index.core import Match, NearDuplicateIndex, anchors_of, check_fingerprint, check_page_id
from dedup.index.layout import IndexMismatchError

log = logging.getLogger(__name__)

#: Times a page whose lease ran out before it settled is decided again before the batch
#: fails (and the caller retries it).
ATTEMPTS = 3

#: Times a page whose chosen original did not stay is offered again (each time, the
#: pending pages it meets are fewer: one of them stays).
OFFERS = 8


class ShardedIndex(NearDuplicateIndex):
    """A :class:`NearDuplicateIndex` on a :class:`ClusterStore` (same arguments)."""

    store: ClusterStore

    def __init__(self, store: ClusterStore, k: int | None = None, **kwargs: object) -> None:
        if store.read_layout() is None and store.legacy_layout() is not None:
            raise IndexMismatchError(
                f"the index in {store.describe()} was written by an earlier simcrawl in one "
                f"hash slot ({store.namespace}:*); this one spreads it over the cluster's "
                "slots. Run simcrawl rebuild-index to build it from MongoDB.")
        super().__init__(store, k, **kwargs)  # type: ignore[arg-type]
        # (fingerprint, page id) -> (number, anchors) of this process's unsettled pages
        self._pending: dict[tuple[int, str], tuple[int, list[int]]] = {}
        self.met_pending = 0  # candidates met while pending (numbered, not settled)
        self.waits = 0  # times a decision waited for a candidate to number or settle
        self.reaped = 0  # marks of dead processes removed

    # ---------------------------------------------------------------- admission
    def _decide(self, pairs: Sequence[tuple[int, str, bytes | None]], attempts: int,
                judged: Sequence[Mapping[int, int]] | None = None) -> list[list[Match]]:
        rows = list(pairs)
        if len(rows) > self.batch_size:  # one pipeline per batch, in order
            out: list[list[Match]] = []
            for at in range(0, len(rows), self.batch_size):
                out += self._decide(rows[at:at + self.batch_size], attempts,
                                    judged[at:at + self.batch_size] if judged else None)
            return out
        return self._decide_batch(rows, judged)

    def _decide_batch(self, rows: list[tuple[int, str, bytes | None]],
                      judged: Sequence[Mapping[int, int]] | None) -> list[list[Match]]:
        anchors = [anchors_of(sketch) for _, _, sketch in rows]
        out: list[list[Match] | None] = [None] * len(rows)
        todo = list(range(len(rows)))
        for _ in range(ATTEMPTS):
            start = [i for i in todo if rows[i][:2] not in self._pending]
            fresh = self.store.begin([(*rows[i], anchors[i]) for i in start])
            for i, new in zip(start, fresh):
                if not new:
                    out[i] = []  # admitted by an earlier try whose reply was lost
            started = [i for i, new in zip(start, fresh) if new]
            probed = [i for i in todo if out[i] is None]  # numbered now, or before
            seqs, probes = self.store.number_and_probe(
                [rows[i][:2] for i in started], [rows[i][0] for i in probed],
                [anchors[i] for i in probed], self.k)
            for i, seq in zip(started, seqs):
                if seq is not None:
                    self._pending[rows[i][:2]] = (seq, anchors[i])
            live = [i for i in probed if rows[i][:2] in self._pending]
            found = self._candidates([rows[i] for i in live], dict(zip(probed, probes)), live)
            ready = []
            for i, matches in zip(live, found):
                if judged is None:
                    ok = not matches
                else:
                    ok = _only_judged(matches, judged[i])
                if ok:
                    ready.append(i)
                else:
                    out[i] = matches  # the caller judges them, and admits or withdraws
            settled = self.store.admit([(rows[i][0], rows[i][1],
                                         self._pending[rows[i][:2]][0]) for i in ready])
            for i, ok in zip(ready, settled):
                self._pending.pop(rows[i][:2], None)
                if ok:
                    out[i] = []
            todo = [i for i in todo if out[i] is None]
            if not todo:
                break
        if todo:
            raise ServiceUnavailable(
                f"{len(todo)} pages could not be settled within their lease "
                f"({self.store.lease_ms} ms) {ATTEMPTS} times: this process decides slower "
                "than the lease allows (a loaded machine or a slow Redis)", service="Redis")
        return [m if m is not None else [] for m in out]

    def _candidates(self, rows: Sequence[tuple[int, str, bytes | None]],
                    probes: Mapping[int, dict[int, tuple[int, int]]], at: Sequence[int]
                    ) -> list[list[Match]]:
        """Each pending row's candidates: admitted pages, and pages numbered before it
        and not settled yet, within k or through its anchors (``probes``: what the
        store's probe found for row ``at[j]``); unnumbered ones waited for, and those
        whose lease ran out removed."""
        if not rows:
            return []
        found = [probes[i] for i in at]
        fps = list(dict.fromkeys(f for row in found for f in row))
        entries = dict(zip(fps, self.store.read(fps)))
        while True:
            waiting: set[int] = set()
            dead: dict[tuple[int, str], tuple[int, str, int, list[int]]] = {}
            out = []
            order: dict[tuple[int, str], int] = {}
            for (fp, pid, _), row in zip(rows, found):
                seq = self._pending[(fp, pid)][0]
                matches = []
                for other, (_, d) in row.items():
                    entry = entries[other]
                    for r in entry.records:
                        if other == fp and r.page_id == pid:
                            continue  # this page itself
                        if r.state is not None and r.lease_end < entry.now:
                            dead[(other, r.page_id)] = (other, r.page_id, r.seq,
                                                        anchors_of(r.sketch))
                        elif r.state == UNNUMBERED:
                            waiting.add(other)
                        elif r.state is None or r.seq < seq:
                            matches.append(Match(other, r.page_id, d, r.sketch))
                            order[(other, r.page_id)] = r.seq if r.state is not None else 0
                            if r.state is not None:
                                self.met_pending += 1
                # closest first; at one distance admitted pages first, then pending ones in
                # the order they were numbered (the first of them is the likeliest to stay)
                matches.sort(key=lambda m: (m.distance, order[(m.fingerprint, m.page_id or "")],
                                            m.fingerprint))
                out.append(matches)
            if dead:
                self.reaped += self.store.withdraw(list(dead.values()), expired_only=True)
            if not waiting:
                return self._resolved(out)
            self.waits += len(waiting)
            time.sleep(POLL_S)
            again = list(waiting)
            entries.update(zip(again, self.store.read(again)))

    def check_and_add_many(self, items: Iterable[tuple[int, str]]) -> list[Match | None]:
        """As :meth:`NearDuplicateIndex.check_and_add_many`: a page with a match is
        withdrawn (nothing stays stored for it), and a page whose closest match was a
        page not settled yet that then did not stay is offered again."""
        rows = list(items)
        out: list[Match | None] = [None] * len(rows)
        todo = list(range(len(rows)))
        for _ in range(OFFERS):
            found = self.check_and_add_all([rows[i] for i in todo])
            self.withdraw((rows[i][0], rows[i][1]) for i, f in zip(todo, found) if f)
            copies = [(i, f[0]) for i, f in zip(todo, found) if f]
            stayed = self.confirm([m for _, m in copies])
            for (i, m), ok in zip(copies, stayed):
                out[i] = m if ok else None
            todo = [i for (i, _), ok in zip(copies, stayed) if not ok]
            if not todo:
                return out
        raise ServiceUnavailable(
            f"{len(todo)} pages chose originals that did not stay, {OFFERS} times in a row: "
            "processes keep dying mid-decision", service="Redis")

    def confirm(self, originals: Sequence[Match]) -> list[bool]:
        """Whether each chosen original stays: read again now (one round trip; the crawl
        decides from several threads, so what one of them saw pending says nothing of
        another's), an admitted one is ``True``; one still pending is waited for until it
        is admitted, or withdrawn or dead (``False``: the page that chose it is decided
        again). Called once the caller's own pages are settled, so that nobody waits for
        a process that waits."""
        out = [True] * len(originals)
        waiting = {i: m for i, m in enumerate(originals) if m.page_id is not None}
        while waiting:
            rows = list(waiting.items())
            for (i, m), entry in zip(rows, self.store.read([m.fingerprint for _, m in rows])):
                r = next((r for r in entry.records if r.page_id == m.page_id), None)
                if r is None or (r.state is not None and r.lease_end < entry.now):
                    out[i] = False
                elif r.state is not None:
                    continue
                del waiting[i]
            if waiting:
                self.waits += 1
                time.sleep(POLL_S)
        return out

    def add_many(self, items: Iterable[tuple[int, str] | tuple[int, str, bytes | None]],
                 progress: object = None, stored: bool = False) -> int:
        """As :meth:`NearDuplicateIndex.add_many`; a page of this process still pending
        is admitted by it."""
        rows = list(items)
        for it in rows:
            self._pending.pop((it[0], it[1]), None)
        return super().add_many(rows, progress, stored)  # type: ignore[arg-type]

    def withdraw(self, items: Iterable[tuple[int, str]]) -> int:
        """Withdraw this process's pending pages among ``items`` (``(fingerprint, page
        id)`` of pages judged copies): their entries and records go. Returns how many."""
        rows = []
        for fp, pid in items:
            key = (check_fingerprint(fp), check_page_id(pid))
            if key in self._pending:
                seq, anchors = self._pending.pop(key)
                rows.append((key[0], key[1], seq, anchors))
        return self.store.withdraw(rows) if rows else 0


def _only_judged(matches: Sequence[Match], judged: Mapping[int, int]) -> bool:
    """Whether a page's candidates are those judged, each with as many text sketches as
    when it was judged (a page admitted under the fingerprint since, or a copy attached to
    it, is judged again)."""
    counts: dict[int, int] = {}
    for m in matches:
        if m.fingerprint not in judged:
            return False
        counts[m.fingerprint] = counts.get(m.fingerprint, 0) + (1 if m.sketch else 0)
    return all(counts.get(fp, 0) == n for fp, n in judged.items() if fp in counts)
