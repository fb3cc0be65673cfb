"""The crawl's writes: pages with their fingerprints, match and excerpt records, pages turned
round, withdrawn or forgotten, the crawls' summaries and the index's layout (the
records' writer, :mod:`dedup.store.writer`, and the crawl call them)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bson import ObjectId
from pymongo.errors import BulkWriteError, DuplicateKeyError, PyMongoError

from dedup.adapters.mongo.database import Database
from dedup.adapters.mongo.encoding import (
    aware,
    fingerprint_document,
    match_document,
    object_id,
    upsert_seen,
    with_oid,
)
from dedup.store import COPY_KINDS
from dedup.store.records import TURNED_PAGE_FIELDS, with_stored


class CrawlWrites(Database):
    """The crawl's writes: pages with their fingerprints, match and excerpt records, pages
    turned round, withdrawn or forgotten, the crawls' summaries and the index's layout."""

    def save_pages(self, pages: Iterable[Mapping[str, Any]],
                   fingerprints: Iterable[Mapping[str, Any]] = ()) -> int:
        """Insert page documents and their fingerprint documents (batched, unordered).

        A page whose ``url`` is stored already is skipped (a re-run of the same crawl),
        and so is its fingerprint. Pages are written before fingerprints: a page without
        a fingerprint is incomplete (the admission journal's recovery removes it), a
        fingerprint without a page would be indexed by ``rebuild-index``.

        Args:
            pages: page documents; ``_id`` may be a hex page id or an ``ObjectId``.
            fingerprints: fingerprint records
                (:func:`dedup.store.records.fingerprint_record`).

        Returns:
            How many pages were inserted.

        Raises:
            ServiceUnavailable: MongoDB failed (nothing is lost silently: the caller
                keeps its batch).
        """
        docs = [with_oid(p) for p in pages]
        fps = [fingerprint_document(f) for f in fingerprints]
        inserted, refused = self._insert(self.pages, docs)
        skipped = set(refused)
        registered = sum(1 for i, d in enumerate(docs) if d.get("source") and i not in skipped)
        if refused:  # their URL was stored already: by another page, or by an earlier try
            urls = [docs[i]["url"] for i in refused]
            try:
                owner = {d["url"]: d["_id"] for d in self.pages.find({"url": {"$in": urls}},
                                                                     {"url": 1})}
            except PyMongoError as exc:
                raise self._unavailable(exc) from exc
            skip = {docs[i]["_id"] for i in refused if owner.get(docs[i]["url"]) !=
                    docs[i]["_id"]}
            fps = [f for f in fps if f["_id"] not in skip]
        fingerprinted = self._insert(self.fingerprints, fps)[0] if fps else 0
        self._grow(pages=inserted, registered=registered, fingerprints=fingerprinted)
        return inserted

    def save_matches(self, matches: Iterable[Mapping[str, Any]]) -> int:
        """Upsert match records (:meth:`dedup.store.records.MatchRecord.row`), one per URL: a
        URL seen again (a re-crawl, another process) updates its record, adds the crawl to
        ``crawl_ids`` and counts ``times_seen``. Returns how many were new."""
        new = self._upsert_by_url(self.matches, matches)
        self._grow(matches=new)
        return new

    def save_excerpts(self, excerpts: Iterable[Mapping[str, Any]]) -> int:
        """Upsert excerpt records (match records with ``kind`` ``excerpt``: a kept
        page quoting a registered original), one per URL, as :meth:`save_matches`."""
        new = self._upsert_by_url(self.excerpts, excerpts)
        self._grow(excerpts=new)
        return new

    def _upsert_by_url(self, collection: Any, matches: Iterable[Mapping[str, Any]]) -> int:
        """Write records one per URL (see :meth:`save_matches`). A crawl's records are
        mostly of URLs not recorded yet, and inserting one costs the server about a
        quarter of an upsert: so the batch is inserted first, and the records whose URL
        was refused as recorded already (a re-crawl, another process, the same URL twice
        in the batch) are then upserted in their order, which gives what upserting
        every record in order gives. Returns how many were new."""
        records = []  # (the record's fields, when first detected, its crawl)
        for m in matches:
            doc = match_document(m)
            for derived in ("_id", "times_seen", "crawl_ids"):  # kept by the server
                doc.pop(derived, None)
            records.append((doc, doc.pop("first_detected_at", None) or doc["detected_at"],
                            doc.get("crawl_id")))
        inserted, refused = self._insert(collection, [
            {**doc, "first_detected_at": first, "times_seen": 1,
             **({"crawl_ids": [crawl]} if crawl is not None else {})}
            for doc, first, crawl in records])
        if not refused:
            return inserted
        try:
            upserted = collection.bulk_write([upsert_seen(*records[i]) for i in sorted(refused)],
                                             ordered=True).upserted_count
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return inserted + int(upserted)

    def _insert(self, collection: Any, docs: list[dict[str, Any]]) -> tuple[int, list[int]]:
        """Insert unordered; returns (inserted, positions refused as duplicates)."""
        if not docs:
            return 0, []
        try:
            return len(collection.insert_many(docs, ordered=False).inserted_ids), []
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if any(e.get("code") != 11000 for e in errors):
                raise self._unavailable(exc) from exc
            # duplicates of stored documents
            return int(exc.details.get("nInserted", 0)), [int(e["index"]) for e in errors]
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def complete_pages(self, page_ids: Iterable[str]) -> set[str]:
        """The ids among ``page_ids`` stored completely: the page and its fingerprint."""
        oids = [object_id(p) for p in page_ids if ObjectId.is_valid(p)]
        if not oids:
            return set()
        try:
            with_page = {d["_id"] for d in self.pages.find({"_id": {"$in": oids}}, {"_id": 1})}
            if not with_page:
                return set()
            both = self.fingerprints.find({"_id": {"$in": list(with_page)}}, {"_id": 1})
            return {str(d["_id"]) for d in both}
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def forget_pages(self, page_ids: Sequence[str]) -> list[str]:
        """Delete whatever is stored of pages that were never completely stored (their
        page, fingerprint, excerpt records, and the match records naming them as the
        original). Returns
        the URLs of the match records deleted: copies to decide again."""
        oids = [object_id(p) for p in page_ids]
        if not oids:
            return []
        try:
            fingerprints = self.fingerprints.delete_many({"_id": {"$in": oids}}).deleted_count
            pages = self.pages.delete_many({"_id": {"$in": oids}}).deleted_count
            excerpts = self.excerpts.delete_many({"page_id": {"$in": oids}}).deleted_count
            named = {"original_id": {"$in": oids}}
            urls = [str(d["url"]) for d in self.matches.find(named, {"url": 1})]
            matches = self.matches.delete_many(named).deleted_count
            self._grow(pages=-pages, fingerprints=-fingerprints, excerpts=-excerpts,
                       matches=-matches)
            return urls
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def turn_round(self, page: Mapping[str, Any], fingerprint: Mapping[str, Any],
                   copy: Mapping[str, Any]) -> bool:
        """A match turned round (:meth:`dedup.store.PageRecords.turn_round`), in an order
        a crash at any step leaves for the turn done again to finish: the replaced page's
        match record first, then the page and its fingerprint, then the records naming
        the id, then any record of the page's own URL as a copy (an earlier crawl's)."""
        doc = with_oid(page)
        oid, url = doc["_id"], str(doc["url"])
        try:
            old = self.pages.find_one({"_id": oid}, ["url", *TURNED_PAGE_FIELDS])
            if old is None:
                return False
            if old["url"] != url:
                old["fetched_at"] = aware(old.get("fetched_at"))
                self.save_matches([with_stored(dict(copy), old)])
                self.pages.replace_one({"_id": oid}, doc)
            self.fingerprints.replace_one({"_id": oid}, fingerprint_document(fingerprint),
                                          upsert=True)
            self.matches.update_many({"original_id": oid},
                                     {"$set": {"original_url": url,
                                               "original_host": doc.get("host")}})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        self.forget_copies([url])
        return True

    def forget_copies(self, urls: Iterable[str]) -> int:
        """Delete the copy records (exact, near, pinyin, URL rule) of these URLs: pages
        now stored, which an earlier crawl had recorded as copies before they changed, or
        which a URL rule predicted to be copies before the rule was dropped. Returns how
        many."""
        wanted = list(dict.fromkeys(urls))
        if not wanted:
            return 0
        try:
            deleted = int(self.matches.delete_many(
                {"url": {"$in": wanted},
                 "kind": {"$in": list(COPY_KINDS)}}
            ).deleted_count)
            self._grow(matches=-deleted)
            return deleted
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def save_crawl(self, crawl_id: str, record: Mapping[str, Any],
                   running: bool = False) -> None:
        """Keep a crawl process's record in the ``crawls`` collection (``_id`` = its crawl
        id). While it runs (``running``) the record holds its live ``counters`` and
        ``state: "running"``, rewritten every few seconds with ``updated_at``; when it
        closes, ``state: "finished"``, ``finished_at``, its ``dedup/*`` counters
        (``stats``, skip reasons included) and its skips per minute, for reports. The
        fields given are set; a running update never overwrites a finished record. The
        size changes kept so far are written too (``lazy_sizes``)."""
        self.flush_sizes()
        fields = dict(record, state="running" if running else "finished",
                      updated_at=dt.datetime.now(dt.timezone.utc))
        where: dict[str, Any] = {"_id": crawl_id}
        if running:
            where["state"] = {"$ne": "finished"}
        try:
            self.db["crawls"].update_one(where, {"$set": fields}, upsert=True)
        except DuplicateKeyError:  # finished meanwhile: the final record stays
            pass
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def mark_interrupted(self, hostname: str, alive: Callable[[int], bool]) -> list[str]:
        """Mark ``interrupted`` every crawl record still ``running`` on ``hostname`` whose
        process is gone (``alive(pid)`` false): a crawl killed without its summary.
        Returns their crawl ids. Records of other machines are left alone (their
        processes cannot be asked)."""
        try:
            stale = [doc["_id"] for doc in self.db["crawls"].find(
                {"state": "running", "hostname": hostname}, {"pid": 1})
                if isinstance(doc.get("pid"), int) and not alive(doc["pid"])]
            for crawl_id in stale:
                self.db["crawls"].update_one(
                    {"_id": crawl_id, "state": "running"},
                    {"$set": {"state": "interrupted",
                              "interrupted_at": dt.datetime.now(dt.timezone.utc)}})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return stale

    def save_layout(self, namespace: str, description: Mapping[str, Any]) -> None:
        """Keep an index's layout (``IndexLayout.describe()``) in the ``meta`` collection,
        so a rebuild after Redis lost everything reproduces the same index."""
        try:
            self.db["meta"].replace_one({"_id": f"index-layout:{namespace}"},
                                        {"layout": dict(description)}, upsert=True)
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def load_layout(self, namespace: str) -> dict[str, Any] | None:
        """The layout saved by :meth:`save_layout`, or ``None``."""
        try:
            doc = self.db["meta"].find_one({"_id": f"index-layout:{namespace}"})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return None if doc is None else dict(doc["layout"])
