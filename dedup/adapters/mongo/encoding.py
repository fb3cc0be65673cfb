"""How the store's records are encoded in MongoDB, here and only here: fingerprints as
signed ``Int64`` (BSON has no unsigned type: a fingerprint is stored as its two's
complement, values from 2^63 on negative), page ids as ``ObjectId``."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from bson import Int64, ObjectId
from pymongo import UpdateOne

_TWO64 = 1 << 64
_TWO63 = 1 << 63


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


def with_oid(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A page record as stored: its id an ``ObjectId``."""
    out = dict(doc)
    if "_id" in out and isinstance(out["_id"], str):
        out["_id"] = object_id(out["_id"])
    return out


def as_int64(value: int) -> Int64:
    return value if isinstance(value, Int64) else to_int64(value)


def fingerprint_document(record: Mapping[str, Any]) -> dict[str, Any]:
    """A fingerprint record (:func:`dedup.store.records.fingerprint_row`) as stored: its
    id an ``ObjectId``, its fingerprints and pinyin codes signed ``Int64`` (the one place
    that writes a fingerprint to MongoDB)."""
    out = with_oid(record)
    out["simhash"] = as_int64(out["simhash"])
    if out.get("simhash2") is not None:
        out["simhash2"] = as_int64(out["simhash2"])
    if out.get("pinyin"):
        out["pinyin"] = dict(out["pinyin"], codes=[as_int64(c) for c in out["pinyin"]["codes"]])
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


def aware(when: Any) -> Any:
    """A time MongoDB returned (naive UTC) as an aware one."""
    if isinstance(when, dt.datetime) and when.tzinfo is None:
        return when.replace(tzinfo=dt.timezone.utc)
    return when


def upsert_seen(doc: dict[str, Any], first: Any, crawl: Any) -> UpdateOne:
    """The upsert of a record seen again: its fields set, its first detection kept, its
    sightings counted and its crawl added
    (:meth:`dedup.adapters.mongo.crawl_writes.CrawlWrites.save_matches`)."""
    update: dict[str, Any] = {"$set": doc, "$setOnInsert": {"first_detected_at": first},
                              "$inc": {"times_seen": 1}}
    if crawl is not None:
        update["$addToSet"] = {"crawl_ids": crawl}
    return UpdateOne({"url": doc["url"]}, update, upsert=True)
