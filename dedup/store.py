"""The page store behind an interface, as the index is (:mod:`dedup.index`).

What a crawl keeps of its pages, their fingerprints, the match records of copies and
the excerpt records of quotations, and what the decision and the recovery of killed
crawls read back. :class:`PageRecords` is the interface; it has two implementations:

* :class:`MemoryPageStore`, here: one process's store in memory (tests, scripts);
* :class:`dedup.adapters.mongo.PageStore`: the ``pages``, ``fingerprints``, ``matches``
  and ``excerpts`` collections of a MongoDB database, shared by every crawl process
  (its module gives the schema).

Both take the documents :mod:`dedup.adapters.mongo` makes (``page_document``,
``fingerprint_document``, ``match_doc``) and answer the same reads the same way;
``tests/integration/test_page_stores.py`` runs one set of checks against both.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from dedup.ids import url_key

#: The kinds of match records that say a page copies another (an excerpt only quotes).
COPY_KINDS = ("exact", "simhash", "pinyin", "url_rule")


class PageRecords(Protocol):
    """The page store's interface: the writes of a crawl and the reads of its decisions."""

    def ensure_indexes(self) -> None: ...
    def save_pages(self, pages: Iterable[Mapping[str, Any]],
                   fingerprints: Iterable[Mapping[str, Any]] = ()) -> int: ...
    def save_matches(self, matches: Iterable[Mapping[str, Any]]) -> int: ...
    def save_excerpts(self, excerpts: Iterable[Mapping[str, Any]]) -> int: ...
    def forget_copies(self, urls: Iterable[str]) -> int: ...
    def complete_pages(self, page_ids: Iterable[str]) -> set[str]: ...
    def _drop(self, page_id: str) -> None:
        """Forget a page and its fingerprint (the caller holds the lock)."""
        page = self.pages.pop(page_id, None)
        if page is not None:
            url = str(page["url"])
            self._by_url.pop(url, None)
            self._by_key.pop(str(page.get("url_key") or url_key(url)), None)
        self.fingerprints.pop(page_id, None)

    def forget_pages(self, page_ids: Sequence[str]) -> list[str]: ...
    def remove_page(self, page_id: str) -> int | None: ...
    def save_crawl(self, crawl_id: str, record: Mapping[str, Any],
                   running: bool = False) -> None: ...
    def mark_interrupted(self, hostname: str, alive: Callable[[int], bool]) -> list[str]: ...
    def save_layout(self, namespace: str, description: Mapping[str, Any]) -> None: ...
    def load_layout(self, namespace: str) -> dict[str, Any] | None: ...
    def sizes(self) -> dict[str, int] | None: ...
    def flush_sizes(self) -> None: ...
    def stored_urls(self, urls: Iterable[str]) -> dict[str, tuple[str, str | None]]: ...
    def recorded_copies(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]: ...
    def urls_of(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str, str | None]]: ...
    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]: ...
    def texts_of(self, page_ids: Iterable[str]) -> dict[str, str]: ...
    def sketches_of(self, page_ids: Iterable[str]) -> dict[str, bytes]: ...
    def verifiers_of(self, page_ids: Iterable[str]) -> dict[str, int]: ...
    def fingerprint_of(self, page_id: str) -> int | None: ...
    def page(self, page_id: str) -> dict[str, Any] | None: ...


def unsigned(value: int) -> int:
    """A 64-bit fingerprint as stored (a signed 64-bit integer) back to its bits.

    >>> unsigned(-1) == 2**64 - 1, unsigned(5)
    (True, 5)
    """
    return int(value) & 0xFFFF_FFFF_FFFF_FFFF


