"""The page store on a real MongoDB-wire server, and every query of docs/queries.md."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from bson import Int64

from dedup.ids import new_page_id
from dedup.adapters.mongo import from_int64, match_document, to_int64
from dedup.store.records import MatchRecord, fingerprint_row
from store_cleanup import drop_test_database

pytestmark = pytest.mark.integration

DOC = Path(__file__).resolve().parents[2] / "docs" / "queries.md"
EDGES = [0, 2**63 - 1, 2**63, 2**64 - 1]


def queries() -> dict[str, str]:
    """The doc's ``### heading`` -> its python block."""
    text = DOC.read_text(encoding="utf-8")
    return {m.group(1).strip(): m.group(2)
            for m in re.finditer(r"^### (.+?)\n.*?```python\n(.*?)```", text, re.DOTALL | re.MULTILINE)}


def test_uint64_round_trips_through_the_server(pages) -> None:
    ids = [new_page_id() for _ in EDGES]
    pages.save_pages([{"_id": pid, "url": f"https://x.example/{i}", "host": "x.example"}
                      for i, pid in enumerate(ids)],
                     [fingerprint_row(pid, fp, checksum="0" * 32, tokens=50, short=False,
                                      algorithm="test") for pid, fp in zip(ids, EDGES)])
    assert [pages.fingerprint_of(pid) for pid in ids] == EDGES
    assert sorted(fp for fp, _, _ in pages.iter_fingerprints()) == EDGES
    for fp in EDGES:  # query by value, as users do
        doc = pages.fingerprints.find_one({"simhash": to_int64(fp)})
        assert doc["simhash_hex"] == f"{fp:016x}" and from_int64(doc["simhash"]) == fp
        assert isinstance(doc["simhash"], Int64)
    assert [to_int64(fp) for fp in EDGES] == [0, 2**63 - 1, -2**63, -1]
    with pytest.raises(ValueError):
        to_int64(2**64)
    with pytest.raises(ValueError):
        to_int64(-1)


def test_pages_are_stored_once_and_removed_with_their_fingerprint(pages) -> None:
    pid = new_page_id()
    page = {"_id": pid, "url": "https://a.example/1", "host": "a.example"}
    fp = fingerprint_row(pid, 12345, checksum="c" * 32, tokens=80, short=False, algorithm="t")
    assert pages.save_pages([page], [fp]) == 1
    again = {"_id": new_page_id(), "url": "https://a.example/1", "host": "a.example"}
    assert pages.save_pages([again]) == 0  # same URL: kept once
    assert pages.pages.count_documents({}) == 1
    assert pages.count_fingerprints() == 1
    short = new_page_id()
    pages.save_pages([{"_id": short, "url": "https://a.example/2", "host": "a.example"}],
                     [fingerprint_row(short, 7, checksum="d" * 32, tokens=3, short=True,
                                      algorithm="t")])
    assert pages.count_fingerprints() == 1 and pages.count_fingerprints(False) == 2
    assert [p for _, p, _ in pages.iter_fingerprints()] == [pid]  # short texts are not indexed
    assert pages.remove_page(pid) == 12345
    assert pages.page(pid) is None and pages.fingerprint_of(pid) is None
    assert pages.remove_page(pid) is None


@pytest.fixture
def crawl(pages):  # type: ignore[no-untyped-def]
    """Originals on a.example and b.example; copies on a, b and c."""
    t0 = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    originals = {}
    for host, path in [("a.example", "1"), ("a.example", "2"), ("b.example", "3")]:
        pid = new_page_id()
        url = f"https://{host}/{path}"
        originals[url] = pid
        pages.save_pages([{"_id": pid, "url": url, "host": host, "fetched_at": t0}],
                         [fingerprint_row(pid, int(path) << 32, checksum=path * 32, tokens=99,
                                          short=False, algorithm="t")])
    a1, a2 = "https://a.example/1", "https://a.example/2"
    copies = [("https://b.example/c1", "b.example", a1, 1, "simhash", 1),
              ("https://b.example/c2", "b.example", a1, 3, "simhash", 2),
              ("https://a.example/print/1", "a.example", a1, 0, "exact", 3),
              ("https://c.example/x", "c.example", a2, 2, "simhash", 4)]
    pages.save_matches(MatchRecord(url=u, host=h, original_id=originals[o], original_url=o,
                                   original_host=o.split("/")[2], distance=d, kind=k,
                                   outlinks_dropped=5
                                   ).row(crawl_id=None, detected_at=t0 + dt.timedelta(minutes=m))
                       for u, h, o, d, k, m in copies)
    return pages


