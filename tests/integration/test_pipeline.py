"""The storage pipeline on real servers: the last write waits for one already running,
so the summary and the final stats are MongoDB's."""

from __future__ import annotations

import threading
import time

import pytest
from scrapy.utils.test import get_crawler

from crawler.pipelines import StoragePipeline
from crawler.wiring import parts_of
from dedup.ids import new_page_id
from dedup.store.records import fingerprint_row
from store_cleanup import drop_test_database

pytestmark = pytest.mark.integration


def wired(services, namespace: str, database: str):  # type: ignore[no-untyped-def]
    """A Scrapy crawler on the test's servers, and its parts (the crawl's objects)."""
    crawler = get_crawler(settings_dict={
        "REDIS_URL": services.redis_url, "MONGO_URI": services.mongo_uri,
        "DEDUP_NAMESPACE": namespace, "DEDUP_DATABASE": database,
        "DEDUP_EXTRACT_WORKERS": 0})
    return crawler, parts_of(crawler)


def test_the_last_write_waits_for_one_already_running(services, mongo_client, namespace,
                                                      monkeypatch) -> None:  # type: ignore[no-untyped-def]
    database = namespace.replace("-", "_")
    crawler, runtime = wired(services, namespace, database)
    try:
        pipeline = StoragePipeline(crawler, runtime)
        real = runtime.pages.save_pages

        def slow(*args, **kwargs):  # type: ignore[no-untyped-def]
            time.sleep(0.8)  # a write that takes its time
            return real(*args, **kwargs)

        monkeypatch.setattr(runtime.pages, "save_pages", slow)
        for n in range(5):
            pid = new_page_id()
            pipeline.writer.pages.append({"_id": pid, "url": f"https://p.example/{n}", "host": "p"})
            pipeline.writer.fingerprints.append(fingerprint_row(pid, n, checksum="0" * 32, tokens=50,
                                                         short=False, algorithm="t"))
        periodic = threading.Thread(target=pipeline.flush)  # the periodic flush, running
        periodic.start()
        time.sleep(0.2)
        assert pipeline._flush_before_close()  # the spider closes meanwhile
        assert crawler.stats.get_value("dedup/stored/pages") == 5  # not 0: it waited
        assert mongo_client[database].pages.count_documents({}) == 5
        periodic.join()
    finally:
        runtime.close()
        drop_test_database(mongo_client, database)


def test_a_running_crawl_record_never_overwrites_the_finished_one(pages) -> None:  # type: ignore[no-untyped-def]
    """The console shows live counters from the running record; a late live update (its
    write was in flight while the process closed) must not turn a finished crawl back
    into a running one."""
    pages.save_crawl("c1", {"counters": {"fetched": 5}}, running=True)
    doc = pages.db["crawls"].find_one({"_id": "c1"})
    assert doc["state"] == "running" and doc["counters"]["fetched"] == 5
    pages.save_crawl("c1", {"counters": {"fetched": 9}, "stats": {"dedup/unique": 7}})
    pages.save_crawl("c1", {"counters": {"fetched": 8}}, running=True)  # late
    doc = pages.db["crawls"].find_one({"_id": "c1"})
    assert doc["state"] == "finished" and doc["counters"]["fetched"] == 9
    assert doc["stats"] == {"dedup/unique": 7}


def test_a_copy_that_changed_and_was_admitted_is_no_longer_recorded_as_a_copy(
        services, mongo_client, namespace) -> None:  # type: ignore[no-untyped-def]
    """One verdict per URL: an earlier crawl recorded the URL as a copy; its text changed
    and it is admitted now; once stored, its old copy record is gone (its excerpt and
    batch records are other collections' or kinds' and stay)."""
    from dedup.store.records import MatchRecord

    database = namespace.replace("-", "_")
    crawler, runtime = wired(services, namespace, database)
    try:
        original = new_page_id()
        runtime.pages.save_pages([{"_id": original, "url": "https://o.example/", "host": "o"}],
                                 [fingerprint_row(original, 1, checksum="1" * 32, tokens=50,
                                                  short=False, algorithm="t")])
        runtime.pages.save_matches([MatchRecord(url="https://c.example/", host="c",
                                                original_id=original,
                                                original_url="https://o.example/",
                                                original_host="o", distance=2, kind="simhash",
                                                checksum="2" * 32).row(crawl_id=None)])
        assert runtime.pages.recorded_copies(["https://c.example/"])["https://c.example/"][
            "checksum"] == "2" * 32
        pipeline = StoragePipeline(crawler, runtime)
        pid = new_page_id()
        pipeline.writer.pages.append({"_id": pid, "url": "https://c.example/", "host": "c"})
        pipeline.writer.fingerprints.append(fingerprint_row(pid, 9, checksum="3" * 32, tokens=50,
                                                     short=False, algorithm="t"))
        assert pipeline.flush()
        db = mongo_client[database]
        assert db.pages.count_documents({"url": "https://c.example/"}) == 1
        assert db.matches.count_documents({"url": "https://c.example/"}) == 0
        assert runtime.pages.recorded_copies(["https://c.example/"]) == {}
    finally:
        runtime.close()
        drop_test_database(mongo_client, database)


