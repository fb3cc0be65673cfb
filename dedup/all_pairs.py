"""Batch near-duplicate search in memory (Manku et al. §3.1 batch mode; simhash-cpp
``find_all``): every fingerprint of a set within k bits of a query, every pair within k,
and clusters as connected components.

Fingerprints are kept as sorted NumPy ``uint64`` arrays, one per table of a
:class:`~dedup.tables.Design`. Identical fingerprints are first collapsed to one entry
(``np.unique``) and expanded again in the results, so every pair of input positions is
reported, identical fingerprints included (some libraries drop them by taking a set).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from dedup.config import DEFAULT_MAX_DISTANCE
from dedup.simhash import _kernel
from dedup.tables import Design, plan

#: The in-memory planner weighs a table by the sort it costs; see :func:`batch_design`.
_BATCH_BYTES_PER_ENTRY = 8


def _as_uint64(fps: Iterable[int] | np.ndarray) -> np.ndarray:
    if isinstance(fps, np.ndarray):
        if fps.dtype == np.uint64:
            return fps.ravel()
        if fps.dtype.kind not in "iu" or (fps.size and fps.dtype.kind == "i" and fps.min() < 0):
            raise ValueError("fingerprints must be unsigned 64-bit integers")
        return fps.astype(np.uint64).ravel()
    values = list(fps)
    for v in values:
        if not isinstance(v, (int, np.integer)) or not 0 <= int(v) < 1 << 64:
            raise ValueError(f"fingerprints must be unsigned 64-bit integers, got {v!r}")
    return np.array([int(v) for v in values], dtype=np.uint64)


def batch_design(n: int, k: int) -> Design:
    """The design :func:`find_all` uses for ``n`` fingerprints: the fewest tables (each costs
    a sort of the whole set) whose expected candidates stay below 100 per fingerprint.

    Args:
        n: number of distinct fingerprints.
        k: the largest distance.
    """
    _, plans = plan(max(n, 1), k, bytes_per_entry=_BATCH_BYTES_PER_ENTRY)
    for p in plans:  # sorted by number of tables
        if p.candidates <= 100:
            return p.design
    return plans[-1].design


class MemoryIndex:
    """An in-memory index over a fixed set of fingerprints.

    Args:
        fps: the fingerprints (ints in ``[0, 2**64)`` or a ``uint64`` array).
        k: the largest distance queries will ask for.
        design: the table design; by default the planner's choice for the set's size.

    Raises:
        ValueError: a fingerprint is not an unsigned 64-bit integer, or the design is for a
            smaller ``k``.

    Example:
        >>> index = MemoryIndex([0x0, 0x7, 0xFF00])
        >>> index.query(0x1, k=3)
        [(0, 1), (1, 2)]
    """

    def __init__(self, fps: Iterable[int] | np.ndarray, k: int = DEFAULT_MAX_DISTANCE,
                 design: Design | None = None) -> None:
        self.fps = _as_uint64(fps)
        self.k = k
        self._uniq, inverse, counts = np.unique(self.fps, return_inverse=True,
                                                return_counts=True)
        self._order = np.argsort(inverse, kind="stable")  # input positions grouped by value
        self._starts = np.concatenate(([0], np.cumsum(counts)))
        self.design = design or plan(max(len(self._uniq), 1), k)[0].design
        if self.design.k < k:
            raise ValueError(f"design {self.design.name!r} finds k <= {self.design.k}, not {k}")
        n_tables = len(self.design.tables)
        self._keys = np.empty((n_tables, len(self._uniq)), dtype=np.uint64)
        self._ids = np.empty((n_tables, len(self._uniq)), dtype=np.int64)
        self._prefix = np.array([t.prefix_bits for t in self.design.tables], dtype=np.int32)
        for t, table in enumerate(self.design.tables):
            permuted = table.permute_array(self._uniq)
            order = np.argsort(permuted, kind="stable")
            self._keys[t] = permuted[order]
            self._ids[t] = order

    def __len__(self) -> int:
        return len(self.fps)

    def _positions(self, uid: int) -> np.ndarray:
        return self._order[self._starts[uid]:self._starts[uid + 1]]

    def query(self, fp: int, k: int | None = None) -> list[tuple[int, int]]:
        """Find the indexed fingerprints within ``k`` bits of ``fp``.

        Returns:
            ``(position, distance)`` pairs, positions into the input, sorted by distance
            and position.

        Raises:
            ValueError: ``fp`` is not an unsigned 64-bit integer, or ``k`` exceeds the
                index's.
        """
        k = self.k if k is None else k
        if not 0 <= k <= self.design.k:
            raise ValueError(f"k must be between 0 and {self.design.k}, got {k}")
        if not isinstance(fp, (int, np.integer)) or not 0 <= int(fp) < 1 << 64:
            raise ValueError(f"fingerprint must be an unsigned 64-bit integer, got {fp!r}")
        fp = int(fp)
        queries = np.array([t.permute(fp) for t in self.design.tables], dtype=np.uint64)
        found = _kernel.probe(self._keys, self._ids, self._prefix, queries, k)
        out = [(int(pos), d) for uid, d in found.items() for pos in self._positions(uid)]
        out.sort(key=lambda item: (item[1], item[0]))
        return out

    def find_all(self, k: int | None = None) -> np.ndarray:
        """Every pair of indexed fingerprints within ``k`` bits: see :func:`find_all`."""
        return find_all(self.fps, self.k if k is None else k)

    def clusters(self, k: int | None = None) -> list[list[int]]:
        """Connected components of the within-``k`` graph: see :func:`clusters`."""
        return clusters(self.fps, self.k if k is None else k)


def table_pairs(design: Design, t: int, keys: np.ndarray, k: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs within ``k`` that table ``t`` of ``design`` reports among ``keys``.

    A pair is reported by the first table whose prefix it shares, so the tables' results
    are disjoint and their union is every pair within ``k``, each once. The batch engines
    share it through :func:`position_pairs`.

    Args:
        design: the table design.
        t: which table.
        keys: the table's permuted fingerprints, sorted (``uint64``), in whole prefix
            buckets (a bucket split between two calls loses the pairs across the split).
        k: the largest distance.

    Returns:
        ``(a, b, distance)`` arrays: the two fingerprints (unpermuted ``uint64``) and their
        distance.
    """
    table = design.tables[t]
    earlier = np.array([table.permute(prior.lead_mask) for prior in design.tables[:t]],
                       dtype=np.uint64)
    a, b, d = _kernel.scan_sorted(np.ascontiguousarray(keys, dtype=np.uint64),
                                  table.prefix_bits, k, earlier)
    return (table.unpermute_array(np.array(a, dtype=np.uint64)),
            table.unpermute_array(np.array(b, dtype=np.uint64)), np.array(d, dtype=np.int64))


