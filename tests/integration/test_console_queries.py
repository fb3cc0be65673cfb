"""The console's paged queries against a real MongoDB-wire server."""

from __future__ import annotations

import datetime as dt
import os
import random

from bson import ObjectId

from crawler.console.browse import PAGE_SIZE
from dedup.adapters.mongo.reads import MongoReads
from dedup.store.reads import Where, search


def _oid(when: dt.datetime) -> ObjectId:
    return ObjectId(int(when.timestamp()).to_bytes(4, "big") + os.urandom(8))


def test_newest_pages_through_every_record_in_order_whatever_their_age(pages) -> None:  # type: ignore[no-untyped-def]
    """Records from seconds to years old, two hosts: the windows give each host's records
    newest first, each exactly once, page after page."""
    rng = random.Random(7)
    now = dt.datetime.now(dt.timezone.utc)
    docs = []
    for n in range(400):
        age = dt.timedelta(seconds=rng.choice([5, 50, 3000, 86_400 * 3, 86_400 * 800]) *
                           rng.random())
        docs.append({"_id": _oid(now - age), "url": f"https://a.example/{n}",
                     "host": rng.choice(["a.example", "a.example:8080", "b.example"])})
    pages.matches.insert_many(docs)
    where, _ = search("a.example")
    reads = MongoReads(pages.db)
    seen: list[str] = []
    before = None
    while True:
        rows, before = reads.newest("matches", where, PAGE_SIZE, before)
        seen += [r["_id"] for r in rows]
        assert len(rows) == PAGE_SIZE or before is None
        if before is None:
            break
    expected = sorted((d["_id"] for d in docs if d["host"].startswith("a.example")),
                      reverse=True)
    assert seen == [str(e) for e in expected]  # ids as their hex, newest first
    everything, more = reads.newest("matches", Where(), 1000)
    assert len(everything) == 400 and more is None