class MemoryPageStore:
    """The page store in one process's memory (see the module docstring): documents kept
    as given, ids as hex strings, the same answers as the MongoDB store's."""

    def __init__(self) -> None:
        self.pages: dict[str, dict[str, Any]] = {}
        self.fingerprints: dict[str, dict[str, Any]] = {}
        self.matches: dict[str, dict[str, Any]] = {}  # by URL
        self.excerpts: dict[str, dict[str, Any]] = {}  # by URL
        self.crawls: dict[str, dict[str, Any]] = {}
        self.layouts: dict[str, dict[str, Any]] = {}
        self._by_url: dict[str, str] = {}
        self._by_key: dict[str, str] = {}  # url_key -> page id (stored_urls)
        self._lock = threading.Lock()  # the crawl writes from its storage thread

    # ------------------------------------------------------------------ writes
    def ensure_indexes(self) -> None:
        """Nothing to build in memory."""

    def save_pages(self, pages: Iterable[Mapping[str, Any]],
                   fingerprints: Iterable[Mapping[str, Any]] = ()) -> int:
        """Keep page documents and their fingerprints; a page whose URL is kept already
        is skipped, and so is its fingerprint (unless it is that page's). Returns how
        many pages were new."""
        inserted = 0
        with self._lock:
            for doc in pages:
                pid, url = str(doc["_id"]), str(doc["url"])
                if url in self._by_url or pid in self.pages:
                    continue
                self.pages[pid] = dict(doc, _id=pid)
                self._by_url[url] = pid
                self._by_key[str(doc.get("url_key") or url_key(url))] = pid
                inserted += 1
            for doc in fingerprints:
                pid = str(doc["_id"])
                if pid in self.pages and pid not in self.fingerprints:
                    self.fingerprints[pid] = dict(doc, _id=pid)
        return inserted

    def save_matches(self, matches: Iterable[Mapping[str, Any]]) -> int:
        """One record per URL: a URL seen again updates it, counts ``times_seen`` and
        adds its crawl to ``crawl_ids``. Returns how many were new."""
        return self._upsert(self.matches, matches)

    def save_excerpts(self, excerpts: Iterable[Mapping[str, Any]]) -> int:
        """As :meth:`save_matches`, for excerpt records."""
        return self._upsert(self.excerpts, excerpts)

    def _upsert(self, records: dict[str, dict[str, Any]],
                docs: Iterable[Mapping[str, Any]]) -> int:
        new = 0
        with self._lock:
            for m in docs:
                doc = {k: v for k, v in m.items() if k not in ("_id", "times_seen", "crawl_ids")}
                first = doc.pop("first_detected_at", None) or doc["detected_at"]
                doc["original_id"] = str(doc["original_id"])
                if "page_id" in doc:
                    doc["page_id"] = str(doc["page_id"])
                have = records.get(doc["url"])
                if have is None:
                    new += 1
                    have = records[doc["url"]] = {"first_detected_at": first, "times_seen": 0,
                                                  "crawl_ids": []}
                have.update(doc)
                have["times_seen"] += 1
                if doc.get("crawl_id") is not None and doc["crawl_id"] not in have["crawl_ids"]:
                    have["crawl_ids"].append(doc["crawl_id"])
        return new

    def forget_copies(self, urls: Iterable[str]) -> int:
        """Delete the copy records of these URLs; returns how many."""
        with self._lock:
            gone = [u for u in dict.fromkeys(urls)
                    if self.matches.get(u, {}).get("kind") in COPY_KINDS]
            for u in gone:
                del self.matches[u]
        return len(gone)

    def complete_pages(self, page_ids: Iterable[str]) -> set[str]:
        """The ids among ``page_ids`` kept with both their page and their fingerprint."""
        return {p for p in page_ids if p in self.pages and p in self.fingerprints}

    def _drop(self, page_id: str) -> None:
        """Forget a page and its fingerprint (the caller holds the lock)."""
        page = self.pages.pop(page_id, None)
        if page is not None:
            url = str(page["url"])
            self._by_url.pop(url, None)
            self._by_key.pop(str(page.get("url_key") or url_key(url)), None)
        self.fingerprints.pop(page_id, None)

    def forget_pages(self, page_ids: Sequence[str]) -> list[str]:
        """Delete what is kept of these pages, their excerpt records and the match
        records naming them; returns the URLs of those match records."""
        ids = set(page_ids)
        with self._lock:
            for pid in ids:
                self._drop(pid)
            for url in [u for u, e in self.excerpts.items() if e.get("page_id") in ids]:
                del self.excerpts[url]
            urls = [u for u, m in self.matches.items() if m["original_id"] in ids]
            for url in urls:
                del self.matches[url]
        return urls

    def remove_page(self, page_id: str) -> int | None:
        """Delete a page and its fingerprint; its simhash, or ``None`` without one."""
        with self._lock:
            fp = self.fingerprints.get(page_id)
            self._drop(page_id)
        return None if fp is None else unsigned(fp["simhash"])

    def save_crawl(self, crawl_id: str, record: Mapping[str, Any],
                   running: bool = False) -> None:
        """A crawl process's record; a running update never overwrites a finished one."""
        with self._lock:
            have = self.crawls.setdefault(crawl_id, {"_id": crawl_id})
            if running and have.get("state") == "finished":
                return
            have.update(record, state="running" if running else "finished",
                        updated_at=dt.datetime.now(dt.timezone.utc))

    def mark_interrupted(self, hostname: str, alive: Callable[[int], bool]) -> list[str]:
        """Mark ``interrupted`` the running crawls of ``hostname`` whose process is gone."""
        stale = [cid for cid, r in self.crawls.items()
                 if r.get("state") == "running" and r.get("hostname") == hostname
                 and isinstance(r.get("pid"), int) and not alive(r["pid"])]
        for cid in stale:
            self.crawls[cid].update(state="interrupted",
                                    interrupted_at=dt.datetime.now(dt.timezone.utc))
        return stale

    def save_layout(self, namespace: str, description: Mapping[str, Any]) -> None:
        self.layouts[namespace] = dict(description)

    def load_layout(self, namespace: str) -> dict[str, Any] | None:
        layout = self.layouts.get(namespace)
        return None if layout is None else dict(layout)

    def sizes(self) -> dict[str, int] | None:
        """The documents kept of each kind (counted at once in memory)."""
        return {"pages": len(self.pages),
                "registered": sum(1 for p in self.pages.values() if p.get("source")),
                "fingerprints": len(self.fingerprints), "matches": len(self.matches),
                "excerpts": len(self.excerpts)}

    def flush_sizes(self) -> None:
        """Nothing kept back in memory."""

    # ------------------------------------------------------------------- reads
    def stored_urls(self, urls: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """``url -> (page id, checksum)`` for the URLs kept, in canonical form
        (:func:`dedup.ids.url_key`)."""
        found = {}
        for url in urls:
            pid = self._by_key.get(url_key(url))
            if pid is not None:
                found[url] = (pid, self.pages[pid].get("checksum"))
        return found

    def recorded_copies(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``url -> {original_id, checksum, kind, distance, containment}`` for the URLs
        recorded as an exact or near copy of a page still kept."""
        out = {}
        for url in dict.fromkeys(urls):
            m = self.matches.get(url)
            if m is None or m.get("kind") not in ("exact", "simhash") \
                    or not m.get("checksum") or m["original_id"] not in self.pages:
                continue
            out[url] = {"original_id": m["original_id"], "checksum": m["checksum"],
                        "kind": m["kind"], "distance": int(m.get("distance") or 0),
                        "containment": m.get("containment")}
        return out

    def urls_of(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str, str | None]]:
        return {p: (str(d["url"]), d.get("host", ""), d.get("source"))
                for p in page_ids if (d := self.pages.get(p)) is not None}

    def _field(self, records: dict[str, dict[str, Any]], page_ids: Iterable[str],
               name: str) -> dict[str, Any]:
        return {p: v for p in page_ids if (d := records.get(p)) is not None
                and (v := d.get(name))}

    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        return self._field(self.pages, page_ids, "canonical")

    def texts_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        return self._field(self.pages, page_ids, "text")

    def sketches_of(self, page_ids: Iterable[str]) -> dict[str, bytes]:
        return {p: bytes(v) for p, v in self._field(self.fingerprints, page_ids,
                                                    "sketch").items()}

    def verifiers_of(self, page_ids: Iterable[str]) -> dict[str, int]:
        return {p: unsigned(d["simhash2"]) for p in page_ids
                if (d := self.fingerprints.get(p)) is not None and d.get("simhash2") is not None}

    def fingerprint_of(self, page_id: str) -> int | None:
        fp = self.fingerprints.get(page_id)
        return None if fp is None else unsigned(fp["simhash"])

    def page(self, page_id: str) -> dict[str, Any] | None:
        doc = self.pages.get(page_id)
        return None if doc is None else dict(doc)
