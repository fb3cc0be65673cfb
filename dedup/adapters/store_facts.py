"""The page facts from the MongoDB store and the shared crawl's admission journals
(:class:`StoreFacts`; the interface and the memory one are :mod:`dedup.facts`)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

import redis

from dedup.adapters.journal import journaled
from dedup.facts import CopyVerdict
from dedup.store import PageRecords


class StoreFacts:
    """The MongoDB store, and the shared crawl's admission journals for pages admitted by
    another process and not stored yet (see the module docstring).

    Args:
        pages: the page store.
        client: the index's Redis (the journals); ``None``: the store alone.
        namespace: the index's key prefix.
    """

    def __init__(self, pages: PageRecords, client: redis.Redis | None = None,
                 namespace: str = "") -> None:
        self.pages = pages
        self.client = client
        self.namespace = namespace

    def stored_urls(self, urls: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """See :meth:`PageFacts.stored_urls`."""
        return self.pages.stored_urls(urls)

    def urls_of(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str, str | None]]:
        """See :meth:`PageFacts.urls_of`: the store, then the journals, then the store
        once more for a page stored (and its journal entry confirmed) between the two
        reads."""
        wanted = set(page_ids)
        found = self.pages.urls_of(wanted)
        missing = wanted - found.keys()
        if missing and self.client is not None:
            found.update({pid: (e.url, e.host, None) for pid, e in journaled(
                self.client, self.namespace, missing).items() if e.url})
            missing -= found.keys()
            if missing:
                found.update(self.pages.urls_of(missing))
        return found

    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """See :meth:`PageFacts.canonicals_of`."""
        return self.pages.canonicals_of(page_ids)

    def published_of(self, page_ids: Iterable[str]) -> dict[str, dt.datetime]:
        """See :meth:`PageFacts.published_of`."""
        return self.pages.published_of(page_ids)

    def texts_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """See :meth:`PageFacts.texts_of`."""
        return self.pages.texts_of(page_ids)

    def verifiers_of(self, page_ids: Iterable[str]) -> dict[str, int]:
        """See :meth:`PageFacts.verifiers_of`: the store, then the journals."""
        wanted = set(page_ids)
        found = self.pages.verifiers_of(wanted)
        missing = wanted - found.keys()
        if missing and self.client is not None:
            found.update({pid: e.verify for pid, e in journaled(
                self.client, self.namespace, missing).items() if e.verify is not None})
        return found

    def sketches_of(self, page_ids: Iterable[str]) -> dict[str, bytes]:
        """See :meth:`PageFacts.sketches_of` (the store only: a sketch leaves Redis once
        the store holds it)."""
        return self.pages.sketches_of(page_ids)

    def recorded_copies(self, urls: Iterable[str]) -> dict[str, CopyVerdict]:
        """See :meth:`PageFacts.recorded_copies`."""
        return {url: CopyVerdict(**fields)
                for url, fields in self.pages.recorded_copies(urls).items()}
