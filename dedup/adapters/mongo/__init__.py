"""The page store in MongoDB: ``pages``, ``fingerprints`` and ``matches`` (docs/design.md,
Storage). MongoDB is the source of truth; the Redis index can be rebuilt from it.

The store's MongoDB adapter, and the only package of simcrawl that speaks to MongoDB: it
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

from dedup.adapters.mongo.batch_writes import BatchWrites
from dedup.adapters.mongo.crawl_writes import CrawlWrites
from dedup.adapters.mongo.database import (
    DEFAULT_TIMEOUT,
    DEFAULT_WRITE_BATCH,
    SIZES_ID,
    connect_mongo,
    index_k,
    stored_sizes,
    time_limit,
)
from dedup.adapters.mongo.decision_reads import DecisionReads
from dedup.adapters.mongo.encoding import (
    fingerprint_document,
    from_int64,
    match_document,
    object_id,
    to_int64,
)
from dedup.adapters.mongo.maintenance import Maintenance, StoreAudit

__all__ = ["DEFAULT_TIMEOUT", "DEFAULT_WRITE_BATCH", "SIZES_ID", "PageStore", "StoreAudit",
           "connect_mongo", "fingerprint_document", "from_int64", "index_k",
           "match_document", "object_id", "stored_sizes", "time_limit", "to_int64"]


class PageStore(CrawlWrites, DecisionReads, Maintenance, BatchWrites):
    """The ``pages``, ``fingerprints`` and ``matches`` collections of one database: the
    page store's interface (:class:`dedup.store.PageRecords`) on MongoDB, with the reads
    and writes the batch job, the rebuild and the console use besides.

    Its parts, by who calls them: the crawl's writes (:class:`CrawlWrites`), the
    decision's reads (:class:`DecisionReads`), the verbs that keep a store
    (:class:`Maintenance`) and the batch job's writes (:class:`BatchWrites`), each a
    module of this package, on one :class:`~dedup.adapters.mongo.database.Database`.
    """
