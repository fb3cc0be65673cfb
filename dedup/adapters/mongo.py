"""The page store in MongoDB: ``pages``, ``fingerprints`` and ``matches`` (docs/design.md,
Storage). MongoDB is the source of truth; the Redis index can be rebuilt from it.

The store's MongoDB adapter, and the only module of simcrawl that speaks to MongoDB: it
takes the records of :mod:`dedup.store.records` and gives back plain data; the encoding
below is private to it (``tests/unit/test_one_store.py`` holds that rule).

Fingerprints are unsigned 64-bit integers in the API and signed 64-bit integers in
MongoDB (BSON has no unsigned type): a fingerprint is stored as its two's-complement
``Int64`` (values from 2^63 on become negative), converted here and only here
(:func:`to_int64`, :func:`from_int64`). Each fingerprint document also keeps the value as
16 hex digits (``simhash_hex``) for people reading or querying by hand.

Page ids are MongoDB ``ObjectId`` values; the index and the rest of the library see them
as their 24-digit hex string.

Collections and fields:

``pages``
    ``_id``, ``url`` (unique), ``host``, ``status``, ``title``, ``description`` (the
    page's ``<meta name="description">``, when it has one), ``language``, ``published``, ``fetched_at``, ``depth``, ``referer``, ``text``, ``text_length``,
    ``checksum`` (32 hex digits of the normalised text's XXH3-128), ``extraction``
    (trafilatura / body / empty), ``crawl_id``, ``source`` (registered originals).
``fingerprints``
    ``_id`` (the page's id), ``simhash`` (Int64), ``simhash_hex``, ``checksum``,
    ``tokens``, ``short`` (below the minimum size: exact matches only), ``algorithm``,
    ``created_at``.
``matches``
    One document per dropped URL (``url`` is unique: re-crawls and concurrent crawls
    update it, never duplicate it): ``url``, ``host`` (the dropped page),
    ``original_id``, ``original_url``, ``original_host``, ``distance`` (Hamming; null for
    pinyin matches, measured by ``pinyin.share`` / ``pinyin.run``), ``kind`` (exact /
    simhash / pinyin), ``similarity`` (1 - distance / 64; the window share for pinyin),
    ``outlinks_dropped``,
    ``detected_at`` (the latest detection), ``first_detected_at``, ``crawl_id`` (the
    latest crawl that saw the copy), ``crawl_ids`` (every crawl that saw it: restrict a
    query to one crawl with ``{crawl_ids: ID}``), ``times_seen``.

The queries users run on these are in ``docs/queries.md``; the indexes below serve them.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pymongo
from bson import Int64, ObjectId
from pymongo import UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure, PyMongoError

from dedup.config import DEFAULT_DATABASE
from dedup.errors import ServiceUnavailable, redact
from dedup.ids import url_key
from dedup.store import COPY_KINDS
from dedup.store.records import BATCH, TURNED_PAGE_FIELDS, MatchRecord, with_stored

log = logging.getLogger(__name__)

#: Documents per write in the batched writers.
DEFAULT_WRITE_BATCH = 500

#: Seconds to wait for a server to answer.
DEFAULT_TIMEOUT = 5.0

#: Milliseconds a heartbeat may wait while a long scan runs (``op_timeout=None``).
LONG_SCAN_MS = 600_000

#: The ``meta`` document that holds the collections' sizes (:meth:`PageStore.sizes`).
SIZES_ID = "sizes"

_TWO64 = 1 << 64
_TWO63 = 1 << 63


#: The fingerprint documents the index holds: not short, not removed from it.
_INDEXED = {"short": False, "unindexed": {"$ne": True}}


def to_int64(fp: int) -> Int64:
    """An unsigned 64-bit fingerprint as the ``Int64`` stored in MongoDB (two's complement).

    >>> [int(to_int64(v)) for v in (0, 2**63 - 1, 2**63, 2**64 - 1)]
    [0, 9223372036854775807, -9223372036854775808, -1]

    Raises:
        ValueError: ``fp`` outside ``[0, 2**64)``.
    """
    fp = int(fp)
    if not 0 <= fp < _TWO64:
        raise ValueError(f"a fingerprint must be in [0, 2**64), got {fp}")
    return Int64(fp - _TWO64 if fp >= _TWO63 else fp)


def from_int64(value: int) -> int:
    """Invert :func:`to_int64`.

    >>> from_int64(-1) == 2**64 - 1
    True

    Raises:
        ValueError: ``value`` outside the signed 64-bit range.
    """
    value = int(value)
    if not -_TWO63 <= value < _TWO63:
        raise ValueError(f"not a signed 64-bit integer: {value}")
    return value + _TWO64 if value < 0 else value


def object_id(page_id: str | ObjectId) -> ObjectId:
    """A page id as an ``ObjectId``.

    Raises:
        ValueError: not a 24-digit hex string.
    """
    if isinstance(page_id, ObjectId):
        return page_id
    if not ObjectId.is_valid(page_id):
        raise ValueError(f"not a page id (24 hex digits): {page_id!r}")
    return ObjectId(page_id)


class PageStore:
    """The ``pages``, ``fingerprints`` and ``matches`` collections of one database: the
    page store's interface (:class:`dedup.store.PageRecords`) on MongoDB, with the reads
    and writes the batch job, the rebuild and the console use besides.

    It keeps the collections' sizes in one ``meta`` document (``_id: "sizes"``), changed
    with every write, so that how large the store is can be read at once: the embedded
    SecantusDB counts a collection by reading it (:meth:`sizes`).

    Args:
        client: a ``pymongo.MongoClient`` (see :func:`dedup.adapters.servers.services.connect_mongo`).
        database: the database name.
        url: the server's URI without credentials, for messages.
        lazy_sizes: keep the size changes until :meth:`save_crawl` (which a crawl calls
            every few seconds and at its end) instead of writing them with each write:
            one write less per batch for the crawl.
    """

    def __init__(self, client: pymongo.MongoClient, database: str = DEFAULT_DATABASE,
                 url: str = "MongoDB", lazy_sizes: bool = False) -> None:
        self.client = client
        self.db = client[database]
        self.url = url
        self.pages = self.db["pages"]
        self.fingerprints = self.db["fingerprints"]
        self.matches = self.db["matches"]
        self.excerpts = self.db["excerpts"]
        self.lazy_sizes = lazy_sizes
        self._grown: dict[str, int] = {}
        self._grown_lock = threading.Lock()

    def clear(self) -> None:
        """Delete the whole database (the demo starts every run alike)."""
        try:
            self.client.drop_database(self.db.name)
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    # ------------------------------------------------------------------ sizes

    def _grow(self, **deltas: int) -> None:
        """Count documents written (or, negative, deleted) in the sizes document."""
        with self._grown_lock:
            for name, n in deltas.items():
                if n:
                    self._grown[name] = self._grown.get(name, 0) + int(n)
        if not self.lazy_sizes:
            self.flush_sizes()

    def flush_sizes(self) -> None:
        """Write the size changes kept so far (see ``lazy_sizes``)."""
        with self._grown_lock:
            grown, self._grown = self._grown, {}
        if not grown:
            return
        try:
            self.db["meta"].update_one({"_id": SIZES_ID}, {"$inc": grown}, upsert=True)
        except PyMongoError as exc:
            with self._grown_lock:  # kept for the next write
                for name, n in grown.items():
                    self._grown[name] = self._grown.get(name, 0) + n
            raise self._unavailable(exc) from exc

    def sizes(self) -> dict[str, int] | None:
        """The documents of each collection, as the writes counted them: read at once
        (see :func:`stored_sizes`)."""
        try:
            return stored_sizes(self.db)
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def set_sizes(self, counts: Mapping[str, int]) -> None:
        """Set the sizes document to ``counts`` (what a whole read of the store found)."""
        with self._grown_lock:
            self._grown = {}
        try:
            self.db["meta"].replace_one({"_id": SIZES_ID},
                                        {"_id": SIZES_ID, "exact": True, **counts}, upsert=True)
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: Exception) -> ServiceUnavailable:
        return ServiceUnavailable(f"MongoDB at {self.url} failed ({type(exc).__name__}: "
                                  f"{exc}). Start it or fix MONGO_URI; unset MONGO_URI to "
                                  "use the embedded server.", service="MongoDB")

    def ensure_indexes(self) -> None:
        """Create the indexes the crawler and the documented queries use (idempotent), and
        give pages stored without a ``url_key`` theirs (:meth:`add_url_keys`)."""
        try:
            if "pages" not in self.db.list_collection_names():  # a new store: counted
                self.db["meta"].update_one({"_id": SIZES_ID}, {"$setOnInsert": {"exact": True}},
                                           upsert=True)  # from its first write on
            self.pages.create_index("url", unique=True)
            self.pages.create_index("host")
            self.pages.create_index([("host", 1), ("_id", -1)])  # a host's pages, newest first
            self.pages.create_index("checksum")
            self.pages.create_index("url_key")  # a page's identity across crawls
            self.pages.create_index([("source", 1), ("fetched_at", -1)])
            self.pages.create_index([("source", 1), ("url", 1)])  # a source's originals
            self.fingerprints.create_index("simhash")
            self._unique_match_urls()
            self.matches.create_index([("original_id", 1), ("detected_at", -1)])
            self.matches.create_index([("host", 1), ("detected_at", -1)])
            self.matches.create_index([("host", 1), ("_id", -1)])
            self.matches.create_index([("detected_at", -1)])
            self.matches.create_index("crawl_ids")
            self.matches.create_index([("source", 1), ("detected_at", -1)])
            self.excerpts.create_index("url", unique=True)
            self.excerpts.create_index("page_id")
            self.excerpts.create_index([("original_id", 1), ("detected_at", -1)])
            self.excerpts.create_index([("source", 1), ("detected_at", -1)])
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        self.add_url_keys()  # pages stored before url_key existed (once)

    def _unique_match_urls(self) -> None:
        """One match record per URL. A database written by an older simcrawl may hold
        several for one URL (one per crawl): keep the latest of each, then index."""
        try:
            self.matches.create_index("url", unique=True)
            return
        except OperationFailure as exc:
            if exc.code != 11000:
                raise
        doubled = self.matches.aggregate([
            {"$sort": {"detected_at": -1}},
            {"$group": {"_id": "$url", "ids": {"$push": "$_id"}, "n": {"$sum": 1}}},
            {"$match": {"n": {"$gt": 1}}}])
        extra = [i for d in doubled for i in d["ids"][1:]]
        self.matches.delete_many({"_id": {"$in": extra}})
        log.warning("%s: removed %d older duplicate match records (one per URL is kept)",
                    self.db.name, len(extra))
        self.matches.create_index("url", unique=True)

    # ------------------------------------------------------------------ writes
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
        docs = [_with_oid(p) for p in pages]
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
            upserted = collection.bulk_write([_upsert(*records[i]) for i in sorted(refused)],
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

    def remove_page(self, page_id: str) -> int | None:
        """Delete a page and its fingerprint; return the fingerprint (for the index), or
        ``None`` if the page had none."""
        oid = object_id(page_id)
        try:
            doc = self.fingerprints.find_one_and_delete({"_id": oid})
            page = self.pages.find_one_and_delete({"_id": oid}, {"source": 1})
            self._grow(fingerprints=-(doc is not None), pages=-(page is not None),
                       registered=-(page is not None and bool(page.get("source"))))
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return None if doc is None else from_int64(doc["simhash"])

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

    # ------------------------------------------------------------------- reads
    def fingerprint_of(self, page_id: str) -> int | None:
        """The simhash stored for a page, or ``None``."""
        try:
            doc = self.fingerprints.find_one({"_id": object_id(page_id)}, {"simhash": 1})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return None if doc is None else from_int64(doc["simhash"])

    def page(self, page_id: str) -> dict[str, Any] | None:
        """A page document by id."""
        try:
            return self.pages.find_one({"_id": object_id(page_id)})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def stored_urls(self, urls: Iterable[str]) -> dict[str, tuple[str, str | None]]:
        """For each of ``urls`` already stored: ``url -> (page id, checksum)``. A URL is
        a stored page when their canonical forms are equal (:func:`url_key`:
        ``/a?y=2&x=1`` is ``/a?x=1&y=2``), so a re-crawl finds its pages whatever order
        their links gave the query arguments in."""
        keys: dict[str, list[str]] = {}
        for url in urls:
            keys.setdefault(url_key(url), []).append(url)
        if not keys:
            return {}
        try:
            found = {}
            for d in self.pages.find({"url_key": {"$in": list(keys)}},
                                     {"url_key": 1, "checksum": 1}):
                for url in keys[d["url_key"]]:
                    found[url] = (str(d["_id"]), d.get("checksum"))
            return found
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def recorded_copies(self, urls: Iterable[str]) -> dict[str, dict[str, Any]]:
        """For each of ``urls`` recorded as an exact or near copy (with the copy's
        checksum) of a page still stored: ``url -> {original_id, checksum, kind,
        distance, containment}`` (two queries)."""
        wanted = list(dict.fromkeys(urls))
        if not wanted:
            return {}
        try:
            records = list(self.matches.find(
                {"url": {"$in": wanted}, "kind": {"$in": ["exact", "simhash"]}},
                {"url": 1, "original_id": 1, "checksum": 1, "kind": 1, "distance": 1,
                 "containment": 1}))
            records = [r for r in records if r.get("checksum") and r.get("original_id")]
            if not records:
                return {}
            alive = {d["_id"] for d in self.pages.find(
                {"_id": {"$in": list({r["original_id"] for r in records})}}, {"_id": 1})}
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return {r["url"]: {"original_id": str(r["original_id"]), "checksum": r["checksum"],
                           "kind": r["kind"], "distance": int(r.get("distance") or 0),
                           "containment": r.get("containment")}
                for r in records if r["original_id"] in alive}

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

    def turn_round(self, page: Mapping[str, Any], fingerprint: Mapping[str, Any],
                   copy: Mapping[str, Any]) -> bool:
        """A match turned round (:meth:`dedup.store.PageRecords.turn_round`), in an order
        a crash at any step leaves for the turn done again to finish: the replaced page's
        match record first, then the page and its fingerprint, then the records naming
        the id, then any record of the page's own URL as a copy (an earlier crawl's)."""
        doc = _with_oid(page)
        oid, url = doc["_id"], str(doc["url"])
        try:
            old = self.pages.find_one({"_id": oid}, ["url", *TURNED_PAGE_FIELDS])
            if old is None:
                return False
            if old["url"] != url:
                old["fetched_at"] = _aware(old.get("fetched_at"))
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

    def add_url_keys(self, batch: int = 5000) -> int:
        """Give the pages stored without a ``url_key`` (by simcrawl before 0.2) theirs;
        how many were given one. Cheap when there are none (an indexed query)."""
        done = 0
        try:
            while True:
                docs = list(self.pages.find({"url_key": None}, {"url": 1}).limit(batch))
                if not docs:
                    return done
                self.pages.bulk_write([UpdateOne({"_id": d["_id"]},
                                                 {"$set": {"url_key": url_key(d["url"])}})
                                       for d in docs], ordered=False)
                done += len(docs)
                log.info("gave %d stored pages their canonical URL (url_key)", done)
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def urls_of(self, page_ids: Iterable[str]) -> dict[str, tuple[str, str, str | None]]:
        """``page id -> (url, host, source)`` for the stored ones among ``page_ids``
        (``source``: the name a registered original was registered under, else None)."""
        oids = [object_id(p) for p in page_ids if ObjectId.is_valid(p)]
        if not oids:
            return {}
        try:
            docs = self.pages.find({"_id": {"$in": oids}}, {"url": 1, "host": 1, "source": 1})
            return {str(d["_id"]): (d["url"], d.get("host", ""), d.get("source"))
                    for d in docs}
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def _field(self, collection: Any, page_ids: Iterable[str], name: str) -> dict[str, Any]:
        """``page id -> field name`` of the documents of ``collection`` (``pages`` or
        ``fingerprints``) among ``page_ids`` that have it (one query by ``_id``)."""
        oids = [object_id(p) for p in page_ids if ObjectId.is_valid(p)]
        if not oids:
            return {}
        try:
            docs = collection.find({"_id": {"$in": oids}, name: {"$exists": True}}, {name: 1})
            return {str(d["_id"]): d[name] for d in docs if d.get(name) is not None}
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def _page_field(self, page_ids: Iterable[str], name: str) -> dict[str, Any]:
        """``page id -> its page's field name`` for the stored pages among ``page_ids``
        whose field is set."""
        return {p: v for p, v in self._field(self.pages, page_ids, name).items() if v}

    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """``page id -> the URL it declared canonical`` for the stored pages among
        ``page_ids`` that declared one."""
        return self._page_field(page_ids, "canonical")

    def published_of(self, page_ids: Iterable[str]) -> dict[str, dt.datetime]:
        """``page id -> when it says it was first published`` for the stored pages among
        ``page_ids`` that say (aware, UTC)."""
        return {p: _aware(v) for p, v in self._page_field(page_ids, "published").items()}

    def texts_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """``page id -> text`` for the stored pages among ``page_ids`` that kept their
        text (``DEDUP_STORE_TEXT``)."""
        return self._page_field(page_ids, "text")

    def sketches_of(self, page_ids: Iterable[str]) -> dict[str, bytes]:
        """``page id -> text sketch`` for the stored pages among ``page_ids`` that have one
        (the index reads a candidate's here once its sketch has left Redis)."""
        return {p: bytes(v) for p, v in
                self._field(self.fingerprints, page_ids, "sketch").items() if v}

    def verifiers_of(self, page_ids: Iterable[str]) -> dict[str, int]:
        """``page id -> second-opinion simhash`` (``simhash2``) for those that have one."""
        return {p: from_int64(v) for p, v in
                self._field(self.fingerprints, page_ids, "simhash2").items()}

    def unindex(self, fp: int) -> int:
        """Keep fingerprint ``fp`` out of the index from now on (``simcrawl remove
        --fingerprint``): its documents stay, marked, and ``rebuild-index`` leaves them
        out (:meth:`iter_fingerprints`). Returns how many documents hold it."""
        try:
            return int(self.fingerprints.update_many(
                {"simhash": to_int64(fp)}, {"$set": {"unindexed": True}}).matched_count)
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def count_unindexed(self) -> int:
        """Number of fingerprint documents removed from the index (:meth:`unindex`; short
        ones aside, which it never holds)."""
        try:
            return self.fingerprints.count_documents({"short": False, "unindexed": True})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def count_fingerprints(self, indexed_only: bool = True) -> int:
        """Number of fingerprint documents (by default those the index holds: not short,
        not removed from it, :meth:`unindex`)."""
        try:
            return self.fingerprints.count_documents(_INDEXED if indexed_only else {})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def estimated_fingerprints(self) -> int:
        """About how many fingerprint documents there are (collection metadata: cheap)."""
        try:
            return int(self.fingerprints.estimated_document_count())
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def audit(self) -> StoreAudit:
        """Check the store against itself: pages without a fingerprint, fingerprints
        without a page, match records naming a page that is not stored (reads every id
        once; ``rebuild-index`` reports it). The sizes document is set from what it read
        (:meth:`sizes`)."""
        try:
            page_ids, registered = set(), 0
            for d in self.pages.find({}, {"_id": 1, "source": 1}, batch_size=10_000):
                page_ids.add(d["_id"])
                registered += bool(d.get("source"))
            fp_ids = {d["_id"] for d in self.fingerprints.find({}, {"_id": 1},
                                                                 batch_size=10_000)}
            originals = {d["_id"]: d["n"] for d in self.matches.aggregate(
                [{"$group": {"_id": "$original_id", "n": {"$sum": 1}}}])}
            excerpts = self.excerpts.count_documents({})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        self.set_sizes({"pages": len(page_ids), "registered": registered,
                        "fingerprints": len(fp_ids), "matches": sum(originals.values()),
                        "excerpts": excerpts})
        return StoreAudit(
            pages=len(page_ids), fingerprints=len(fp_ids),
            pages_without_fingerprint={str(i) for i in page_ids - fp_ids},
            fingerprints_without_page={str(i) for i in fp_ids - page_ids},
            matches_naming_missing=sum(n for i, n in originals.items() if i not in page_ids))

    def iter_checksums(self, batch_size: int = 10_000) -> Iterator[tuple[str, str]]:
        """Every admitted page's ``(checksum, page id)`` (for the exact-copy registry)."""
        try:
            for doc in self.pages.find({"checksum": {"$exists": True}}, {"checksum": 1},
                                       batch_size=batch_size):
                if isinstance(doc.get("checksum"), str) and len(doc["checksum"]) == 32:
                    yield doc["checksum"], str(doc["_id"])
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def iter_pinyin(self, batch_size: int = 1000
                    ) -> Iterator[tuple[str, list[int], dict[str, Any]]]:
        """Every registered original's ``(page id, pinyin window codes, parameters)`` (for
        the pinyin window index)."""
        try:
            cursor = self.fingerprints.find(
                {"source": {"$exists": True}, "pinyin.codes.0": {"$exists": True}},
                {"pinyin": 1}, batch_size=batch_size)
            for doc in cursor:
                codes = [from_int64(c) for c in doc["pinyin"]["codes"]]
                yield str(doc["_id"]), codes, dict(doc["pinyin"].get("params") or {})
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def iter_fingerprints(self, batch_size: int = 10_000
                          ) -> Iterator[tuple[int, str, bytes | None]]:
        """Every ``(simhash, page id, text sketch)`` the index should hold (short texts and
        fingerprints removed from the index excluded; the sketch ``None`` for a page stored
        without one)."""
        try:
            cursor = self.fingerprints.find(_INDEXED, {"simhash": 1, "sketch": 1},
                                            batch_size=batch_size)
            for doc in cursor:
                sketch = doc.get("sketch")
                yield from_int64(doc["simhash"]), str(doc["_id"]), \
                    bytes(sketch) if sketch else None
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc


    # --------------------------------------------------------------- batch reconciliation

    def stored_pages(self, page_ids: Iterable[str]) -> dict[str, Any]:
        """What the batch judgement reads of admitted pages (:class:`dedup.reconcile.
        StoredPage` by page id): URL, host, crawl time, title, description and text from
        ``pages``, the text sketch and second opinion from ``fingerprints``. Pages not
        stored are left out."""
        from dedup.reconcile import StoredPage

        oids = [object_id(p) for p in page_ids]
        if not oids:
            return {}
        try:
            prints = {d["_id"]: d for d in self.fingerprints.find(
                {"_id": {"$in": oids}}, {"sketch": 1, "simhash2": 1})}
            out = {}
            for d in self.pages.find({"_id": {"$in": oids}},
                                     {"url": 1, "host": 1, "fetched_at": 1, "title": 1,
                                      "description": 1, "text": 1}):
                fp = prints.get(d["_id"], {})
                out[str(d["_id"])] = StoredPage(
                    str(d["_id"]), d.get("url", ""), d.get("host") or "", d.get("fetched_at"),
                    d.get("title"), d.get("description"), d.get("text"),
                    bytes(fp["sketch"]) if fp.get("sketch") else None,
                    from_int64(fp["simhash2"]) if fp.get("simhash2") is not None else None)
            return out
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

    def save_clusters(self, clusters: Sequence[Any], k: int) -> dict[str, int]:
        """Write the clusters (:class:`dedup.reconcile.Cluster`) to the store, changing only
        what differs from the last run (a second run of the same clusters writes nothing):

        * ``clusters``: one document per cluster of two or more pages, ``_id`` = its
          original's page id, with ``original_url``, ``members``, ``size``, ``k`` and
          ``updated_at``; clusters that no longer exist are deleted;
        * ``pages.cluster``: every stored page's cluster id (its own id when it is alone);
        * ``matches.cluster``: every crawl match record's, its original's cluster.

        Returns:
            counts: ``clusters_written``, ``clusters_deleted``, ``pages_changed``,
            ``matches_changed``.
        """
        now = dt.datetime.now(dt.timezone.utc)
        counts = dict.fromkeys(("clusters_written", "clusters_deleted", "pages_changed",
                                "matches_changed"), 0)
        clusters_col = self.db["clusters"]
        try:
            clusters_col.create_index("members")
            clusters_col.create_index([("size", -1)])
            self.pages.create_index("cluster")
            self.matches.create_index("cluster")
            old = {d["_id"]: d for d in clusters_col.find({}, {"members": 1, "k": 1})}
            urls = self.urls_of([c.original for c in clusters])
            member_of: dict[ObjectId, ObjectId] = {}
            ops = []
            for c in clusters:
                cid = object_id(c.original)
                members = [object_id(m) for m in c.members]
                member_of.update((m, cid) for m in members)
                held = old.pop(cid, None)
                if held is not None and held.get("members") == members and held.get("k") == k:
                    continue
                ops.append(pymongo.ReplaceOne(
                    {"_id": cid}, {"_id": cid, "original_url": urls.get(c.original, ("",))[0],
                                   "members": members, "size": len(members), "k": k,
                                   "updated_at": now}, upsert=True))
            if ops:
                clusters_col.bulk_write(ops, ordered=False)
            counts["clusters_written"] = len(ops)
            if old:
                counts["clusters_deleted"] = clusters_col.delete_many(
                    {"_id": {"$in": list(old)}}).deleted_count
            # members of clusters gone or changed that are no longer in one: alone again
            gone = [m for d in old.values() for m in d.get("members", []) if m not in member_of]
            ops = [UpdateOne({"_id": m, "cluster": {"$ne": m}}, {"$set": {"cluster": m}})
                   for m in gone]
            ops += [UpdateOne({"_id": m, "cluster": {"$ne": cid}}, {"$set": {"cluster": cid}})
                    for m, cid in member_of.items()]
            for start in range(0, len(ops), DEFAULT_WRITE_BATCH * 10):
                counts["pages_changed"] += self.pages.bulk_write(
                    ops[start:start + DEFAULT_WRITE_BATCH * 10], ordered=False).modified_count
            counts["pages_changed"] += self.pages.update_many(
                {"cluster": {"$exists": False}}, [{"$set": {"cluster": "$_id"}}]).modified_count
            # crawl match records: their original's cluster (every record of an original)
            records = [UpdateMany({"original_id": m, "kind": {"$ne": BATCH},
                                   "cluster": {"$ne": cid}}, {"$set": {"cluster": cid}})
                       for m, cid in member_of.items()]
            records += [UpdateMany({"original_id": m, "kind": {"$ne": BATCH},
                                    "cluster": {"$ne": m}}, {"$set": {"cluster": m}})
                        for m in gone]
            for start in range(0, len(records), DEFAULT_WRITE_BATCH * 10):
                counts["matches_changed"] += self.matches.bulk_write(
                    records[start:start + DEFAULT_WRITE_BATCH * 10],
                    ordered=False).modified_count
            counts["matches_changed"] += self.matches.update_many(
                {"cluster": {"$exists": False}, "kind": {"$ne": BATCH}},
                [{"$set": {"cluster": "$original_id"}}]).modified_count
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return counts

    def save_batch_matches(self, copies: Mapping[str, Any], cluster_of: Mapping[str, str],
                           facts: Mapping[str, Any]) -> dict[str, int]:
        """Record the copies the batch judgement found (:class:`dedup.reconcile.Copy` by
        copied page id) as match records of kind ``batch``: the copy's URL, its original
        and cluster, distance and containment. Pages are not deleted. A URL that has a
        crawl match record keeps it (counted in ``kept_crawl_record``); batch records of
        pages no longer judged copies are deleted; unchanged records are not written.

        Args:
            copies: the judged copies.
            cluster_of: each copied page's cluster id.
            facts: :meth:`stored_pages` of every page named.

        Returns:
            counts: ``written``, ``unchanged``, ``deleted``, ``kept_crawl_record``.
        """
        counts = dict.fromkeys(("written", "unchanged", "deleted", "kept_crawl_record"), 0)
        urls = {facts[c.copy].url: c for c in copies.values() if c.copy in facts}
        try:
            held = {d["url"]: d for d in self.matches.find(
                {"url": {"$in": list(urls)}},
                {"url": 1, "kind": 1, "original_id": 1, "distance": 1, "cluster": 1})} \
                if urls else {}
            ops = []
            now = dt.datetime.now(dt.timezone.utc)
            for url, c in urls.items():
                old = held.get(url)
                cluster = object_id(cluster_of.get(c.copy, c.original))
                if old is not None and old.get("kind") != BATCH:
                    counts["kept_crawl_record"] += 1
                    continue
                if old is not None and old.get("original_id") == object_id(c.original) \
                        and old.get("distance") == c.distance and old.get("cluster") == cluster:
                    counts["unchanged"] += 1
                    continue
                original, copy = facts[c.original], facts[c.copy]
                doc = match_document(MatchRecord(
                    url=url, host=copy.host, original_id=c.original, original_url=original.url,
                    original_host=original.host, distance=c.distance, kind=BATCH,
                    page_id=c.copy, cluster=str(cluster), containment=c.containment,
                    held=c.held).row(crawl_id=None, detected_at=now))
                ops.append(pymongo.ReplaceOne({"url": url}, doc, upsert=True))
            new = self.matches.bulk_write(ops, ordered=False).upserted_count if ops else 0
            counts["written"] = len(ops)
            counts["deleted"] = self.matches.delete_many(
                {"kind": BATCH, "url": {"$nin": list(urls)}}).deleted_count
            self._grow(matches=new - counts["deleted"])
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc
        return counts


@dataclass
class StoreAudit:
    """What :meth:`PageStore.audit` found."""

    pages: int
    fingerprints: int
    pages_without_fingerprint: set[str] = field(default_factory=set)
    fingerprints_without_page: set[str] = field(default_factory=set)
    matches_naming_missing: int = 0

    def problems(self) -> list[str]:
        """One sentence per disagreement (empty: the store agrees with itself)."""
        out = []
        if self.pages_without_fingerprint:
            out.append(f"{len(self.pages_without_fingerprint):,} pages have no fingerprint "
                       "(not indexed; remove them with simcrawl remove, or crawl "
                       "them again)")
        if self.fingerprints_without_page:
            out.append(f"{len(self.fingerprints_without_page):,} fingerprints have no page "
                       "(left out of the index)")
        if self.matches_naming_missing:
            out.append(f"{self.matches_naming_missing:,} match records name a page that is "
                       "not stored")
        return out


def stored_sizes(db: Any) -> dict[str, int] | None:
    """The documents of each collection of database ``db`` (``pages``, ``registered`` (of
    the pages, registered originals), ``fingerprints``, ``matches``, ``excerpts``) as
    :class:`PageStore`'s writes counted them, read at once; ``None`` for a store not
    counted from its start (written by an older simcrawl, or by other means), whose
    collections must be counted (which SecantusDB does by reading them).

    Raises:
        PyMongoError: MongoDB failed.
    """
    doc = db["meta"].find_one({"_id": SIZES_ID})
    if doc is None or not doc.get("exact"):
        return None
    return {k: max(int(v), 0) for k, v in doc.items() if k not in ("_id", "exact")}


def time_limit(seconds: float | None) -> contextlib.AbstractContextManager[Any]:
    """MongoDB's operations in the block, in this thread, given ``seconds`` at most,
    server selection included (pymongo's client-side timeout): a crawl's attempt during an
    outage ends by its ``DEDUP_RETRY_SECONDS`` instead of after the client's 5 s.
    ``None``: no limit of its own."""
    return contextlib.nullcontext() if seconds is None else pymongo.timeout(max(seconds, 0.1))


def connect_mongo(uri: str, timeout: float = DEFAULT_TIMEOUT,
                  op_timeout: float | None = 60.0) -> pymongo.MongoClient:
    """A pymongo client for ``uri``, checked with a ping.

    Args:
        uri: ``mongodb://...``.
        timeout: seconds to find and connect to the server.
        op_timeout: seconds to wait for one reply (``None``: no limit, for long scans
            such as ``rebuild-index``, whose first batch can take a minute on the
            embedded server with a million fingerprints). It bounds pymongo's heartbeats
            too: a server busy with a long scan (SecantusDB answers one request at a time)
            must not be taken for a dead one, which cancels the scan.

    Raises:
        ServiceUnavailable: no server answers (the message names the URI).
        ValueError: the URI is malformed.
    """
    ms = int(timeout * 1000)
    # pymongo's monitor waits connectTimeoutMS for a heartbeat's reply, and a missed one
    # clears the pool, cancelling what runs on it: as long as one reply may take
    heartbeat_ms = max(ms, LONG_SCAN_MS if op_timeout is None else int(op_timeout * 1000))
    if not uri.startswith(("mongodb://", "mongodb+srv://")):
        raise ValueError(f"MONGO_URI {redact(uri)!r} is not a MongoDB URI: it must start "
                         "with mongodb:// or mongodb+srv://")
    try:
        client: pymongo.MongoClient = pymongo.MongoClient(
            uri, serverSelectionTimeoutMS=ms, connectTimeoutMS=heartbeat_ms,
            socketTimeoutMS=None if op_timeout is None else int(op_timeout * 1000),
            tz_aware=True)
    except (PyMongoError, ValueError, TypeError) as exc:
        raise ValueError(f"MONGO_URI {redact(uri)!r} is not a MongoDB URI: {exc}") from exc
    try:
        client.admin.command("ping")
    except OperationFailure as exc:
        client.close()
        if exc.code in (13, 18):  # Unauthorized, AuthenticationFailed
            raise ServiceUnavailable(
                f"MongoDB at {redact(uri)} refused the login ({exc.details and exc.details.get('errmsg') or exc}). "
                "Fix the user name and password in MONGO_URI.",
                                     service="MongoDB") from exc
        raise ServiceUnavailable(f"MongoDB at {redact(uri)} failed: {exc}",
                                 service="MongoDB") from exc
    except PyMongoError as exc:
        client.close()
        raise ServiceUnavailable(
            f"MongoDB at {redact(uri)} is unreachable ({type(exc).__name__}). Start it or "
            "fix MONGO_URI; unset MONGO_URI to use the embedded server.",
                                 service="MongoDB") from exc
    return client


def index_k(db: Any, namespace: str | None = None) -> int:
    """The k of the crawl's index, from the layouts saved in the database's ``meta``
    collection (:meth:`PageStore.save_layout`), chosen by
    :func:`dedup.store.reads.k_of_layouts`.

    Raises:
        ServiceUnavailable: MongoDB failed.
    """
    from dedup.store.reads import k_of_layouts

    try:
        saved = {d["_id"].split(":", 1)[1]: d.get("layout") for d in db["meta"].find(
            {"_id": {"$regex": "^index-layout:"}})}
    except PyMongoError as exc:
        raise ServiceUnavailable(f"MongoDB failed reading the index layout: {exc}",
                                 service="MongoDB") from exc
    return k_of_layouts(saved, db.name, namespace)


def _upsert(doc: dict[str, Any], first: Any, crawl: Any) -> UpdateOne:
    """The upsert of a record seen again: its fields set, its first detection kept, its
    sightings counted and its crawl added (:meth:`PageStore.save_matches`)."""
    update: dict[str, Any] = {"$set": doc, "$setOnInsert": {"first_detected_at": first},
                              "$inc": {"times_seen": 1}}
    if crawl is not None:
        update["$addToSet"] = {"crawl_ids": crawl}
    return UpdateOne({"url": doc["url"]}, update, upsert=True)


def _with_oid(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A page record as stored: its id an ``ObjectId``."""
    out = dict(doc)
    if "_id" in out and isinstance(out["_id"], str):
        out["_id"] = object_id(out["_id"])
    return out


def _int64(value: int) -> Int64:
    return value if isinstance(value, Int64) else to_int64(value)


def fingerprint_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """A fingerprint record (:func:`dedup.store.records.fingerprint_row`) as stored: its
    id an ``ObjectId``, its fingerprints and pinyin codes signed ``Int64`` (the one place
    that writes a fingerprint to MongoDB)."""
    out = _with_oid(record)
    out["simhash"] = _int64(out["simhash"])
    if out.get("simhash2") is not None:
        out["simhash2"] = _int64(out["simhash2"])
    if out.get("pinyin"):
        out["pinyin"] = dict(out["pinyin"], codes=[_int64(c) for c in out["pinyin"]["codes"]])
    return out


def match_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """A match or excerpt record (:meth:`dedup.store.records.MatchRecord.row`) as stored: the
    ids it names ``ObjectId``."""
    out = dict(record)
    out["original_id"] = object_id(out["original_id"])
    for name in ("page_id", "cluster"):
        if out.get(name):
            out[name] = object_id(out[name])
    return out


def _aware(when: Any) -> Any:
    """A time MongoDB returned (naive UTC) as an aware one."""
    if isinstance(when, dt.datetime) and when.tzinfo is None:
        return when.replace(tzinfo=dt.timezone.utc)
    return when