def find_all(fps: Iterable[int] | np.ndarray, k: int = DEFAULT_MAX_DISTANCE,
             design: Design | None = None) -> np.ndarray:
    """Every pair of fingerprints within ``k`` bits of each other.

    Args:
        fps: the fingerprints (ints in ``[0, 2**64)`` or a ``uint64`` array).
        k: the largest Hamming distance (0 to 31).
        design: the table design; by default :func:`batch_design`.

    Returns:
        An ``int64`` array of shape ``(pairs, 3)``: input positions ``i < j`` and their
        distance, sorted by ``i`` then ``j``. Identical fingerprints are pairs at distance 0.

    Raises:
        ValueError: bad fingerprints, or a design for a smaller ``k``.
    """
    values = _as_uint64(fps)
    design = design or batch_design(len(np.unique(values)), k)
    if design.k < k:
        raise ValueError(f"design {design.name!r} finds k <= {design.k}, not {k}")
    pairs = position_pairs(values, k, design)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def position_pairs(values: np.ndarray, k: int, design: Design,
                   tables: Sequence[int] | None = None, identical: bool = True) -> np.ndarray:
    """The pairs of positions into ``values`` that some of a design's tables report.

    The step both batch engines share: :func:`find_all` runs it on the whole set with every
    table; the Spark job (``simcrawl find-all --engine spark``) on the rows of one shuffle
    partition, which hold whole prefix buckets of one or more tables.

    Args:
        values: ``uint64`` fingerprints.
        k: the largest distance.
        design: the table design.
        tables: which of its tables (default: all). A pair of distinct values is reported
            by the first table whose prefix it shares, so the tables' answers are
            disjoint and their union is every pair within ``k``, each once.
        identical: also report the pairs of positions that hold one value (distance 0).

    Returns:
        An unsorted ``int64`` array ``(pairs, 3)``: positions ``i < j`` and distance.
    """
    uniq, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")  # positions grouped by value
    starts = np.concatenate(([0], np.cumsum(counts)))
    rows: list[np.ndarray] = [np.empty((0, 3), dtype=np.int64)]
    if identical:  # every pair of positions in a group of equal values
        for uid in np.flatnonzero(counts > 1):
            members = np.sort(order[starts[uid]:starts[uid + 1]])
            i, j = np.triu_indices(len(members), 1)
            rows.append(np.stack([members[i], members[j], np.zeros(len(i), np.int64)],
                                 axis=1))
    for t in range(len(design.tables)) if tables is None else tables:
        a, b, d = table_pairs(design, t, np.sort(design.tables[t].permute_array(uniq)), k)
        ua = np.searchsorted(uniq, a)
        ub = np.searchsorted(uniq, b)
        simple = (counts[ua] == 1) & (counts[ub] == 1)
        if simple.any():  # the common case, vectorised: both values occur once
            pa = order[starts[ua[simple]]]
            pb = order[starts[ub[simple]]]
            rows.append(np.stack([np.minimum(pa, pb), np.maximum(pa, pb), d[simple]], axis=1))
        for x, y, dist in zip(ua[~simple], ub[~simple], d[~simple]):
            grid_i, grid_j = np.meshgrid(order[starts[x]:starts[x + 1]],
                                         order[starts[y]:starts[y + 1]], indexing="ij")
            gi, gj = grid_i.ravel(), grid_j.ravel()
            rows.append(np.stack([np.minimum(gi, gj), np.maximum(gi, gj),
                                  np.full(len(gi), dist, np.int64)], axis=1))
    return np.concatenate(rows).astype(np.int64)


def clusters(fps: Iterable[int] | np.ndarray, k: int = DEFAULT_MAX_DISTANCE,
             design: Design | None = None) -> list[list[int]]:
    """Clusters of near-duplicate fingerprints: the connected components of the graph whose
    edges are the pairs within ``k`` bits (simhash-cpp's clustering).

    Returns:
        The components with at least two members, each a sorted list of input positions;
        the list is ordered by size (largest first), then by first position.
    """
    values = _as_uint64(fps)
    pairs = find_all(values, k, design)
    parent = np.arange(len(values))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in pairs[:, :2]:
        ri, rj = root(int(i)), root(int(j))
        if ri != rj:
            parent[max(ri, rj)] = min(ri, rj)
    groups: dict[int, list[int]] = {}
    members = np.unique(pairs[:, :2]) if len(pairs) else np.empty(0, dtype=np.int64)
    for x in members:
        groups.setdefault(root(int(x)), []).append(int(x))
    return sorted((sorted(g) for g in groups.values()), key=lambda g: (-len(g), g[0]))