@pytest.fixture
def tracked(pages):  # type: ignore[no-untyped-def]
    """A novelist's registered chapter and three pirated copies of it on two hosts."""
    t0 = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    chapter = new_page_id()
    pages.save_pages([{"_id": chapter, "url": "file:///novels/1.txt", "host": "registered",
                       "source": "novels"}])
    pages.save_matches(MatchRecord(url=u, host=u.split("/")[2], original_id=chapter,
                                   original_url="file:///novels/1.txt", original_host="registered",
                                   distance=0, kind="pinyin", source="novels",
                                   pinyin={"share": s, "run": r, "span": [0, 99]}, title="第1章",
                                   fetched_at=t0
                                   ).row(crawl_id=None, detected_at=t0 + dt.timedelta(hours=h))
                       for u, s, r, h in [
            ("https://pirate.example/1", 1.0, 40, 1), ("https://pirate.example/2", 0.9, 30, 2),
            ("https://forum.example/t/9", 0.2, 8, 3)])
    pages.save_excerpts(MatchRecord(url=u, host=u.split("/")[2], original_id=chapter,
                                    original_url="file:///novels/1.txt", original_host="registered",
                                    distance=None, kind="excerpt", source="novels", characters=c,
                                    span=[10, 10 + c], containment=0.1,
                                    page_id=new_page_id()
                                    ).row(crawl_id=None, detected_at=t0 + dt.timedelta(hours=h))
                        for u, c, h in [
            ("https://blog.example/a", 150, 1), ("https://blog.example/b", 60, 2)])
    return pages


def run(name: str, db, **names):  # type: ignore[no-untyped-def]
    scope = {"db": db, **names}
    exec(queries()[name], scope)  # noqa: S102 - the documented query, verbatim
    return scope["result"]


def test_the_document_lists_the_queries_tested_here() -> None:
    assert set(queries()) == {
        "Copies of a given original", "Recent matches", "Duplicate rate per host",
        "Largest clusters", "Copies on other hosts", "How close the copies are",
        "A page's fingerprint", "All copies of a source, newest first",
        "Hosts with the most copies", "Matches of one crawl", "Quotations of a source",
        "Every page and copy of an article", "Copies the crawl let through"}


def test_copies_of_a_given_original(crawl) -> None:
    got = run("Copies of a given original", crawl.db, original_url="https://a.example/1")
    assert got == [{"url": "https://a.example/print/1", "distance": 0, "kind": "exact"},
                   {"url": "https://b.example/c2", "distance": 3, "kind": "simhash"},
                   {"url": "https://b.example/c1", "distance": 1, "kind": "simhash"}]


def test_recent_matches(crawl) -> None:
    got = run("Recent matches", crawl.db)
    assert [m["url"] for m in got] == ["https://c.example/x", "https://a.example/print/1",
                                       "https://b.example/c2", "https://b.example/c1"]
    assert got[0]["original_url"] == "https://a.example/2"


def test_duplicate_rate_per_host(crawl) -> None:
    got = run("Duplicate rate per host", crawl.db)
    assert got == [("c.example", 0, 1, 1.0), ("b.example", 1, 2, 2 / 3),
                   ("a.example", 2, 1, 1 / 3)]


def test_largest_clusters(crawl) -> None:
    got = run("Largest clusters", crawl.db)
    assert [(c["url"], c["copies"], sorted(c["hosts"])) for c in got] == [
        ("https://a.example/1", 3, ["a.example", "b.example"]),
        ("https://a.example/2", 1, ["c.example"])]


def test_copies_on_other_hosts(crawl) -> None:
    got = run("Copies on other hosts", crawl.db)
    assert [(c["_id"]["from"], c["_id"]["to"], c["copies"]) for c in got] == [
        ("a.example", "b.example", 2), ("a.example", "c.example", 1)]


def test_how_close_the_copies_are(crawl) -> None:
    got = run("How close the copies are", crawl.db)
    assert [(g["_id"]["kind"], g["_id"]["distance"], g["matches"]) for g in got] == [
        ("exact", 0, 1), ("simhash", 1, 1), ("simhash", 2, 1), ("simhash", 3, 1)]


def test_a_pages_fingerprint(crawl) -> None:
    got = run("A page's fingerprint", crawl.db, original_url="https://b.example/3")
    assert got == (3 << 32, f"{3 << 32:016x}")


def test_all_copies_of_a_source(tracked) -> None:
    got = run("All copies of a source, newest first", tracked.db, source="novels")
    assert [(m["url"], m["kind"], m["pinyin"]["share"], m["pinyin"]["run"]) for m in got] == [
        ("https://forum.example/t/9", "pinyin", 0.2, 8),
        ("https://pirate.example/2", "pinyin", 0.9, 30),
        ("https://pirate.example/1", "pinyin", 1.0, 40)]
    assert all(m["original_url"] == "file:///novels/1.txt" and m["title"] == "第1章"
               for m in got)
    assert run("All copies of a source, newest first", tracked.db, source="other") == []


