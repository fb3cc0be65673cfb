"""The reads of the console, the report, the export and the verbs from a MongoDB database
(:class:`dedup.store.reads.StoreReads`); part of the store's MongoDB adapter, with
:mod:`dedup.adapters.mongo`, whose encoding it undoes: what it returns is plain data."""

from __future__ import annotations

import datetime as dt
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from bson import ObjectId
from pymongo.errors import OperationFailure, PyMongoError

from dedup.adapters.mongo import PageStore, from_int64, index_k, stored_sizes
from dedup.errors import ServiceUnavailable
from dedup.store.reads import EVERYTHING, TIME_FIELD, Span, Where

#: Documents MongoDB sends per batch in whole reads.
BATCH = 2000

#: No record is older than this (the windows of :meth:`MongoReads.newest` stop here).
EPOCH = dt.datetime(2009, 1, 1, tzinfo=dt.timezone.utc)


def plain(doc: dict[str, Any]) -> dict[str, Any]:
    """A document as plain data, changed in place (a cursor's documents are its own): its
    ids as hex strings (lists of them too), its times aware (MongoDB returns naive UTC
    unless the client is tz-aware). Only the values that need it are touched: the report
    reads the whole store through here."""
    for name, value in doc.items():
        kind = type(value)
        if kind is ObjectId:
            doc[name] = str(value)
        elif kind is dt.datetime:
            if value.tzinfo is None:
                doc[name] = value.replace(tzinfo=dt.timezone.utc)
        elif kind is list and value and type(value[0]) is ObjectId:
            doc[name] = [str(v) for v in value]
    return doc


def _failed(exc: PyMongoError) -> ServiceUnavailable:
    return ServiceUnavailable(f"MongoDB failed: {exc}", service="MongoDB")


