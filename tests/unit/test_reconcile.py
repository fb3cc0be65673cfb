"""The batch reconciliation's pure parts: candidates by text anchors as the crawl finds
them, clusters named by the page crawled first, one batch record per copied page."""

from __future__ import annotations

import datetime as dt

from dedup.reconcile import Copy, anchor_pairs, batch_copies, clusters_of, union_find


def test_anchor_pairs_need_two_shared_anchors_that_are_evidence() -> None:
    common = 999  # a phrase on twelve pages: passed over, as the crawl passes over it
    anchors = {f"p{i}": [common, 100 + i, 200 + i] for i in range(12)}
    anchors["copy"] = [common, 101, 500, 501]
    anchors["orig"] = [common, 101, 500, 600]
    anchors["lonely"] = [common, 700]  # one anchor that is evidence: one shared is enough
    anchors["lonely2"] = [common, 700, 701, 702]
    pairs = anchor_pairs(anchors)
    assert ("copy", "orig") in pairs  # 101 and 500
    assert ("copy", "p1") not in pairs  # only 101 shared
    assert ("lonely", "lonely2") in pairs
    assert not any("p0" in pair and "p2" in pair for pair in pairs)  # the common phrase


def test_clusters_are_named_by_the_page_crawled_first() -> None:
    t = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    label = union_find([("b", "c"), ("c", "a"), ("x", "y")])
    crawled = {"a": (t + dt.timedelta(2), "a"), "b": (t, "b"), "c": (t + dt.timedelta(1), "c"),
               "x": (t, "x"), "y": (t, "y")}
    clusters = clusters_of(label, crawled)
    assert [(c.original, c.members) for c in clusters] == [("b", ["a", "b", "c"]),
                                                            ("x", ["x", "y"])]


def test_one_batch_record_per_copy_naming_its_closest_earlier_page() -> None:
    best = batch_copies([Copy("a", "c", 3, 0.9), Copy("b", "c", 1, 0.85), Copy("a", "b", 2, None)])
    assert best["c"].original == "b" and best["b"].original == "a"
