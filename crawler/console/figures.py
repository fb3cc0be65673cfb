"""The web console's figures of the whole store (the report's), drawn in a background
thread so that no request waits for a scan of the store."""

from __future__ import annotations

import datetime as dt
import logging
import shutil
import threading
from pathlib import Path

from crawler.console.report_file import Findings, collect, figures
from dedup.store.reads import StoreReads

log = logging.getLogger(__name__)


class FigureCache:
    """The report's figures of the whole store, drawn in a background thread at most every
    ``refresh`` seconds, so that no request waits for a scan of the store.

    Args:
        reads: the store's reads (:class:`dedup.store.reads.StoreReads`).
        k: the crawl's k (marked on the distance histogram).
        refresh: seconds before the figures are drawn again (on the next request).
        folder: where the PNG files go (one sub-folder per drawing).
    """

    def __init__(self, reads: StoreReads, k: int, refresh: float, folder: Path) -> None:
        self.reads, self.k, self.refresh, self.folder = reads, k, refresh, folder
        self.drawn: list[tuple[str, Path, str]] = []
        self.found: Findings | None = None
        self.made_at: dt.datetime | None = None
        self.read = 0  # records read by the drawing under way
        self.error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._generation = 0

    def current(self) -> tuple[list[tuple[str, Path, str]], Findings | None]:
        """The latest figures (empty before the first drawing ends); starts a drawing when
        there is none or the latest is older than ``refresh`` seconds."""
        with self._lock:
            stale = self.made_at is None or (
                dt.datetime.now(dt.timezone.utc) - self.made_at).total_seconds() > self.refresh
            if stale and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._draw, name="figures", daemon=True)
                self._thread.start()
            return self.drawn, self.found

    @property
    def busy(self) -> bool:
        """Whether a drawing is under way."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float) -> bool:
        """Wait for the drawing under way; whether figures are ready."""
        self.current()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.made_at is not None

    def _count(self, n: int) -> None:
        self.read += n

    def _draw(self) -> None:
        self.read = 0
        self._generation += 1
        out = self.folder / str(self._generation)
        try:
            out.mkdir(parents=True, exist_ok=True)
            found = collect(self.reads, progress=self._count)
            drawn = figures(found, self.k, out)
        except Exception as exc:  # noqa: BLE001 - shown on the dashboard, tried again later
            log.warning("drawing the dashboard's figures failed: %s", exc)
            with self._lock:
                self.error = str(exc)
                self.made_at = dt.datetime.now(dt.timezone.utc)
            return
        with self._lock:
            old = self.folder / str(self._generation - 1)
            self.drawn, self.found, self.error = drawn, found, None
            self.made_at = dt.datetime.now(dt.timezone.utc)
        shutil.rmtree(old, ignore_errors=True)

    def path(self, name: str) -> Path | None:
        """The PNG file of the figure ``name`` (``distances``...), if drawn."""
        for _, path, _ in self.drawn:
            if path.stem == name:
                return path
        return None
