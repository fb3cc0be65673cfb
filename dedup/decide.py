"""The crawl decision for a batch of fetched pages: revisit, exact copy, near copy, or new.

Order of the checks (docs/design.md, The decision):

1. **Revisit**: the URL is stored already (a re-crawl): compared with its own stored
   checksum, *unchanged* or *changed*; never a duplicate of itself.
2. **Exact copy**: the normalised text's checksum is registered to another page. Only
   admitted pages register their text (short texts with an atomic ``HSETNX``, which
   is their whole decision; others once the near check admitted them), so an exact copy
   never names a page that was itself dropped.
3. **Pinyin copy**: a Chinese page whose pinyin windows cover a registered original
   (:class:`~dedup.index.windows.WindowIndex`: share of windows or a run of them); only
   when the deduplicator has a window index.
4. **Near copy**: the simhash is within k bits of an admitted page (the index's atomic
   check-and-add). Short texts skip this step (exact matches only).
5. Otherwise the page is **new** and admitted.

The module holds no Scrapy code: the crawler's middleware calls :meth:`Deduplicator.decide`
off the reactor thread and reports through Scrapy's stats.
"""

from __future__ import annotations

import datetime as dt
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from .errors import ServiceUnavailable
from .index import NearDuplicateIndex
from .index.windows import WindowIndex
from .journal import AdmissionJournal, JournalEntry, journaled
from .pinyin import PinyinFingerprint, PinyinScore
from .simhash import fingerprint, hamming
from .store import PageStore, new_page_id, url_key

#: Recently admitted pages whose URL a process remembers for its match records.
KNOWN_PAGES = 100_000

#: Words per feature of the second-opinion simhash (``DEDUP_VERIFY_DISTANCE``).
VERIFY_SHINGLE = 2


def second_opinion(text: str, drop_numbers: bool, min_tokens: int, cjk_ngram: int) -> int:
    """The second-opinion simhash of a text (features: :data:`VERIFY_SHINGLE` words)."""
    return fingerprint(text, shingle=VERIFY_SHINGLE, drop_numbers=drop_numbers,
                       min_tokens=min_tokens, cjk_ngram=cjk_ngram).simhash

#: Decision kinds.
NEW, EXACT, NEAR, PINYIN, UNCHANGED, CHANGED = ("new", "exact", "simhash", "pinyin",
                                                "unchanged", "changed")


@dataclass
class Candidate:
    """A fetched page, fingerprinted.

    Attributes:
        url: the page's URL (after redirects).
        host: its host (``netloc``).
        checksum: 32 hex digits (the normalised text's XXH3-128).
        simhash: the 64-bit fingerprint.
        short: below the minimum size (matched by checksum only).
        pinyin: the pinyin fingerprint of a Chinese page (``None``: not computed).
        verify: the second-opinion simhash on word pairs (``None``: not computed).
        page_id: assigned by :meth:`Deduplicator.decide`.
    """

    url: str
    host: str
    checksum: str
    simhash: int
    short: bool
    pinyin: PinyinFingerprint | None = None
    verify: int | None = None
    page_id: str = field(default_factory=new_page_id)


@dataclass
class Decision:
    """What to do with a page.

    Attributes:
        kind: ``new``, ``exact``, ``simhash`` (near copy), ``pinyin`` (copy of a
            registered original by pinyin windows), ``unchanged`` or ``changed``.
        page_id: the page's id (for a revisit: the stored page's id).
        original_id: the page it copies (exact / near copies).
        distance: Hamming distance to the original (0 for exact copies).
        original_url: the original's URL when known.
        original_host: the original's host when known.
        source: the registered original's source name, when the original is one.
        pinyin: for a pinyin copy, the share of windows, run and span.
    """

    kind: str
    page_id: str
    original_id: str | None = None
    distance: int = 0
    original_url: str | None = None
    original_host: str | None = None
    source: str | None = None
    pinyin: PinyinScore | None = None

    @property
    def dropped(self) -> bool:
        """Whether the page is a copy (its item and outlinks are dropped)."""
        return self.kind in (EXACT, NEAR, PINYIN)


def checksum_key(namespace: str, checksum: str) -> tuple[str, bytes]:
    """Where a text checksum (32 hex digits) is registered: ``({ns}:sum:{first 4 digits},
    the other 14 bytes)``; the value is the page id."""
    return f"{namespace}:sum:{checksum[:4]}", bytes.fromhex(checksum[4:])


def register_checksums(client: redis.Redis, namespace: str,
                       pairs: Iterable[tuple[str, str]], batch: int = 5000) -> int:
    """Register ``(checksum, page id)`` pairs (``HSETNX``: the first page keeps a text);
    returns how many were new. Used by ``rebuild-index``."""
    added, pipe = 0, client.pipeline(transaction=False)
    for n, (checksum, page_id) in enumerate(pairs, 1):
        key, field_ = checksum_key(namespace, checksum)
        pipe.hsetnx(key, field_, page_id)
        if n % batch == 0:
            added += sum(pipe.execute())
    added += sum(pipe.execute())
    return added


