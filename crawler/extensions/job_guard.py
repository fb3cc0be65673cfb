"""The JOBDIR guard: a job resumed only when it closed cleanly (:class:`JobGuard`)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured


if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: The marker a running job keeps in its ``JOBDIR``.
RUNNING = "simcrawl.running"


class JobGuard:
    """Resume only jobs that closed cleanly; re-seed the others.

    Scrapy saves a ``JOBDIR``'s request queue when the crawl closes gracefully (one
    Ctrl-C, SIGTERM), but it writes the seen-requests file as it goes. After a forced
    shutdown (a second Ctrl-C) or a kill, the queue is lost while every queued URL is
    marked seen, so a resume would crawl nothing and end "finished". This extension keeps
    a marker in the ``JOBDIR`` while a crawl runs; a crawl that finds it knows the
    previous one did not close cleanly, logs so, and drops the stale queue and
    seen-requests file: the job starts again from its start URLs (pages stored already
    are revisits, copies are decided again, nothing is stored twice).

    Settings: ``JOBDIR`` (off without it).
    """

    def __init__(self, jobdir: Path) -> None:
        self.jobdir = jobdir
        self.marker = jobdir / RUNNING
        if self.marker.exists():
            stale = [p for p in (jobdir / "requests.seen", jobdir / "requests.queue")
                     if p.exists()]
            log.warning("JOBDIR %s did not close cleanly (a forced shutdown or a kill): its "
                        "request queue is lost; re-seeding the job from its start URLs "
                        "(pages stored already count as revisits)", jobdir)
            for path in stale:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        jobdir.mkdir(parents=True, exist_ok=True)
        self.marker.write_text("a crawl runs (or ran and did not close cleanly)\n")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JobGuard:
        jobdir = crawler.settings.get("JOBDIR")
        if not jobdir:
            raise NotConfigured("no JOBDIR")
        guard = cls(Path(jobdir))
        crawler.signals.connect(guard.spider_closed, signal=signals.spider_closed)
        return guard

    def spider_closed(self, spider: Any, reason: str) -> None:
        """The queue is saved after this (scheduler close): the job can be resumed."""
        self.marker.unlink(missing_ok=True)
