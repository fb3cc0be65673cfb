"""Handing fingerprints to Spark as Parquet files, written in chunks (no connector jars:
MongoDB is read with pymongo, a chunk at a time, so the driver holds one chunk at most).

A staging folder must be readable by every executor: on ``local[*]`` or a standalone
cluster on this machine any local folder is; on a cluster of other machines, a shared
mount (``--stage DIR``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

#: Fingerprints per Parquet file (and per MongoDB read).
CHUNK = 1_000_000


def write(chunks: Iterable[tuple[np.ndarray | list[str], np.ndarray]], folder: Path) -> int:
    """Write ``(ids, fingerprints)`` chunks as ``part-NNNNN.parquet`` files in ``folder``.

    Args:
        chunks: ids (input positions as ``int64``, or page ids as strings) and their
            fingerprints (``uint64``).
        folder: created if missing.

    Returns:
        How many fingerprints were written.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    for n, (ids, fps) in enumerate(chunks):
        if not len(fps):
            continue
        fps = np.asarray(fps, dtype=np.uint64)
        table = pa.table({"id": pa.array(ids), "fp": pa.array(fps.view(np.int64))})
        pq.write_table(table, folder / f"part-{n:05d}.parquet")
        total += len(fps)
    return total


def file_chunks(values: np.ndarray, size: int = CHUNK
                ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Chunks of an in-memory set, ids being input positions."""
    for start in range(0, len(values), size):
        part = values[start:start + size]
        yield np.arange(start, start + len(part), dtype=np.int64), part


def _chunked(rows: Iterable[tuple[str, int]], size: int
             ) -> Iterator[tuple[list[str], np.ndarray]]:
    """``(page id, value)`` rows in chunks of ``size``: page ids and ``uint64`` values."""
    ids: list[str] = []
    values: list[int] = []
    for page_id, value in rows:
        ids.append(page_id)
        values.append(value)
        if len(ids) >= size:
            yield ids, np.array(values, dtype=np.uint64)
            ids, values = [], []
    if ids:
        yield ids, np.array(values, dtype=np.uint64)


def store_chunks(store: object, size: int = CHUNK
                 ) -> Iterator[tuple[list[str], np.ndarray]]:
    """Chunks of a page store's indexed fingerprints (``PageStore.iter_fingerprints``),
    ids being page ids."""
    return _chunked(((page_id, fp) for fp, page_id, _ in
                     store.iter_fingerprints()), size)  # type: ignore[attr-defined]


def anchor_chunks(store: object, size: int = CHUNK) -> Iterator[tuple[list[str], np.ndarray]]:
    """Chunks of ``(page ids, anchors)``, one row per page and text anchor
    (:attr:`dedup.sketch.TextSketch.anchors`)."""
    from dedup.sketch import TextSketch

    def rows() -> Iterator[tuple[str, int]]:
        for _, page_id, sketch in store.iter_fingerprints():  # type: ignore[attr-defined]
            if sketch:
                try:
                    found = set(TextSketch.from_bytes(sketch).anchors)
                except ValueError:
                    continue  # an unreadable sketch: no anchors
                yield from ((page_id, value) for value in found)

    return _chunked(rows(), size)