def test_pages_a_recovery_removed_while_the_process_was_frozen_are_not_stored(
        services, mongo_client, namespace) -> None:  # type: ignore[no-untyped-def]
    """A crawl process frozen with admitted pages in its buffer, for longer than its
    lease: another process recovers its journal meanwhile (the pages leave the index and
    their requests go back to the queue). Woken, it does not store them: they are
    withdrawn and counted, and the next write stores what it admits after."""
    from dedup.adapters.journal import recover
    from dedup.decide import NEW
    from dedup.page import Page
    from dedup.store.records import fingerprint_record, page_record

    database = namespace.replace("-", "_")
    crawler, runtime = wired(services, namespace, database)
    try:
        pipeline = StoragePipeline(crawler, runtime)

        def admit(url: str, fp: int) -> Page:
            page = Page(url, "p.example", f"{fp:032x}", fp, False)
            assert runtime.deduplicator.decide([page])[0].kind == NEW
            pipeline.writer.pages.append(page_record(page))
            pipeline.writer.fingerprints.append(fingerprint_record(page))
            return page

        frozen = admit("https://p.example/1", 0x0F0F0F0F0F0F0F0F)
        journal = runtime.journal
        journal._stop.set()  # frozen: no heartbeat ...
        journal._thread.join()
        runtime.client.delete(journal.lease_key)  # ... for longer than the lease
        assert recover(runtime.client, namespace, runtime.pages, runtime.index).removed == [
            frozen.page_id]  # another process repaired its work
        assert journal.renew()  # woken
        assert pipeline.flush()
        db = mongo_client[database]
        assert db.pages.count_documents({}) == 0  # withdrawn, not stored
        assert runtime.index.page_id(frozen.simhash) is None
        assert crawler.stats.get_value("dedup/withdrawn/pages") == 1
        later = admit("https://p.example/2", 0x7777000011112222)
        assert pipeline.flush()
        assert [d["url"] for d in db.pages.find({})] == [later.url]
    finally:
        runtime.close()
        drop_test_database(mongo_client, database)


def test_a_copy_named_only_at_the_write_is_never_a_copy_of_its_own_url(
        services, mongo_client, namespace) -> None:  # type: ignore[no-untyped-def]
    """A URL fetched twice (its request put back while the first fetch was being stored)
    decided the second time against the first's page, which was not stored yet and whose
    URL the decision could not read: named at the write, the original is the same URL,
    and no record saying the page copies itself is written."""
    from dedup.store.records import MatchRecord

    database = namespace.replace("-", "_")
    crawler, runtime = wired(services, namespace, database)
    try:
        pipeline = StoragePipeline(crawler, runtime)
        pid = new_page_id()
        pipeline.writer.pages.append({"_id": pid, "url": "https://p.example/a", "host": "p"})
        pipeline.writer.fingerprints.append(fingerprint_row(pid, 5, checksum="0" * 32, tokens=50,
                                                     short=False, algorithm="t"))
        assert pipeline.flush()
        for url in ("https://p.example/a", "https://q.example/a"):
            pipeline.writer.matches.append(MatchRecord(url=url, host=url.split("/")[2],
                                                       original_id=pid, original_url=None,
                                                       original_host=None, distance=0,
                                                       kind="exact").row(crawl_id=None))
        assert pipeline.flush()
        db = mongo_client[database]
        assert [m["url"] for m in db.matches.find({})] == ["https://q.example/a"]
        assert db.matches.find_one({})["original_url"] == "https://p.example/a"
        assert crawler.stats.get_value("dedup/self_copies_dropped") == 1
    finally:
        runtime.close()
        drop_test_database(mongo_client, database)
