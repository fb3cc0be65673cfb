"""The page store in one process's memory: tests, scripts, and what a decision needs
without MongoDB (:class:`dedup.store.PageRecords`)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from dedup.decide import EXACT, NEAR
from dedup.ids import new_page_id, url_key
from dedup.store import COPY_KINDS, unsigned
from dedup.store.reads import EVERYTHING, TIME_FIELD, Span, Where, k_of_layouts
from dedup.store.records import BATCH, with_stored


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
                    have = records[doc["url"]] = {"_id": new_page_id(),
                                                  "first_detected_at": first, "times_seen": 0,
                                                  "crawl_ids": []}
                have.update(doc)
                have["times_seen"] += 1
                if doc.get("crawl_id") is not None and doc["crawl_id"] not in have["crawl_ids"]:
                    have["crawl_ids"].append(doc["crawl_id"])
        return new

    def turn_round(self, page: Mapping[str, Any], fingerprint: Mapping[str, Any],
                   copy: Mapping[str, Any]) -> bool:
        """See :meth:`dedup.store.PageRecords.turn_round`."""
        pid, url = str(page["_id"]), str(page["url"])
        with self._lock:
            old = self.pages.get(pid)
            if old is None:
                return False
            if old["url"] != url:
                self._drop(pid)
                self.pages[pid] = dict(page, _id=pid)
                self._by_url[url] = pid
                self._by_key[str(page.get("url_key") or url_key(url))] = pid
            self.fingerprints[pid] = dict(fingerprint, _id=pid)
            for m in self.matches.values():
                if m["original_id"] == pid:
                    m["original_url"], m["original_host"] = url, page.get("host")
        if old["url"] != url:
            self._upsert(self.matches, [with_stored(dict(copy), old)])
        self.forget_copies([url])
        return True

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
            if m is None or m.get("kind") not in (EXACT, NEAR) \
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

    def published_of(self, page_ids: Iterable[str]) -> dict[str, dt.datetime]:
        return self._field(self.pages, page_ids, "published")

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


class MemoryReads:
    """The reads of the console, the report and the export
    (:class:`dedup.store.reads.StoreReads`) over a :class:`MemoryPageStore`, answering as
    :class:`dedup.adapters.mongo.reads.MongoReads` does (one set of checks runs against
    both)."""

    def __init__(self, store: MemoryPageStore, name: str = "memory") -> None:
        self.store = store
        self.name = name

    def _kind(self, kind: str) -> dict[str, dict[str, Any]]:
        return {"pages": self.store.pages, "matches": self.store.matches,
                "excerpts": self.store.excerpts}[kind]

    # -------------------------------------------------------------- the database
    def sizes(self) -> dict[str, int] | None:
        return self.store.sizes()

    def holds_crawl(self) -> bool:
        sizes = self.store.sizes() or {}
        return sizes["pages"] > sizes["registered"] or sizes["matches"] > 0

    def has_records(self) -> bool:
        return bool(self.store.pages or self.store.matches)

    def estimated(self, kind: str) -> int:
        return len(getattr(self.store, kind, {}))

    def count(self, kind: str, span: Span = EVERYTHING) -> int:
        return sum(1 for _ in self.records(kind, span, ()))

    def is_embedded(self) -> bool:
        return False

    def page_store(self) -> MemoryPageStore:
        return self.store

    def index_k(self, namespace: str | None = None) -> int:
        return k_of_layouts(self.store.layouts, self.name, namespace)

    # -------------------------------------------------------------- whole reads
    def records(self, kind: str, span: Span = EVERYTHING,
                fields: Iterable[str] | None = None,
                ordered: bool = True) -> Iterator[dict[str, Any]]:
        keep = None if fields is None else {"_id", *fields}
        for doc in sorted(self._kind(kind).values(), key=lambda d: d["_id"]):
            if not _in_span(kind, doc, span):
                continue
            yield dict(doc) if keep is None else {k: v for k, v in doc.items() if k in keep}

    def clusters(self) -> Iterator[dict[str, Any]]:
        return iter(())  # the batch job writes its clusters to MongoDB only

    def crawls(self, crawl_id: str | None = None) -> list[dict[str, Any]]:
        return [dict(r) for cid, r in self.store.crawls.items()
                if crawl_id is None or cid == crawl_id]

    def fingerprints(self) -> Iterator[tuple[str, int, int | None]]:
        for pid, d in sorted(self.store.fingerprints.items()):
            if not d.get("short"):
                second = d.get("simhash2")
                yield pid, unsigned(d["simhash"]), None if second is None else unsigned(second)

    def near_matches(self, max_distance: int) -> Iterator[tuple[str, int, str]]:
        for m in self.records("matches"):
            if m.get("kind") == NEAR and int(m.get("distance") or 0) <= max_distance:
                yield m["_id"], int(m["distance"]), m["original_id"]

    # -------------------------------------------------------------- one at a time
    def recent_crawls(self, limit: int) -> list[dict[str, Any]]:
        rows = sorted(self.crawls(), key=lambda r: r.get("updated_at") or _EPOCH, reverse=True)
        return [{k: v for k, v in r.items() if k not in ("stats", "skipped_per_minute")}
                for r in rows[:limit]]

    def newest(self, kind: str, where: Where, limit: int, before: str | None = None,
               by: str = "_id") -> tuple[list[dict[str, Any]], str | None]:
        rows = [{k: v for k, v in d.items() if k != "text"}
                for d in self._kind(kind).values()
                if _named(where, d) and d.get(by) is not None
                and (before is None or by != "_id" or d["_id"] < before)]
        rows.sort(key=lambda d: d[by], reverse=True)
        more = len(rows) > limit and by == "_id"
        return rows[:limit], (rows[limit - 1]["_id"] if more else None)

    def match(self, match_id: str) -> dict[str, Any] | None:
        return next((dict(m) for m in self.store.matches.values() if m["_id"] == match_id),
                    None)

    def page(self, page_id: str, text: bool = True) -> dict[str, Any] | None:
        doc = self.store.page(page_id)
        if doc is not None and not text:
            doc.pop("text", None)
        return doc

    def url_and_text(self, kind: str, record_id: str) -> tuple[str, str]:
        doc = self.page(record_id) if kind == "pages" else self.match(record_id)
        doc = doc or {}
        return str(doc.get("url", "")), str(doc.get("text") or "")

    def copies_of(self, page_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
        rows = [{k: v for k, v in m.items() if k != "text"}
                for m in self.store.matches.values() if m["original_id"] == page_id]
        rows.sort(key=lambda m: m["detected_at"], reverse=True)
        return rows[:limit], len(rows)

    def cluster(self, cluster_id: str) -> dict[str, Any] | None:
        return None  # see clusters

    def pages_of(self, page_ids: Iterable[str]) -> list[dict[str, Any]]:
        return [{"_id": p, "url": d["url"], **({"fetched_at": d["fetched_at"]}
                                               if "fetched_at" in d else {})}
                for p in page_ids if (d := self.store.pages.get(p)) is not None]

    def batch_record(self, url: str) -> dict[str, Any] | None:
        m = self.store.matches.get(url)
        return None if m is None or m.get("kind") != BATCH else \
            {k: v for k, v in m.items() if k != "text"}

    def examples(self, kind: str, limit: int) -> list[dict[str, Any]]:
        rows = [dict(m) for m in self.store.matches.values() if m.get("kind") == kind]
        rows.sort(key=lambda m: (m.get("distance") is not None, m.get("distance") or 0,
                                 m["url"]))
        return rows[:limit]

    def source_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for d in self.store.pages.values():
            if d.get("source"):
                counts[d["source"]] = counts.get(d["source"], 0) + 1
        return counts

    def originals(self, source: str, after: str | None,
                  limit: int) -> tuple[list[dict[str, Any]], str | None]:
        rows = sorted(({"_id": p, "url": d["url"], "title": d.get("title"),
                        **({"registered_at": d["registered_at"]}
                           if "registered_at" in d else {})}
                       for p, d in self.store.pages.items() if d.get("source") == source
                       and (after is None or d["url"] > after)), key=lambda d: d["url"])
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, (rows[-1]["url"] if more and rows else None)

    def copy_counts(self, page_ids: Iterable[str]) -> dict[str, int]:
        wanted, counts = set(page_ids), {}
        for m in self.store.matches.values():
            if m["original_id"] in wanted:
                counts[m["original_id"]] = counts.get(m["original_id"], 0) + 1
        return counts


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _in_span(kind: str, doc: Mapping[str, Any], span: Span) -> bool:
    if span.crawl_id and span.crawl_id != doc.get("crawl_id") \
            and span.crawl_id not in (doc.get("crawl_ids") or ()):
        return False
    when = doc.get(TIME_FIELD[kind])
    if span.since is not None and (when is None or when < span.since):
        return False
    return not (span.until is not None and (when is None or when >= span.until))


def _named(where: Where, doc: Mapping[str, Any]) -> bool:
    """Whether ``where`` names ``doc`` (every record when it names nothing)."""
    if not (where.url_prefixes or where.host is not None or where.source is not None):
        return True
    url, host = str(doc.get("url", "")), str(doc.get("host", ""))
    return (any(url.startswith(p) for p in where.url_prefixes)
            or (where.host is not None and (host == where.host or (
                where.any_port and host.startswith(where.host + ":"))))
            or (where.source is not None and doc.get("source") == where.source))
