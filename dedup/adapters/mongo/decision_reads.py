"""What the decision reads of the stored pages: their URLs, texts, sketches, second
opinions, canonicals and publication dates, and the copies recorded (the deduplicator's
page facts, :mod:`dedup.adapters.store_facts`, and the index call them)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from bson import ObjectId
from pymongo.errors import PyMongoError

from dedup.adapters.mongo.database import Database
from dedup.adapters.mongo.encoding import (
    aware,
    from_int64,
    object_id,
)
from dedup.ids import url_key


class DecisionReads(Database):
    """What the decision reads of the stored pages (the page facts, the index)."""

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

    def canonicals_of(self, page_ids: Iterable[str]) -> dict[str, str]:
        """``page id -> the URL it declared canonical`` for the stored pages among
        ``page_ids`` that declared one."""
        return self._page_field(page_ids, "canonical")

    def published_of(self, page_ids: Iterable[str]) -> dict[str, dt.datetime]:
        """``page id -> when it says it was first published`` for the stored pages among
        ``page_ids`` that say (aware, UTC)."""
        return {p: aware(v) for p, v in self._page_field(page_ids, "published").items()}

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
