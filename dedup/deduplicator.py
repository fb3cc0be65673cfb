"""The crawl's decision for a batch of fetched pages, over its evidence's stores.

:class:`Deduplicator` gathers the evidence a batch needs and applies the rules of
:mod:`dedup.decide`: it holds no client. The stores come in through small interfaces,
each with an in-memory implementation and one on the servers:

* the near-duplicate index (:class:`dedup.index.NearDuplicateIndex` over
  :class:`~dedup.index.MemoryStore` or :class:`~dedup.adapters.redis_index.RedisStore`): the atomic
  check-and-add of the simhash tables;
* the exact-copy registry (:mod:`dedup.registry`): who owns a text;
* the page facts (:mod:`dedup.facts`): stored URLs, and the candidates' URLs, texts,
  canonicals and second opinions;
* optionally the hosts' learned template text (:mod:`dedup.templates`) and the registered
  originals' pinyin windows (:mod:`dedup.index.windows`).

:func:`in_memory` builds one on memory stores (no server): what ``simcrawl scan``
(:func:`dedup.reading.decide_read`) and the benchmarks use. The crawl wires the same class to Redis and MongoDB
(``crawler/wiring.py``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dedup.decide import (
    EXACT,
    NEAR,
    NEW,
    Decision,
    Excerpt,
    Rules,
    choose_original,
    declared_first,
    exact_or_next,
    follow,
    kept_verdict,
    leave_out_template,
    near_or_new,
    registered,
    revisit,
    turn,
    turned_round,
)
from dedup.errors import ServiceUnavailable
from dedup.facts import CopyVerdict, MemoryFacts, PageFacts
from dedup.ids import url_key
from dedup.index import Match, MemoryStore, NearDuplicateIndex
from dedup.index.windows import WindowIndex
from dedup.overlap import shingles
from dedup.page import Page
from dedup.registry import ChecksumRegistry, Claim, MemoryRegistry
from dedup.sketch import TextSketch, shingle_values
from dedup.templates import MemoryTemplates, TemplateStore, lesson
from dedup.turns import MemoryTurns, TurnClaim, TurnLedger

log = logging.getLogger(__name__)

#: Recently admitted pages whose URL a process remembers for its match records.
KNOWN_PAGES = 100_000

#: Characters of recently admitted pages' texts a process keeps for the text check of
#: near matches (older originals' texts are read from the page facts).
RECENT_TEXT_CHARS = 32_000_000

#: Rounds in a row in which none of a batch's waiting pages is settled (admitted, or found
#: to copy a new candidate) before they are admitted regardless. Each new candidate met
#: meanwhile is judged first. A round with progress does not count: pages of one batch
#: that meet each other (articles sharing phrases, found through their text anchors) are
#: admitted one a round, however many there are.
ADMIT_ROUNDS = 4

#: Times a batch's pages whose chosen original did not stay (a page pending in a sharded
#: index that was withdrawn, or whose process died) are decided again in a row.
REDO_DEPTH = 8

#: Originals whose shingles a process keeps for their next copies.
RECENT_SHINGLES = 4096


class Deduplicator:
    """Decide batches of pages against the index, the checksum registry and the facts.

    Args:
        index: the near-duplicate index.
        registry: the exact-copy registry (:mod:`dedup.registry`).
        facts: what is known of admitted pages (:mod:`dedup.facts`).
        rules: the decision's thresholds (:class:`dedup.decide.Rules`).
        windows: the registered originals' pinyin window index (``None``: no pinyin
            check).
        templates: the hosts' learned template text: left out of each page's
            fingerprints; admitted pages teach it (``None``: off).
        turns: the ledger of originals' ids taken over by a match turned round
            (:mod:`dedup.turns`; a :class:`~dedup.turns.MemoryTurns` when not given).
        in_order: decide a batch's pages in its order to the letter, each page whole
            (its evidence read, judged and applied) before the next (see :meth:`decide`).
    """

    def __init__(self, index: NearDuplicateIndex, registry: ChecksumRegistry,
                 facts: PageFacts, rules: Rules | None = None,
                 windows: WindowIndex | None = None,
                 templates: TemplateStore | None = None,
                 turns: TurnLedger | None = None, in_order: bool = False) -> None:
        self.index = index
        #: pages asked of the index one at a time, each judged and admitted before the
        #: next is probed: a batch's pages are decided in its order to the letter
        self.in_order = in_order
        if index.sketch_source is None:  # a candidate's sketch that left Redis is stored
            index.sketch_source = facts.sketches_of
        self.registry = registry
        self.facts = facts
        self.rules = rules or Rules()
        self.windows = windows
        self.templates = templates
        self.turns: TurnLedger = turns if turns is not None else MemoryTurns()
        # page id -> text of recent admissions here, at most RECENT_TEXT_CHARS in all
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._text_chars = 0
        self._shingles: OrderedDict[str, np.ndarray] = OrderedDict()  # of recent originals
        self._canonicals: OrderedDict[str, str] = OrderedDict()  # page id -> declared (url_key)
        # page id -> when it says it was published (None: it does not) of recent admissions
        self._published: OrderedDict[str, Any] = OrderedDict()
        self._keys: OrderedDict[str, str] = OrderedDict()  # url_key -> id of recent admissions
        # page id -> second-opinion simhash of recent admissions here
        self._verifiers: OrderedDict[str, int] = OrderedDict()
        # page id -> (url, host, source) of recent admissions here (their pages may not be
        # stored yet); older ones are looked up in the facts.
        self._known: OrderedDict[str, tuple[str, str, str | None]] = OrderedDict()
        self._redo_depth = 0

    def decide(self, batch: Sequence[Page]) -> list[Decision]:
        """Decide each page of ``batch`` (in order; later pages see earlier admissions,
        but for one case: a page none of whose candidates is its original is admitted
        only if no new candidate appeared since its probe, and a later page of the batch
        that had no candidate at all was admitted at its probe, so the earlier page may be
        judged its copy; with ``in_order``, as ``simcrawl warc`` decides its files'
        pages, each page is decided whole, as a batch of its own, before the next one's
        evidence is read: the same files give the same record however their pages were
        batched), in three steps:

        1. **gather the evidence and judge it**, stage by stage, each stage for the pages
           the one before left open: the pages known already (stored, or recorded as
           copies), the hosts' template text, the checksum registry, the registered
           originals' pinyin windows, the near-duplicate index. Each stage reads its
           evidence and asks a pure rule of :mod:`dedup.decide` for the verdict. The
           registry and the index answer in atomic steps that also reserve (a text's
           claim, a fingerprint's check-and-add): that is how two processes never admit
           the same page twice, so gathering there is also the first half of applying;
        2. the verdicts of the batch's pages with the same text follow the first of them;
        3. **apply**: copies are withdrawn from the index, admitted pages teach their
           host's template and settle their checksums, and this process remembers them
           for the next batches' evidence.

        With a journal behind the registry, every page that may be admitted is journaled
        before any admission step runs, and pages that turn out to be copies leave it
        again; the caller confirms admitted pages once they are stored
        (:mod:`dedup.adapters.journal`).

        A text's checksum is registered only once its page is admitted, so an exact copy
        always names an admitted page. Pages of one batch with the same text follow the
        first of them: its exact copies if it is admitted, copies of what it copies if
        it is not.

        Deciding a batch again after a failure is safe: a page already admitted under its
        own id is admitted, not taken for a copy of itself.

        Raises:
            ServiceUnavailable: a store failed; the batch may be decided again.
        """
        if self.in_order and len(batch) > 1:
            return self._one_at_a_time(batch)
        return self._decide(batch)

    def _one_at_a_time(self, batch: Sequence[Page]) -> list[Decision]:
        """``in_order``: each page read, judged and applied (its host's template taught,
        its facts remembered) before the next page's evidence is read, so the batch's
        makeup, which follows the timing of the reading, changes nothing. What the
        batch's pages cannot change is read once for the batch: which URLs the store
        holds and which an earlier crawl recorded as copies, and each host's template
        until one of the batch's pages teaches it."""
        urls = [c.url for c in batch]
        declared = [c.canonical for c in batch if c.canonical]  # see _declared_ids
        stored = self.facts.stored_urls(urls + declared)
        seen = _Seen(stored, self.facts.recorded_copies([u for u in urls if u not in stored]))
        return [d for page in batch for d in self._decide([page], seen)]

    def _decide(self, batch: Sequence[Page], seen: _Seen | None = None) -> list[Decision]:
        """:meth:`decide`, with what was read already for the batch this one is part of."""
        work = _Batch(batch, seen)
        # 1. the evidence, stage by stage, each judged by the rules
        self._known_pages(work)
        self._template_text(work)
        self._checksums(work)
        self._registered_originals(work)
        self._near_copies(work)
        # 2. pages with the same text as an earlier one of the batch follow it
        out = work.verdicts()
        # 3. apply
        self._apply(work, out)
        return self._again(work, out)

    # ------------------------------------------------------- 1. evidence, judged
    def _known_pages(self, work: _Batch) -> None:
        """A URL stored before is a revisit; one an earlier crawl recorded as a copy,
        with the same text, keeps its verdict; a long text met earlier in the batch
        follows that page. The rest go on."""
        batch = work.batch
        if work.seen is not None:
            stored, recorded = work.seen.stored, work.seen.recorded
        else:
            stored = self.facts.stored_urls([c.url for c in batch])
            recorded = self.facts.recorded_copies([c.url for c in batch if c.url not in stored])
        leader: dict[str, int] = {}  # a long text's checksum -> its first row
        for i, c in enumerate(batch):
            if c.url in stored:
                work.decisions[i] = revisit(c, *stored[c.url])
            elif c.url in recorded and recorded[c.url].checksum == c.checksum:
                work.decisions[i] = kept_verdict(c, recorded[c.url])
            elif not c.short and c.checksum in leader:
                work.followers[i] = leader[c.checksum]
            else:
                if not c.short:
                    leader[c.checksum] = i
                work.rest.append(i)
        work.open = list(work.rest)

    def _template_text(self, work: _Batch) -> None:
        """The hosts' learned template lines leave each page's fingerprints; a page that
        is nothing else is skipped (``template_only``)."""
        if self.templates is None:
            return
        batch = work.batch
        todo = [i for i in work.open if batch[i].text and not batch[i].short
                and not batch[i].templated]
        known = self._templates_of({batch[i].host for i in todo}, work.seen) if todo else {}
        for i in todo:
            work.decisions[i] = leave_out_template(
                batch[i], known.get(batch[i].host, frozenset()), self.rules)
        work.close_decided()
        work.rest = list(work.open)  # a page of nothing but template text settles nothing

    def _templates_of(self, hosts: set[str], seen: _Seen | None) -> dict[str, frozenset[int]]:
        """The hosts' learned template blocks: read for each batch, and for a batch
        decided a page at a time, kept until one of its pages teaches the host."""
        assert self.templates is not None
        if seen is None:
            return self.templates.known(hosts)
        if hosts - seen.templates.keys():
            seen.templates.update(self.templates.known(hosts - seen.templates.keys()))
        return {h: seen.templates[h] for h in hosts}

    def _checksums(self, work: _Batch) -> None:
        """The checksum registry's owner of each text (claimed atomically): an exact copy
        of it, or a short text's whole decision; long texts nobody owns go on."""
        batch = work.batch
        owners = self.registry.claim([Claim(batch[i].page_id, batch[i].claimed,
                                            batch[i].short, batch[i].simhash,
                                            batch[i].verify, batch[i].url, batch[i].host)
                                      for i in work.open])
        for i, owner in zip(work.open, owners):
            work.decisions[i] = exact_or_next(batch[i], owner)
        work.close_decided()

    def _registered_originals(self, work: _Batch) -> None:
        """A Chinese page's pinyin windows against the registered originals': a copy of
        one, or an excerpt of one (kept with its page's verdict)."""
        if self.windows is None:
            return
        batch = work.batch
        chinese = [i for i in work.open if batch[i].pinyin is not None
                   and batch[i].pinyin.codes]  # type: ignore[union-attr]
        scored = self.windows.scored_many(batch[i].pinyin for i in chinese)  # type: ignore[misc]
        texts = self._shingles_for(batch, {p for found in scored for p, _ in found})
        for i, found in zip(chinese, scored):
            copy, quoted = registered(batch[i], found, texts, self.rules)
            if copy is not None:
                work.decisions[i] = copy
            elif quoted is not None:
                work.excerpts[i] = quoted
        work.close_decided()

    def _near_copies(self, work: _Batch) -> None:
        """The index's candidates within k bits (check-and-add, atomically), put in
        order by what the page declares canonical, and judged by their text sketches and
        second opinions (:func:`dedup.decide.choose_original`); a page none of whose
        candidates is its original is admitted unless one appeared since."""
        batch = work.batch
        rows = work.open
        # Every page that may be admitted leaves its text sketch with its fingerprint.
        values = {i: batch[i].shingles if batch[i].shingles is not None
                  and batch[i].own_text is batch[i].text
                  else shingle_values(batch[i].own_text) for i in rows if batch[i].text}
        sketches = {i: TextSketch.of_values(v, host=batch[i].host, title=batch[i].title,
                                            description=batch[i].description,
                                            listing=batch[i].listing,
                                            items=len(batch[i].items or ()))
                    .to_bytes() for i, v in values.items()}
        for i, sketch in sketches.items():
            batch[i].sketch = sketch
        candidates = self.index.check_and_add_all(
            [(batch[i].simhash, batch[i].page_id, sketches.get(i)) for i in rows])
        work.declared.update(self._declared_ids(batch, rows, candidates, work.seen))
        candidates = [declared_first(batch[i], found, work.declared.get(i))
                      for i, found in zip(rows, candidates)]
        chosen = self._choose(batch, rows, candidates, values)
        rejected = {i: found for i, found, m in zip(rows, candidates, chosen)
                    if found and m is None}
        if rejected:  # no candidate is the original: admitted, unless one appeared since
            copies = self._admit(batch, rejected, values, sketches)
            chosen = [copies.get(i, m) for i, m in zip(rows, chosen)]
        work.chosen.update(zip(rows, chosen))
        work.sketches.update(sketches)
        checksums = {c.page_id: c.checksum for c in batch}
        for i in rows:
            work.decisions[i] = near_or_new(batch[i], work.chosen[i], checksums,
                                            work.declared.get(i), work.excerpts.get(i))

    # --------------------------------------------------------------- 3. apply
    def _apply(self, work: _Batch, out: list[Decision]) -> None:
        """Withdraw the copies from the index (a sharded index wrote every page with
        candidates as pending), keep a near copy's text with its original, let admitted
        pages teach their host's template and settle their checksums, and remember what
        this process admitted."""
        batch = work.batch
        # A copy of a page that was pending itself waits for it; if that page did not
        # stay (a copy too, or its process died), the copy is decided again (_again).
        copy_rows = [(i, verdict[0]) for i, verdict in work.chosen.items()
                     if verdict is not None]
        self.index.withdraw((batch[i].simhash, batch[i].page_id) for i, _ in copy_rows)
        work.again = [i for (i, _), ok in zip(copy_rows, self.index.confirm(
            [m for _, m in copy_rows])) if not ok]
        # A near copy's text stays with its original: a later page that copies the copy
        # is then found and recorded against the original (docs/fingerprints.md). Not in
        # an index too large to keep sketches in Redis: a copy's would stay there for good
        # (only originals' are in MongoDB), and the batch job reconciles those groups.
        if not self.index.layout.release_sketches:
            self.index.attach_copies([(m.fingerprint, m.page_id, work.sketches[i])
                                      for i, m in copy_rows
                                      if i in work.sketches and i not in work.again
                                      and m.page_id is not None])
        admitted = [i for i in work.rest if out[i].kind == NEW and not batch[i].short]
        if self.templates is not None:  # admitted pages teach their host's template
            self.templates.learn(lesson(batch[i].host, batch[i].text or "", batch[i].blocks)
                                 for i in admitted if batch[i].blocks)
            if work.seen is not None:  # read again for the batch's next page of the host
                for i in admitted:
                    work.seen.templates.pop(batch[i].host, None)
        self.registry.settle([(batch[i].checksum, batch[i].page_id) for i in admitted],
                             [batch[i].page_id for i in work.rest if out[i].dropped])
        self._remember(batch, out)
        self._name_originals(out)
        self._turn_round(batch, out)
        for i, d in enumerate(out):
            # a page is never a copy of itself: its URL fetched again before its first
            # fetch was stored (a project's start URL, which Scrapy does not filter, that
            # a link leads back to) is a revisit of it
            if d.dropped and d.original_url and url_key(d.original_url) == url_key(batch[i].url):
                out[i] = revisit(batch[i], d.original_id or "",
                                 batch[i].checksum if d.kind == EXACT else None)

    def _again(self, work: _Batch, out: list[Decision]) -> list[Decision]:
        """The copies whose original did not stay are decided again, with the pages that
        follow them."""
        if not work.again:
            return out
        redo = sorted(set(work.again) | {i for i, first in work.followers.items()
                                         if first in work.again})
        if self._redo_depth >= REDO_DEPTH:
            raise ServiceUnavailable(
                f"{len(redo)} pages chose originals that did not stay, {REDO_DEPTH} times "
                "in a row: processes keep dying mid-decision", service="Redis")
        self._redo_depth += 1
        try:
            for i, d in zip(redo, self.decide([work.batch[i] for i in redo])):
                out[i] = d
        finally:
            self._redo_depth -= 1
        return out

    # ------------------------------------------------------- the evidence, read
    def _remember(self, batch: Sequence[Page], decisions: list[Decision]) -> None:
        """Keep what this process admitted, for the next batches' evidence."""
        for c, d in zip(batch, decisions):
            if d.kind == NEW:
                self._known[d.page_id] = (c.url, c.host, None)
                self._canonicals[d.page_id] = url_key(c.canonical) if c.canonical else ""
                self._published[d.page_id] = c.published
                self._keys[url_key(c.url)] = d.page_id
                if c.verify is not None:
                    self._verifiers[d.page_id] = c.verify
                if c.text and self.rules.verify_containment is not None and not c.short:
                    self._texts[d.page_id] = c.own_text
                    self._text_chars += len(c.own_text)
        for recent in (self._known, self._verifiers, self._canonicals, self._published,
                       self._keys):
            while len(recent) > KNOWN_PAGES:
                recent.popitem(last=False)
        while self._text_chars > RECENT_TEXT_CHARS:
            self._text_chars -= len(self._texts.popitem(last=False)[1])

    def _declared_ids(self, batch: Sequence[Page], rows: list[int],
                      candidates: list[list[Any]], seen: _Seen | None) -> dict[int, str]:
        """For each row with candidates whose page declares another URL canonical, the
        id of the admitted page at that URL, when there is one (``seen``: the store's
        answer read for the larger batch)."""
        wanted: dict[int, tuple[str, str]] = {}  # row -> (declared URL, its url_key)
        for i, found in zip(rows, candidates):
            declared = batch[i].canonical
            if found and declared and url_key(declared) != url_key(batch[i].url):
                wanted[i] = (declared, url_key(declared))
        if not wanted:
            return {}
        stored = seen.stored if seen is not None else self.facts.stored_urls(
            u for u, key in wanted.values() if key not in self._keys)
        out = {}
        for i, (declared, key) in wanted.items():
            pid = self._keys.get(key) or (stored[declared][0] if declared in stored else None)
            if pid is not None:
                out[i] = pid
        return out

    def _choose(self, batch: Sequence[Page], rows: list[int],
                candidates: Sequence[list[Match]], values: dict[int, np.ndarray]
                ) -> list[tuple[Match, float | None] | None]:
        """For each row, the candidate it copies (:func:`dedup.decide.choose_original`),
        with the candidates' text sketches (read from the index with them) and second
        opinions."""
        wanted = {m.page_id for found in candidates for m in found if m.page_id is not None}
        verifiers = self._verifiers_of(batch, rows, wanted)
        sketches = self._sketches_of(candidates)
        return [choose_original(batch[i], found, verifiers, sketches, self.rules, values.get(i))
                for i, found in zip(rows, candidates)]

    def _admit(self, batch: Sequence[Page], rejected: dict[int, list[Match]],
               values: dict[int, np.ndarray], sketches: dict[int, bytes]
               ) -> dict[int, tuple[Match, float | None]]:
        """Admit the pages none of whose candidates is their original, each in one atomic
        step with the index that admits it only if no other candidate appeared since its
        probe (:meth:`dedup.index.NearDuplicateIndex.admit_unless_new`); a page that meets
        a new candidate is judged against it and asked again. Returns the pages that
        turned out to copy a new candidate (a near copy admitted meanwhile, by this batch
        or another process), with their choice."""
        # per page: the records judged (page, sketch) under each candidate fingerprint
        judged = {i: _records(found) for i, found in rejected.items()}
        copies: dict[int, tuple[Match, float | None]] = {}
        pending = list(rejected)
        stalled = 0
        while stalled < ADMIT_ROUNDS:
            results = self.index.admit_unless_new(
                [(batch[i].simhash, batch[i].page_id, sketches.get(i)) for i in pending],
                [{fp: sum(1 for _, sketch in records if sketch)
                  for fp, records in judged[i].items()} for i in pending])
            waiting = {i: found for i, found in zip(pending, results) if found}
            rows = list(waiting)
            fresh = [[m for m in waiting[i]
                      if (m.page_id, m.sketch) not in judged[i].get(m.fingerprint, ())]
                     for i in rows]
            for i, new, choice in zip(rows, fresh, self._choose(batch, rows, fresh, values)):
                if choice is not None:
                    copies[i] = choice
                elif not new:  # a judged candidate was removed meanwhile: judge what is left
                    judged[i] = _records(waiting[i])
                else:
                    for fp, records in _records(new).items():
                        judged[i].setdefault(fp, set()).update(records)
            waited = len(pending)
            pending = [i for i in rows if i not in copies]
            if not pending:
                return copies
            stalled = 0 if len(pending) < waited else stalled + 1
        log.warning("%d pages kept meeting new candidates; admitted without a last check",
                    len(pending))
        self.index.add_many((batch[i].simhash, batch[i].page_id, sketches.get(i))
                            for i in pending)
        return copies

    def _sketches_of(self, candidates: Sequence[list[Match]]
                     ) -> dict[str | bytes, TextSketch]:
        """The candidates' text sketches: those the index keeps with them (by their
        bytes: a candidate may come with several, its own and its copies'), else (an
        index built before sketches, rebuilt by ``simcrawl rebuild-index``) made from
        their texts in the facts (by page id). A candidate with neither has no text
        evidence."""
        out: dict[str | bytes, TextSketch] = {}
        missing = set()
        for found in candidates:
            for m in found:
                if m.page_id is None or (m.sketch or m.page_id) in out:
                    continue
                if m.sketch:
                    try:
                        out[m.sketch] = TextSketch.from_bytes(m.sketch)
                        continue
                    except ValueError as exc:
                        log.warning("the index holds a bad text sketch for page %s (%s): "
                                    "its stored text is read instead", m.page_id, exc)
                missing.add(m.page_id)
        if missing:
            texts = {p: self._texts[p] for p in missing if p in self._texts}
            texts.update(self.facts.texts_of(missing - texts.keys()))
            out.update({p: TextSketch.of_text(t) for p, t in texts.items() if t})
        return out

    def _shingles_for(self, batch: Sequence[Page], wanted: set[str]
                      ) -> dict[str, np.ndarray]:
        """The shingles of the pages ``wanted`` whose text is at hand: kept from an earlier
        batch (the 4,096 originals asked last), else from this batch's texts, this
        process's recent admissions' or the facts' (read once, then kept)."""
        out: dict[str, np.ndarray] = {}
        for pid in wanted & self._shingles.keys():
            self._shingles.move_to_end(pid)
            out[pid] = self._shingles[pid]
        rest = wanted - out.keys()
        texts = {c.page_id: c.own_text for c in batch if c.text and c.page_id in rest}
        texts.update({p: self._texts[p] for p in rest - texts.keys() if p in self._texts})
        if rest - texts.keys():
            texts.update(self.facts.texts_of(rest - texts.keys()))
        for pid, text in texts.items():
            out[pid] = self._shingles[pid] = shingles(text)  # type: ignore[arg-type]
        while len(self._shingles) > RECENT_SHINGLES:
            self._shingles.popitem(last=False)
        return out

    def _verifiers_of(self, batch: Sequence[Page], rows: list[int], wanted: set[str]
                      ) -> dict[str, int]:
        """The second-opinion simhashes of the candidates ``wanted``: this batch's, this
        process's recent admissions', or the facts'."""
        if self.rules.verify_distance is None \
                or not any(batch[i].verify is not None for i in rows):
            return {}
        local = {c.page_id: c.verify for c in batch if c.verify is not None}
        for pid in wanted - set(local):
            if pid in self._verifiers:
                local[pid] = self._verifiers[pid]
        missing = wanted - set(local)
        if missing:
            local.update(self.facts.verifiers_of(missing))
        return local  # type: ignore[return-value]

    def _turn_round(self, batch: Sequence[Page], decisions: list[Decision]) -> None:
        """Turn round the matches whose pages say the copy is the original
        (:func:`dedup.decide.turned_round`): each turn claimed in the ledger, then the
        copy admitted under its original's id (its fingerprint added to the index, its
        text registered), and the decision turned (:func:`dedup.decide.turn`). Copies in
        the batch of a turned original name the page that holds it now."""
        copies = [(i, d) for i, d in enumerate(decisions)
                  if d.kind in (EXACT, NEAR) and d.original_id and d.original_url
                  and not d.canonical_link and not d.source]
        if not copies:
            return
        ids = {d.original_id for _, d in copies}
        missing = {p for p in ids if p not in self._canonicals}
        if missing:  # "" for a page that declares none: asked once
            found = self.facts.canonicals_of(missing)  # type: ignore[arg-type]
            self._canonicals.update({pid: url_key(found[pid]) if pid in found else ""
                                     for pid in missing if pid})
        # a date turns a copy only if the copy has one too: the others' originals' are
        # not read
        missing = {d.original_id for i, d in copies if batch[i].published is not None
                   and d.original_id not in self._published}
        if missing:  # None for a page that does not say: asked once
            dates = self.facts.published_of(missing)  # type: ignore[arg-type]
            self._published.update({pid: dates.get(pid) for pid in missing if pid})
        wanted = [(i, d, reason) for i, d in copies
                  if (reason := turned_round(batch[i], d, self._canonicals.get(d.original_id or ""),
                                             self._published.get(d.original_id or "")))]
        if not wanted:
            return
        granted = self.turns.claim([TurnClaim(d.original_id or "", d.original_url or "",
                                              batch[i].url, batch[i].host)
                                    for i, d, _ in wanted])
        turned = [(i, d, reason) for (i, d, reason), ok in zip(wanted, granted) if ok]
        if not turned:
            return
        # the copy's fingerprint joins its original's under the original's id (the two
        # stay: the group's text both ways), and its text is the id's
        self.index.add_many([(batch[i].simhash, d.original_id or "", batch[i].sketch)
                             for i, d, _ in turned if not batch[i].short])
        self.registry.settle([(batch[i].claimed, d.original_id or "") for i, d, _ in turned],
                             [])
        for i, d, reason in turned:
            decisions[i] = turn(batch[i], d, reason)
            log.info("turned round: %s is the original of %s, stored before it (%s)",
                     batch[i].url, d.original_url,
                     "which declared it canonical" if reason == "canonical"
                     else "it says it was published earlier")
        self._remember([batch[i] for i, _, _ in turned], [decisions[i] for i, _, _ in turned])
        holder = {d.page_id: (batch[i].url, batch[i].host) for i, d in enumerate(decisions)
                  if d.turn is not None}
        for d in decisions:
            if d.dropped and d.original_id in holder:
                d.original_url, d.original_host = holder[d.original_id]

    def _name_originals(self, decisions: list[Decision]) -> None:
        """Give each copy (and excerpt) its original's URL, host and source: from this
        process's recent admissions, else the facts."""
        wanted = {d.original_id for d in decisions if d.original_id} | {
            d.excerpt.original_id for d in decisions if d.excerpt is not None}
        missing = {p for p in wanted if p not in self._known}
        if missing:
            self._known.update(self.facts.urls_of(missing))  # type: ignore[arg-type]
        for d in decisions:
            if d.original_id and d.original_id in self._known:
                d.original_url, d.original_host, d.source = self._known[d.original_id]
            if d.excerpt is not None and d.excerpt.original_id in self._known:
                e = d.excerpt
                e.original_url, e.original_host, e.source = self._known[e.original_id]


@dataclass
class _Seen:
    """What a batch decided a page at a time (``in_order``) reads once for all its pages:
    its URLs stored and recorded as copies (:meth:`Deduplicator._known_pages`), and the
    hosts' template blocks, read on a host's first page and after a page taught it."""

    stored: dict[str, tuple[str, str | None]]
    recorded: dict[str, CopyVerdict]
    templates: dict[str, frozenset[int]] = field(default_factory=dict)


class _Batch:
    """One batch on its way through :meth:`Deduplicator.decide`: the verdicts so far, the
    pages still open, and what the stages found that the later ones use."""

    def __init__(self, batch: Sequence[Page], seen: _Seen | None = None) -> None:
        self.batch = batch
        #: what the larger batch this one is a page of read already (``in_order``)
        self.seen = seen
        self.decisions: list[Decision | None] = [None] * len(batch)
        #: rows decided by this batch's own evidence (not revisits, kept verdicts or
        #: followers): they settle their checksums
        self.rest: list[int] = []
        #: rows still without a verdict
        self.open: list[int] = []
        #: row -> the earlier row with the same long text
        self.followers: dict[int, int] = {}
        #: row -> the registered original it quotes (kept with its verdict)
        self.excerpts: dict[int, Excerpt] = {}
        #: row -> the id of the stored page it declares canonical
        self.declared: dict[int, str] = {}
        #: row -> the candidate it copies and the text evidence (None: new)
        self.chosen: dict[int, tuple[Match, float | None] | None] = {}
        #: row -> its text sketch
        self.sketches: dict[int, bytes] = {}
        #: rows whose original did not stay (decided again)
        self.again: list[int] = []

    def close_decided(self) -> None:
        """The rows a stage gave a verdict leave the open ones."""
        self.open = [i for i in self.open if self.decisions[i] is None]

    def verdicts(self) -> list[Decision]:
        """Every row's verdict, the followers' from their first row's."""
        for i, first in self.followers.items():
            d = self.decisions[first]
            assert d is not None
            self.decisions[i] = follow(self.batch[i], self.batch[first], d)
        out = [d for d in self.decisions if d is not None]
        assert len(out) == len(self.batch)
        return out


def _records(found: Sequence[Match]) -> dict[int, set[tuple[str | None, bytes | None]]]:
    """The candidates' records, (page, sketch), by fingerprint: one fingerprint may stand
    for several admitted pages, and for copies attached to them."""
    out: dict[int, set[tuple[str | None, bytes | None]]] = {}
    for m in found:
        out.setdefault(m.fingerprint, set()).add((m.page_id, m.sketch))
    return out


def in_memory(config: Any = None, *, capacity: int = 100_000,
              windows: WindowIndex | None = None) -> tuple[Deduplicator, MemoryFacts]:
    """A deduplicator on memory stores, set up as the crawl sets up its own (the same
    rules, k and template learning), and its facts: add each admitted page to them
    (:meth:`dedup.facts.MemoryFacts.add`) as the crawl stores it.

    Args:
        config: a :class:`dedup.config.DedupConfig` (default: the crawl's defaults).
        capacity: pages the index is planned for.
        windows: registered originals' pinyin windows (``None``: none).
    """
    from dedup.config import DedupConfig

    config = config or DedupConfig()
    facts = MemoryFacts()
    index = NearDuplicateIndex(MemoryStore(), k=config.max_distance, capacity=capacity)
    templates = MemoryTemplates(config.template_pages) if config.template_pages else None
    return Deduplicator(index, MemoryRegistry(), facts, Rules.from_config(config),
                        windows=windows, templates=templates), facts
