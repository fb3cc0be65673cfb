"""The batch job's writes (``simcrawl find-all``, :mod:`dedup.spark`): the clusters of
copies and their match records."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import pymongo
from bson import ObjectId
from pymongo import UpdateMany, UpdateOne
from pymongo.errors import PyMongoError

from dedup.adapters.mongo.database import DEFAULT_WRITE_BATCH, Database
from dedup.adapters.mongo.encoding import (
    match_document,
    object_id,
)
from dedup.store.records import BATCH, MatchRecord


class BatchWrites(Database):
    """The batch job's writes: the clusters of copies and their match records."""

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
            facts: :meth:`~dedup.adapters.mongo.maintenance.Maintenance.stored_pages` of
                every page named.

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
