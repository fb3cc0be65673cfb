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


def store_chunks(store: object, size: int = CHUNK
                 ) -> Iterator[tuple[list[str], np.ndarray]]:
    """Chunks of a page store's indexed fingerprints (``PageStore.iter_fingerprints``),
    ids being page ids."""
    ids: list[str] = []
    fps: list[int] = []
    for fp, page_id, _ in store.iter_fingerprints():  # type: ignore[attr-defined]
        ids.append(page_id)
        fps.append(fp)
        if len(ids) >= size:
            yield ids, np.array(fps, dtype=np.uint64)
            ids, fps = [], []
    if ids:
        yield ids, np.array(fps, dtype=np.uint64)


def anchor_chunks(store: object, size: int = CHUNK) -> Iterator[tuple[list[str], np.ndarray]]:
    """Chunks of ``(page ids, anchors)``, one row per page and text anchor
    (:attr:`dedup.sketch.TextSketch.anchors`, as signed 64-bit integers)."""
    from dedup.sketch import TextSketch

    ids: list[str] = []
    values: list[int] = []
    for _, page_id, sketch in store.iter_fingerprints():  # type: ignore[attr-defined]
        if not sketch:
            continue
        try:
            found = set(TextSketch.from_bytes(sketch).anchors)
        except ValueError:
            continue
        ids.extend([page_id] * len(found))
        values.extend(found)
        if len(ids) >= size:
            yield ids, np.array(values, dtype=np.uint64)
            ids, values = [], []
    if ids:
        yield ids, np.array(values, dtype=np.uint64)
