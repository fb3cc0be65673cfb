"""The near-duplicate index: permuted-table probes over a store (Manku et al. §3).

:class:`NearDuplicateIndex` holds the algorithm: it computes where a fingerprint lives in
every table (:class:`~dedup.index.layout.IndexLayout`), asks the store to probe, decide
and insert, turns the store's raw hits back into fingerprints and page ids, and reports
the closest match. A store (:class:`IndexStore`) holds the data and makes
probe-decide-insert one atomic step: :class:`~dedup.index.memory_store.MemoryStore` for one
process, :class:`~dedup.adapters.redis_index.RedisStore` shared by many.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple, Protocol

import numpy as np

from dedup.config import DEFAULT_BATCH_SIZE, DEFAULT_CAPACITY, DEFAULT_MAX_DISTANCE
from dedup.index.layout import IndexLayout, IndexMismatchError
from dedup.tables import Design, F

log = logging.getLogger(__name__)

#: Fingerprints the index sends to its store in one call (one Lua script run in Redis):
#: ``DEDUP_BATCH_SIZE``'s default.
DEFAULT_BATCH = DEFAULT_BATCH_SIZE


#: Longest page id, in UTF-8 bytes.
MAX_PAGE_ID_BYTES = 255

_MASK64 = (1 << 64) - 1


class Match(NamedTuple):
    """A stored fingerprint within the distance of a query.

    Attributes:
        fingerprint: the stored (original's) fingerprint.
        page_id: the page it belongs to (``None`` only if it was removed meanwhile).
        distance: Hamming distance to the query.
        sketch: the stored page's text sketch (:class:`dedup.sketch.TextSketch` bytes),
            stored with the fingerprint in the same atomic step (``None``: admitted
            without text).
    """

    fingerprint: int
    page_id: str | None
    distance: int
    sketch: bytes | None = None

    def __repr__(self) -> str:  # the sketch's bytes say nothing to a reader
        return (f"Match(fingerprint={self.fingerprint}, page_id={self.page_id!r}, "
                f"distance={self.distance})")


@dataclass
class Probe:
    """A batch of fingerprints in the coordinates of every table (built by the index).

    Attributes:
        fps: the fingerprints, as ints.
        buckets: ``uint64`` (B, tables): bucket of each fingerprint in each table.
        rests: ``uint64`` (B, tables): the permuted value after the bucket bits.
        sketches: each fingerprint's text sketch, stored with it when it is inserted
            (``None``: none).
        expect: per fingerprint, the hits it may have and still be inserted (the hits of
            candidates already judged not its original; ``None``: none, 0 each).
        anchors: per fingerprint, its page's text anchors (from its sketch,
            :attr:`dedup.sketch.TextSketch.anchors`): the page is filed under them when
            inserted, and the pages filed under them are candidates at any distance.
        judged: per fingerprint, the candidates already judged not its original, each
            with the number of text sketches found under it then (its own and those of
            pages admitted or copies attached under it later); a page is inserted only if
            every page its anchors find is one of them and each still holds as many.
    """

    fps: list[int]
    buckets: np.ndarray
    rests: np.ndarray
    sketches: Sequence[bytes | None] | None = None
    expect: Sequence[int] | None = None
    anchors: Sequence[Sequence[int]] | None = None
    judged: Sequence[Mapping[int, int]] | None = None


#: One raw hit from a store: (table number, rest of the stored entry, distance). A hit
#: through a text anchor has the table number :data:`ANCHOR` and the whole fingerprint.
Hit = tuple[int, int, int]

#: The table number of a hit found through a text anchor.
ANCHOR = -1

#: The table number of a judged candidate that holds other text sketches than when it was
#: judged (a page admitted under the same fingerprint, a copy attached to it): it is
#: judged again, and the page is not inserted.
CHANGED = -2

#: The most pages one text anchor may be shared by and still find candidates: an anchor
#: shared by more is a phrase common to them (one of a site's sentence patterns, furniture
#: not yet learned as template), not evidence of a copy, and a probe passes over it.
#: Reading only some of its pages instead would let the candidates change with every
#: admission under it, and a page would never meet the same set twice.
ANCHOR_READ = 8

#: The text anchors a page must share with a probe to be its candidate (fewer when the
#: probe has fewer that are evidence, not passed over as common phrases): one shared
#: anchor is often a phrase common to many pages ("one of the"); two are the texts'
#: (docs/fingerprints.md, "Text anchors"). A page written in a site's stock phrases may
#: have one anchor only that few pages share: that one is its text's evidence.
ANCHOR_MATCHES = 2


#: The bytes of text evidence kept under one fingerprint once copies are attached to it
#: (:meth:`NearDuplicateIndex.attach_copies`): the page's own sketch and about seven of its
#: copies'.
EVIDENCE_BYTES = 2048


#: The sketch of a page's record once the sketch has left Redis for MongoDB (an index whose
#: layout releases sketches, :attr:`IndexLayout.release_sketches`): one byte no sketch
#: starts with (a sketch's first byte is its version, 1 or more). The index reads such a
#: candidate's sketch from its :attr:`NearDuplicateIndex.sketch_source`.
RELEASED = b"\x00"

#: Released sketches an index keeps after reading them (about 256 bytes each: 16 MB).
RELEASED_CACHE = 65_536

#: Reads stored pages' text sketches by page id (the page store's ``sketches_of``).
SketchSource = Callable[[set[str]], Mapping[str, bytes]]


def records_in_order(first: str | None, sketched: list[tuple[str, bytes]]
                     ) -> list[tuple[str | None, bytes | None]]:
    """The evidence of one fingerprint, as a store returns it: the page its entry names
    (``first``) with its own (first) sketch, ``None`` when it has none, then every other
    record (pages admitted later under the fingerprint, copies attached to it)."""
    own = next((j for j, (p, _) in enumerate(sketched) if p == first), None)
    out: list[tuple[str | None, bytes | None]] = [
        (first, sketched[own][1] if own is not None else None)]
    out += [(p, s) for j, (p, s) in enumerate(sketched) if j != own]
    return out


def anchors_of(sketch: bytes | None) -> list[int]:
    """The text anchors a stored sketch carries (none for no sketch, or a bad one)."""
    if not sketch:
        return []
    from dedup.sketch import TextSketch  # the index stores sketches; it reads only this

    try:
        return TextSketch.from_bytes(sketch).anchors
    except ValueError:
        return []


class IndexStore(Protocol):
    """What the index needs from a store. Every method that changes data is atomic per
    call: a concurrent caller sees all of a call's inserts or none of them."""

    def read_layout(self) -> dict | None:
        """The stored layout description, or ``None`` for an empty store."""

    def create_layout(self, description: dict) -> dict:
        """Store ``description`` unless one is stored already; return the stored one."""

    def attach(self, layout: IndexLayout) -> None:
        """Use ``layout`` for the following calls."""

    def compact_limit(self) -> int:
        """Entries a table bucket holds in its compact encoding."""

    def decide_many(self, probes: Iterable[tuple[Probe, Sequence[str] | None]], k: int
                    ) -> Iterator[list[list[Hit]]]:
        """For each batch, for each fingerprint in order: its hits within ``k`` bits;
        with page ids, insert every fingerprint that has none, or exactly as many as the
        probe's ``expect`` allows it (later ones, in this batch and the following ones,
        see earlier inserts). Each batch is atomic. ``probes``
        is consumed lazily, so a store may build the next batch's request while the
        server works on the previous one."""

    def add_many(self, probes: Iterable[tuple[Probe, Sequence[str]]]) -> Iterator[list[bool]]:
        """Insert without probing; ``False`` where the fingerprint was already stored."""

    def keep_evidence(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        """Add each row's sketch under its fingerprint, for the page id given, and file
        the fingerprint under the sketch's anchors, only if the fingerprint is indexed
        and its records stay within :data:`EVIDENCE_BYTES`; ``True`` where added."""

    def release(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        """Replace the sketch of each row's page (its record under the row's fingerprint)
        by :data:`RELEASED`; ``True`` where a sketch was replaced."""

    def remove(self, probe: Probe, page_ids: Sequence[str | None]) -> list[bool]:
        """Delete each fingerprint (only if it belongs to the given page id, when one is
        given), with the sketch records of every page admitted under it (another page
        sharing the fingerprint is a candidate again after ``rebuild-index``); ``True``
        where something was deleted."""

    def lookup(self, fps: Sequence[int]) -> list[str | None]:
        """The page id stored for each fingerprint."""

    def evidence(self, fps: Sequence[int]) -> list[list[tuple[str | None, bytes | None]]]:
        """For each fingerprint, the admitted pages it stands for, with their text
        sketches, in one round trip: the page its entry names first, then any other page
        admitted later with the same fingerprint and a text (``[(None, None)]``: not
        stored)."""

    def count(self) -> int:
        """Number of stored fingerprints."""

    def entries(self) -> Iterator[tuple[int, str]]:
        """Every stored (fingerprint, page id), in no particular order."""

    def clear(self) -> None:
        """Delete the whole index, layout included."""

    def describe(self) -> str:
        """Where the data lives, for messages (no credentials)."""


def check_page_id(page_id: object) -> str:
    """Validate a page id: a non-empty ``str`` without NUL, at most 255 UTF-8 bytes.

    Raises:
        TypeError: not a ``str``.
        ValueError: empty, containing NUL, or too long.
    """
    if not isinstance(page_id, str):
        raise TypeError(f"page ids are str, got {type(page_id).__name__}")
    if not page_id or "\x00" in page_id or len(page_id.encode("utf-8", "surrogatepass")) \
            > MAX_PAGE_ID_BYTES:
        raise ValueError(f"a page id must be 1..{MAX_PAGE_ID_BYTES} UTF-8 bytes without NUL, "
                         f"got {page_id[:80]!r}")
    return page_id


def check_fingerprint(fp: object) -> int:
    """Validate a fingerprint: an ``int`` in ``[0, 2**64)``.

    Raises:
        TypeError: not an integer.
        ValueError: out of range.
    """
    if isinstance(fp, bool) or not isinstance(fp, (int, np.integer)):
        raise TypeError(f"fingerprints are int, got {type(fp).__name__}")
    value = int(fp)
    if not 0 <= value <= _MASK64:
        raise ValueError(f"a fingerprint must be in [0, 2**64), got {value}")
    return value


def _inserted(hits: list[Hit], expect: int, judged: Mapping[int, int]) -> bool:
    """Whether a store inserted a page with these hits: its table hits those its judged
    candidates give, every page its text anchors found judged, and no judged candidate
    changed."""
    return sum(t >= 0 for t, _, _ in hits) == expect \
        and all(rest in judged for t, rest, _ in hits if t == ANCHOR) \
        and not any(t == CHANGED for t, _, _ in hits)


def _bucketing(layout: IndexLayout) -> str:
    return (f"{layout.bucket_bits} bucket bits, {layout.anchor_bits} anchor bits, anchors in "
            f"{'packed strings' if layout.packed_anchors else 'sorted sets'}")


class NearDuplicateIndex:
    """Find stored fingerprints within k bits, and admit new ones atomically.

    Args:
        store: where the tables live (:class:`~dedup.index.memory_store.MemoryStore`,
            :class:`~dedup.adapters.redis_index.RedisStore`).
        k: the distance at which a fingerprint counts as a near duplicate (default: an
            existing index's k; for a new one the crawl's,
            :data:`dedup.config.DEFAULT_MAX_DISTANCE`). At most the design's k.
        design: the table design for a new index; by default the planner's choice for
            ``capacity``. An existing index keeps its own, and a different ``design``
            raises :class:`IndexMismatchError`.
        capacity: expected number of fingerprints, for a new index's design and buckets.
        layout: a complete layout for a new index (design and bucketing; rebuilds use
            it to reproduce an index exactly).
        batch_size: fingerprints per store call in the ``*_many`` methods.
        release_sketches: whether a new index keeps stored pages' text sketches in Redis
            only until they are stored (:attr:`IndexLayout.release_sketches`; default:
            by capacity). An existing index keeps its own.

    Raises:
        IndexMismatchError: the store holds an index with another design.
        ValueError: bad ``k``, ``capacity`` or ``batch_size``.

    Example:
        >>> from dedup.index import MemoryStore, NearDuplicateIndex
        >>> index = NearDuplicateIndex(MemoryStore(), k=3, capacity=1000)
        >>> index.check_and_add(0x0123456789ABCDEF, "page-1") is None   # admitted
        True
        >>> index.check_and_add(0x0123456789ABCDEE, "page-2")           # one bit away
        Match(fingerprint=81985529216486895, page_id='page-1', distance=1)
    """

    def __init__(self, store: IndexStore, k: int | None = None, *,
                 design: Design | None = None, capacity: int = DEFAULT_CAPACITY,
                 layout: IndexLayout | None = None,
                 batch_size: int = DEFAULT_BATCH,
                 release_sketches: bool | None = None) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.store = store
        self.batch_size = batch_size
        asked = layout  # a caller's layout must be the stored one; a planned one yields
        if layout is not None:
            design = layout.design
        stored = store.read_layout()
        if stored is None:
            if layout is None:
                layout = IndexLayout.plan(capacity, DEFAULT_MAX_DISTANCE if k is None else k,
                                          design=design,
                                          table_limit=store.compact_limit(),
                                          release_sketches=release_sketches)
            stored = store.create_layout(layout.describe())  # another process may win
        found = IndexLayout.from_description(stored)
        if design is not None and found.design.tables != design.tables:
            raise IndexMismatchError(self._mismatch(found, design))
        if asked is not None and not found.same_tables(asked):
            raise IndexMismatchError(
                f"the index in {store.describe()} is laid out differently "
                f"({_bucketing(found)}, not {_bucketing(asked)}); rebuild it "
                "(simcrawl rebuild-index) or use another namespace.")
        layout = found
        self.layout = layout
        self.k = layout.k if k is None else int(k)
        if not 0 <= self.k <= layout.k:
            raise ValueError(
                f"k must be in 0..{layout.k} for the index in {store.describe()} (design "
                f"{layout.design.name}, planned for k={layout.k}), got {k}: rebuild it for "
                f"the larger k (simcrawl rebuild-index -k {k}), or use k={layout.k} "
                "(DEDUP_MAX_DISTANCE) or another namespace")
        store.attach(layout)
        #: Where a released sketch is read (:data:`RELEASED`): the page store's
        #: ``sketches_of`` (set by the crawl's wiring, else by
        #: :class:`dedup.deduplicator.Deduplicator` from its facts).
        self.sketch_source: SketchSource | None = None
        # released sketches read lately (a stored page's sketch never changes, so every
        # process reads the same bytes whether from here or from the store)
        self._released: OrderedDict[str, bytes] = OrderedDict()
        self._released_lock = threading.Lock()

    def _mismatch(self, layout: IndexLayout, design: Design) -> str:
        return (f"the index in {self.store.describe()} uses the design "
                f"'{layout.design.name}' (k={layout.k}, {len(layout.tables)} tables), not "
                f"'{design.name}' (k={design.k}, {len(design.tables)} tables). Open it without "
                "a design, use another namespace, or rebuild it (simcrawl rebuild-index).")

    # ------------------------------------------------------------------ helpers
    def _probe(self, fps: Sequence[int], sketches: Sequence[bytes | None] | None = None,
               released: bool = False) -> Probe:
        """The batch's coordinates, sketches and anchors; ``released``: the records keep
        :data:`RELEASED` instead of each sketch (the page is stored), filed under the
        sketch's anchors all the same."""
        arr = np.fromiter(fps, dtype=np.uint64, count=len(fps))
        buckets, rests = self.layout.coordinates(arr)
        if sketches is not None and not any(sketches):
            sketches = None
        anchors = [anchors_of(s) for s in sketches] if sketches is not None else None
        if released and sketches is not None:
            sketches = [RELEASED if s else None for s in sketches]
        return Probe(list(fps), buckets, rests, sketches, anchors=anchors)

    def _resolved(self, rows: list[list[Match]]) -> list[list[Match]]:
        """The matches with every released sketch read from :attr:`sketch_source` (one
        read for all of them). A page stored without its sketch keeps :data:`RELEASED`,
        which the text check takes for no evidence, and is logged."""
        wanted = {m.page_id for found in rows for m in found
                  if m.sketch == RELEASED and m.page_id is not None}
        if not wanted:
            return rows
        cache = self._released
        with self._released_lock:  # the crawl decides from several threads
            got = {p: cache[p] for p in wanted if p in cache}
            for p in got:
                cache.move_to_end(p)
        if wanted - got.keys() and self.sketch_source is not None:
            read = dict(self.sketch_source(wanted - got.keys()))
            got.update(read)
            with self._released_lock:
                cache.update(read)
                while len(cache) > RELEASED_CACHE:
                    cache.popitem(last=False)
        if wanted - got.keys():
            log.warning("%d candidates' text sketches left Redis but are not in the store "
                        "(%s): they are judged without their text", len(wanted - got.keys()),
                        ", ".join(sorted(wanted - got.keys())[:3]))
        return [[m._replace(sketch=got.get(m.page_id, m.sketch))
                 if m.sketch == RELEASED and m.page_id is not None else m for m in found]
                for found in rows]

    def _chunks(self, items: Sequence) -> Iterator[Sequence]:
        for at in range(0, len(items), self.batch_size):
            yield items[at:at + self.batch_size]

    def _matches(self, probe: Probe, hits: list[list[Hit]]) -> list[list[tuple[int, int]]]:
        """Raw hits to distinct ``(fingerprint, distance)`` per query, closest first."""
        out = []
        for row, item_hits in enumerate(hits):
            found: dict[int, int] = {}
            for table, rest, dist in item_hits:
                if table < 0:  # ANCHOR, CHANGED: the whole fingerprint
                    found[rest] = dist
                    continue
                bucket = int(probe.buckets[row, table])
                found[self.layout.fingerprint_of(table, bucket, rest)] = dist
            out.append(sorted(found.items(), key=lambda fd: (fd[1], fd[0])))
        return out

    # ---------------------------------------------------------------- public API
    def check_and_add(self, fp: int, page_id: str) -> Match | None:
        """Admit ``fp`` for ``page_id`` unless a stored fingerprint is within ``k`` bits.

        The probe, the decision and the insert are one atomic store operation: two
        processes that offer near duplicates of each other at the same time never both
        get ``None``.

        Returns:
            ``None`` if admitted (now stored), else the closest stored match (ties go to
            the smaller fingerprint); nothing is stored then.
        """
        return self.check_and_add_many([(fp, page_id)])[0]

    def check_and_add_many(self, items: Iterable[tuple[int, str]]) -> list[Match | None]:
        """:meth:`check_and_add` for many ``(fingerprint, page_id)`` pairs, in order (a
        later item is checked against earlier ones that were admitted). Sent to the store
        in batches of ``batch_size``, each batch atomic. A pair whose closest match is
        itself (the same fingerprint under the same page id: an earlier call was applied
        but its reply lost) counts as admitted, so a call can be repeated after a
        failure."""
        return [found[0] if found else None for found in self.check_and_add_all(items)]

    def check_and_add_all(self, items: Iterable[tuple[int, str] | tuple[int, str, bytes | None]]
                          ) -> list[list[Match]]:
        """:meth:`check_and_add_many`, with every stored match within ``k`` of each pair,
        closest first (ties: the smaller fingerprint first), each with its page's text
        sketch; an empty list: admitted (now stored). For a caller that verifies the
        candidates one by one (the crawl's text check) and admits the page with
        :meth:`add_many` when none passes. An item may carry a third element, the page's
        text sketch (bytes), stored with its fingerprint when it is admitted."""
        rows = [(check_fingerprint(it[0]), check_page_id(it[1]),
                 it[2] if len(it) > 2 else None) for it in items]  # type: ignore[misc]
        return self._decide(rows, attempts=3)

    def _decide(self, pairs: Sequence[tuple[int, str, bytes | None]], attempts: int,
                judged: Sequence[Mapping[int, int]] | None = None) -> list[list[Match]]:
        chunks = list(self._chunks(pairs))
        probes: list[Probe] = []

        def requests() -> Iterator[tuple[Probe, Sequence[str] | None]]:
            at = 0
            for chunk in chunks:
                probe = self._probe([fp for fp, _, _ in chunk], [s for *_, s in chunk])
                if judged is not None:
                    probe.judged = judged[at:at + len(chunk)]
                    probe.expect = self._expected(probe, probe.judged)
                at += len(chunk)
                probes.append(probe)
                yield probe, [pid for _, pid, _ in chunk]

        rows: list[list[tuple[int, int]]] = []
        admitted: list[bool] = []  # with judged candidates: inserted by the store
        for n, hits in enumerate(self.store.decide_many(requests(), self.k)):
            rows.extend(self._matches(probes[n], hits))
            if judged is not None:
                probe = probes[n]
                admitted.extend(_inserted(h, e, j) for h, e, j
                                in zip(hits, probe.expect or (), probe.judged or ()))
        # each candidate's evidence read once, however many pages of the batch meet it
        found_fps = list(dict.fromkeys(
            fp for found, done in zip(rows, admitted or [False] * len(rows))
            if not done for fp, _ in found))
        evidence = dict(zip(found_fps, self.store.evidence(found_fps) if found_fps else []))
        out: list[list[Match]] = []
        retry = []
        for i, found in enumerate(rows):
            if admitted and admitted[i]:
                out.append([])  # every hit a judged candidate: admitted
                continue
            matches = [Match(fp, pid, d, sketch) for fp, d in found
                       for pid, sketch in evidence[fp]]
            if any((m.fingerprint, m.page_id) == pairs[i][:2] for m in matches):
                out.append([])  # admitted by an earlier try whose reply was lost
                continue
            live = [m for m in matches if m.page_id is not None]
            if matches and not live and attempts > 1:
                retry.append(i)  # every original was removed after the decision: again
            out.append(live or matches)
        out = self._resolved(out)
        if retry:
            for i, result in zip(retry, self._decide([pairs[i] for i in retry], attempts - 1)):
                out[i] = result
        return out

    def admit_unless_new(self, items: Sequence[tuple[int, str, bytes | None]],
                         judged: Sequence[Mapping[int, int]]) -> list[list[Match]]:
        """Admit each page whose candidates were all judged not to be its original,
        unless a candidate appeared since: one atomic store step per batch, like
        :meth:`check_and_add_all`. ``judged``: per item, the fingerprints of the
        candidates judged, each with the number of text sketches it came with (the
        records with a sketch among its matches). Returns, per item, an empty list when it
        was admitted, else every match now within ``k`` (the caller judges the new ones
        and asks again).

        This closes the gap between a page's probe and its admission after a text
        check: a near copy admitted meanwhile (by this process's batch or another
        process), under a fingerprint of its own or under one already judged, is always
        seen, never admitted beside it."""
        rows = [(check_fingerprint(fp), check_page_id(pid), sketch)
                for fp, pid, sketch in items]
        return self._decide(rows, attempts=1, judged=judged)

    def _expected(self, probe: Probe, judged: Sequence[Mapping[int, int]]) -> list[int]:
        """Per row, the table hits its judged candidates give in the store's probe: in
        every table where one within k bits shares the row's bucket and prefix (a
        candidate found through a text anchor may be farther; it is no table hit)."""
        out = []
        free = self._free
        for row, fps in enumerate(judged):
            near = [fp for fp in fps if (fp ^ probe.fps[row]).bit_count() <= self.k]
            if not near:
                out.append(0)
                continue
            buckets, rests = self.layout.coordinates(np.fromiter(near, dtype=np.uint64,
                                                                 count=len(near)))
            same = (buckets == probe.buckets[row]) \
                & ((rests & ~free) == (probe.rests[row] & ~free))
            out.append(int(same.sum()))
        return out

    @cached_property
    def _free(self) -> np.ndarray:
        return np.array([(1 << (F - t.prefix_bits)) - 1 for t in self.layout.tables],
                        dtype=np.uint64)

    def query(self, fp: int, k: int | None = None) -> list[Match]:
        """Every stored fingerprint within ``k`` bits of ``fp`` (default: the index's k),
        closest first. Stores nothing."""
        return self.query_many([fp], k)[0]

    def query_many(self, fps: Iterable[int], k: int | None = None) -> list[list[Match]]:
        """:meth:`query` for many fingerprints."""
        k = self.k if k is None else int(k)
        if not 0 <= k <= self.layout.k:
            raise ValueError(f"k must be in 0..{self.layout.k} for this index, got {k}")
        values = [check_fingerprint(fp) for fp in fps]
        probes: list[Probe] = []

        def requests() -> Iterator[tuple[Probe, Sequence[str] | None]]:
            for chunk in self._chunks(values):
                probes.append(self._probe(chunk))
                yield probes[-1], None

        found: list[list[tuple[int, int]]] = []
        for n, hits in enumerate(self.store.decide_many(requests(), k)):
            found.extend(self._matches(probes[n], hits))
        ids = iter(self.store.lookup([fp for rows in found for fp, _ in rows]))
        return [[Match(fp, next(ids), d) for fp, d in rows] for rows in found]

    def add_many(self, items: Iterable[tuple[int, str] | tuple[int, str, bytes | None]],
                 progress: Callable[[int], None] | None = None, stored: bool = False) -> int:
        """Load ``(fingerprint, page_id)`` pairs without checking for near duplicates (bulk
        loads, rebuilds, pages admitted after their candidates' text check). A fingerprint
        already stored keeps its page id and sketch.

        Args:
            items: the pairs (any iterable; consumed in batches), each with the page's
                text sketch as an optional third element.
            progress: called with the number of pairs handled after each batch.
            stored: the pages are in MongoDB already (a rebuild): where the layout
                releases sketches, only their anchors and :data:`RELEASED` are written.

        Returns:
            How many fingerprints were new.
        """
        size = max(self.batch_size, 256)
        release = stored and self.layout.release_sketches

        def requests() -> Iterator[tuple[Probe, Sequence[str]]]:
            batch: list[tuple[int, str, bytes | None]] = []
            for it in items:
                batch.append((check_fingerprint(it[0]), check_page_id(it[1]),
                              it[2] if len(it) > 2 else None))  # type: ignore[misc]
                if len(batch) >= size:
                    yield self._probe([f for f, _, _ in batch], [s for *_, s in batch],
                                      release), [p for _, p, _ in batch]
                    batch = []
            if batch:
                yield self._probe([f for f, _, _ in batch], [s for *_, s in batch],
                                  release), [p for _, p, _ in batch]

        added = 0
        for flags in self.store.add_many(requests()):
            added += sum(flags)
            if progress is not None:
                progress(len(flags))
        return added

    def attach_copies(self, items: Sequence[tuple[int, str, bytes]]) -> int:
        """Keep the text evidence of dropped copies with their originals: each item is
        an original's fingerprint and page id and a copy's sketch. The copy's sketch is
        filed under the original's fingerprint and its anchors, so a later page is
        judged against the copy's text too and, when it copies the copy, recorded as a
        copy of the original (docs/fingerprints.md, "Non-transitive groups"). Nothing is
        added to an original no longer indexed, or beyond :data:`EVIDENCE_BYTES` of
        records. Returns how many were attached."""
        rows = [(check_fingerprint(fp), check_page_id(pid), sketch)
                for fp, pid, sketch in items if sketch]
        if not rows:
            return 0
        done = 0
        for chunk in self._chunks(rows):
            probe = self._probe([fp for fp, _, _ in chunk], [s for *_, s in chunk])
            done += sum(self.store.keep_evidence(probe, [pid for _, pid, _ in chunk]))
        return done

    def remove(self, fp: int, page_id: str | None = None) -> bool:
        """Delete a fingerprint from every table, with the text anchors of the pages
        admitted under it.

        Args:
            fp: the fingerprint.
            page_id: delete only if the fingerprint belongs to this page.

        Returns:
            Whether it was deleted. (To delete by page id alone, look its fingerprint up
            in the page store: ``simcrawl remove PAGE_ID`` does both.)
        """
        fp = check_fingerprint(fp)
        pid = None if page_id is None else check_page_id(page_id)
        probe = self._probe([fp])
        pages = self._resolved([[Match(fp, p, 0, s) for p, s in self.store.evidence([fp])[0]]])
        probe.anchors = [sorted({a for m in pages[0] for a in anchors_of(m.sketch)})]
        return self.store.remove(probe, [pid])[0]

    def release(self, items: Iterable[tuple[int, str]]) -> int:
        """Let the text sketches of stored pages (``(fingerprint, page id)``) leave Redis,
        where the layout says so (:attr:`IndexLayout.release_sketches`; else nothing to
        do): each page's record keeps its id and :data:`RELEASED`, its anchors stay, and a
        decision that meets it reads the sketch from :attr:`sketch_source`. Call it only
        once the store holds the pages' sketches. Returns how many were released."""
        if not self.layout.release_sketches:
            return 0
        rows = [(check_fingerprint(fp), check_page_id(pid)) for fp, pid in items]
        done = 0
        for chunk in self._chunks(rows):
            done += sum(self.store.release(self._probe([fp for fp, _ in chunk]),
                                           [pid for _, pid in chunk]))
        return done

    def withdraw(self, items: Iterable[tuple[int, str]]) -> int:
        """Withdraw pages judged copies after their candidates were read (``(fingerprint,
        page id)``). Nothing to do here: a page with candidates is inserted only when it is
        admitted; a sharded index (:class:`~dedup.adapters.sharded.ShardedIndex`) writes pages
        as pending first and removes them here."""
        return 0

    def confirm(self, originals: Sequence[Match]) -> list[bool]:
        """Whether each original chosen among this index's matches stays admitted: always
        on one node (a match is an admitted page); a sharded index waits for originals met
        while pending, and says ``False`` for those withdrawn."""
        return [True] * len(originals)

    def page_id(self, fp: int) -> str | None:
        """The page id stored for exactly this fingerprint, or ``None``."""
        return self.store.lookup([check_fingerprint(fp)])[0]

    def __len__(self) -> int:
        return self.store.count()

    def entries(self) -> Iterator[tuple[int, str]]:
        """Every stored ``(fingerprint, page_id)``, in no particular order."""
        return self.store.entries()

    def over_capacity(self) -> bool:
        """Whether the index holds more than twice its planned capacity (its buckets then
        outgrow Redis's compact encoding: rebuild it with a larger ``--capacity``)."""
        return len(self) > 2 * self.layout.capacity


_HEX_ID = re.compile(r"^(?:[0-9a-f]{2})+$")


def pack_page_id(page_id: str) -> bytes:
    """Page id as stored in Redis: lowercase even-length hex as NUL + bytes, else UTF-8.

    >>> pack_page_id("65f1a2b3c4d5e6f708192a3b")
    b'\\x00e\\xf1\\xa2\\xb3\\xc4\\xd5\\xe6\\xf7\\x08\\x19*;'
    >>> unpack_page_id(pack_page_id("page-7"))
    'page-7'
    """
    if _HEX_ID.match(page_id):
        return b"\x00" + bytes.fromhex(page_id)
    return page_id.encode("utf-8", "surrogatepass")


def unpack_page_id(raw: bytes) -> str:
    """Invert :func:`pack_page_id`."""
    if raw[:1] == b"\x00":
        return raw[1:].hex()
    return raw.decode("utf-8", "surrogatepass")
