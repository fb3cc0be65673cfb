"""Permuted tables for the Hamming-distance problem (Manku, Jain, Das Sarma 2007, §3).

Given fingerprints of f = 64 bits, find those within k bits of a query. Split the bits
into m > k blocks: two fingerprints within k bits agree on at least m - k blocks. For each
choice of m - k blocks, a *table* holds every fingerprint permuted so that those blocks
lead; a probe looks up the entries whose leading p bits (the prefix) equal the permuted
query's, then checks the full distance. The two-level design (§3.1.1, the paper's
16-table example) splits the bits left after the first choice into m2 blocks again.

Bit numbering: bit 63 is the most significant. A :class:`Table` is a bit permutation
stored as *segments*: runs of source bits that stay contiguous, so permuting costs a few
shifts and masks per segment, for one ``int`` or a whole NumPy array. A permutation is
linear over XOR, which the index uses: ``permute(a) ^ permute(b) == permute(a ^ b)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np

from dedup.config import DEFAULT_MAX_DISTANCE

F = 64
MASK64 = (1 << 64) - 1


def _split(bits: Sequence[int], m: int) -> list[list[int]]:
    """Split a list of bit positions into m contiguous, nearly equal blocks (larger first)."""
    size, extra = divmod(len(bits), m)
    out, at = [], 0
    for i in range(m):
        width = size + (1 if i < extra else 0)
        out.append(list(bits[at:at + width]))
        at += width
    return out


@dataclass(frozen=True)
class Table:
    """One permuted table: a bit order and the length of its matching prefix.

    Attributes:
        order: ``order[i]`` is the source bit placed at position ``63 - i`` of the permuted
            value (so ``order[0]`` becomes the most significant bit).
        prefix_bits: p, how many leading bits of the permuted value must be equal.
    """

    order: tuple[int, ...]
    prefix_bits: int
    segments: tuple[tuple[int, int, int], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if sorted(self.order) != list(range(F)):
            raise ValueError("a table's order must be a permutation of the 64 bit positions")
        if not 1 <= self.prefix_bits <= F:
            raise ValueError(f"prefix_bits must be in 1..64, got {self.prefix_bits}")
        segs: list[tuple[int, int, int]] = []  # (source low bit, width, destination low bit)
        i = 0
        while i < F:
            j = i
            while j + 1 < F and self.order[j + 1] == self.order[j] - 1:
                j += 1
            width = j - i + 1
            segs.append((self.order[j], width, F - 1 - j))
            i = j + 1
        object.__setattr__(self, "segments", tuple(segs))

    @property
    def lead_mask(self) -> int:
        """The source bits of the prefix, as a mask on unpermuted fingerprints."""
        mask = 0
        for bit in self.order[:self.prefix_bits]:
            mask |= 1 << bit
        return mask

    def permute(self, fp: int) -> int:
        """Permute one fingerprint (an ``int`` in ``[0, 2**64)``)."""
        out = 0
        for src, width, dst in self.segments:
            out |= ((fp >> src) & ((1 << width) - 1)) << dst
        return out

    def unpermute(self, value: int) -> int:
        """Invert :meth:`permute`."""
        out = 0
        for src, width, dst in self.segments:
            out |= ((value >> dst) & ((1 << width) - 1)) << src
        return out

    def permute_array(self, fps: np.ndarray) -> np.ndarray:
        """Permute a ``uint64`` array (returns a new array)."""
        return _apply(fps, [(src, width, dst) for src, width, dst in self.segments])

    def unpermute_array(self, values: np.ndarray) -> np.ndarray:
        """Invert :meth:`permute_array`."""
        return _apply(values, [(dst, width, src) for src, width, dst in self.segments])


def _apply(values: np.ndarray, moves: list[tuple[int, int, int]]) -> np.ndarray:
    values = np.asarray(values, dtype=np.uint64)
    out = np.zeros_like(values)
    for src, width, dst in moves:
        mask = np.uint64((1 << width) - 1)
        out |= ((values >> np.uint64(src)) & mask) << np.uint64(dst)
    return out


@dataclass(frozen=True)
class Design:
    """A set of tables that together find every fingerprint within ``k`` bits.

    Attributes:
        name: e.g. ``"5 blocks"`` or ``"4x4 blocks (two-level)"``.
        k: the largest distance the design guarantees to find.
        tables: the tables.
    """

    name: str
    k: int
    tables: tuple[Table, ...]

    @property
    def prefix_bits(self) -> tuple[int, int]:
        """Smallest and largest prefix length over the tables."""
        ps = [t.prefix_bits for t in self.tables]
        return min(ps), max(ps)

    def expected_candidates(self, docs: int) -> float:
        """Expected candidates per probe over all tables, for uniformly random fingerprints:
        ``sum(docs / 2**p)`` (Manku et al. §3.1: about 2^(d-p) per table)."""
        return sum(docs / 2.0 ** t.prefix_bits for t in self.tables)

    def describe(self) -> dict[str, object]:
        """A JSON-friendly description (stored with an index to detect a changed design)."""
        return {"name": self.name, "k": self.k,
                "tables": [{"order": list(t.order), "prefix_bits": t.prefix_bits}
                           for t in self.tables]}


def block_design(m: int, k: int) -> Design:
    """The single-level design: m blocks, one table per choice of m - k leading blocks.

    Raises:
        ValueError: unless ``0 <= k < m <= 64``.
    """
    if not 0 <= k < m <= F:
        raise ValueError(f"need 0 <= k < m <= 64, got m={m}, k={k}")
    blocks = _split(list(range(F - 1, -1, -1)), m)
    tables = []
    for lead in combinations(range(m), m - k):
        front = [b for i in lead for b in blocks[i]]
        back = [b for i in range(m) if i not in lead for b in blocks[i]]
        tables.append(Table(tuple(front + back), len(front)))
    return Design(f"{m} blocks", k, tuple(tables))


def two_level_design(m1: int, m2: int, k: int) -> Design:
    """The two-level design (Manku et al. §3.1.1): m1 blocks, choose m1 - k to lead; split
    the remaining bits into m2 blocks and choose m2 - k of them to follow.

    ``two_level_design(4, 4, 3)`` is the paper's 16 tables with p = 28.

    Raises:
        ValueError: unless ``0 <= k < m1``, ``k < m2`` and the blocks are at least one bit.
    """
    if not (0 <= k < m1 <= F and k < m2):
        raise ValueError(f"need 0 <= k < m1 and k < m2, got m1={m1}, m2={m2}, k={k}")
    blocks = _split(list(range(F - 1, -1, -1)), m1)
    tables = []
    for lead in combinations(range(m1), m1 - k):
        front = [b for i in lead for b in blocks[i]]
        rest = [b for i in range(m1) if i not in lead for b in blocks[i]]
        if len(rest) < m2:
            raise ValueError(f"too few bits left ({len(rest)}) for {m2} second-level blocks")
        blocks2 = _split(rest, m2)
        for lead2 in combinations(range(m2), m2 - k):
            front2 = [b for i in lead2 for b in blocks2[i]]
            back = [b for i in range(m2) if i not in lead2 for b in blocks2[i]]
            tables.append(Table(tuple(front + front2 + back), len(front) + len(front2)))
    return Design(f"{m1}x{m2} blocks (two-level)", k, tuple(tables))


# ----------------------------------------------------------------------------- planner

#: What one admitted page costs in the crawl's Redis besides its table entries, measured
#: by ``bench/bench_index.py --sketches --released`` at 1M pages (623.0 B a page in all
#: with its sketch, 269.4 B once the sketch has left; 10 tables of 16.2 B): its text sketch
#: record (a hash field of :data:`dedup.sketch.SKETCH_SIZE` values, about 394 bytes), its
#: six text anchors (packed records of 10 bytes in strings of about 46, 73.8 B a page by
#: ``MEMORY USAGE`` at 1M, 73.0 at 10M; 147 B as sorted-set members of 16 bytes before)
#: and its checksum in the exact-copy registry (about 50, written by the crawl).
SKETCH_BYTES, ANCHOR_BYTES, CHECKSUM_BYTES = 394, 74, 50

#: What a page's record costs in Redis once its sketch has left for MongoDB (its page id
#: and the one-byte mark :data:`dedup.index.core.RELEASED`, in the fingerprint's hash
#: field): about 34 of the 269.4 B measured as above (40 with the sorted-set anchors
#: before, kept as the planner's margin).
RELEASED_BYTES = 40

#: The most candidates a probe of the crawl's index may expect (issue 22's bound): each is
#: a member read and compared inside the decision's script.
MAX_CANDIDATES = 1000

#: Redis memory one node gives the index (a 64 GB machine, with room for the fork of an
#: append-only rewrite): an index that would not fit one with its sketches keeps them in
#: Redis only until MongoDB holds them, and is planned for memory first.
NODE_BYTES = 48 * 10**9

#: Bytes of one fingerprint in one table in Redis (bucketed sorted sets of about 30
#: entries, :data:`dedup.index.layout.BUCKET_ENTRIES`; 16.2 measured at 1M, 14.5-14.9 in
#: buckets of about 60, docs/scaling.md).
REDIS_ENTRY_BYTES = 16

#: Relative cost of one table probe and of checking one candidate, for the planner. A
#: probe is a seek (a sorted-set range query, a binary search); a candidate is a popcount
#: and a transfer, about a tenth of that.
PROBE_COST = 1.0
CANDIDATE_COST = 0.1


@dataclass(frozen=True)
class Plan:
    """One design evaluated for a corpus.

    Attributes:
        design: the design.
        tables: number of tables.
        prefix_bits: (smallest, largest) prefix length.
        candidates: expected candidates per probe (all tables together).
        bytes_per_fp: bytes of index per fingerprint (tables x bytes per entry).
        memory: bytes for the whole corpus.
        cost: the planner's relative query cost (tables x PROBE_COST + candidates x
            CANDIDATE_COST).
        fits: within the memory budget.
    """

    design: Design
    tables: int
    prefix_bits: tuple[int, int]
    candidates: float
    bytes_per_fp: int
    memory: int
    cost: float
    fits: bool


def candidate_designs(k: int, max_tables: int = 256) -> list[Design]:
    """Every single-level and two-level design for ``k`` with at most ``max_tables`` tables
    and prefixes of at most 64 bits."""
    designs = []
    for m in range(k + 1, F + 1):
        if math.comb(m, k) > max_tables:
            break
        designs.append(block_design(m, k))
    for m1 in range(k + 1, k + 5):
        for m2 in range(k + 1, k + 5):
            if math.comb(m1, k) * math.comb(m2, k) <= max_tables:
                try:
                    designs.append(two_level_design(m1, m2, k))
                except ValueError:
                    continue
    return designs


def plan(docs: int, k: int = DEFAULT_MAX_DISTANCE, memory_budget: int | None = None, bytes_per_entry: int = 8,
         max_tables: int = 256, extra_bytes: int = 0) -> tuple[Plan, list[Plan]]:
    """Choose a table design for a corpus.

    Among the designs whose index fits ``memory_budget``, the one with the lowest query
    cost (:data:`PROBE_COST` per table, :data:`CANDIDATE_COST` per expected candidate) is
    chosen. With no design in budget, the smallest one is chosen and marked as not fitting.

    Args:
        docs: expected number of fingerprints.
        k: the largest Hamming distance to find.
        memory_budget: bytes available for the index, or ``None`` for no limit.
        bytes_per_entry: bytes one fingerprint costs in one table (8 for the in-memory
            index; about 16 in Redis with bucketed sorted sets).
        max_tables: ignore designs with more tables.
        extra_bytes: bytes a page costs besides its table entries, whatever the design
            (the crawl's: :func:`crawl_extra_bytes`).

    Returns:
        ``(chosen, all_plans)``, all plans sorted by number of tables.

    Raises:
        ValueError: ``docs < 1`` or ``k`` outside ``0..31``.
    """
    if docs < 1:
        raise ValueError(f"docs must be at least 1, got {docs}")
    if not 0 <= k <= 31:
        raise ValueError(f"k must be between 0 and 31, got {k}")
    plans = []
    for design in candidate_designs(k, max_tables):
        tables = len(design.tables)
        candidates = design.expected_candidates(docs)
        memory = docs * (tables * bytes_per_entry + extra_bytes)
        plans.append(Plan(design, tables, design.prefix_bits, candidates,
                          tables * bytes_per_entry + extra_bytes, memory,
                          tables * PROBE_COST + candidates * CANDIDATE_COST,
                          memory_budget is None or memory <= memory_budget))
    plans.sort(key=lambda p: (p.tables, p.cost))
    fitting = [p for p in plans if p.fits]
    chosen = min(fitting, key=lambda p: (p.cost, p.tables)) if fitting else plans[0]
    return chosen, plans


def crawl_extra_bytes(released: bool = False) -> int:
    """What an admitted page costs the crawl's Redis besides its table entries: its text
    sketch (or, once released, its record without it), its text anchors and its checksum
    (:data:`SKETCH_BYTES` ...)."""
    return (RELEASED_BYTES if released else SKETCH_BYTES) + ANCHOR_BYTES + CHECKSUM_BYTES


def crawl_plan(docs: int, k: int = DEFAULT_MAX_DISTANCE, max_tables: int = 256,
               released: bool | None = None) -> Plan:
    """The plan of the crawl's own index at ``docs`` pages, with every page's sketch,
    anchors and checksum counted, among the designs whose probe expects at most
    :data:`MAX_CANDIDATES` candidates:

    - while the index fits one node with its sketches (:data:`NODE_BYTES`), the cheapest
      to query (as :func:`plan`): one server's speed is the limit;
    - past one node, sketches leave Redis once stored (:func:`sketches_leave_redis`) and
      the design with the fewest tables: a cluster is sized by its memory (the candidates
      cost CPU instead: 209 a probe, about 0.15 ms of a node's CPU a decision more than a
      handful, docs/scaling.md).

    ``released`` forces the sketches' place (default: by size, as above)."""
    big = sketches_leave_redis(docs, k, max_tables)
    if released is None:
        released = big
    plans = _crawl_plans(docs, k, max_tables, released)
    if big:
        return min(plans, key=lambda p: (p.tables, p.cost))
    return min(plans, key=lambda p: (p.cost, p.tables))


def _crawl_plans(docs: int, k: int, max_tables: int, released: bool) -> list[Plan]:
    _, plans = plan(docs, k, None, REDIS_ENTRY_BYTES, max_tables, crawl_extra_bytes(released))
    bounded = [p for p in plans if p.candidates <= MAX_CANDIDATES]
    return bounded or [min(plans, key=lambda p: p.candidates)]


def sketches_leave_redis(docs: int, k: int = DEFAULT_MAX_DISTANCE, max_tables: int = 256
                         ) -> bool:
    """Whether the crawl's index at ``docs`` pages keeps its text sketches in Redis only
    until MongoDB holds them: when, with them, its cheapest design would not fit one node
    (:data:`NODE_BYTES`; about 66M pages at k = 3)."""
    kept = _crawl_plans(docs, k, max_tables, False)
    return min(kept, key=lambda p: (p.cost, p.tables)).memory > NODE_BYTES


def format_plans(chosen: Plan, plans: list[Plan], docs: int) -> str:
    """Render the planner's trade-off as a text table (the chosen row is marked ``*``)."""
    head = (f"{'':1} {'design':<26} {'tables':>6} {'prefix bits':>11} "
            f"{'candidates/query':>16} {'bytes/fp':>8} {'memory':>10} {'cost':>10}")
    lines = [f"Designs for {docs:,} fingerprints, k = {chosen.design.k}", head, "-" * len(head)]
    for p in plans:
        lo, hi = p.prefix_bits
        prefix = f"{lo}" if lo == hi else f"{lo}-{hi}"
        mark = "*" if p is chosen else ("" if p.fits else "x")
        lines.append(f"{mark:1} {p.design.name:<26} {p.tables:>6} {prefix:>11} "
                     f"{p.candidates:>16.3g} {p.bytes_per_fp:>8} {human_bytes(p.memory):>10} "
                     f"{p.cost:>10.4g}")
    lines.append("* chosen (lowest cost within the budget); x over the memory budget")
    return "\n".join(lines)


def human_bytes(n: float) -> str:
    """A byte count in decimal units: ``868.0 GB``."""
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} EB"
