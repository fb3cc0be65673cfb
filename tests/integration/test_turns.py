"""A match turned round (:mod:`dedup.turns`): the ledger that makes each turn one atomic
step for every process, in memory and in Redis; and the page store's side of it, in
memory and in MongoDB: the later page takes over the stored page's id, the stored page
becomes its copy's match record, and the records naming the id name the later page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dedup.adapters.journal import LostPages
from dedup.adapters.redis_turns import RedisTurns
from dedup.decide import Turn
from dedup.store import PageRecords
from dedup.store.memory_pages import MemoryPageStore
from dedup.store.records import MatchRecord, fingerprint_record, page_record
from dedup.turns import MemoryTurns, TurnClaim, TurnLedger
from tests.integration.test_page_stores import page, save

pytestmark = pytest.mark.integration


@pytest.fixture(params=["memory", "redis"])
def ledger(request, redis_client, namespace: str) -> Iterator[TurnLedger]:  # type: ignore[no-untyped-def]
    if request.param == "memory":
        yield MemoryTurns()
        return
    yield RedisTurns(redis_client, namespace)
    redis_client.delete(f"{namespace}:turned")


def test_a_turn_is_claimed_only_from_the_holder_its_process_read(ledger: TurnLedger) -> None:
    a, b, c = "https://a.example/1", "https://b.example/1", "https://c.example/1"
    pid = "6b0bbefdd1c3ba93e51223d9"
    # two processes read the stored page a and ask at once: the first is granted
    assert ledger.claim([TurnClaim(pid, a, b, "b.example"),
                         TurnClaim(pid, a, c, "c.example")]) == [True, False]
    assert ledger.holders([pid, "0" * 24]) == {pid: (b, "b.example")}
    # the same turn asked again (its process died before storing it) is granted
    assert ledger.claim([TurnClaim(pid, a, b, "b.example")]) == [True]
    # a process that read b, the holder now, may turn it again
    assert ledger.claim([TurnClaim(pid, b, c, "c.example")]) == [True]
    assert ledger.holders([pid]) == {pid: (c, "c.example")}


def test_the_later_page_takes_over_the_stored_pages_id_and_its_copies(
        page_store: PageRecords) -> None:
    store = page_store
    first = page("https://b.example/reprint", text="the harbour reopened, reprinted",
                 title="Reprint")
    assert save(store, first) == 1
    store.save_matches([MatchRecord(url="https://m.example/1", host="m.example",
                                    original_id=first.page_id, original_url=first.url,
                                    original_host=first.host, distance=1,
                                    kind="simhash").row(crawl_id=None)])
    later = page("https://a.example/story", text="the harbour reopened")
    later.page_id = first.page_id  # the decision turned round: the original's id
    turn = Turn("published", first.url, first.host, "simhash", 2, 0.93)
    for _ in range(2):  # done again (a retried write), it changes nothing
        assert store.turn_round(page_record(later, crawl_id="c2"), fingerprint_record(later),
                                MatchRecord.of_turn(later, turn).row(crawl_id="c2"))
    assert store.stored_urls([first.url, later.url]) == {
        later.url: (first.page_id, later.checksum)}
    assert store.fingerprint_of(first.page_id) == later.simhash
    assert store.texts_of([first.page_id]) == {first.page_id: "the harbour reopened"}
    copies = store.recorded_copies([first.url, "https://m.example/1"])
    assert copies[first.url]["original_id"] == first.page_id
    assert copies[first.url]["checksum"] == first.checksum  # what was stored of it
    assert (copies[first.url]["kind"], copies[first.url]["distance"]) == ("simhash", 2)
    # the copy recorded against the id names the page that holds it now
    recorded = store.matches.get("https://m.example/1") if isinstance(store, MemoryPageStore) \
        else store.matches.find_one({"url": "https://m.example/1"})  # type: ignore[attr-defined]
    assert (recorded["original_url"], recorded["original_host"]) == (later.url, "a.example")
    named = store.urls_of([first.page_id])
    assert named == {first.page_id: (later.url, "a.example", None)}
    sizes = store.sizes() or {}
    assert (sizes.get("pages"), sizes.get("matches")) == (1, 2)


def test_a_turn_whose_stored_page_is_gone_does_nothing(page_store: PageRecords) -> None:
    store = page_store
    later = page("https://a.example/story")
    turn = Turn("canonical", "https://b.example/gone", "b.example", "exact", 0)
    assert not store.turn_round(page_record(later), fingerprint_record(later),
                                MatchRecord.of_turn(later, turn).row(crawl_id=None))
    assert store.stored_urls([later.url]) == {}


def test_the_writer_stores_a_turn_and_names_a_turned_original_as_it_is_now(
        redis_client, namespace: str) -> None:  # type: ignore[no-untyped-def]
    from dedup.index import MemoryStore, NearDuplicateIndex
    from dedup.store.writer import RecordWriter

    store, turns = MemoryPageStore(), RedisTurns(redis_client, namespace)
    writer = RecordWriter(store, NearDuplicateIndex(MemoryStore(), k=3, capacity=100), None,
                          LostPages(redis_client, namespace), turns=turns)
    first = page("https://b.example/reprint", text="the harbour reopened, reprinted")
    writer.add_page(page_record(first), fingerprint_record(first))
    assert writer.flush().pages == 1
    later = page("https://a.example/story", text="the harbour reopened")
    later.page_id = first.page_id
    assert turns.claim([TurnClaim(first.page_id, first.url, later.url, later.host)]) == [True]
    writer.add_page(page_record(later), fingerprint_record(later), turned=MatchRecord.of_turn(
        later, Turn("canonical", first.url, first.host, "exact", 0)).row(crawl_id=None))
    # another process decided this copy before the turn: it names the page stored first
    writer.add_match(MatchRecord(url="https://m.example/1", host="m.example",
                                 original_id=first.page_id, original_url=first.url,
                                 original_host=first.host, distance=0,
                                 kind="exact").row(crawl_id=None))
    gone = page("https://c.example/other")  # a turn whose stored page was removed meanwhile
    writer.add_page(page_record(gone), fingerprint_record(gone), turned=MatchRecord.of_turn(
        gone, Turn("published", "https://d.example/x", "d.example", "simhash", 2)
    ).row(crawl_id=None))
    done = writer.flush()
    assert done.ok and set(done.settled) == {later.url, gone.url, "https://m.example/1"}
    assert store.stored_urls([first.url, later.url, gone.url]) == {
        later.url: (first.page_id, later.checksum), gone.url: (gone.page_id, gone.checksum)}
    assert store.matches["https://m.example/1"]["original_url"] == later.url
    assert store.matches[first.url]["turned"] == "canonical"
    assert "https://d.example/x" not in store.matches  # never stored: nothing to record
