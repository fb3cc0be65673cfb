"""The crawl decision (revisit / exact / near / new) on real servers."""

from __future__ import annotations

import pytest

from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import RedisStore
from dedup.decide import (
    CHANGED,
    EXACT,
    NEAR,
    NEW,
    UNCHANGED,
    Rules,
)
from dedup.index import NearDuplicateIndex
from dedup.page import Page
from dedup.store.records import page_record

pytestmark = pytest.mark.integration

A = 0x0F0F0F0F0F0F0F0F


@pytest.fixture
def dedup_(redis_client, pages, namespace):  # type: ignore[no-untyped-def]
    store = RedisStore(redis_client, namespace)
    yield on_servers(NearDuplicateIndex(store, capacity=1000), redis_client, pages, namespace)
    store.clear()


def cand(url: str, checksum: str, fp: int, short: bool = False) -> Page:
    return Page(url, url.split("/")[2], checksum, fp, short)


def test_new_exact_near_and_short(dedup_, pages) -> None:  # type: ignore[no-untyped-def]
    batch = [cand("http://a/1", "a" * 32, A), cand("http://b/1", "a" * 32, A ^ 0xFF00),
             cand("http://c/1", "c" * 32, A ^ 0b101), cand("http://d/1", "d" * 32, A ^ 1,
                                                          short=True),
             cand("http://e/1", "d" * 32, 0, short=True)]
    got = dedup_.decide(batch)
    assert [d.kind for d in got] == [NEW, EXACT, NEAR, NEW, EXACT]
    assert got[1].original_id == got[0].page_id and got[1].original_url == "http://a/1"
    assert (got[2].original_id, got[2].distance, got[2].original_host) == \
        (got[0].page_id, 2, "a")
    assert got[4].original_id == got[3].page_id
    assert [d.dropped for d in got] == [False, True, True, False, True]
    # the near copy's text is not registered: the same text again is a near copy too
    again = dedup_.decide([cand("http://f/1", "c" * 32, A ^ 0b101)])[0]
    assert again.kind == NEAR and again.original_id == got[0].page_id


def test_revisits_are_not_duplicates_of_themselves(dedup_, pages) -> None:  # type: ignore[no-untyped-def]
    first = cand("http://a/page", "1" * 32, A)
    assert dedup_.decide([first])[0].kind == NEW
    pages.save_pages([page_record(first)])
    same = dedup_.decide([cand("http://a/page", "1" * 32, A)])[0]
    assert (same.kind, same.page_id) == (UNCHANGED, first.page_id)
    assert dedup_.decide([cand("http://a/page", "2" * 32, A ^ 3)])[0].kind == CHANGED


def test_originals_from_another_process_are_named_from_the_store(redis_client, pages,
                                                                 namespace) -> None:
    store = RedisStore(redis_client, namespace)
    one = on_servers(NearDuplicateIndex(store, capacity=1000), redis_client, pages, namespace)
    two = on_servers(NearDuplicateIndex(store), redis_client, pages, namespace)
    original = cand("http://a/x", "9" * 32, A)
    one.decide([original])
    pages.save_pages([page_record(original)])
    copy = two.decide([cand("http://b/x", "8" * 32, A ^ 1)])[0]
    assert (copy.kind, copy.original_url, copy.original_host) == (NEAR, "http://a/x", "a")
    store.clear()


