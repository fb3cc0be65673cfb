"""The batch reconciliation's pure parts: candidates by text anchors as the crawl finds
them, clusters named by the page crawled first, one batch record per copied page."""

from __future__ import annotations

import datetime as dt

from decision_cases import article

from dedup.decide import Rules
from dedup.reconcile import (
    Copy,
    StoredPage,
    anchor_pairs,
    batch_copies,
    clusters_of,
    judge,
    union_find,
)
from dedup.sketch import TextSketch


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


def stored(page_id: str, host: str, text: str, day: int, title: str = "A story") -> StoredPage:
    """A stored page as the batch reads it: its text and the sketch the crawl kept."""
    return StoredPage(page_id, f"http://{host}/{page_id}", host,
                      dt.datetime(2026, 1, day, tzinfo=dt.timezone.utc), title=title,
                      text=text, sketch=TextSketch.of_text(text, host=host,
                                                           title=title).to_bytes())


def test_a_page_met_before_the_copy_that_holds_it_with_unlearned_furniture_is_one_document(
        ) -> None:
    """The crawl met an article first, then its republication whose site's furniture (not
    yet learned) is a third of its text: one way, the republication's own text is not in
    the article, so the crawl admitted both. The batch asks the other way too: the
    article's own text is in the republication, which is mostly the article, so the pair
    is one document, named by the page crawled first. A page that holds the article and
    three times more of its own (an aggregation) stays apart both ways."""
    story = article(3, 400)
    first = stored("article", "news.test", story, 1)
    again = stored("republished", "wire.test", story + "\n" + article(4, 200), 2)
    found = judge(first, again, 2, Rules())
    assert found is not None and (found.original, found.copy, found.held) == \
        ("article", "republished", True)
    assert judge(again, first, 2, Rules()) == found  # whichever is passed first
    aggregate = stored("aggregate", "wire.test", story + "\n" + article(5, 1200), 2)
    assert judge(first, aggregate, 2, Rules()) is None
    later_copy = stored("copy", "news.test", story, 3)  # the plain way: the later copies
    plain = judge(first, later_copy, 0, Rules())
    assert plain is not None and not plain.held and plain.copy == "copy"