def test_quotations_of_a_source(tracked) -> None:
    got = run("Quotations of a source", tracked.db, source="novels")
    assert [(e["url"], e["characters"], e["span"]) for e in got] == [
        ("https://blog.example/b", 60, [10, 70]), ("https://blog.example/a", 150, [10, 160])]
    assert run("Quotations of a source", tracked.db, source="other") == []
    # quotations are not copies: the copies' queries do not see them
    assert run("Hosts with the most copies", tracked.db, source="novels")[0]["copies"] == 2


def test_hosts_with_the_most_copies(tracked) -> None:
    got = run("Hosts with the most copies", tracked.db, source="novels")
    assert [(h["_id"], h["copies"]) for h in got] == [("pirate.example", 2),
                                                       ("forum.example", 1)]


def test_a_url_has_one_match_record_however_often_it_is_seen(pages) -> None:
    original = new_page_id()

    def record(crawl: str, distance: int) -> dict:
        return MatchRecord(url="https://b.example/copy", host="b.example", original_id=original,
                           original_url="https://a.example/", original_host="a.example",
                           distance=distance, kind="simhash").row(crawl_id=crawl)

    assert pages.save_matches([record("crawl-1", 2)]) == 1
    assert pages.save_matches([record("crawl-2", 1), record("crawl-2", 1)]) == 0
    docs = list(pages.matches.find({}))
    assert len(docs) == 1
    doc = docs[0]
    assert (doc["distance"], doc["crawl_id"], sorted(doc["crawl_ids"]), doc["times_seen"]) == \
        (1, "crawl-2", ["crawl-1", "crawl-2"], 3)
    assert doc["first_detected_at"] <= doc["detected_at"]


def test_a_batch_of_new_and_seen_urls_is_written_as_upserts_in_order_would(pages) -> None:
    original = new_page_id()

    def record(url: str, crawl: str, distance: int) -> dict:
        return MatchRecord(url=url, host="b.example", original_id=original,
                           original_url="https://a.example/", original_host="a.example",
                           distance=distance, kind="simhash").row(crawl_id=crawl)

    assert pages.save_matches([record("https://b.example/1", "crawl-1", 3)]) == 1
    # a seen URL, a new one twice (its last record wins), another new one
    assert pages.save_matches([record("https://b.example/1", "crawl-2", 2),
                               record("https://b.example/2", "crawl-2", 5),
                               record("https://b.example/2", "crawl-2", 4),
                               record("https://b.example/3", "crawl-2", 1)]) == 2
    got = {d["url"].rsplit("/", 1)[1]: (d["distance"], sorted(d["crawl_ids"]), d["times_seen"])
           for d in pages.matches.find({})}
    assert got == {"1": (2, ["crawl-1", "crawl-2"], 2), "2": (4, ["crawl-2"], 2),
                   "3": (1, ["crawl-2"], 1)}


def test_duplicate_match_records_of_older_versions_are_merged(mongo_client) -> None:
    from dedup.adapters.mongo import PageStore

    db = mongo_client["test_old_matches"]
    try:
        for n in range(3):
            db.matches.insert_one(match_document(MatchRecord(url="https://b.example/copy",
                                                             host="b.example",
                                                             original_id=new_page_id(),
                                                             original_url=None, original_host=None,
                                                             distance=n,
                                                             kind="simhash").row(
                crawl_id=None, detected_at=dt.datetime(2026, 1, 1 + n, tzinfo=dt.timezone.utc))))
        PageStore(mongo_client, "test_old_matches").ensure_indexes()
        assert [d["distance"] for d in db.matches.find({})] == [2]  # the latest is kept
    finally:
        drop_test_database(mongo_client, "test_old_matches")


def test_matches_of_one_crawl(crawl) -> None:
    first = list(crawl.matches.find({}))
    again = [dict(m, crawl_id="recrawl") for m in first[:2]]  # a re-crawl sees two again
    crawl.save_matches(again)
    got = run("Matches of one crawl", crawl.db, crawl_id="recrawl")
    assert [m["url"] for m in got] == sorted(m["url"] for m in first[:2])
    assert crawl.matches.count_documents({}) == len(first)
    assert len(run("Recent matches", crawl.db)) == len(first)


def test_a_write_repeated_after_a_failure_keeps_the_fingerprints(pages) -> None:
    pid = new_page_id()
    page = {"_id": pid, "url": "https://a.example/again", "host": "a.example"}
    fp = fingerprint_row(pid, 99, checksum="e" * 32, tokens=80, short=False, algorithm="t")
    pages.save_pages([page])  # the first try stored the page, then failed
    pages.save_pages([page], [fp])  # the retry: the page is ours, its fingerprint goes in
    assert pages.fingerprint_of(pid) == 99
    other = {"_id": new_page_id(), "url": "https://a.example/again", "host": "a.example"}
    pages.save_pages([other], [fingerprint_row(other["_id"], 7, checksum="f" * 32, tokens=80,
                                               short=False, algorithm="t")])
    assert pages.fingerprint_of(other["_id"]) is None  # another page's URL: not ours
