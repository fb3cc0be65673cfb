"""How a crawl writes its records: in batches, behind the admission journal's fence.

A crawl process buffers the records of the pages it admits and the copies it drops
(:mod:`dedup.store.records`) and writes them a batch at a time (:meth:`RecordWriter.flush`):

1. **fence**: while the journal's lease is in doubt (the process did not run, or could
   not reach Redis, for longer than its lease), pages a recovery removed meanwhile (it
   took the process for dead) are withdrawn, not stored: out of the index, whatever is
   stored of them deleted, their links never followed;
2. **write**: pages with their fingerprints, then the pages that take over a stored
   page's id (a match turned round, :mod:`dedup.turns`), then the match and excerpt
   records, naming the page that holds a turned original now; a record naming a page a
   recovery removed is not written (its copy is decided again), nor a page's record as a
   copy of itself;
3. the fence again, for a recovery that ran while the batch was being written;
4. **confirm** the stored pages to the journal (a recovery leaves them alone from now);
5. **release** the stored pages' text sketches from Redis, where the index's layout says
   so (the store holds them now).

It knows nothing of Scrapy: what a write did comes back as a :class:`Written`, which the
crawl (``crawler/pipelines.py``) turns into its counters and its frontier's bookkeeping.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from dedup.errors import ServiceUnavailable
from dedup.ids import url_key
from dedup.store import PageRecords
from dedup.store.records import EXCERPT, URL_RULE

log = logging.getLogger(__name__)

Record = dict[str, Any]


@dataclass
class Written:
    """What one :meth:`RecordWriter.flush` did.

    Attributes:
        ok: the batch is written (``False``: a service failed; the batch is kept for the
            next attempt, and ``failure`` says what failed).
        failure: the failure, with ``failed_service`` (``Redis`` or ``MongoDB``), the
            ``stage`` it stopped at (``fence`` or ``write``) and ``said``, the line that
            says so.
        pages, matches, excerpts: records written (a page turned round takes a stored
            page's place: it counts as the match record its old page became).
        settled: the URLs whose records are written (their requests are done).
        withdrawn: URLs of pages withdrawn by the fence (fetched again; their links stay
            unfollowed).
        again: URLs of copies to decide again (their records named a withdrawn page, or a
            page a recovery removed).
        copies_of_lost_pages: of ``again``, the copies of pages a recovery removed.
        self_copies: records dropped because they named their own URL as the original.
    """

    ok: bool = True
    failure: ServiceUnavailable | None = None
    failed_service: str = ""
    stage: str = ""
    said: str = ""
    pages: int = 0
    matches: int = 0
    excerpts: int = 0
    settled: list[str] = field(default_factory=list)
    withdrawn: list[str] = field(default_factory=list)
    again: list[str] = field(default_factory=list)
    copies_of_lost_pages: int = 0
    self_copies: int = 0


class Recoveries(Protocol):
    """What the writer asks of the crawl's recoveries (:mod:`dedup.adapters.journal`
    implements it over Redis: ``LostPages``)."""

    def lost(self, page_ids: Sequence[str]) -> set[str]:
        """The ids among ``page_ids`` that a recovery removed (a match record must not
        name them)."""

    def withdraw(self, pages: PageRecords, index: Any,
                 admitted: dict[str, tuple[int, str] | None]) -> list[str]:
        """Withdraw pages this process admitted that a recovery removed since; returns
        the URLs of the match records that named them (copies to decide again)."""


class RecordWriter:
    """A crawl process's buffer of records and its write protocol (module docstring).

    Records are added from the crawl's thread and written by one :meth:`flush` at a time,
    from any thread.

    Args:
        store: the page store (:class:`dedup.store.PageRecords`).
        index: the near-duplicate index (the fence takes withdrawn pages out of it; the
            release frees sketches where its layout says so).
        journal: the admission journal (``None``: no fence, nothing to confirm).
        recoveries: the pages recoveries removed (:class:`Recoveries`; ``None``: none
            can be, one process alone).
        retry_seconds: how long the crawl retries a failed write (for its message).
        turns: the ledger of turned originals (:mod:`dedup.turns`; ``None``: records
            are named as they were decided).
    """

    def __init__(self, store: PageRecords, index: Any, journal: Any,
                 recoveries: Recoveries | None, retry_seconds: float = 0.0,
                 turns: Any = None) -> None:
        self.retry_seconds = retry_seconds
        self.store = store
        self.index = index
        self.journal = journal
        self.recoveries = recoveries
        self.pages: list[Record] = []
        self.fingerprints: list[Record] = []
        self.matches: list[Record] = []
        self.turned: list[tuple[Record, Record, Record]] = []  # (page, fingerprint, copy)
        self.turns = turns
        self._lock = threading.Lock()  # guards the buffers
        self._flush_lock = threading.Lock()  # one write at a time
        self._unconfirmed: list[str] = []

    def add_page(self, page: Record, fingerprint: Record, turned: Record | None = None
                  ) -> None:
        """Buffer an admitted page's record and its fingerprint's; ``turned``: the page
        takes over the stored page of its id, which becomes this match record
        (:meth:`dedup.store.records.MatchRecord.of_turn`)."""
        with self._lock:
            if turned is not None:
                self.turned.append((page, fingerprint, turned))
                return
            self.pages.append(page)
            self.fingerprints.append(fingerprint)

    def add_match(self, match: Record) -> None:
        """Buffer a match or excerpt record."""
        with self._lock:
            self.matches.append(match)

    def pending(self) -> int:
        """Records buffered (pages and matches)."""
        return len(self.pages) + len(self.matches) + len(self.turned)

    def take(self) -> tuple[list[Record], list[Record]]:
        """Empty the buffer: the pages and match records it held (given up on)."""
        with self._lock:
            pages, matches = self.pages + [p for p, _, _ in self.turned], self.matches
            self.pages, self.fingerprints, self.matches, self.turned = [], [], [], []
        return pages, matches

    def flush(self) -> Written:
        """Write everything buffered (one write at a time); see the module docstring."""
        with self._flush_lock:
            with self._lock:
                pages, fps, matches = self.pages, self.fingerprints, self.matches
                turned = self.turned
                self.pages, self.fingerprints, self.matches, self.turned = [], [], [], []
            done = Written()
            try:
                pages, fps = self._fence(pages, fps, done)
            except ServiceUnavailable as exc:
                self._failed(done, exc, "Redis", "fence", "checking this process's admitted pages "
                             f"against the recoveries failed (its lease is in doubt); "
                             f"retrying: {exc}")
            else:
                if pages or matches or turned:
                    try:
                        self._write(pages, fps, matches, turned, done)
                    except ServiceUnavailable as exc:
                        self._failed(done, exc, "MongoDB", "write", f"writing {len(pages)} pages and "
                                     f"{len(matches)} match records failed; retrying for "
                                     f"up to {self.retry_seconds:.0f} s "
                                     f"(DEDUP_RETRY_SECONDS): {exc}")
            if not done.ok:
                with self._lock:  # kept for the next attempt
                    self.pages[:0], self.fingerprints[:0] = pages, fps
                    self.matches[:0], self.turned[:0] = matches, turned
                return done
            try:  # a recovery that ran while they were being written
                self._fence(pages, fps, done, stored=True)
            except ServiceUnavailable as exc:
                log.debug("checking stored pages against the recoveries failed: %s", exc)
            self._confirm([str(p["_id"]) for p in pages])
            self._release([*fps, *(f for _, f, _ in turned)])
            done.settled = [str(d["url"]) for d in [*pages, *(p for p, _, _ in turned),
                                                    *matches]]
            return done

    @staticmethod
    def _failed(done: Written, exc: ServiceUnavailable, service: str, stage: str,
                said: str) -> None:
        done.ok, done.failure, done.stage, done.said = False, exc, stage, said
        done.failed_service = getattr(exc, "service", "") or service

    def _write(self, pages: list[Record], fps: list[Record], matches: list[Record],
               turned: list[tuple[Record, Record, Record]], done: Written) -> None:
        store = self.store
        store.save_pages(pages, fps)
        # a page an earlier crawl recorded as a copy, admitted now that it changed, is
        # not a copy any more: one verdict per URL
        store.forget_copies(str(p["url"]) for p in pages)
        for page, fp, copy in turned:
            # the stored page it takes over is gone (removed, or its process died before
            # storing it, and its request decides it again): stored as a page of its own
            if not store.turn_round(page, fp, copy):
                store.save_pages([page], [fp])
        if self.turns is not None and matches:  # a turned original is named as it is now
            holders = self.turns.holders({str(m["original_id"]) for m in matches})
            for m in matches:
                if str(m["original_id"]) in holders:
                    m["original_url"], m["original_host"] = holders[str(m["original_id"])]
        unnamed = {str(m["original_id"]) for m in matches if not m.get("original_url")}
        if unnamed:
            named = store.urls_of(unnamed)
            for m in matches:
                if not m.get("original_url") and str(m["original_id"]) in named:
                    url, host, source = named[str(m["original_id"])]
                    m["original_url"], m["original_host"] = url, host
                    if source:
                        m["source"] = source
        # a link the URL rules predicted a copy, fetched after all (a rule dropped) and
        # stored in this same write: the page is the verdict
        admitted = {str(p["url"]) for p in pages}
        kept = [m for m in matches if m["kind"] != URL_RULE or m["url"] not in admitted]
        excerpts = [m for m in kept if m["kind"] == EXCERPT]
        copies = self._without_lost_originals([m for m in kept if m["kind"] != EXCERPT],
                                              done)
        copies = self._without_self_copies(copies, done)
        store.save_matches(copies)
        store.save_excerpts(excerpts)
        # a turned page takes a stored page's place: no page more, one match record more
        done.pages, done.matches = len(pages), len(copies) + len(turned)
        done.excerpts = len(excerpts)

    @staticmethod
    def _without_self_copies(matches: list[Record], done: Written) -> list[Record]:
        """A page is never a copy of itself. A copy decided against a page that another
        process had admitted and not stored yet, whose URL the decision could not read,
        is named only here; when that page is the same URL (its request was fetched
        twice: put back by a recovery while the first fetch was still being stored), the
        URL is stored already and the record is not written."""
        own = [m for m in matches if m.get("original_url")
               and url_key(str(m["original_url"])) == url_key(str(m["url"]))]
        done.self_copies += len(own)
        return [m for m in matches if not any(m is o for o in own)] if own else matches

    def _without_lost_originals(self, matches: list[Record], done: Written) -> list[Record]:
        """Match records naming a page a recovery removed (its process died before storing
        it) are not written: their copies are decided again."""
        if self.recoveries is None:
            return matches
        lost = self.recoveries.lost([str(m["original_id"]) for m in matches])
        if not lost:
            return matches
        again = [str(m["url"]) for m in matches if str(m["original_id"]) in lost]
        done.again.extend(again)
        done.copies_of_lost_pages += len(again)
        return [m for m in matches if str(m["original_id"]) not in lost]

    def _fence(self, pages: list[Record], fps: list[Record], done: Written,
               stored: bool = False) -> tuple[list[Record], list[Record]]:
        """Withdraw the pages a recovery removed (``stored``: after they were written);
        returns the pages and fingerprints to keep. Checked only while the journal's
        lease is in doubt.

        Raises:
            ServiceUnavailable: Redis or the store failed.
        """
        journal = self.journal
        if journal is None or self.recoveries is None or not pages or not journal.in_doubt():
            return pages, fps
        gone = self.recoveries.lost([str(p["_id"]) for p in pages])
        if not gone:
            return pages, fps
        found = {str(d["_id"]): (int(d["simhash"]), str(d.get("checksum", "")))
                 for d in fps if str(d["_id"]) in gone}
        copies = self.recoveries.withdraw(self.store, self.index,
                                          {pid: found.get(pid) for pid in gone})
        done.again.extend(copies)  # their records named a withdrawn page
        urls = [str(p["url"]) for p in pages if str(p["_id"]) in gone]
        done.withdrawn.extend(urls)
        log.warning("withdrew %d pages this process admitted%s: a recovery removed them "
                    "while this process was taken for dead (it did not run for longer "
                    "than its lease); they are fetched again: %s", len(gone),
                    " and stored" if stored else "", ", ".join(urls[:5]))
        return ([p for p in pages if str(p["_id"]) not in gone],
                [d for d in fps if str(d["_id"]) not in gone])

    def _release(self, fps: list[Mapping[str, Any]]) -> None:
        """The stored pages' text sketches leave Redis where the index's layout says so
        (the store holds them now, and a decision that meets one of these pages reads it
        there); kept in Redis if Redis does not answer (it costs memory, not a
        decision)."""
        if not self.index.layout.release_sketches:
            return
        rows = [(int(d["simhash"]), str(d["_id"])) for d in fps
                if d.get("sketch") and not d.get("short")]
        try:
            self.index.release(rows)
        except ServiceUnavailable as exc:
            log.warning("%d stored pages' text sketches stay in Redis: %s", len(rows), exc)

    def _confirm(self, page_ids: list[str]) -> None:
        if self.journal is None:
            return
        ids, self._unconfirmed = self._unconfirmed + page_ids, []
        try:
            self.journal.confirm(ids)
        except ServiceUnavailable as exc:  # stored all the same; confirmed next time
            self._unconfirmed = ids
            log.debug("confirming %d stored pages to the journal failed: %s", len(ids), exc)