def answered(method: Callable[..., Any]) -> Callable[..., Any]:
    """A read whose MongoDB failures are the store's (``ServiceUnavailable``); a
    generator's too, wherever the failure comes."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def reading(*args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from method(*args, **kwargs)
            except PyMongoError as exc:
                raise _failed(exc) from exc
        return reading

    @functools.wraps(method)
    def read(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except PyMongoError as exc:
            raise _failed(exc) from exc
    return read


def _oid(text: str | None) -> ObjectId | None:
    return ObjectId(text) if isinstance(text, str) and ObjectId.is_valid(text) else None


def _filters(where: Where) -> list[dict[str, Any]]:
    """A :class:`Where` as MongoDB filters whose union it is."""
    found: list[dict[str, Any]] = []
    for prefix in where.url_prefixes:
        found.append({"url": {"$gte": prefix, "$lt": prefix + "\U0010ffff"}})
    if where.host is not None:
        found.append({"host": where.host})
        if where.any_port:
            found.append({"host": {"$gte": where.host + ":", "$lt": where.host + ";"}})
    if where.source is not None:
        found.append({"source": where.source})
    return found or [{}]


def span_filter(kind: str, span: Span) -> dict[str, Any]:
    """A :class:`Span` as a MongoDB filter on records of ``kind``."""
    where: dict[str, Any] = {}
    if span.crawl_id:
        where = ({"$or": [{"crawl_ids": span.crawl_id}, {"crawl_id": span.crawl_id}]}
                 if kind != "pages" else {"crawl_id": span.crawl_id})
    bounds = {op: t for op, t in (("$gte", span.since), ("$lt", span.until)) if t is not None}
    if bounds:
        where[TIME_FIELD[kind]] = bounds
    return where


class MongoReads:
    """The reads of one MongoDB database (``db``, a pymongo ``Database``); a failure of
    MongoDB is a :class:`~dedup.errors.ServiceUnavailable`."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.name: str = db.name

    # -------------------------------------------------------------- the database
    @answered
    def collections(self) -> set[str]:
        return set(self.db.list_collection_names())

    @answered
    def sizes(self) -> dict[str, int] | None:
        """The store's sizes as its writes counted them (read at once), or ``None``
        (:func:`dedup.adapters.mongo.stored_sizes`)."""
        return stored_sizes(self.db) if "meta" in self.collections() else None

    @answered
    def holds_crawl(self) -> bool:
        """Whether the database holds a crawl: a crawled page (not only registered
        originals) or a match record. Read from the store's sizes (one document) when it
        keeps them, else with one lookup each (on SecantusDB a lookup without a filter an
        index serves reads the whole collection; a count too)."""
        names, sizes = self.collections(), self.sizes()
        if sizes is not None:
            return sizes.get("pages", 0) > sizes.get("registered", 0) \
                or sizes.get("matches", 0) > 0
        db = self.db
        return ("matches" in names and db.matches.find_one({}, {"_id": 1}) is not None) or (
            "pages" in names and db.pages.find_one({"source": None}, {"_id": 1}) is not None)

    @answered
    def has_records(self) -> bool:
        """Whether the database holds pages or match records."""
        sizes = self.sizes()
        if sizes is not None and (sizes.get("pages", 0) or sizes.get("matches", 0)):
            return True
        names = self.collections()
        return any(self.db[n].find_one({}, {"_id": 1}) for n in ("pages", "matches")
                   if n in names)

    @answered
    def estimated(self, kind: str) -> int:
        """The records of ``kind``: the store's count, else the server's estimate."""
        known = self.sizes() or {}
        return known[kind] if kind in known else int(self.db[kind].estimated_document_count())

    @answered
    def count(self, kind: str, span: Span = EVERYTHING) -> int:
        """The records of ``kind`` in ``span`` (at once when the span is everything)."""
        where = span_filter(kind, span)
        return self.estimated(kind) if not where else int(self.db[kind].count_documents(where))

    def is_embedded(self) -> bool:
        """Whether the server is SecantusDB (the embedded MongoDB)."""
        try:
            return "secantusVersion" in self.db.client.admin.command("buildInfo")
        except OperationFailure:  # a server that refuses buildInfo (rights) is not one
            return False

    def page_store(self) -> PageStore:
        """The page store of the same database (for the verbs that write too)."""
        return PageStore(self.db.client, self.name)

    @answered
    def index_k(self, namespace: str | None = None) -> int:
        """The k of the crawl's index (:func:`dedup.adapters.mongo.index_k`)."""
        return index_k(self.db, namespace)

    # -------------------------------------------------------------- whole reads
    @answered
    def records(self, kind: str, span: Span = EVERYTHING,
                fields: Iterable[str] | None = None,
                ordered: bool = True) -> Iterator[dict[str, Any]]:
        """The records of ``kind`` in ``span``, in the order they were stored (``ordered``
        off: in the server's order, which a whole read that only counts, the report's,
        takes: SecantusDB sorts a whole read before its first record); only ``fields``
        (and ``_id``) when given."""
        projection = None if fields is None else dict.fromkeys(fields, 1)
        cursor = self.db[kind].find(span_filter(kind, span), projection, batch_size=BATCH)
        if ordered:
            cursor = cursor.sort("_id", 1)
        try:
            for doc in cursor:
                yield plain(doc)
        finally:
            cursor.close()

    @answered
    def clusters(self) -> Iterator[dict[str, Any]]:
        """The clusters ``simcrawl clusters`` wrote: ``_id`` (its original's), ``size``,
        ``original_url``."""
        for doc in self.db["clusters"].find({}, {"size": 1, "original_url": 1},
                                            batch_size=5000):
            yield plain(doc)

    @answered
    def crawls(self, crawl_id: str | None = None) -> list[dict[str, Any]]:
        """The crawls' records, with their summaries (one crawl's with ``crawl_id``)."""
        return [plain(d) for d in self.db["crawls"].find({"_id": crawl_id} if crawl_id else {})]

    @answered
    def fingerprints(self) -> Iterator[tuple[str, int, int | None]]:
        """Every fingerprint the near check reads (not short): ``(page id, simhash,
        second opinion or None)``."""
        for doc in self.db.fingerprints.find({"short": {"$ne": True}},
                                             {"simhash": 1, "simhash2": 1},
                                             batch_size=10_000):
            second = doc.get("simhash2")
            yield (str(doc["_id"]), from_int64(doc["simhash"]),
                   None if second is None else from_int64(second))

    @answered
    def near_matches(self, max_distance: int) -> Iterator[tuple[str, int, str]]:
        """The near copies dropped within ``max_distance``: ``(record id, distance,
        original id)``."""
        for m in self.db.matches.find({"kind": "simhash", "distance": {"$lte": max_distance}},
                                      {"_id": 1, "distance": 1, "original_id": 1},
                                      batch_size=10_000):
            yield str(m["_id"]), int(m["distance"]), str(m["original_id"])

    # -------------------------------------------------------------- one at a time
    @answered
    def recent_crawls(self, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` crawls updated last, without their summaries."""
        return [plain(d) for d in self.db["crawls"].find(
            {}, {"stats": 0, "skipped_per_minute": 0}).sort([("updated_at", -1)]).limit(limit)]

    @answered
    def newest(self, kind: str, where: Where, limit: int, before: str | None = None,
               by: str = "_id") -> tuple[list[dict[str, Any]], str | None]:
        """The ``limit`` newest records of ``kind`` that ``where`` names, without their
        text, in ``by`` order (``_id``: admission or first detection, with keyset pages:
        ``before``, a record id; or a time field such as ``detected_at``, first page only);
        and the ``before`` of the next page (None: no more).

        The records are read in windows of time going back from ``before`` (one minute,
        then four times longer each time), so each query reads a bounded range of an
        index (a compound index led by the filter's field and ending with ``by``) even on
        a server that reads a whole range before applying a limit (SecantusDB does): the
        cost follows the records shown, not the store's size.
        """
        collection, filters = self.db[kind], _filters(where)
        by_id = by == "_id"
        start = _oid(before)
        top_time = (start.generation_time if start is not None
                    else dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=1))
        top: Any = start or (ObjectId.from_datetime(top_time) if by_id else top_time)
        width = dt.timedelta(minutes=1)
        rows: list[dict[str, Any]] = []
        while len(rows) <= limit:
            bottom_time = top_time - width
            bound: dict[str, Any] = {"$lt": top}
            if bottom_time > EPOCH:
                bound["$gte"] = ObjectId.from_datetime(bottom_time) if by_id else bottom_time
            found: list[dict[str, Any]] = []
            for filter_ in filters:
                found += collection.find({**filter_, by: bound}, {"text": 0}).sort(
                    [(by, -1)]).limit(limit + 1 - len(rows))
            rows += sorted(found, key=lambda d: d[by], reverse=True)
            if "$gte" not in bound:
                break
            top, top_time = bound["$gte"], bottom_time
            width *= 4
        more = len(rows) > limit and by_id
        return [plain(r) for r in rows[:limit]], (str(rows[limit - 1]["_id"]) if more else None)

    @answered
    def match(self, match_id: str) -> dict[str, Any] | None:
        """A match record by its id (``None``: no such record, or not an id)."""
        oid = _oid(match_id)
        doc = None if oid is None else self.db.matches.find_one({"_id": oid})
        return None if doc is None else plain(doc)

    @answered
    def page(self, page_id: str, text: bool = True) -> dict[str, Any] | None:
        """A page record by its id, with its text unless ``text`` is off."""
        oid = _oid(page_id)
        doc = None if oid is None else self.db.pages.find_one(
            {"_id": oid}, None if text else {"text": 0})
        return None if doc is None else plain(doc)

    @answered
    def url_and_text(self, kind: str, record_id: str) -> tuple[str, str]:
        """The URL and text of a page or match record (empty when there is none)."""
        oid = _oid(record_id)
        doc = (None if oid is None else
               self.db[kind].find_one({"_id": oid}, {"url": 1, "text": 1})) or {}
        return str(doc.get("url", "")), str(doc.get("text") or "")

    @answered
    def copies_of(self, page_id: str, limit: int) -> tuple[list[dict[str, Any]], int]:
        """The ``limit`` copies of a page recorded last (without their text), and how many
        there are."""
        oid = _oid(page_id)
        if oid is None:
            return [], 0
        rows = self.db.matches.find({"original_id": oid}, {"text": 0}).sort(
            [("detected_at", -1)]).limit(limit)
        return ([plain(d) for d in rows],
                int(self.db.matches.count_documents({"original_id": oid})))

    @answered
    def cluster(self, cluster_id: str) -> dict[str, Any] | None:
        """A cluster ``simcrawl clusters`` wrote, by its id (its original's)."""
        oid = _oid(cluster_id)
        doc = None if oid is None else self.db["clusters"].find_one({"_id": oid})
        return None if doc is None else plain(doc)

    @answered
    def pages_of(self, page_ids: Iterable[str]) -> list[dict[str, Any]]:
        """The URL and fetch time of these pages."""
        oids = [o for p in page_ids if (o := _oid(p)) is not None]
        return [plain(d) for d in self.db.pages.find(
            {"_id": {"$in": oids}}, {"url": 1, "fetched_at": 1})] if oids else []

    @answered
    def batch_record(self, url: str) -> dict[str, Any] | None:
        """The batch job's record of a stored page found to be a copy (``kind``
        ``batch``), without its text."""
        doc = self.db.matches.find_one({"url": url, "kind": "batch"}, {"text": 0})
        return None if doc is None else plain(doc)

    @answered
    def examples(self, kind: str, limit: int) -> list[dict[str, Any]]:
        """The ``limit`` closest match records of ``kind`` (by distance, then URL)."""
        return [plain(d) for d in self.db.matches.find({"kind": kind}).sort(
            [("distance", 1), ("url", 1)]).limit(limit)]

    @answered
    def source_counts(self) -> dict[str, int]:
        """The registered originals of each source."""
        return {d["_id"]: int(d["n"]) for d in self.db.pages.aggregate([
            {"$match": {"source": {"$gt": ""}}},
            {"$group": {"_id": "$source", "n": {"$sum": 1}}}])}

    @answered
    def originals(self, source: str, after: str | None,
                  limit: int) -> tuple[list[dict[str, Any]], str | None]:
        """A page of a source's registered originals in URL order (those after the URL
        ``after``): their URL, title and registration time; and the ``after`` of the next
        page (None: no more)."""
        where: dict[str, Any] = {"source": source}
        if after:
            where = {"$and": [where, {"url": {"$gt": after}}]}
        rows = [plain(d) for d in self.db.pages.find(
            where, {"url": 1, "title": 1, "registered_at": 1}).sort(
            [("source", 1), ("url", 1)]).limit(limit + 1)]
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, (rows[-1]["url"] if more and rows else None)

    @answered
    def copy_counts(self, page_ids: Iterable[str]) -> dict[str, int]:
        """The copies recorded of each of these pages."""
        oids = [o for p in page_ids if (o := _oid(p)) is not None]
        if not oids:
            return {}
        return {str(d["_id"]): int(d["n"]) for d in self.db.matches.aggregate([
            {"$match": {"original_id": {"$in": oids}}},
            {"$group": {"_id": "$original_id", "n": {"$sum": 1}}}])}
