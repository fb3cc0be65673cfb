"""A full disk, seen before it stops the stores: the crawl waits for room, or stops.

A crawl writes to disk in several places: the embedded servers' data (Redis's
append-only file, SecantusDB's WiredTiger files, under ``DEDUP_DATA_DIR``), Scrapy's
``JOBDIR``, the WARC files (``DEDUP_WARC_DIR``), the log (``LOG_FILE``), the summary
(``DEDUP_SUMMARY_FILE``) and the folders named in ``DEDUP_DISK_WATCH`` (a Redis or a
MongoDB of this machine that the crawl did not start). On a full disk each fails its own
way, and none says so where a user looks: Redis with ``appendfsync always`` exits
("Short write while writing to the AOF file"), so the crawl sees an outage of Redis and
gives up after ``DEDUP_RETRY_SECONDS`` naming a refused connection; SecantusDB went on
acknowledging writes with no byte free (docs/operations.md, "A full disk").

So :class:`DiskGuard` looks at the free space of every filesystem holding one of those
folders once a second (``os.statvfs``: microseconds), from a thread of its own: the
reactor may be held up when the disk fills (a Redis cut off by the network holds each
call of the shared frontier for its timeout, and the reactor with it), and a full disk
is said when it is seen, not when the reactor is free again. When one has less than
``DEDUP_DISK_MIN_FREE`` megabytes free, before any of them fails, it says so in one line
naming the folder and the space left, and then as ``DEDUP_DISK_FULL`` says:

- ``wait`` (the default): the engine is paused (Scrapy's ``engine.pause``): no request
  is sent meanwhile, the pages in flight are decided and stored in the room left (the
  margin is for them), and when the disk has room again the crawl says how long it
  waited and goes on. Nothing is lost, nothing is fetched twice: the frontier keeps
  what was queued. A crawl left to run unattended waits rather than fails, as it waits
  out an outage, but without a limit: room is made by a person, not by a retry.
- ``stop``: the crawl stops (``finish_reason`` ``disk_full``, exit status 1), the pages
  in flight are stored, and what was not fetched is left for the next crawl (its
  ``JOBDIR`` or the shared frontier keeps it).

Counted in ``dedup/disk/full`` (times a disk was found full) and
``dedup/disk/waited_seconds``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler.stopping import stop_crawl
from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: Seconds between two looks at the disks.
LOOK_SECONDS = 1.0

#: The ``finish_reason`` of a crawl stopped by a full disk (``DEDUP_DISK_FULL=stop``).
DISK_FULL = "disk_full"

MB = 1024 * 1024


def free_bytes(folder: Path) -> int:
    """Bytes free to an unprivileged writer on the filesystem that holds ``folder``."""
    st = os.statvfs(folder)
    return st.f_bavail * st.f_frsize


def existing(folder: Path) -> Path:
    """``folder``, or its nearest ancestor that exists (a folder the crawl makes later
    lives on the filesystem of the folder it is made in)."""
    folder = folder.absolute()
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return folder


def watched_folders(crawler: Crawler, data_dir: str | None, extra: str) -> list[Path]:
    """The folders the crawl writes to, one per filesystem (the first named of each):
    ``data_dir`` (the embedded servers', when the crawl uses them), ``JOBDIR``,
    ``DEDUP_WARC_DIR``, the log's and the summary's folders, and ``extra``
    (``DEDUP_DISK_WATCH``, comma-separated)."""
    settings = crawler.settings
    named: list[str] = [data_dir or "", settings.get("JOBDIR") or "",
                        value("DEDUP_WARC_DIR", settings.get)]
    for file in (settings.get("LOG_FILE"), value("DEDUP_SUMMARY_FILE", settings.get)):
        if file:
            named.append(str(Path(file).parent))
    named += [part.strip() for part in extra.split(",")]
    folders: list[Path] = []
    devices: set[int] = set()
    for name in named:
        if not name:
            continue
        folder = existing(Path(name))
        if not os.statvfs(folder).f_blocks:  # no disk: /proc, /sys (a folder there fails
            continue  # where the crawl checks it is writable, not here)
        device = folder.stat().st_dev
        if device not in devices:
            devices.add(device)
            folders.append(folder)
    return folders


class DiskGuard:
    """Pause (or stop) the crawl while a disk it writes to is nearly full (see the
    module). Settings: ``DEDUP_DISK_MIN_FREE`` (megabytes, 0 = off), ``DEDUP_DISK_FULL``
    (``wait`` or ``stop``), ``DEDUP_DISK_WATCH``."""

    def __init__(self, crawler: Crawler, folders: list[Path], min_free: int, stop: bool,
                 look: float = LOOK_SECONDS) -> None:
        self.crawler = crawler
        self.folders = folders
        self.min_free = min_free
        self.stop = stop
        self.look_seconds = look
        self.full: Path | None = None  # the folder whose disk is full, while one is
        self.unreadable = False  # a folder's free space could not be read at the last look
        self.since = 0.0
        self.crawl_state: Any = None  # the crawl's CrawlState, when it is set up
        self._halt = threading.Event()
        self._watcher: threading.Thread | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DiskGuard:
        """Built before the crawl's parts (the add-on's first extension but one): it
        watches while they reach the services, and a crawl that cannot reach them says
        a full disk all the same."""
        from dedup.config import DedupConfig
        from dedup.adapters.servers.services import data_folder

        config = DedupConfig.from_settings(crawler.settings.get)
        if config.disk_min_free <= 0:
            raise NotConfigured("DEDUP_DISK_MIN_FREE is 0")
        embedded = not (config.redis_url and config.mongo_uri)  # as wiring resolves them
        data_dir = data_folder(config.data_dir) if embedded else None
        folders = watched_folders(crawler, data_dir, config.disk_watch)
        if not folders:
            raise NotConfigured("the crawl writes to no folder")
        guard = cls(crawler, folders, config.disk_min_free * MB, config.disk_full == "stop")
        crawler.signals.connect(guard.opened, signal=signals.spider_opened)
        crawler.signals.connect(guard.closed, signal=signals.spider_closed)
        if crawler.crawling:  # from now: the crawl may wait long to open (a Redis cut
            guard.start()  # off); a crawler only built (a test's) starts no thread
        return guard

    def start(self) -> None:
        """Look from a thread of its own until the crawl closes."""
        self._watcher = threading.Thread(target=self._watch, name="simcrawl-disk-guard",
                                         daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        """Look now and then every :attr:`look_seconds` until the crawl closes."""
        while True:
            self.look()
            if self._halt.wait(self.look_seconds):
                return

    @property
    def state(self) -> Any:
        """The crawl's shared state (:class:`crawler.state.CrawlState`), once its parts are
        built (``None`` before)."""
        if self.crawl_state is None:
            from crawler.wiring import built_parts

            parts = built_parts(self.crawler)
            self.crawl_state = parts.state if parts is not None else None
        return self.crawl_state

    def opened(self, spider: Any = None) -> None:
        """A disk found full while the crawl opened: a stop asked before the spider was
        open is asked again now (a pause holds from before)."""
        if self._watcher is None:
            self.start()
        if self.full is not None and self.stop:
            stop_crawl(self.crawler, DISK_FULL)

    def closed(self, spider: Any = None, reason: str = "") -> None:
        if self._watcher is not None:
            self._halt.set()
            self._watcher.join(timeout=self.look_seconds + 5)
        if self.full is not None and not self.stop:
            self._count_wait()

    def look(self) -> None:
        """Look at each disk once: say a full one and pause or stop; say room again and
        go on."""
        try:
            short = next(((folder, free) for folder in self.folders
                          if (free := free_bytes(folder)) < self.min_free), None)
        except OSError as exc:  # a folder removed under the crawl: said once, not fatal
            if not self.unreadable:
                log.warning("the free space of a folder the crawl writes to cannot be "
                            "read (said once): %s", exc)
            self.unreadable = True
            return
        self.unreadable = False
        if short is not None and self.full is None:
            self._disk_full(*short)
        elif short is None and self.full is not None:
            self._room_again()

    def _disk_full(self, folder: Path, free: int) -> None:
        self.full, self.since = folder, time.monotonic()
        self.crawler.stats.inc_value("dedup/disk/full")
        said = (f"the disk holding {folder} is full: {free / MB:.1f} MB free, less than "
                f"DEDUP_DISK_MIN_FREE ({self.min_free // MB} MB)")
        if self.stop:
            log.error("%s; stopping the crawl (DEDUP_DISK_FULL=stop): the pages in flight "
                      "are stored, the pages not fetched are left for the next crawl", said)
            self._in_reactor(stop_crawl, self.crawler, DISK_FULL)
            return
        log.warning("%s; the crawl waits for room (DEDUP_DISK_FULL=wait): no page is "
                    "fetched until the disk has room again", said)
        if (state := self.state) is not None:  # the live display says the wait
            state.disk_full = str(folder)
        self._in_reactor(self._pause)

    def _pause(self) -> None:
        """In the reactor: pause the engine while the disk is still full (the engine is
        made just after this guard: by the time the reactor runs this, it is there)."""
        engine = self._engine()
        if engine is not None and self.full is not None:
            engine.pause()

    def _room_again(self) -> None:
        folder, waited = self.full, self._count_wait()
        self.full = None
        if (state := self.state) is not None:
            state.disk_full = ""
        log.warning("the disk holding %s has room again (%.0f MB free) after %.0f s; the "
                    "crawl goes on", folder, free_bytes(folder) / MB if folder else 0, waited)
        if not self.stop:
            self._in_reactor(self._unpause)

    def _unpause(self) -> None:
        engine = self._engine()
        if engine is not None and self.full is None:
            engine.unpause()

    def _engine(self) -> Any:
        """The crawl's engine, or ``None`` before Scrapy made it (a crawl that failed to
        start: Scrapy's ``Crawler.engine`` raises then)."""
        try:
            return self.crawler.engine
        except RuntimeError:
            return None

    @staticmethod
    def _in_reactor(fn: Any, *args: Any) -> None:
        """Call ``fn`` in the reactor's thread (the engine is not thread-safe); in order,
        so that a pause and the unpause after it are done as they were seen."""
        from twisted.internet import reactor

        reactor.callFromThread(fn, *args)  # type: ignore[attr-defined]

    def _count_wait(self) -> float:
        waited = time.monotonic() - self.since
        self.crawler.stats.inc_value("dedup/disk/waited_seconds", round(waited))
        return waited
