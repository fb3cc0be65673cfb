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

import numpy as np
import redis

from .errors import ServiceUnavailable
from .index import NearDuplicateIndex
from .index.windows import WindowIndex
from .journal import AdmissionJournal, JournalEntry, journaled
from .overlap import containment, shared_text, shingles
from .pinyin import PinyinFingerprint, PinyinScore
from .simhash import (
    DEFAULT_CJK_NGRAM,
    DEFAULT_DROP_NUMBERS,
    DEFAULT_MIN_TOKENS,
    fingerprint,
    hamming,
)
from .store import PageStore, new_page_id, url_key
from .templates import HostTemplates, block_keys, strip

#: Recently admitted pages whose URL a process remembers for its match records.
KNOWN_PAGES = 100_000

#: Characters of recently admitted pages' texts a process keeps for the text check of
#: near matches (older originals' texts are read from the store).
RECENT_TEXT_CHARS = 32_000_000

#: A page is a copy of a registered original found by its pinyin windows when this share
#: of its text is the original's (``DEDUP_MAIN_CONTENT``): the original is its main
#: content. Less is a quotation: the page is kept and an excerpt recorded.
DEFAULT_MAIN_CONTENT = 0.5

#: The shortest passage (characters) of a page recorded as an excerpt of a registered
#: original.
EXCERPT_CHARS = 30

#: Originals whose shingles a process keeps for their next copies.
RECENT_SHINGLES = 4096

#: A candidate within this distance whose second opinion agrees is a copy by its
#: fingerprints (``DEDUP_TRUST_DISTANCE``); the others need the text check.
DEFAULT_TRUST_DISTANCE = 3

#: Words per feature of the second-opinion simhash (``DEDUP_VERIFY_DISTANCE``).
VERIFY_SHINGLE = 2


def second_opinion(text: str, drop_numbers: bool = DEFAULT_DROP_NUMBERS,
                   min_tokens: int = DEFAULT_MIN_TOKENS, cjk_ngram: int = DEFAULT_CJK_NGRAM
                   ) -> int:
    """The second-opinion simhash of a text (features: :data:`VERIFY_SHINGLE` words)."""
    return fingerprint(text, shingle=VERIFY_SHINGLE, drop_numbers=drop_numbers,
                       min_tokens=min_tokens, cjk_ngram=cjk_ngram).simhash

#: Decision kinds.
NEW, EXACT, NEAR, PINYIN, UNCHANGED, CHANGED = ("new", "exact", "simhash", "pinyin",
                                                "unchanged", "changed")
