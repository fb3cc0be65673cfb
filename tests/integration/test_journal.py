"""The admission journal: after a crawler dies between admitting pages and storing them,
the index and the store agree again before the next decision."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import RedisStore
from dedup.adapters.journal import (AdmissionJournal, JournalEntry, live_owners, owners,
                                    recover)
from dedup.decide import EXACT, NEAR, NEW
from dedup.index import NearDuplicateIndex
from dedup.page import Page
from dedup.store.records import MatchRecord, fingerprint_row, page_record

pytestmark = pytest.mark.integration

A = 0x0F0F0F0F0F0F0F0F
B = 0x7777000011112222


def cand(url: str, checksum: str, fp: int) -> Page:
    return Page(url, url.split("/")[2], checksum, fp, False)


def store_page(pages, c: Page) -> None:  # type: ignore[no-untyped-def]
    pages.save_pages([page_record(c)], [fingerprint_row(
        c.page_id, c.simhash, checksum=c.checksum, tokens=50, short=False, algorithm="t")])


@pytest.fixture
def index(redis_client, namespace):  # type: ignore[no-untyped-def]
    store = RedisStore(redis_client, namespace)
    yield NearDuplicateIndex(store, capacity=1000)
    store.clear()
    for key in redis_client.scan_iter(match=f"{namespace}:*"):
        redis_client.delete(key)


def test_pages_admitted_but_never_stored_leave_the_index(redis_client, pages, namespace,
                                                         index) -> None:  # type: ignore[no-untyped-def]
    journal = AdmissionJournal(redis_client, namespace).open()
    crawl = on_servers(index, redis_client, pages, namespace, journal=journal)
    stored, lost = cand("http://a/1", "1" * 32, A), cand("http://a/2", "2" * 32, B)
    copy_of_lost = cand("http://b/2", "3" * 32, B ^ 1)
    assert [d.kind for d in crawl.decide([stored, lost, copy_of_lost])] == [NEW, NEW, NEAR]
    assert journal.pending() == 2  # the copy left the journal at once
    store_page(pages, stored)
    journal.confirm([stored.page_id])
    # the copy's record was written, the lost original's page was not: then the crawl dies
    pages.save_matches([MatchRecord(url="http://b/2", host="b", original_id=lost.page_id,
                                    original_url="http://a/2", original_host="a", distance=1,
                                    kind="simhash").row(crawl_id=None)])
    journal._stop.set()  # the heartbeat dies with the process ...
    redis_client.delete(journal.lease_key)  # ... and its lease runs out
    # a new crawl recovers before it decides anything
    done = recover(redis_client, namespace, pages, index)
    assert (done.journals, len(done.removed), done.matches_removed) == (1, 1, 1)
    assert done.removed == [lost.page_id]
    assert done.copies == ["http://b/2"]  # the copy is to be decided again
    assert index.page_id(B) is None and index.page_id(A) == stored.page_id
    assert pages.matches.count_documents({}) == 0  # no record names a page not stored
    again = on_servers(index, redis_client, pages, namespace)
    # the lost page's own URL is a new page again, not an exact copy of a ghost
    assert again.decide([cand("http://a/2", "2" * 32, B)])[0].kind == NEW
    assert owners(redis_client, namespace) == []
    assert recover(redis_client, namespace, pages, index).journals == 0


def test_a_clean_close_clears_the_entries_a_late_write_left(redis_client, pages, namespace,
                                                          index) -> None:  # type: ignore[no-untyped-def]
    # A write that timed out in a partition reaches Redis after its retry: an entry the
    # retry removed (a copy's) comes back, with the copy in the index under its own id.
    # At a clean close the journal is left empty (the chaos run on a cluster found one
    # left), but a page neither stored nor recorded stays for the recovery.
    journal = AdmissionJournal(redis_client, namespace).open()
    crawl = on_servers(index, redis_client, pages, namespace, journal=journal)
    stored, lost = cand("http://a/1", "1" * 32, A), cand("http://a/2", "2" * 32, B)
    copy = cand("http://b/1", "3" * 32, A ^ 1)
    assert [d.kind for d in crawl.decide([stored, lost, copy])] == [NEW, NEW, NEAR]
    store_page(pages, stored)  # stored, its confirmation lost
    pages.save_matches([MatchRecord(url="http://b/1", host="b", original_id=stored.page_id,
                                    original_url="http://a/1", original_host="a", distance=1,
                                    kind="simhash", checksum="3" * 32).row(crawl_id=None)])
    redis_client.hset(journal.key, copy.page_id, JournalEntry(
        copy.page_id, copy.simhash, copy.checksum, copy.url, copy.host).encode())
    index.add_many([(copy.simhash, copy.page_id)])
    assert journal.pending() == 3
    assert journal.clear_settled(pages, index) == 2
    assert set(redis_client.hkeys(journal.key)) == {lost.page_id.encode()}
    assert index.page_id(copy.simhash) is None  # the late add is undone
    assert index.page_id(A) == stored.page_id and index.page_id(B) == lost.page_id
    journal.close()
    assert recover(redis_client, namespace, pages, index).removed == [lost.page_id]


def test_a_page_stored_without_its_fingerprint_is_removed_too(redis_client, pages, namespace,
                                                              index) -> None:  # type: ignore[no-untyped-def]
    journal = AdmissionJournal(redis_client, namespace).open()
    crawl = on_servers(index, redis_client, pages, namespace, journal=journal)
    half = cand("http://a/3", "4" * 32, A)
    crawl.decide([half])
    pages.save_pages([page_record(half)])  # killed between the page and its fingerprint
    journal.close()  # a clean stop with unconfirmed entries: recovered at once
    done = recover(redis_client, namespace, pages, index)
    assert done.removed == [half.page_id] and pages.pages.count_documents({}) == 0


def test_a_live_crawl_is_seen_and_its_journal_left_alone(redis_client, pages, namespace,
                                                         index) -> None:  # type: ignore[no-untyped-def]
    journal = AdmissionJournal(redis_client, namespace).open()
    on_servers(index, redis_client, pages, namespace, journal=journal).decide(
        [cand("http://a/1", "1" * 32, A)])
    assert [o.pid for o in live_owners(redis_client, namespace)] == [os.getpid()]
    assert live_owners(redis_client, namespace, exclude=journal.owner) == []
    assert recover(redis_client, namespace, pages, index).journals == 0
    assert index.page_id(A) is not None
    journal.close()


def test_a_lease_of_a_dead_process_on_this_host_is_dead_at_once(redis_client, namespace
                                                                ) -> None:  # type: ignore[no-untyped-def]
    code = ("import sys, redis; from dedup.adapters.journal import AdmissionJournal; "
            "AdmissionJournal(redis.Redis.from_url(sys.argv[1]), sys.argv[2], lease=3600).open()")
    url = redis_client.connection_pool.connection_kwargs
    subprocess.run([sys.executable, "-c", code, f"redis://127.0.0.1:{url['port']}/0",
                    namespace], check=True, timeout=60)
    found = owners(redis_client, namespace)
    assert len(found) == 1 and not found[0].alive  # its TTL is an hour, its process gone
    assert live_owners(redis_client, namespace) == []


def test_an_exact_copy_of_a_dropped_copy_names_the_original(redis_client, pages, namespace,
                                                            index) -> None:  # type: ignore[no-untyped-def]
    crawl = on_servers(index, redis_client, pages, namespace)
    original = cand("http://a/1", "1" * 32, A)
    crawl.decide([original])
    store_page(pages, original)
    # in one batch: a near copy, then an exact copy of that near copy's text
    near, twin = cand("http://b/1", "2" * 32, A ^ 0b11), cand("http://c/1", "2" * 32, A ^ 0b11)
    got = crawl.decide([near, twin])
    assert [(d.kind, d.original_id, d.distance) for d in got] == \
        [(NEAR, original.page_id, 2), (NEAR, original.page_id, 2)]
    assert got[1].original_url == "http://a/1"
    # in a later batch too: the dropped copy never registered its text
    later = crawl.decide([cand("http://d/1", "2" * 32, A ^ 0b11)])[0]
    assert (later.kind, later.original_id) == (NEAR, original.page_id)
    # an exact copy of an admitted page is still exact
    same = crawl.decide([cand("http://e/1", "1" * 32, A)])[0]
    assert (same.kind, same.original_id) == (EXACT, original.page_id)


def test_a_decision_repeated_after_a_lost_reply_admits_the_page(redis_client, pages,
                                                                namespace, index) -> None:  # type: ignore[no-untyped-def]
    crawl = on_servers(index, redis_client, pages, namespace)
    page = cand("http://a/1", "1" * 32, A)
    assert crawl.decide([page])[0].kind == NEW
    assert crawl.decide([page])[0].kind == NEW  # not "a copy of itself"


def test_a_copy_of_a_page_another_process_has_not_stored_names_it(
        redis_client, pages, namespace, index) -> None:  # type: ignore[no-untyped-def]
    """Two processes of a shared crawl: one admits a page and has not written it to
    MongoDB yet; the other drops its exact and near copies, and their records name the
    original's URL (read from the first process's journal), not just its id."""
    journals = [AdmissionJournal(redis_client, namespace).open() for _ in range(2)]
    first, second = (on_servers(index, redis_client, pages, namespace, journal=j)
                     for j in journals)
    original = cand("http://a/1", "1" * 32, A)
    assert [d.kind for d in first.decide([original])] == [NEW]
    exact, near = second.decide([cand("http://b/1", "1" * 32, A),
                                 cand("http://c/1", "4" * 32, A ^ 0b11)])
    assert (exact.kind, exact.original_id, exact.original_url) == (
        EXACT, original.page_id, "http://a/1")
    assert (near.kind, near.original_url, near.original_host, near.distance) == (
        NEAR, "http://a/1", "a", 2)
    for journal in journals:
        journal.close()


def test_a_process_taken_for_dead_registers_again_and_withdraws_what_was_removed(
        redis_client, pages, namespace, index) -> None:  # type: ignore[no-untyped-def]
    """A process frozen for longer than its lease: another one recovers its journal
    (its admitted page leaves the index) while it sleeps; a decision of its that was under
    way adds the page again after the recovery looked. Woken, its heartbeat registers it
    again (so that its next death is recovered too) and the page, tombstoned by the
    recovery, is withdrawn, even once written: the index and the store agree, and the URL
    is a new page for whoever fetches it again."""
    from dedup.adapters.journal import lost_pages, withdraw

    journal = AdmissionJournal(redis_client, namespace).open()
    crawl = on_servers(index, redis_client, pages, namespace, journal=journal)
    page = cand("http://a/9", "9" * 32, A)
    assert crawl.decide([page])[0].kind == NEW
    journal._stop.set()  # the process stops running ...
    journal._thread.join()
    redis_client.delete(journal.lease_key)  # ... for longer than its lease
    assert not journal.in_doubt()  # it cannot know yet
    done = recover(redis_client, namespace, pages, index)  # another process repairs
    assert done.removed == [page.page_id]
    assert journal.owner not in {o.token for o in owners(redis_client, namespace)}
    index.add_many([(A, page.page_id)])  # its decision, under way, adds the page again
    assert journal.renew() is True  # woken: the lease had run out
    assert journal.lapses == 1 and journal.in_doubt()
    assert journal.owner in {o.token for o in owners(redis_client, namespace)}
    assert lost_pages(redis_client, namespace, [page.page_id]) == {page.page_id}
    store_page(pages, page)  # written before the check (a recovery during the write)
    assert withdraw(redis_client, namespace, pages, index,
                    {page.page_id: (A, "9" * 32)}) == []
    assert index.page_id(A) is None
    assert pages.pages.count_documents({}) == 0 and pages.fingerprints.count_documents({}) == 0
    again = on_servers(index, redis_client, pages, namespace)
    assert again.decide([cand("http://a/9", "9" * 32, A)])[0].kind == NEW  # not a ghost's copy
    assert journal.renew() is False and journal.lapses == 1
    journal.close()


def test_a_crawl_that_gave_up_on_redis_leaves_its_lease_to_run_out(redis_client,
                                                                    namespace) -> None:  # type: ignore[no-untyped-def]
    # Its goodbyes would each wait for a Redis it has given up on: the lease is left, and
    # runs out by itself (the next recovery finds the process gone then); a clean close
    # releases it at once.
    gone = AdmissionJournal(redis_client, namespace, lease=30).open()
    gone.close(release=False)
    assert redis_client.exists(gone.lease_key)
    assert gone.owner in [o.token for o in owners(redis_client, namespace)]
    assert 0 < redis_client.pttl(gone.lease_key) <= 30_000
    clean = AdmissionJournal(redis_client, namespace).open()
    clean.close()
    assert not redis_client.exists(clean.lease_key)
    assert clean.owner not in [o.token for o in owners(redis_client, namespace)]
