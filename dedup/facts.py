"""What the decision reads about pages admitted before: the store behind an interface.

:class:`dedup.deduplicator.Deduplicator` asks, for a batch, which URLs are stored already
(revisits) and, for its candidates, their URLs, declared canonicals, texts and
second-opinion simhashes. It holds no client; the facts come from one of

* :class:`MemoryFacts`: pages kept in this process (scans, scripts, unit tests); the
  caller adds each admitted page (:meth:`MemoryFacts.add`), as the crawl's storage
  pipeline writes it to MongoDB;
* :class:`dedup.adapters.store_facts.StoreFacts`: the MongoDB page store
  (:class:`dedup.adapters.mongo.PageStore`), and for pages admitted by another process of
  a shared crawl and not stored yet, that process's admission journal in Redis
  (:func:`dedup.adapters.journal.journaled`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from dedup.ids import url_key


class PageFacts(Protocol):
    """What the decision reads about admitted pages. Every method takes any iterable and
    answers for the pages it knows, leaving the others out."""

    def stored_urls(self, urls: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """``url -> (page id, checksum)`` for the URLs stored already (compared by their
        canonical form, :func:`dedup.ids.url_key`)."""

    def urls_of(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str, str | None]]:
        """``page id -> (url, host, source)``."""

    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """``page id -> the URL it declared canonical`` (those that declared one)."""

    def published_of(self, page_ids: Iterable[str]) -> dict[str, dt.datetime]:
        """``page id -> when it says it was first published`` (those that say)."""

    def texts_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """``page id -> its text`` (those whose text is kept)."""

    def verifiers_of(self, page_ids: Iterable[str]) -> dict[str, int]:
        """``page id -> second-opinion simhash`` (those that have one)."""

    def sketches_of(self, page_ids: Iterable[str]) -> dict[str, bytes]:
        """``page id -> text sketch`` of stored pages (those stored with one)."""

    def recorded_copies(self, urls: Iterable[str]) -> dict[str, CopyVerdict]:
        """``url -> the verdict an earlier crawl recorded`` for the URLs recorded as exact
        or near copies of a page that is still stored (with the copy's checksum)."""


@dataclass(frozen=True)
class CopyVerdict:
    """An earlier crawl's verdict on a URL: an exact or near copy of ``original_id``,
    whose text had checksum ``checksum``."""

    original_id: str
    checksum: str
    kind: str
    distance: int
    containment: float | None = None


@dataclass
class PageFact:
    """What :class:`MemoryFacts` keeps of one admitted page."""

    url: str
    host: str
    checksum: str | None = None
    canonical: str | None = None
    text: str | None = None
    verify: int | None = None
    source: str | None = None
    sketch: bytes | None = None
    published: dt.datetime | None = None


class MemoryFacts:
    """Admitted pages kept in this process (see the module docstring)."""

    def __init__(self) -> None:
        self.pages: dict[str, PageFact] = {}
        self._by_key: dict[str, str] = {}
        self.copies: dict[str, CopyVerdict] = {}

    def add(self, page_id: str, fact: PageFact) -> None:
        """Keep an admitted page (the first page of a URL keeps it); a page that takes
        over an id (a match turned round) replaces the page kept under it."""
        old = self.pages.get(page_id)
        if old is not None and old.url != fact.url \
                and self._by_key.get(url_key(old.url)) == page_id:
            del self._by_key[url_key(old.url)]
        self._by_key.setdefault(url_key(fact.url), page_id)
        self.pages[page_id] = fact

    def add_page(self, page: Any, source: str | None = None) -> None:
        """Keep an admitted :class:`dedup.page.Page` as the crawl stores it (its id, URL,
        host, checksum, canonical, whole text and second opinion)."""
        self.add(page.page_id, PageFact(page.url, page.host, page.checksum, page.canonical,
                                        page.text, page.verify, source, page.sketch,
                                        page.published))

    def add_copy(self, url: str, verdict: CopyVerdict) -> None:
        """Keep a copy's verdict (as the crawl stores its match record)."""
        self.copies[url] = verdict

    def __len__(self) -> int:
        return len(self.pages)

    def stored_urls(self, urls: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """See :meth:`PageFacts.stored_urls`."""
        out = {}
        for url in urls:
            pid = self._by_key.get(url_key(url))
            if pid is not None:
                out[url] = (pid, self.pages[pid].checksum)
        return out

    def urls_of(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str, str | None]]:
        """See :meth:`PageFacts.urls_of`."""
        return {p: (f.url, f.host, f.source) for p in page_ids
                if (f := self.pages.get(p)) is not None}

    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """See :meth:`PageFacts.canonicals_of`."""
        return {p: f.canonical for p in page_ids
                if (f := self.pages.get(p)) is not None and f.canonical}

    def published_of(self, page_ids: Iterable[str]) -> dict[str, dt.datetime]:
        """See :meth:`PageFacts.published_of`."""
        return {p: f.published for p in page_ids
                if (f := self.pages.get(p)) is not None and f.published is not None}

    def texts_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """See :meth:`PageFacts.texts_of`."""
        return {p: f.text for p in page_ids if (f := self.pages.get(p)) is not None and f.text}

    def verifiers_of(self, page_ids: Iterable[str]) -> dict[str, int]:
        """See :meth:`PageFacts.verifiers_of`."""
        return {p: f.verify for p in page_ids
                if (f := self.pages.get(p)) is not None and f.verify is not None}

    def sketches_of(self, page_ids: Iterable[str]) -> dict[str, bytes]:
        """See :meth:`PageFacts.sketches_of`."""
        return {p: f.sketch for p in page_ids
                if (f := self.pages.get(p)) is not None and f.sketch}

    def recorded_copies(self, urls: Iterable[str]) -> dict[str, CopyVerdict]:
        """See :meth:`PageFacts.recorded_copies`."""
        return {u: v for u in urls if (v := self.copies.get(u)) is not None
                and v.original_id in self.pages}
