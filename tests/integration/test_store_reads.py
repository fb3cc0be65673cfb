"""What the console, the report and the export read (:class:`dedup.store.reads.StoreReads`),
answered the same way in memory (:class:`dedup.store.memory_pages.MemoryReads`) and in MongoDB
(:class:`dedup.adapters.mongo.reads.MongoReads`, on the embedded SecantusDB), from records
built once (:mod:`dedup.store.records`); and the WARC writer keeps what the stores keep of
the same records."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from dedup.ids import new_page_id
from dedup.page import Page
from dedup.store.memory_pages import MemoryPageStore, MemoryReads
from dedup.adapters.mongo import PageStore
from dedup.adapters.mongo.reads import MongoReads
from dedup.store.reads import Span, StoreReads, Where, search
from dedup.store.records import MatchRecord, fingerprint_record, page_record
from dedup.warc_writer import WARC_FIELDS, Fetch, WarcWriter, parse_fields
from store_cleanup import drop_test_database

pytestmark = pytest.mark.integration

T0 = dt.datetime(2026, 11, 20, 12, 0, tzinfo=dt.timezone.utc)


def page(url: str, text: str, fetched: dt.datetime, simhash: int) -> Page:
    p = Page(url=url, host=url.split("/")[2], checksum=f"{abs(hash(text)):032x}"[:32],
             simhash=simhash, short=False, text=text, page_id=new_page_id(),
             fetched_at=fetched, title=text.split()[0])
    p.verify = simhash ^ 0xFF
    return p


@pytest.fixture(params=["memory", "mongodb"])
def both(request, mongo_client, namespace: str) -> Iterator[tuple[StoreReads, object]]:  # type: ignore[no-untyped-def]
    if request.param == "memory":
        store = MemoryPageStore()
        yield MemoryReads(store), store
        return
    mongo = PageStore(mongo_client, namespace.replace("-", "_"))
    mongo.ensure_indexes()
    yield MongoReads(mongo.db), mongo
    drop_test_database(mongo_client, mongo.db.name)


def crawl(store) -> dict[str, Page]:  # type: ignore[no-untyped-def]
    """Two crawls: three originals (one a registered original of source ``wire``), three
    copies, one excerpt."""
    pages = {
        "a": page("https://a.example/news/1", "harbour pier opened", T0, 1 << 63 | 5),
        "b": page("https://a.example:8080/news/2", "council budget passed", T0 + dt.timedelta(hours=1), 9),
        "w": page("file:///wire/3.txt", "wire story of the floods", T0, 0xFFFF_FFFF_FFFF_FFF0)}
    store.save_pages([page_record(pages["a"], crawl_id="c1", status=200),
                      page_record(pages["b"], crawl_id="c2", status=200),
                      page_record(pages["w"], source="wire", registered_at=T0)],
                     [fingerprint_record(p) for p in pages.values()])
    a, w = pages["a"], pages["w"]

    def copy(url: str, original: Page, kind: str, distance: int | None, crawl_id: str,
             when: dt.datetime, **extra: object) -> dict:  # type: ignore[type-arg]
        return MatchRecord(url=url, host=url.split("/")[2], original_id=original.page_id,
                           original_url=original.url, original_host=original.host,
                           distance=distance, kind=kind, outlinks_dropped=2,
                           **extra).row(crawl_id=crawl_id, detected_at=when,
                                        text_cap=10**6)

    store.save_matches([
        copy("https://m.example/1", a, "simhash", 2, "c1", T0 + dt.timedelta(minutes=5),
             text="harbour pier opened today", containment=0.97),
        copy("https://m.example/2", a, "exact", 0, "c2", T0 + dt.timedelta(hours=2)),
        copy("https://n.example/3", w, "simhash", 1, "c2", T0 + dt.timedelta(hours=3),
             source="wire")])
    store.save_excerpts([copy("https://q.example/4", w, "excerpt", None, "c2",
                              T0 + dt.timedelta(hours=3), source="wire", characters=40,
                              page_id=new_page_id())])
    store.save_crawl("c1", {"stats": {"dedup/skipped/empty": 2}, "pid": 1})
    store.save_crawl("c2", {"stats": {}, "pid": 2})
    store.save_layout("ns", {"version": 0})  # a layout no simcrawl reads: the default k
    return pages


def test_whole_reads_give_the_same_records_in_the_order_stored(both) -> None:  # type: ignore[no-untyped-def]
    reads, store = both
    pages = crawl(store)
    assert reads.holds_crawl() and reads.has_records()
    assert reads.sizes() == {"pages": 3, "registered": 1, "fingerprints": 3, "matches": 3,
                             "excerpts": 1}
    urls = [d["url"] for d in reads.records("pages", fields=("url",))]
    assert urls == [p.url for p in pages.values()]
    one = next(reads.records("pages", Span(crawl_id="c1")))
    assert one["_id"] == pages["a"].page_id and one["text"] == "harbour pier opened"
    assert one["fetched_at"] == T0 and one["status"] == 200
    # a match record is a crawl's when that crawl saw it; a span bounds its detection
    assert [m["url"] for m in reads.records("matches", Span(crawl_id="c2"))] == [
        "https://m.example/2", "https://n.example/3"]
    late = Span(since=T0 + dt.timedelta(hours=1), until=T0 + dt.timedelta(hours=3))
    assert [m["url"] for m in reads.records("matches", late)] == ["https://m.example/2"]
    assert reads.count("matches", late) == 1 and reads.count("pages") == 3
    m = next(reads.records("matches", fields=("original_id", "kind", "distance")))
    assert m == {"_id": m["_id"], "original_id": pages["a"].page_id, "kind": "simhash",
                 "distance": 2}
    # fingerprints as unsigned 64-bit values, whatever the store keeps
    assert sorted(reads.fingerprints()) == sorted(
        (p.page_id, p.simhash, p.simhash ^ 0xFF) for p in pages.values())
    assert sorted((d, o) for _, d, o in reads.near_matches(1)) == [(1, pages["w"].page_id)]
    assert [r["pid"] for r in reads.crawls("c1")] == [1]
    assert "stats" not in reads.recent_crawls(1)[0]
    assert reads.index_k() == 3 and list(reads.clusters()) == []


def test_the_consoles_reads_give_the_same_answers(both) -> None:  # type: ignore[no-untyped-def]
    reads, store = both
    pages = crawl(store)
    a = pages["a"]
    # a host on any port; a URL prefix; a source
    host, _ = search("a.example")
    found, more = reads.newest("pages", host, 10)
    assert {d["url"] for d in found} == {a.url, pages["b"].url} and more is None
    assert all("text" not in d for d in found)
    assert [d["url"] for d in reads.newest("pages", search("a.example:8080")[0], 10)[0]] == [
        pages["b"].url]
    by_prefix, _ = reads.newest("matches", search("https://m.example/")[0], 10)
    assert {d["url"] for d in by_prefix} == {"https://m.example/1", "https://m.example/2"}
    # paged, newest first, each once
    first, before = reads.newest("matches", Where(), 2)
    rest, after = reads.newest("matches", Where(), 2, before)
    assert len(first) == 2 and len(rest) == 1 and after is None
    assert len({d["url"] for d in first + rest}) == 3
    by_time, _ = reads.newest("matches", Where(), 10, by="detected_at")
    assert [d["url"] for d in by_time] == ["https://n.example/3", "https://m.example/2",
                                          "https://m.example/1"]
    assert [d["url"] for d in reads.newest("excerpts", Where(source="wire"), 5)[0]] == [
        "https://q.example/4"]
    # one record at a time, by the ids the lists give
    record = reads.match(by_time[2]["_id"])
    assert record is not None and record["original_id"] == a.page_id
    assert record["text"] == "harbour pier opened today" and record["times_seen"] == 1
    assert reads.match("0" * 24) is None and reads.match("not an id") is None
    assert reads.page(a.page_id, text=False) is not None
    assert "text" not in (reads.page(a.page_id, text=False) or {})
    assert reads.url_and_text("pages", a.page_id) == (a.url, "harbour pier opened")
    assert reads.url_and_text("matches", record["_id"]) == ("https://m.example/1",
                                                             "harbour pier opened today")
    copies, total = reads.copies_of(a.page_id, 1)
    assert total == 2 and [c["url"] for c in copies] == ["https://m.example/2"]
    assert [d["url"] for d in reads.pages_of([a.page_id, "0" * 24])] == [a.url]
    assert reads.batch_record("https://m.example/1") is None
    assert [m["url"] for m in reads.examples("simhash", 1)] == ["https://n.example/3"]
    # the registered originals of a source, paged by URL, with their copies counted
    assert reads.source_counts() == {"wire": 1}
    originals, next_after = reads.originals("wire", None, 10)
    assert [o["url"] for o in originals] == [pages["w"].url] and next_after is None
    assert reads.originals("wire", pages["w"].url, 10) == ([], None)
    assert reads.copy_counts([pages["w"].page_id, a.page_id]) == {pages["w"].page_id: 1,
                                                                  a.page_id: 2}


def test_the_warc_writer_keeps_what_the_stores_keep(both, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The same records, written to a store and as WARC: the archive's responses are the
    stored originals, and each copy's metadata record holds its match record's fields."""
    reads, store = both
    pages = crawl(store)
    writer = WarcWriter(tmp_path, "crawl", {"software": "simcrawl/test"}, near="metadata")
    for p in (pages["a"], pages["b"]):
        writer.original(Fetch(url=p.url, status=200, reason="OK", date=T0,
                              body=p.text.encode(), headers=[("Content-Type", "text/html")],
                              request_headers=[]), p.page_id)
    for m in reads.records("matches"):
        writer.copy(Fetch(url=m["url"], status=200, reason="OK", date=T0, body=b"copy",
                          headers=[("Content-Type", "text/html")], request_headers=[]),
                    {k: m.get(k) for k in WARC_FIELDS})
    writer.close()
    responses, described = [], {}
    for path in sorted(tmp_path.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh):
                url = r.rec_headers.get_header("WARC-Target-URI")
                if r.rec_type == "response":
                    responses.append(url)
                elif r.rec_type == "metadata":
                    described[url] = parse_fields(r.content_stream().read())
    crawled = [d["url"] for d in reads.records("pages") if not d.get("source")]
    assert responses == crawled
    for m in reads.records("matches"):
        kept = described[m["url"]]
        assert kept == {"simcrawl-match": "copy", **{
            k: str(m[k]) for k in WARC_FIELDS if m.get(k) is not None}}
