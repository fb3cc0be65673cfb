"""The page store's interface (:class:`dedup.store.PageRecords`) kept by both stores: the
same writes give the same answers in memory (:class:`dedup.store.memory_pages.MemoryPageStore`) and
in MongoDB (:class:`dedup.adapters.mongo.PageStore`, on the embedded SecantusDB)."""

from __future__ import annotations

import datetime as dt

import pytest

from dedup.ids import new_page_id
from dedup.page import Page
from dedup.store import PageRecords
from dedup.store.records import MatchRecord, fingerprint_record, fingerprint_row, page_record

pytestmark = pytest.mark.integration


@pytest.fixture
def store(page_store: PageRecords) -> PageRecords:
    return page_store


def page(url: str, text: str = "the harbour opened its new pier", **kw) -> Page:  # type: ignore[no-untyped-def]
    p = Page(url=url, host=url.split("/")[2], checksum=f"{abs(hash(text)):032x}"[:32],
             simhash=(hash(url) & 0xFFFF_FFFF_FFFF_FFFF) | 1 << 63, short=False, text=text,
             page_id=new_page_id(), **kw)
    p.verify = 0xF0F0_F0F0_F0F0_F0F0
    p.sketch = b"sketch:" + url.encode()
    return p


def save(store: PageRecords, *pages: Page, source: str | None = None) -> int:
    """Store pages as the crawl does (``source``: the last page is a registered
    original's)."""
    docs = [page_record(p, crawl_id="c1") for p in pages]
    if source:
        docs[-1]["source"] = source
    return store.save_pages(docs, [fingerprint_record(p) for p in pages])


def copy_of(original: Page, url: str, kind: str = "simhash", crawl: str = "c1") -> dict:  # type: ignore[type-arg]
    return MatchRecord(url=url, host="copy.example", original_id=original.page_id,
                       original_url=original.url, original_host=original.host, distance=2,
                       kind=kind, checksum="c" * 32, containment=0.97).row(crawl_id=crawl)


def test_pages_are_kept_once_per_url_and_read_back(store: PageRecords) -> None:
    a = page("https://a.example/news?y=2&x=1", canonical="https://a.example/news")
    b = page("https://b.example/story", text="another text altogether")
    assert save(store, a, b, source="wire") == 2
    again = page("https://a.example/news?y=2&x=1")  # the same URL, fetched again
    assert save(store, a, again) == 0
    assert store.complete_pages([a.page_id, b.page_id, again.page_id]) == {a.page_id,
                                                                             b.page_id}
    # a URL is found in its canonical form, whatever the order of its query arguments
    assert store.stored_urls(["https://a.example/news?x=1&y=2", "https://c.example/"]) == {
        "https://a.example/news?x=1&y=2": (a.page_id, a.checksum)}
    assert store.urls_of([a.page_id, b.page_id, "0" * 24]) == {
        a.page_id: (a.url, "a.example", None), b.page_id: (b.url, "b.example", "wire")}
    assert store.canonicals_of([a.page_id, b.page_id]) == {a.page_id: "https://a.example/news"}
    assert store.texts_of([b.page_id]) == {b.page_id: "another text altogether"}
    assert store.sketches_of([a.page_id]) == {a.page_id: b"sketch:" + a.url.encode()}
    assert store.verifiers_of([a.page_id]) == {a.page_id: 0xF0F0_F0F0_F0F0_F0F0}
    assert store.fingerprint_of(a.page_id) == a.simhash  # 64 bits, kept as a signed int
    assert store.fingerprint_of(again.page_id) is None
    stored = store.page(b.page_id)
    assert stored is not None and stored["url"] == b.url and stored["source"] == "wire"
    sizes = store.sizes() or {}
    assert (sizes.get("pages"), sizes.get("fingerprints"), sizes.get("registered")) == (2, 2, 1)


def test_match_records_are_one_per_url_and_name_a_kept_original(store: PageRecords) -> None:
    a = page("https://a.example/1")
    save(store, a)
    assert store.save_matches([copy_of(a, "https://m.example/1")]) == 1
    assert store.save_matches([copy_of(a, "https://m.example/1", crawl="c2"),
                               copy_of(a, "https://m.example/2", kind="exact")]) == 1
    assert store.recorded_copies(["https://m.example/1", "https://m.example/2",
                                  "https://m.example/3"]) == {
        "https://m.example/1": {"original_id": a.page_id, "checksum": "c" * 32,
                                "kind": "simhash", "distance": 2, "containment": 0.97},
        "https://m.example/2": {"original_id": a.page_id, "checksum": "c" * 32,
                                "kind": "exact", "distance": 2, "containment": 0.97}}
    assert store.forget_copies(["https://m.example/2", "https://m.example/9"]) == 1
    assert list(store.recorded_copies(["https://m.example/2"])) == []
    # the original gone (a killed crawl's page taken back): its copies are named to redo
    assert store.forget_pages([a.page_id]) == ["https://m.example/1"]
    assert store.recorded_copies(["https://m.example/1"]) == {}
    assert store.complete_pages([a.page_id]) == set()
    assert (store.sizes() or {}).get("pages", 0) == 0


def test_a_removed_page_gives_back_its_fingerprint(store: PageRecords) -> None:
    a = page("https://a.example/1")
    save(store, a)
    assert store.remove_page(a.page_id) == a.simhash
    assert store.remove_page(a.page_id) is None
    assert store.stored_urls([a.url]) == {}
    assert save(store, page(a.url)) == 1  # its URL is free again


def test_a_running_crawl_record_never_overwrites_the_finished_one(store: PageRecords) -> None:
    store.save_crawl("c1", {"pid": 1, "hostname": "h"}, running=True)
    store.save_crawl("c1", {"counters": {"pages": 3}})
    store.save_crawl("c1", {"counters": {"pages": 1}}, running=True)  # a late live update
    store.save_crawl("c2", {"pid": 2, "hostname": "h"}, running=True)
    store.save_crawl("c3", {"pid": 3, "hostname": "other"}, running=True)
    assert store.mark_interrupted("h", alive=lambda pid: False) == ["c2"]
    store.save_layout("ns", {"k": 3, "tables": 10})
    assert store.load_layout("ns") == {"k": 3, "tables": 10}
    assert store.load_layout("other") is None


def test_fingerprints_of_pages_never_kept_are_not_kept(store: PageRecords) -> None:
    a = page("https://a.example/1")
    save(store, a)
    other = new_page_id()  # a fingerprint for a page whose URL another page holds
    store.save_pages([dict(page_record(a), _id=other)],
                     [fingerprint_row(other, 7, checksum="0" * 32, tokens=40, short=False,
                                      algorithm="t", created_at=dt.datetime(2026, 1, 1))])
    assert store.fingerprint_of(other) is None
    assert store.complete_pages([other]) == set()