class Deduplicator:
    """Decide batches of pages against the shared index, checksum registry and store.

    Args:
        index: the near-duplicate index (its store holds the simhash tables).
        redis_client: for the checksum registry (``{namespace}:sum:{bucket}`` hashes).
        pages: the MongoDB page store (revisits; originals' URLs).
        namespace: the Redis key prefix (the index's).
        windows: the registered originals' pinyin window index (``None``: no pinyin
            check).
        verify_distance: a near match stands only if the pages' second-opinion
            simhashes (:attr:`Candidate.verify`) are within this distance too, when both
            are known (``None``: no second opinion).
        journal: this process's admission journal (:mod:`dedup.journal`), so that a
            kill before the admitted pages are stored can be repaired.
    """

    def __init__(self, index: NearDuplicateIndex, redis_client: redis.Redis, pages: PageStore,
                 namespace: str, windows: WindowIndex | None = None,
                 verify_distance: int | None = None, journal: AdmissionJournal | None = None
                 ) -> None:
        self.index = index
        self.journal = journal
        self.windows = windows
        self.verify_distance = verify_distance
        # page id -> second-opinion simhash of recent admissions here
        self._verifiers: OrderedDict[str, int] = OrderedDict()
        self.redis = redis_client
        self.pages = pages
        self.namespace = namespace
        # page id -> (url, host) of recent admissions here (their pages may not be stored
        # yet); older ones are looked up in the store.
        self._known: OrderedDict[str, tuple[str, str, str | None]] = OrderedDict()

    def _sum_key(self, checksum: str) -> tuple[str, bytes]:
        return checksum_key(self.namespace, checksum)

    def decide(self, batch: Sequence[Candidate]) -> list[Decision]:
        """Decide each page of ``batch`` (in order; later pages see earlier admissions).

        With a journal, every page that may be admitted is journaled before any admission
        step runs, and pages that turn out to be copies leave it again; the caller
        confirms admitted pages once they are stored (:mod:`dedup.journal`).

        A text's checksum is registered only once its page is admitted, so an exact copy
        always names an admitted page. Pages of one batch with the same text follow the
        first of them: its exact copies if it is admitted, copies of what it copies if
        it is not.

        Deciding a batch again after a failure is safe: a page already admitted under its
        own id is admitted, not taken for a copy of itself.

        Raises:
            ServiceUnavailable: Redis or MongoDB failed; the batch may be decided again.
        """
        decisions: list[Decision | None] = [None] * len(batch)
        stored = self.pages.stored_urls([c.url for c in batch])
        rest: list[int] = []
        leader: dict[str, int] = {}  # a long text's checksum -> its first row
        followers: dict[int, int] = {}
        for i, c in enumerate(batch):
            if c.url in stored:
                page_id, checksum = stored[c.url]
                decisions[i] = Decision(UNCHANGED if checksum == c.checksum else CHANGED,
                                        page_id)
            elif not c.short and c.checksum in leader:
                followers[i] = leader[c.checksum]
            else:
                if not c.short:
                    leader[c.checksum] = i
                rest.append(i)
        try:
            pipe = self.redis.pipeline(transaction=False)
            if self.journal is not None:
                self.journal.record(pipe, (JournalEntry(
                    batch[i].page_id, batch[i].simhash, batch[i].checksum, batch[i].url,
                    batch[i].host, batch[i].verify) for i in rest))
            for i in rest:
                key, field_ = self._sum_key(batch[i].checksum)
                if batch[i].short:  # short texts: the registry is the whole decision
                    pipe.hsetnx(key, field_, batch[i].page_id)
                pipe.hget(key, field_)
            replies = pipe.execute()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed during the checksum check: {exc}") from exc
        replies = replies[1:] if self.journal is not None and rest else replies
        near_rows, at = [], 0
        for i in rest:
            if batch[i].short:
                at += 1  # the HSETNX reply
            owner = replies[at]
            at += 1
            owner_id = owner.decode() if owner is not None else None
            if owner_id is not None and owner_id != batch[i].page_id:
                decisions[i] = Decision(EXACT, batch[i].page_id, owner_id, 0)
            elif batch[i].short:
                decisions[i] = Decision(NEW, batch[i].page_id)
            else:
                near_rows.append(i)
        if self.windows is not None:
            chinese = [i for i in near_rows if batch[i].pinyin is not None
                       and batch[i].pinyin.codes]  # type: ignore[union-attr]
            found = self.windows.query_many(batch[i].pinyin for i in chinese)  # type: ignore[misc]
            for i, copies in zip(chinese, found):
                if copies:
                    original, s = copies[0]
                    decisions[i] = Decision(PINYIN, batch[i].page_id, original, 0, pinyin=s)
            near_rows = [i for i in near_rows if decisions[i] is None]
        candidates = self.index.check_and_add_all(
            [(batch[i].simhash, batch[i].page_id) for i in near_rows])
        matches = self._second_opinion(batch, near_rows, candidates)
        rejected = {i for i, found, m in zip(near_rows, candidates, matches)
                    if found and m is None}
        if rejected:  # not copies after all: admitted, so into the index
            self.index.add_many((batch[i].simhash, batch[i].page_id) for i in rejected)
        ids = {c.page_id: n for n, c in enumerate(batch)}
        for i, match in zip(near_rows, matches):
            if match is None:
                decisions[i] = Decision(NEW, batch[i].page_id)
            elif match.distance == 0 and match.page_id in ids \
                    and batch[ids[match.page_id]].checksum == batch[i].checksum:
                decisions[i] = Decision(EXACT, batch[i].page_id, match.page_id, 0)
            else:
                decisions[i] = Decision(NEAR, batch[i].page_id, match.page_id, match.distance)
        for i, first in followers.items():
            d = decisions[first]
            assert d is not None
            if d.dropped:  # a copy of a copy is a copy of the same original
                decisions[i] = Decision(d.kind, batch[i].page_id, d.original_id, d.distance,
                                        pinyin=d.pinyin)
            else:
                decisions[i] = Decision(EXACT, batch[i].page_id, batch[first].page_id, 0)
        admitted = [i for i in rest if decisions[i].kind == NEW  # type: ignore[union-attr]
                    and not batch[i].short]
        dropped_ids = [batch[i].page_id for i in rest
                       if decisions[i].dropped]  # type: ignore[union-attr]
        try:
            pipe = self.redis.pipeline(transaction=False)
            for i in admitted:  # the text is now an admitted page's: register it
                key, field_ = self._sum_key(batch[i].checksum)
                pipe.hsetnx(key, field_, batch[i].page_id)
            if self.journal is not None:
                self.journal.forget(pipe, dropped_ids)
            pipe.execute()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while registering checksums: {exc}"
                                     ) from exc
        out = [d for d in decisions if d is not None]
        assert len(out) == len(batch)
        for c, d in zip(batch, out):
            if d.kind == NEW:
                self._known[d.page_id] = (c.url, c.host, None)
                if c.verify is not None:
                    self._verifiers[d.page_id] = c.verify
        for recent in (self._known, self._verifiers):
            while len(recent) > KNOWN_PAGES:
                recent.popitem(last=False)
        self._name_originals(out)
        return out

    def _second_opinion(self, batch: Sequence[Candidate], rows: list[int],
                        candidates: Sequence[list[Any]]) -> list[Any]:
        """For each row, the match it copies: the closest of its candidates within k
        whose second-opinion simhash is within ``verify_distance`` too (each is asked in
        turn, closest first); ``None`` when it has none or every one is rejected. Without
        a second opinion (or without the page's), the closest candidate."""
        if self.verify_distance is None:
            return [found[0] if found else None for found in candidates]
        local = {c.page_id: c.verify for c in batch if c.verify is not None}
        wanted = {m.page_id for i, found in zip(rows, candidates)
                  if batch[i].verify is not None for m in found}
        for pid in wanted - set(local):
            if pid in self._verifiers:
                local[pid] = self._verifiers[pid]
        missing = {pid for pid in wanted if pid is not None and pid not in local}
        if missing:  # stored, or admitted by another process and not stored yet
            local.update(self.pages.verifiers_of(missing))
            local.update({pid: e.verify for pid, e in journaled(
                self.redis, self.namespace, missing - set(local)).items()
                if e.verify is not None})
        out = []
        for i, found in zip(rows, candidates):
            own = batch[i].verify
            if own is None or not found:
                out.append(found[0] if found else None)
                continue
            out.append(next((m for m in found if m.page_id not in local
                             or hamming(local[m.page_id], own) <= self.verify_distance),
                            None))
        return out

    def _name_originals(self, decisions: list[Decision]) -> None:
        """Give each copy its original's URL and host: from this process's recent
        admissions, the store, or (admitted by another process of a shared crawl and not
        stored yet) that process's journal; the store once more for a page stored and
        confirmed between the two reads."""
        missing = {d.original_id for d in decisions
                   if d.original_id and d.original_id not in self._known}
        if missing:
            self._known.update(self.pages.urls_of(missing))
            missing -= set(self._known)
        if missing:
            self._known.update({pid: (e.url, e.host, None) for pid, e in journaled(
                self.redis, self.namespace, missing).items() if e.url})
            missing -= set(self._known)
        if missing:
            self._known.update(self.pages.urls_of(missing))
        for d in decisions:
            if d.original_id and d.original_id in self._known:
                d.original_url, d.original_host, d.source = self._known[d.original_id]


def page_document(c: Candidate, **fields_: Any) -> dict[str, Any]:
    """A ``pages`` document for an admitted page (url, host, checksum and the given
    fields; ``fetched_at`` defaults to now)."""
    doc = {"_id": c.page_id, "url": c.url, "url_key": url_key(c.url), "host": c.host,
           "checksum": c.checksum, "fetched_at": dt.datetime.now(dt.timezone.utc)}
    doc.update(fields_)
    return doc
