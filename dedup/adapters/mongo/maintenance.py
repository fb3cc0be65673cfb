"""What the verbs that keep a store read and change: ``rebuild-index`` (the fingerprints,
checksums and pinyin windows, counted), ``remove`` (a page out, a fingerprint out of
the index), ``clusters`` (the stored pages), and the audit of a store against itself."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pymongo.errors import PyMongoError

from dedup.adapters.mongo.database import INDEXED, Database
from dedup.adapters.mongo.encoding import (
    from_int64,
    object_id,
    to_int64,
)


@dataclass
class StoreAudit:
    """What :meth:`Maintenance.audit` found."""

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


class Maintenance(Database):
    """What ``rebuild-index``, ``remove`` and ``clusters`` read and change, and the audit."""

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
            return self.fingerprints.count_documents(INDEXED if indexed_only else {})
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
        (:meth:`~dedup.adapters.mongo.database.Database.sizes`)."""
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
            cursor = self.fingerprints.find(INDEXED, {"simhash": 1, "sketch": 1},
                                            batch_size=batch_size)
            for doc in cursor:
                sketch = doc.get("sketch")
                yield from_int64(doc["simhash"]), str(doc["_id"]), \
                    bytes(sketch) if sketch else None
        except PyMongoError as exc:
            raise self._unavailable(exc) from exc

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