#: A page whose text is all its host's template text: not fingerprinted, not admitted.
TEMPLATE_ONLY = "template_only"


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
        text: the main text, for the text check of near matches (``None``: not given;
            the page's near matches are then judged by their fingerprints alone).
        canonical: the URL the page declares as its canonical version (``rel=canonical``
            or ``og:url``), if any.
        blocks: the keys of the text's lines (:func:`dedup.templates.block_keys`; the
            crawler computes them in its extraction workers), else computed by
            :meth:`Deduplicator.decide` when it has a template learner.
        template_lines: lines left out of the fingerprints as the host's template text
            (then ``simhash``, ``verify`` and ``text`` are the rest's); ``templated``:
            done (a batch decided again is not stripped twice).
    """

    url: str
    host: str
    checksum: str
    simhash: int
    short: bool
    pinyin: PinyinFingerprint | None = None
    verify: int | None = None
    page_id: str = field(default_factory=new_page_id)
    text: str | None = field(default=None, repr=False)
    canonical: str | None = None
    blocks: list[int | None] | None = field(default=None, repr=False)
    template_lines: int = 0
    templated: bool = field(default=False, repr=False)


@dataclass
class Excerpt:
    """A passage of a kept page that is a registered original's (a quotation).

    Attributes:
        original_id: the registered original.
        characters: length of the longest passage of the page that is the original's.
        span: its ``(start, end)`` character offsets in the page's normalised text.
        share: the share of the page's text that is the original's.
        pinyin: the pinyin windows' score against the original.
        original_url, original_host, source: the original's, when known.
    """

    original_id: str
    characters: int
    span: tuple[int, int]
    share: float
    pinyin: PinyinScore | None = None
    original_url: str | None = None
    original_host: str | None = None
    source: str | None = None


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
        containment: for a near copy judged by its text, the share of the shorter text's
            three-token shingles found in the other (``None``: judged by fingerprints);
            for a pinyin copy, the share of the page's shingles that are the original's.
        excerpt: for a page that is kept but quotes a registered original, which one and
            how much (:class:`Excerpt`).
        canonical_link: for a copy, ``declared`` when the copy declares its original
            canonical (that page was preferred among the candidates), ``reversed`` when
            the original, fetched first, declares the copy canonical: the copy is the
            canonical version, but the page stored first stays the original.
    """

    kind: str
    page_id: str
    original_id: str | None = None
    distance: int = 0
    original_url: str | None = None
    original_host: str | None = None
    source: str | None = None
    pinyin: PinyinScore | None = None
    containment: float | None = None
    excerpt: Excerpt | None = None
    canonical_link: str | None = None

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
        verify_distance: a near match judged by fingerprints stands only if the pages'
            second-opinion simhashes (:attr:`Candidate.verify`) are within this distance
            too, when both are known (``None``: no second opinion).
        journal: this process's admission journal (:mod:`dedup.journal`), so that a
            kill before the admitted pages are stored can be repaired.
        verify_containment: the text check. A candidate within the index's k that the
            fingerprints do not settle (beyond ``trust_distance``, or its second opinion
            disagrees) is a copy when both texts are at hand (this batch, this process's
            recent admissions, or the store's ``text``) and this share of the shorter
            text's shingles is in the other (:mod:`dedup.overlap`); ``None``: no text
            check, such candidates are not copies.
        trust_distance: a candidate within this distance whose second opinion agrees
            is a copy without the text check.
        templates: the hosts' learned template text (:mod:`dedup.templates`): left out of
            each page's fingerprints; admitted pages teach it (``None``: off).
        fingerprint_options: ``shingle``, ``drop_numbers``, ``min_tokens`` and
            ``cjk_ngram`` of the crawl's fingerprints, to fingerprint a page again without
            its template lines (default: the library's defaults).
        main_content: a Chinese page is a copy of a registered original its pinyin
            windows found when this share of its text (three-character shingles) is the
            original's; smaller overlaps of at least :data:`EXCERPT_CHARS` characters are
            excerpts: the page is kept (:attr:`Decision.excerpt`).
    """

    def __init__(self, index: NearDuplicateIndex, redis_client: redis.Redis, pages: PageStore,
                 namespace: str, windows: WindowIndex | None = None,
                 verify_distance: int | None = None, journal: AdmissionJournal | None = None,
                 verify_containment: float | None = None,
                 trust_distance: int = DEFAULT_TRUST_DISTANCE,
                 main_content: float = DEFAULT_MAIN_CONTENT,
                 templates: HostTemplates | None = None,
                 fingerprint_options: dict[str, Any] | None = None) -> None:
        self.index = index
        self.journal = journal
        self.windows = windows
        self.verify_distance = verify_distance
        self.verify_containment = verify_containment
        self.trust_distance = trust_distance
        self.main_content = main_content
        self.templates = templates
        self.fingerprint_options = dict(fingerprint_options or {})
        # page id -> text of recent admissions here, at most RECENT_TEXT_CHARS in all
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._text_chars = 0
        self._shingles: OrderedDict[str, np.ndarray] = OrderedDict()  # of recent originals
        self._canonicals: OrderedDict[str, str] = OrderedDict()  # page id -> declared (url_key)
        self._declared: dict[int, str] = {}  # this batch: row -> its declared canonical's id
        self._keys: OrderedDict[str, str] = OrderedDict()  # url_key -> id of recent admissions
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
        if self.templates is not None:
            self._leave_out_templates(batch, rest, decisions)
            rest = [i for i in rest if decisions[i] is None]
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
        excerpts: dict[int, Excerpt] = {}
        if self.windows is not None:
            chinese = [i for i in near_rows if batch[i].pinyin is not None
                       and batch[i].pinyin.codes]  # type: ignore[union-attr]
            scored = self.windows.scored_many(batch[i].pinyin for i in chinese)  # type: ignore[misc]
            texts = self._shingles_for(batch, {p for found in scored for p, _ in found})
            for i, found in zip(chinese, scored):
                copy, quoted = self._registered(batch[i], found, texts)
                if copy is not None:
                    decisions[i] = copy
                elif quoted is not None:
                    excerpts[i] = quoted
            near_rows = [i for i in near_rows if decisions[i] is None]
        candidates = self.index.check_and_add_all(
            [(batch[i].simhash, batch[i].page_id) for i in near_rows])
        candidates = self._canonical_first(batch, near_rows, candidates)
        matches = self._second_opinion(batch, near_rows, candidates)
        rejected = {i for i, found, m in zip(near_rows, candidates, matches)
                    if found and m is None}
        if rejected:  # not copies after all: admitted, so into the index
            self.index.add_many((batch[i].simhash, batch[i].page_id) for i in rejected)
        ids = {c.page_id: n for n, c in enumerate(batch)}
        for i, verdict in zip(near_rows, matches):
            if verdict is None:
                decisions[i] = Decision(NEW, batch[i].page_id, excerpt=excerpts.get(i))
                continue
            match, share = verdict
            if match.distance == 0 and match.page_id in ids \
                    and batch[ids[match.page_id]].checksum == batch[i].checksum:
                decisions[i] = Decision(EXACT, batch[i].page_id, match.page_id, 0)
            else:
                decisions[i] = Decision(
                    NEAR, batch[i].page_id, match.page_id, match.distance, containment=share,
                    canonical_link="declared" if self._declared.get(i) == match.page_id
                    else None)
        for i, first in followers.items():
            d = decisions[first]
            assert d is not None
            if d.kind == TEMPLATE_ONLY:
                decisions[i] = Decision(TEMPLATE_ONLY, batch[i].page_id)
            elif d.dropped:  # a copy of a copy is a copy of the same original
                decisions[i] = Decision(d.kind, batch[i].page_id, d.original_id, d.distance,
                                        pinyin=d.pinyin)
            else:
                decisions[i] = Decision(EXACT, batch[i].page_id, batch[first].page_id, 0)
        admitted = [i for i in rest if decisions[i].kind == NEW  # type: ignore[union-attr]
                    and not batch[i].short]
        if self.templates is not None:  # admitted pages teach their host's template
            self.templates.learn((batch[i].host, batch[i].blocks or []) for i in admitted)
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
        self._mark_reversed(batch, out)
        for c, d in zip(batch, out):
            if d.kind == NEW:
                self._known[d.page_id] = (c.url, c.host, None)
                self._canonicals[d.page_id] = url_key(c.canonical) if c.canonical else ""
                self._keys[url_key(c.url)] = d.page_id
                if c.verify is not None:
                    self._verifiers[d.page_id] = c.verify
                if c.text and self.verify_containment is not None and not c.short:
                    self._texts[d.page_id] = c.text
                    self._text_chars += len(c.text)
        for recent in (self._known, self._verifiers, self._canonicals, self._keys):
            while len(recent) > KNOWN_PAGES:
                recent.popitem(last=False)
        while self._text_chars > RECENT_TEXT_CHARS:
            self._text_chars -= len(self._texts.popitem(last=False)[1])
        self._name_originals(out)
        return out

    def _leave_out_templates(self, batch: Sequence[Candidate], rows: list[int],
                             decisions: list[Decision | None]) -> None:
        """Leave each page's host template lines out of its fingerprints (in place), and
        decide pages that are nothing else :data:`TEMPLATE_ONLY` (see
        :mod:`dedup.templates`). A page done once (a batch decided again) is left as is."""
        assert self.templates is not None
        todo = [i for i in rows if batch[i].text and not batch[i].short
                and not batch[i].templated]
        if not todo:
            return
        known = self.templates.known(batch[i].host for i in todo)
        for i in todo:
            c = batch[i]
            c.templated = True
            if c.blocks is None:
                c.blocks = block_keys(c.text or "")
            template = known.get(c.host)
            if not template:
                continue
            rest, removed = strip(c.text or "", c.blocks, template)
            if not removed:
                continue
            fp = fingerprint(rest, **self.fingerprint_options)
            if fp.short:  # (almost) nothing but the site's own text
                decisions[i] = Decision(TEMPLATE_ONLY, c.page_id)
                continue
            c.simhash, c.text, c.template_lines = fp.simhash, rest, removed
            if c.verify is not None:
                c.verify = second_opinion(rest, **{k: v for k, v in
                                                   self.fingerprint_options.items()
                                                   if k != "shingle"})

    def _canonical_first(self, batch: Sequence[Candidate], rows: list[int],
                         candidates: list[list[Any]]) -> list[list[Any]]:
        """Put first, among each page's candidates, the stored page it declares canonical
        (when that page is a candidate: a declaration alone makes no copy)."""
        self._declared = {}
        wanted: dict[int, tuple[str, str]] = {}  # row -> (declared URL, its url_key)
        for i, found in zip(rows, candidates):
            declared = batch[i].canonical
            if found and declared and url_key(declared) != url_key(batch[i].url):
                wanted[i] = (declared, url_key(declared))
        if not wanted:
            return candidates
        stored = self.pages.stored_urls(u for u, key in wanted.values() if key not in self._keys)
        out = []
        for i, found in zip(rows, candidates):
            pid = None
            if i in wanted:
                declared, key = wanted[i]
                pid = self._keys.get(key) or (stored[declared][0] if declared in stored
                                              else None)
            if pid is not None and any(m.page_id == pid for m in found):
                self._declared[i] = pid
                found = sorted(found, key=lambda m: m.page_id != pid)  # stable otherwise
            out.append(found)
        return out

    def _mark_reversed(self, batch: Sequence[Candidate], decisions: list[Decision]) -> None:
        """A copy whose original declares the copy's URL canonical: the original was
        fetched first and stays the original; the record says so (``reversed``)."""
        copies = [(c, d, d.original_id) for c, d in zip(batch, decisions)
                  if d.kind in (EXACT, NEAR) and d.original_id and not d.canonical_link]
        missing = {pid for _, _, pid in copies if pid and pid not in self._canonicals}
        if missing:  # "" for a page that declares none: asked once
            found = self.pages.canonicals_of(missing)
            self._canonicals.update({pid: url_key(found[pid]) if pid in found else ""
                                     for pid in missing})
        for c, d, pid in copies:
            if pid and self._canonicals.get(pid) == url_key(c.url):
                d.canonical_link = "reversed"

    def _registered(self, page: Candidate, found: list[tuple[str, PinyinScore]],
                    originals: dict[str, np.ndarray]) -> tuple[Decision | None, Excerpt | None]:
        """Whether a Chinese page copies a registered original its pinyin windows found
        (most matching windows first): a copy when the original is the page's main
        content (``main_content`` of its text, or ``min_share`` of its windows); else an
        excerpt when a passage of at least :data:`EXCERPT_CHARS` characters is the
        original's (or, without the texts, a run of windows)."""
        assert self.windows is not None
        quoted: Excerpt | None = None
        for original, s in found:
            if page.text and original in originals:
                share, chars, span = shared_text(page.text, originals[original])
                if share >= self.main_content or s.share >= self.windows.min_share:
                    return Decision(PINYIN, page.page_id, original, 0, pinyin=s,
                                    containment=round(share, 4)), None
                if quoted is None and chars >= EXCERPT_CHARS:
                    quoted = Excerpt(original, chars, span, round(share, 4), s)
            elif s.share >= self.windows.min_share:
                return Decision(PINYIN, page.page_id, original, 0, pinyin=s), None
            elif quoted is None and s.run >= self.windows.min_run:
                quoted = Excerpt(original, s.span[1] - s.span[0] + 1, s.span,
                                 round(s.share, 4), s)
        return None, quoted

    def _second_opinion(self, batch: Sequence[Candidate], rows: list[int],
                        candidates: Sequence[list[Any]]) -> list[tuple[Any, float | None] | None]:
        """For each row, the match it copies and the texts' containment (``None`` when
        judged by fingerprints), or ``None`` when no candidate passes. Candidates are asked
        in turn, closest first:

        * within ``trust_distance``, with its second-opinion simhash within
          ``verify_distance`` (when both pages have one), it is the original;
        * otherwise, when both texts are at hand and the text check is on, it is the
          original when the texts' containment reaches ``verify_containment``.
        """
        wanted = {m.page_id for i, found in zip(rows, candidates) for m in found
                  if m.page_id is not None}
        verifiers = self._verifiers_of(batch, rows, wanted)
        unsure = {m.page_id for i, found in zip(rows, candidates) for m in found
                  if m.page_id is not None and not self._trusted(batch[i], m, verifiers)}
        theirs = self._shingles_for(batch, unsure) if self.verify_containment is not None \
            and any(batch[i].text for i in rows) else {}
        own: dict[int, np.ndarray] = {}
        out: list[tuple[Any, float | None] | None] = []
        for i, found in zip(rows, candidates):
            page = batch[i]
            chosen: tuple[Any, float | None] | None = None
            for m in found:
                if self._trusted(page, m, verifiers):
                    chosen = (m, None)
                    break
                if not page.text or m.page_id not in theirs:
                    continue
                if i not in own:
                    own[i] = shingles(page.text)
                share = containment(own[i], theirs[m.page_id])
                if share >= self.verify_containment:  # type: ignore[operator]
                    chosen = (m, round(share, 4))
                    break
            out.append(chosen)
        return out

    def _trusted(self, page: Candidate, m: Any, verifiers: dict[str, int]) -> bool:
        """Whether candidate ``m`` is the original by fingerprints alone: within the trust
        distance, and its second opinion agrees when both pages have one."""
        if m.distance > self.trust_distance:
            return False
        return self.verify_distance is None or page.verify is None \
            or m.page_id not in verifiers \
            or hamming(verifiers[m.page_id], page.verify) <= self.verify_distance

    def _shingles_for(self, batch: Sequence[Candidate], wanted: set[str]
                      ) -> dict[str, np.ndarray]:
        """The shingles of the pages ``wanted`` whose text is at hand: kept from an earlier
        batch (the 4,096 originals asked last), else from this batch's texts, this
        process's recent admissions' or the store's (read once, then kept)."""
        out: dict[str, np.ndarray] = {}
        for pid in wanted & self._shingles.keys():
            self._shingles.move_to_end(pid)
            out[pid] = self._shingles[pid]
        rest = wanted - out.keys()
        texts = {c.page_id: c.text for c in batch if c.text and c.page_id in rest}
        texts.update({p: self._texts[p] for p in rest - texts.keys() if p in self._texts})
        if rest - texts.keys():
            texts.update(self.pages.texts_of(rest - texts.keys()))
        for pid, text in texts.items():
            out[pid] = self._shingles[pid] = shingles(text)  # type: ignore[arg-type]
        while len(self._shingles) > RECENT_SHINGLES:
            self._shingles.popitem(last=False)
        return out

    def _verifiers_of(self, batch: Sequence[Candidate], rows: list[int], wanted: set[str]
                      ) -> dict[str, int]:
        """The second-opinion simhashes of the candidates ``wanted``: this batch's, this
        process's recent admissions', the store's, or another process's journal."""
        if self.verify_distance is None or not any(batch[i].verify is not None for i in rows):
            return {}
        local = {c.page_id: c.verify for c in batch if c.verify is not None}
        for pid in wanted - set(local):
            if pid in self._verifiers:
                local[pid] = self._verifiers[pid]
        missing = wanted - set(local)
        if missing:  # stored, or admitted by another process and not stored yet
            local.update(self.pages.verifiers_of(missing))
            local.update({pid: e.verify for pid, e in journaled(
                self.redis, self.namespace, missing - set(local)).items()
                if e.verify is not None})
        return local  # type: ignore[return-value]

    def _name_originals(self, decisions: list[Decision]) -> None:
        """Give each copy (and excerpt) its original's URL and host: from this process's recent
        admissions, the store, or (admitted by another process of a shared crawl and not
        stored yet) that process's journal; the store once more for a page stored and
        confirmed between the two reads."""
        wanted = {d.original_id for d in decisions if d.original_id} | {
            d.excerpt.original_id for d in decisions if d.excerpt is not None}
        missing = {p for p in wanted if p not in self._known}
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
            if d.excerpt is not None and d.excerpt.original_id in self._known:
                e = d.excerpt
                e.original_url, e.original_host, e.source = self._known[e.original_id]


def page_document(c: Candidate, **fields_: Any) -> dict[str, Any]:
    """A ``pages`` document for an admitted page (url, host, checksum and the given
    fields; ``fetched_at`` defaults to now)."""
    doc = {"_id": c.page_id, "url": c.url, "url_key": url_key(c.url), "host": c.host,
           "checksum": c.checksum, "fetched_at": dt.datetime.now(dt.timezone.utc)}
    doc.update(fields_)
    return doc
