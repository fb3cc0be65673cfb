"""``simcrawl warc --engine spark``: the archives' pages read on Spark, a task a file
(:func:`dedup.readahead.read_file` in each), into a staging folder the decision then
takes them from (:mod:`dedup.readahead`). An executor holds one page at a time and the
index of its file (a few dozen bytes a page); the driver holds the files' names and what
each task read.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dedup.reading import Params
from dedup.readahead import FileRead, Reader, read_file


def read_archives(session: Any, files: Sequence[Path], params: Params, stage: Path,
                  reader: Reader) -> list[FileRead]:
    """Read every page of ``files`` on Spark (a task a file) with ``reader`` into
    ``stage``; what each task read, in file order. ``reader`` goes to the executors by
    its name (its module must be installed there, as ``dedup`` must)."""
    stage.mkdir(parents=True, exist_ok=True)
    tasks = [(n, str(Path(p).resolve()), params, str(stage.resolve()), reader)
             for n, p in enumerate(files)]
    context = session.sparkContext
    done = context.parallelize(tasks, numSlices=max(1, len(tasks))).map(read_file).collect()
    return sorted(done, key=lambda r: r.n)
