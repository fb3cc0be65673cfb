"""An index store in this process's memory: sorted lists per table bucket, guarded by a
lock. For tests, one-process tools and small crawls; the same behaviour as the Redis store
(the test suite runs both through the same cases)."""

from __future__ import annotations

import threading
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator, Sequence

from dedup.index.core import (
    ANCHOR,
    ANCHOR_MATCHES,
    ANCHOR_READ,
    CHANGED,
    EVIDENCE_BYTES,
    RELEASED,
    Hit,
    Probe,
    pack_page_id,  # records are as long as Redis's
    records_in_order,
)
from dedup.index.layout import IndexLayout
from dedup.tables import F


class MemoryStore:
    """Index data in Python dicts and sorted lists.

    Args:
        table_limit: the compact-encoding limit to plan buckets for (only shapes the
            layout, so that a memory index plans like a Redis one).
    """

    def __init__(self, table_limit: int = 128) -> None:
        self._lock = threading.Lock()
        self._layout_desc: dict | None = None
        self._limit = table_limit
        self._tables: list[dict[int, list[int]]] = []
        self._ids: dict[int, str] = {}
        self._sketches: dict[int, list[tuple[str, bytes]]] = {}  # fp -> (page, sketch)
        self._anchors: dict[int, list[int]] = {}  # text anchor -> sorted fingerprints
        self._free: list[int] = []  # per table: mask of the bits after the prefix

    def read_layout(self) -> dict | None:
        return self._layout_desc

    def create_layout(self, description: dict) -> dict:
        with self._lock:
            if self._layout_desc is None:
                self._layout_desc = description
            return self._layout_desc

    def attach(self, layout: IndexLayout) -> None:
        self._free = [(1 << (F - t.prefix_bits)) - 1 for t in layout.tables]
        if len(self._tables) != len(layout.tables):
            self._tables = [{} for _ in layout.tables]

    def compact_limit(self) -> int:
        return self._limit

    def _hits(self, buckets: list[int], rests: list[int], k: int) -> list[Hit]:
        hits = []
        for t, (bucket, rest) in enumerate(zip(buckets, rests)):
            entries = self._tables[t].get(bucket)
            if not entries:
                continue
            lo = rest & ~self._free[t]
            hi = lo | self._free[t]
            for entry in entries[bisect_left(entries, lo):bisect_right(entries, hi)]:
                dist = (entry ^ rest).bit_count()
                if dist <= k:
                    hits.append((t, entry, dist))
        return hits

    def _anchor_hits(self, fp: int, anchors: Sequence[int]) -> list[Hit]:
        shared: dict[int, int] = {}
        usable = 0
        for anchor in anchors:
            filed = self._anchors.get(anchor, ())
            if len(filed) > ANCHOR_READ:  # a common phrase, not evidence: passed over
                continue
            usable += 1
            for other in filed:
                shared[other] = shared.get(other, 0) + 1
        need = min(ANCHOR_MATCHES, usable)
        return [(ANCHOR, other, (other ^ fp).bit_count())
                for other, n in shared.items() if n >= need]

    def _insert(self, fp: int, buckets: list[int], rests: list[int], page_id: str,
                sketch: bytes | None, anchors: Sequence[int] = ()) -> bool:
        if sketch:  # every admitted page with a text is a candidate, one fingerprint or not
            self._keep(fp, page_id, sketch, anchors)
        if fp in self._ids:
            return False
        self._ids[fp] = page_id
        for t, (bucket, rest) in enumerate(zip(buckets, rests)):
            insort(self._tables[t].setdefault(bucket, []), rest)
        return True

    def _keep(self, fp: int, page_id: str, sketch: bytes, anchors: Sequence[int]) -> None:
        """File a sketch record under ``fp`` (unless it is there) and ``fp`` under the
        anchors, as the Redis scripts' ``keep_sketch`` and ``file_anchors`` do."""
        pages = self._sketches.setdefault(fp, [])
        if (page_id, sketch) not in pages and (page_id, RELEASED) not in pages:
            pages.append((page_id, sketch))
        for anchor in anchors:
            filed = self._anchors.setdefault(anchor, [])
            at = bisect_left(filed, fp)
            if at == len(filed) or filed[at] != fp:
                filed.insert(at, fp)

    def keep_evidence(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        out = []
        with self._lock:
            for i, fp in enumerate(probe.fps):
                sketch = _sketch(probe, i)
                have = sum(3 + len(pack_page_id(p)) + len(s)
                           for p, s in self._sketches.get(fp, []))
                ok = fp in self._ids and bool(sketch) \
                    and have + len(sketch or b"") <= EVIDENCE_BYTES  # as in Redis
                if ok:
                    self._keep(fp, page_ids[i], sketch, _anchors(probe, i))  # type: ignore[arg-type]
                out.append(ok)
        return out

    def decide_many(self, probes: Iterable[tuple[Probe, Sequence[str] | None]], k: int
                    ) -> Iterator[list[list[Hit]]]:
        for probe, page_ids in probes:
            yield self._decide(probe, page_ids, k)

    def add_many(self, probes: Iterable[tuple[Probe, Sequence[str]]]) -> Iterator[list[bool]]:
        for probe, page_ids in probes:
            yield self._add(probe, page_ids)

    def _decide(self, probe: Probe, page_ids: Sequence[str] | None, k: int) -> list[list[Hit]]:
        buckets, rests = probe.buckets.tolist(), probe.rests.tolist()
        out = []
        with self._lock:
            for i, fp in enumerate(probe.fps):
                hits = self._hits(buckets[i], rests[i], k)
                expect = probe.expect[i] if probe.expect is not None else 0
                anchors = _anchors(probe, i)
                found = self._anchor_hits(fp, anchors)
                judged = probe.judged[i] if probe.judged is not None else {}
                # a judged candidate with other sketches than then: judged again
                found += [(CHANGED, other, (other ^ fp).bit_count()) for other, n
                          in judged.items() if len(self._sketches.get(other, ())) != n]
                if page_ids is not None and len(hits) == expect \
                        and all(t == ANCHOR and other in judged for t, other, _ in found):
                    self._insert(fp, buckets[i], rests[i], page_ids[i], _sketch(probe, i),
                                 anchors)
                out.append(hits + found)
        return out

    def _add(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        buckets, rests = probe.buckets.tolist(), probe.rests.tolist()
        with self._lock:
            return [self._insert(fp, buckets[i], rests[i], page_ids[i], _sketch(probe, i),
                                 _anchors(probe, i))
                    for i, fp in enumerate(probe.fps)]

    def remove(self, probe: Probe, page_ids: Sequence[str | None]) -> list[bool]:
        buckets, rests = probe.buckets.tolist(), probe.rests.tolist()
        out = []
        with self._lock:
            for i, fp in enumerate(probe.fps):
                current = self._ids.get(fp)
                if current is None or (page_ids[i] is not None and page_ids[i] != current):
                    out.append(False)
                    continue
                del self._ids[fp]
                self._sketches.pop(fp, None)
                for anchor in _anchors(probe, i):
                    filed = self._anchors.get(anchor, [])
                    at = bisect_left(filed, fp)
                    if at < len(filed) and filed[at] == fp:
                        del filed[at]
                    if not filed:
                        self._anchors.pop(anchor, None)
                for t, (bucket, rest) in enumerate(zip(buckets[i], rests[i])):
                    entries = self._tables[t][bucket]
                    del entries[bisect_left(entries, rest)]
                    if not entries:
                        del self._tables[t][bucket]
                out.append(True)
        return out

    def release(self, probe: Probe, page_ids: Sequence[str]) -> list[bool]:
        out = []
        with self._lock:
            for fp, pid in zip(probe.fps, page_ids):
                pages = self._sketches.get(fp, [])
                at = next((j for j, (p, s) in enumerate(pages)
                           if p == pid and s != RELEASED), None)
                if at is not None:
                    pages[at] = (pid, RELEASED)
                out.append(at is not None)
        return out

    def lookup(self, fps: Sequence[int]) -> list[str | None]:
        return [self._ids.get(fp) for fp in fps]

    def evidence(self, fps: Sequence[int]) -> list[list[tuple[str | None, bytes | None]]]:
        with self._lock:
            return [records_in_order(self._ids.get(fp), self._sketches.get(fp, [])) for fp in fps]

    def count(self) -> int:
        return len(self._ids)

    def entries(self) -> Iterator[tuple[int, str]]:
        with self._lock:
            items = list(self._ids.items())
        return iter(items)

    def clear(self) -> None:
        with self._lock:
            self._layout_desc = None
            self._tables = []
            self._ids = {}
            self._sketches = {}
            self._anchors = {}

    def describe(self) -> str:
        return "memory"


def _sketch(probe: Probe, row: int) -> bytes | None:
    return probe.sketches[row] if probe.sketches is not None else None


def _anchors(probe: Probe, row: int) -> Sequence[int]:
    return probe.anchors[row] if probe.anchors is not None else ()
