"""Where each fingerprint lives in a stored index: the table design plus the bucketing.

A store keeps, for every table of the design, the permuted fingerprints split into
*buckets* by their leading ``bucket_bits`` bits; inside a bucket an entry is the rest of
the permuted value, ``member_bytes`` wide, big-endian, so byte order is numeric order and a
prefix probe is one range query (Redis ``ZRANGEBYLEX``). Buckets exist so that each Redis
sorted set stays in its compact encoding (listpack / ziplist, at most 128 entries by
default): one huge sorted set per table costs about 110 bytes per entry, a bucket about 12.

The page id of a fingerprint follows its entry in table 0 (and only there), so naming the
original of a match costs no extra key.

A layout is stored with the index (:meth:`IndexLayout.describe`); a process that opens the
index with a different one gets :class:`IndexMismatchError` instead of a silently wrong
index.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dedup.config import DEFAULT_MAX_DISTANCE
from dedup.simhash import _kernel
from dedup.tables import Design, F, Table

#: Bytes Redis spends per key beyond its entries (dict entry, key string, object header,
#: allocation), measured with redis-server 6.2 (``bench/bench_index.py``). The layout
#: weighs it against the member width when it chooses the bucket size.
KEY_OVERHEAD = 100

#: Entries per bucket aimed for, as a share of the server's compact-encoding limit, at
#: the planned capacity. Half leaves room for Poisson spread and growth to twice the plan.
FILL = 0.5

#: Entries a bucket (and an earlier index's anchor set) holds on average at the planned
#: capacity, at most.
#: A probe's ``ZRANGEBYLEX`` walks a compact sorted set from its head and copies each
#: member it passes into a new string to compare it (Redis 7.0, ``zzlLexValueGteMin`` in
#: t_zset.c), so past a few dozen entries the walk, not the key lookup, is most of a
#: decision's cost in Redis. Measured at 1M pages with text sketches
#: (``bench/bench_index.py``, see docs/benchmarks.md): buckets of 61 entries → 30 cost
#: 3.6% more memory and decide 21% faster; → 15, 8.7% more memory and 30% faster.
BUCKET_ENTRIES = 32

#: Layout format; bump when the stored representation changes. Version 3 packs the text
#: anchors in strings (an earlier simcrawl refuses such an index with a clear message);
#: version 2, sorted-set anchors, is still read and used as it was.
LAYOUT_VERSION = 3

#: Layout versions this code reads.
READ_VERSIONS = (2, 3)


class IndexMismatchError(RuntimeError):
    """The index in the store was built with another layout (design, k or bucketing)."""


@dataclass(frozen=True)
class IndexLayout:
    """A table design and how its entries are bucketed.

    Attributes:
        design: the permuted tables (see :mod:`dedup.tables`).
        bucket_bits: leading bits of a permuted value that name its bucket (at most the
            shortest table prefix, so that a probe reads one bucket).
        capacity: the number of fingerprints the bucketing was planned for.
        anchor_bits: low bits of a text anchor that name its key (planned so that a key
            holds about :data:`ANCHOR_RECORDS` packed records at the capacity, or, for
            sorted sets, stays in the compact encoding as a bucket does; 16 for an index
            planned before they scaled).
        packed_anchors: the text anchors are packed records in strings (a record of
            :data:`ANCHOR_TAG_BYTES` more bits of the anchor and the page's fingerprint, see
            :mod:`dedup.adapters.redis_index`); ``False`` for an index planned before, which
            keeps them as members of sorted sets (16 bytes each) and works as it did.
        release_sketches: a page's text sketch stays in Redis only until MongoDB holds
            it (the crawl then releases it, :meth:`NearDuplicateIndex.release`, and a
            candidate's sketch is read from the store): planned for an index that would
            not fit one Redis node with its sketches (:func:`dedup.tables.
            sketches_leave_redis`); ``False`` for an index planned before.
    """

    design: Design
    bucket_bits: int
    capacity: int
    anchor_bits: int = 16
    release_sketches: bool = False
    packed_anchors: bool = False

    def __post_init__(self) -> None:
        pmin = min(t.prefix_bits for t in self.design.tables)
        if not 0 <= self.bucket_bits <= pmin:
            raise ValueError(f"bucket_bits must be in 0..{pmin} (the shortest table prefix), "
                             f"got {self.bucket_bits}")

    # -------------------------------------------------------------- derived sizes
    @property
    def tables(self) -> tuple[Table, ...]:
        """The design's tables."""
        return self.design.tables

    @property
    def k(self) -> int:
        """The largest distance the design guarantees to find."""
        return self.design.k

    @property
    def member_bytes(self) -> int:
        """Width of a table entry: the ``64 - bucket_bits`` bits after the bucket."""
        return max(1, math.ceil((F - self.bucket_bits) / 8))

    def kept_bits(self, table: Table) -> int:
        """How many leading bits of a member a probe must match in ``table`` (the member's
        zero padding plus the table prefix bits after the bucket)."""
        return 8 * self.member_bytes - (F - table.prefix_bits)

    # ---------------------------------------------------------------- planning
    @classmethod
    def plan(cls, capacity: int, k: int = DEFAULT_MAX_DISTANCE, *, design: Design | None = None,
             table_limit: int = 128, release_sketches: bool | None = None) -> IndexLayout:
        """Choose a layout for about ``capacity`` fingerprints.

        Args:
            capacity: expected number of fingerprints (the index works beyond it; memory
                per entry grows once buckets outgrow the compact encoding).
            k: the largest distance; used when ``design`` is not given.
            design: a fixed design; by default :func:`dedup.tables.plan` chooses one.
            table_limit: entries a sorted set may hold in the compact encoding
                (``zset-max-listpack-entries``); buckets are planned for at most 128,
                because every insert scans its bucket.
            release_sketches: whether sketches leave Redis once stored (default: when
                the index would not fit one node with them,
                :func:`dedup.tables.sketches_leave_redis`).

        Raises:
            ValueError: ``capacity < 1`` or a limit below 2.
        """
        from dedup.tables import crawl_plan, sketches_leave_redis

        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        if table_limit < 2:
            raise ValueError("the compact-encoding limit must be at least 2")
        if design is None:
            design = crawl_plan(capacity, k).design
        if release_sketches is None:
            release_sketches = sketches_leave_redis(capacity, design.k)
        pmin = min(t.prefix_bits for t in design.tables)
        limit = min(table_limit, 256)
        return cls(design, _bucket_bits(capacity, limit, pmin), capacity,
                   anchor_bits(capacity, limit, packed=True), release_sketches,
                   packed_anchors=True)

    # ------------------------------------------------------------ description
    def describe(self) -> dict[str, object]:
        """A JSON-friendly description, stored with the index."""
        # an index of sorted-set anchors is described as before (version 2), so that an
        # earlier simcrawl reads it still
        version = LAYOUT_VERSION if self.packed_anchors else 2
        return {"version": version, "design": self.design.describe(),
                "bucket_bits": self.bucket_bits, "capacity": self.capacity,
                "anchor_bits": self.anchor_bits,
                "anchors": "records" if self.packed_anchors else "sorted-sets",
                "sketches": "until-stored" if self.release_sketches else "kept"}

    @classmethod
    def from_description(cls, desc: dict) -> IndexLayout:
        """Rebuild a layout from :meth:`describe`'s output.

        Raises:
            IndexMismatchError: an unknown layout version or a malformed description.
        """
        if desc.get("version") not in READ_VERSIONS:
            raise IndexMismatchError(f"stored index layout version {desc.get('version')!r} is "
                                     f"not one this simcrawl reads "
                                     f"({', '.join(map(str, READ_VERSIONS))}): rebuild the "
                                     "index (simcrawl rebuild-index)")
        try:
            d = desc["design"]
            tables = tuple(Table(tuple(t["order"]), int(t["prefix_bits"])) for t in d["tables"])
            design = Design(str(d["name"]), int(d["k"]), tables)
            sketches = desc.get("sketches", "kept")
            if sketches not in ("kept", "until-stored"):
                raise ValueError(f"sketches {sketches!r}")
            anchors = desc.get("anchors", "sorted-sets")
            if anchors not in ("records", "sorted-sets"):
                raise ValueError(f"anchors {anchors!r}")
            return cls(design, int(desc["bucket_bits"]), int(desc["capacity"]),
                       int(desc.get("anchor_bits", 16)), sketches == "until-stored",
                       anchors == "records")
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexMismatchError(f"stored index layout is malformed: {exc}") from exc

    def same_tables(self, other: IndexLayout) -> bool:
        """Whether two layouts put every fingerprint in the same places."""
        return (self.design.tables == other.design.tables
                and self.bucket_bits == other.bucket_bits
                and self.anchor_bits == other.anchor_bits
                and self.packed_anchors == other.packed_anchors)

    # ------------------------------------------------------------ coordinates
    def coordinates(self, fps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Buckets and members of ``fps`` in every table.

        Args:
            fps: ``uint64`` array of B fingerprints.

        Returns:
            ``(buckets, rests)``, two ``uint64`` arrays of shape (B, tables): the bucket
            number and the value after the bucket bits.
        """
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        return _kernel.coordinates(fps, self._moves, len(self.tables), self.bucket_bits)

    @cached_property
    def _moves(self) -> np.ndarray:
        rows = [(t, src, width, dst) for t, table in enumerate(self.tables)
                for src, width, dst in table.segments]
        return np.array(rows, dtype=np.int32)

    def fingerprint_of(self, table: int, bucket: int, rest: int) -> int:
        """Invert :meth:`coordinates` for one entry of one table."""
        value = (bucket << (F - self.bucket_bits)) | rest if self.bucket_bits else rest
        return self.tables[table].unpermute(value)

    # ---------------------------------------------------------------- anchors
    def anchor_slot(self, anchor: int) -> int:
        """The set (or string) a text anchor is filed in: its low :attr:`anchor_bits`."""
        return anchor & ((1 << self.anchor_bits) - 1)

    def anchor_tag(self, anchor: int) -> bytes:
        """What a record says of its anchor beside the slot: in packed records the next
        :data:`ANCHOR_TAG_BYTES` bytes of it above the slot's bits; in sorted sets the
        whole anchor (8 bytes)."""
        if self.packed_anchors:
            return ((anchor >> self.anchor_bits) & _TAG_MASK).to_bytes(ANCHOR_TAG_BYTES, "big")
        return anchor.to_bytes(8, "big")


#: Text anchors filed per page (:data:`dedup.sketch.ANCHORS`).
ANCHORS_PER_PAGE = 6

#: Bytes of an anchor a packed record keeps beside its slot. With 16 more bits, a record
#: of another anchor in the same string passes for the probe's with probability 2^-16: a
#: probe reads six strings of about 48 records, so one decision in about 230 sees one
#: such stray record, which alone never makes a candidate (two anchors must agree, and a
#: candidate is judged by its text anyway).
ANCHOR_TAG_BYTES = 2
_TAG_MASK = (1 << (8 * ANCHOR_TAG_BYTES)) - 1

#: Bytes of a packed anchor record: its tag and the page's fingerprint.
ANCHOR_RECORD_BYTES = ANCHOR_TAG_BYTES + 8

#: Records a packed anchor string holds on average at the planned capacity, at most. A
#: probe reads a whole string (one ``GET``) and finds its records with a plain substring
#: search, so a longer string costs little to read, while each key costs about 100 bytes
#: of its own: 64 records of 10 bytes make that about 1.5 bytes a record.
ANCHOR_RECORDS = 64


def aimed_entries(limit: int) -> float:
    """Entries a bucket or anchor set is planned to hold on average, for a server whose
    compact encoding holds at most ``limit``: :data:`FILL` of it, and no more than
    :data:`BUCKET_ENTRIES` (the walk's cost)."""
    return min(FILL * limit, BUCKET_ENTRIES)


def anchor_bits(capacity: int, limit: int = 128, *, packed: bool = False) -> int:
    """The low bits of a text anchor that name its set, so that at ``capacity`` pages
    (each filed under :data:`ANCHORS_PER_PAGE` anchors) a packed string holds on average
    at most :data:`ANCHOR_RECORDS` records, and a sorted set (``packed=False``, an index
    planned before) at most :func:`aimed_entries` and stays in the compact encoding (a set
    past it costs about 80 bytes an entry instead of about 20, and every probe reads six
    of them); between 8 and 32."""
    need = capacity * ANCHORS_PER_PAGE / (ANCHOR_RECORDS if packed else aimed_entries(limit))
    return min(32, max(8, math.ceil(math.log2(max(1.0, need)))))


def _bucket_bits(capacity: int, limit: int, most: int) -> int:
    """The bucket width with the fewest bytes per entry whose buckets, at ``capacity``, hold
    at most :func:`aimed_entries` on average."""
    least = max(0, math.ceil(math.log2(max(1.0, capacity / aimed_entries(limit)))))
    if least >= most:
        return most
    best, best_cost = least, math.inf
    for bits in range(least, most + 1):
        per_bucket = capacity / 2 ** bits
        width = math.ceil((F - bits) / 8)
        cost = width + KEY_OVERHEAD / max(per_bucket, 1.0)
        if cost < best_cost:
            best, best_cost = bits, cost
    return best
