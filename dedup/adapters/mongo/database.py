"""One database's collections (:class:`Database`, what every part of the page store
stands on: its collections, their indexes and their sizes), and the connection to MongoDB."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pymongo
from bson import ObjectId
from pymongo import UpdateOne
from pymongo.errors import OperationFailure, PyMongoError

from dedup.adapters.mongo.encoding import object_id
from dedup.config import DEFAULT_DATABASE
from dedup.errors import ServiceUnavailable, redact
from dedup.ids import url_key

log = logging.getLogger(__name__)

#: Documents per write in the batched writers.
DEFAULT_WRITE_BATCH = 500

#: Seconds to wait for a server to answer.
DEFAULT_TIMEOUT = 5.0

#: Milliseconds a heartbeat may wait while a long scan runs (``op_timeout=None``).
LONG_SCAN_MS = 600_000

#: The ``meta`` document that holds the collections' sizes (:meth:`Database.sizes`).
SIZES_ID = "sizes"

#: The fingerprint documents the index holds: not short, not removed from it.
INDEXED = {"short": False, "unindexed": {"$ne": True}}


class Database:
    """The ``pages``, ``fingerprints``, ``matches`` and ``excerpts`` collections of one
    database, their indexes and their sizes.

    The parts of the store, each a class of its own module, stand on it (by who calls
    them): :class:`~dedup.adapters.mongo.crawl_writes.CrawlWrites`,
    :class:`~dedup.adapters.mongo.decision_reads.DecisionReads`,
    :class:`~dedup.adapters.mongo.maintenance.Maintenance` and
    :class:`~dedup.adapters.mongo.batch_writes.BatchWrites`;
    :class:`~dedup.adapters.mongo.PageStore` is all of them.

    It keeps the collections' sizes in one ``meta`` document (``_id: "sizes"``), changed
    with every write, so that how large the store is can be read at once: the embedded
    SecantusDB counts a collection by reading it (:meth:`sizes`).

    Args:
        client: a ``pymongo.MongoClient`` (:func:`connect_mongo`).
        database: the database name.
        url: the server's URI without credentials, for messages.
        lazy_sizes: keep the size changes until
            :meth:`~dedup.adapters.mongo.crawl_writes.CrawlWrites.save_crawl` (which a crawl
            calls every few seconds and at its end) instead of writing them with each write:
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
    collection (:meth:`dedup.adapters.mongo.crawl_writes.CrawlWrites.save_layout`), chosen by
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