def test_a_second_opinion_admits_a_rewrite_that_keeps_the_words(redis_client, pages,
                                                                   namespace) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(redis_client, namespace)
    dedup_ = on_servers(NearDuplicateIndex(store, capacity=1000), redis_client, pages,
                          namespace,
                          Rules(verify_distance=10))
    original = Page("http://a/1", "a", "1" * 32, A, False, verify=0)
    copy = Page("http://b/1", "b", "2" * 32, A ^ 0b11, False, verify=0b111)
    rewrite = Page("http://c/1", "c", "3" * 32, A ^ 0b101, False, verify=(1 << 20) - 1)
    got = dedup_.decide([original, copy, rewrite])
    assert [d.kind for d in got] == [NEW, NEAR, NEW]  # 3 pair-bits off: a copy; 20: not
    # the admitted rewrite is in the index now: its own near copy names it
    later = Page("http://d/1", "d", "4" * 32, A ^ 0b101, False, verify=(1 << 20) - 1)
    assert dedup_.decide([later])[0].original_id == rewrite.page_id
    # an original whose second opinion is only in MongoDB (another process admitted it)
    other = on_servers(NearDuplicateIndex(store), redis_client, pages, namespace,
                         Rules(verify_distance=10))
    from dedup.adapters.mongo import to_int64
    from dedup.store.records import fingerprint_row

    pages.save_pages([page_record(original)],
                     [fingerprint_row(original.page_id, A, checksum="1" * 32, tokens=99,
                                      short=False, algorithm="t", simhash2=to_int64(0))])
    far = Page("http://e/1", "e", "5" * 32, A ^ (3 << 40), False,  # rewrite: 4 bits
                    verify=(1 << 30) - 1)
    assert other.decide([far])[0].kind == NEW
    store.clear()


def test_every_candidate_within_k_is_asked_closest_first(redis_client, pages,
                                                          namespace) -> None:  # type: ignore[no-untyped-def]
    """The closest original fails the second opinion (a rewrite sharing its words); a
    farther one within k passes it: the page is a copy of the farther one. When every
    candidate fails, the page is admitted and indexed."""
    store = RedisStore(redis_client, namespace)
    dedup_ = on_servers(NearDuplicateIndex(store, capacity=1000), redis_client, pages,
                          namespace,
                          Rules(verify_distance=10))
    rewrite = Page("http://a/1", "a", "1" * 32, A ^ 0b1, False, verify=(1 << 40) - 1)
    source = Page("http://b/1", "b", "2" * 32, A ^ 0b110000, False, verify=0)
    assert [d.kind for d in dedup_.decide([rewrite])] == [NEW]
    assert [d.kind for d in dedup_.decide([source])] == [NEW]  # 3 bits from the rewrite,
    # but 40 second-opinion bits: not its copy
    copy = Page("http://c/1", "c", "3" * 32, A, False, verify=0b11)
    got = dedup_.decide([copy])[0]  # 1 bit from the rewrite, 2 from the source
    assert (got.kind, got.original_id, got.distance) == (NEAR, source.page_id, 2)
    neither = Page("http://d/1", "d", "4" * 32, A ^ 0b10, False, verify=(1 << 20) - 1)
    assert dedup_.decide([neither])[0].kind == NEW  # 20 bits from both second opinions
    assert NearDuplicateIndex(store).query(A ^ 0b10, 0)[0].page_id == neither.page_id
    store.clear()


def test_a_page_is_the_same_page_whatever_the_order_of_its_query_arguments(  # type: ignore[no-untyped-def]
        dedup_, pages) -> None:
    """Revisit identity is the canonical URL (w3lib): a re-crawl that reaches a stored page
    through a link with its query arguments in another order finds it, and a page stored
    before url_key existed is given its key and found too."""
    first = cand("http://a/list?page=2&sort=new", "1" * 32, A)
    assert dedup_.decide([first])[0].kind == NEW
    pages.save_pages([page_record(first)], [])
    again = cand("http://a/list?sort=new&page=2#top", "1" * 32, A)
    got = dedup_.decide([again])[0]
    assert (got.kind, got.page_id) == (UNCHANGED, first.page_id)
    # a page stored by an older simcrawl, without url_key
    old = cand("http://b/item?id=7&lang=en", "2" * 32, A ^ (0xFF << 40))
    doc = page_record(old)
    del doc["url_key"]
    from bson import ObjectId

    pages.pages.insert_one(dict(doc, _id=ObjectId(old.page_id)))
    pages.ensure_indexes()
    got = dedup_.decide([cand("http://b/item?lang=en&id=7", "3" * 32, A ^ (0xFF << 40))])[0]
    assert (got.kind, got.page_id) == (CHANGED, old.page_id)
