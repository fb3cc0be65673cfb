"""Pages read ahead of their decision: an archive file's pages read elsewhere (on Spark's
executors, ``simcrawl warc --engine spark``: :mod:`dedup.spark.read_archives`) and staged for the
decision, which then does not read them again.

Reading a page (its main text and fingerprints) is nearly all of what deciding an
archive's page costs (docs/benchmarks.md). :func:`read_file` reads every page record of
one archive file with the crawl's own reading (the function a crawl's extraction worker
runs, with the same settings: :data:`Reader`) and writes the pages read to a
staging folder: for file ``n``, ``NNNNNN.pages`` (the pages, pickled one after another)
and ``NNNNNN.index`` (where each page's record is in the archive -> where its reading is
in ``.pages``). The decision takes them in file order in one process (crawler/spiders/
warc.py, with :func:`staged_index` and :func:`staged_page`), as ``simcrawl warc``
decides the pages it reads itself: the same decisions.

The staging folder is the run's own, read back as it was written (pickle, as Spark hands
Python values between its own processes).
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dedup.archive import BadRecord, page_at, records
from dedup.reading import Params

#: How a page is read: ``(body, url, Content-Type, params) -> Page``, the crawl's own
#: reading of a response (``crawler.extraction.read_fetched``, handed in by the command
#: that runs the job: the library does not import the crawler).
Reader = Callable[[bytes, str, "str | None", Params], Any]


def stage_paths(stage: Path | str, n: int) -> tuple[Path, Path]:
    """The pages and index files of the ``n``-th archive file in ``stage``."""
    return Path(stage) / f"{n:06d}.pages", Path(stage) / f"{n:06d}.index"


@dataclass(frozen=True)
class FileRead:
    """What one task read of one archive file.

    Attributes:
        n: the file's place in the run's list.
        records: its records read; ``pages``: of them, the pages read and staged.
        seconds: CPU seconds the task took.
        failed: why the file was not read to its end (``""``: it was), the offset
            included; the run's decision names the record again.
    """

    n: int
    records: int
    pages: int
    seconds: float
    failed: str = ""


def read_file(task: tuple[int, str, Params, str, Reader]) -> FileRead:
    """In an executor: every page record of one archive file read with ``reader`` and
    staged (see the module docstring). A page that cannot be decoded is left out (the
    decision names it when it meets it)."""
    n, path, params, stage, reader = task
    pages_path, index_path = stage_paths(stage, n)
    started = time.process_time()
    index: dict[int, int] = {}
    count, failed = 0, ""
    partial = pages_path.with_suffix(".pages.part")
    with open(path, "rb") as fh, open(partial, "wb") as out:
        try:
            for entry in records(fh):
                count += 1
                if entry.kind != "page":
                    continue
                try:
                    fetched = page_at(path, entry.offset)
                except ValueError:
                    continue
                kind = next((v for k, v in fetched.headers if k.lower() == "content-type"),
                            None)
                page = reader(fetched.body, fetched.url, kind, params)
                index[entry.offset] = out.tell()
                pickle.dump(page, out, protocol=pickle.HIGHEST_PROTOCOL)
        except BadRecord as exc:
            failed = str(exc)
    os.replace(partial, pages_path)
    with open(index_path, "wb") as out:
        pickle.dump(index, out, protocol=pickle.HIGHEST_PROTOCOL)
    return FileRead(n, count, len(index), time.process_time() - started, failed)


def staged_index(stage: Path | str, n: int) -> dict[int, int]:
    """Where each staged page of the ``n``-th file is in its pages file, by the page
    record's offset in the archive (empty: none staged)."""
    _, index_path = stage_paths(stage, n)
    try:
        with open(index_path, "rb") as fh:
            return pickle.load(fh)  # noqa: S301  (the run's own staging folder)
    except FileNotFoundError:
        return {}


def staged_page(pages_path: Path | str, position: int) -> Any:
    """The page staged at ``position`` of a pages file (a :class:`dedup.page.Page`)."""
    with open(pages_path, "rb") as fh:
        fh.seek(position)
        return pickle.load(fh)  # noqa: S301  (the run's own staging folder)
