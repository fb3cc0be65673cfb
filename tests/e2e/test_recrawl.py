"""A second crawl of the same site admits nothing new and records revisits."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def scrapy_crawl(site: DemoSite, services: EmbeddedServices, tmp: Path, n: int,
                 *where: str) -> dict:
    """Crawl the demo site (``where``: its ``-s`` settings of database and namespace;
    default: both ``recrawl``); the crawl's summary."""
    summary = tmp / f"summary-{n}.json"
    env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
    where = where or ("-s", "DEDUP_DATABASE=recrawl", "-s", "DEDUP_NAMESPACE=recrawl")
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
         f"start_urls={site.start_urls()[0]}", *where, "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
         f"DEDUP_SUMMARY_FILE={summary}", "-s", f"LOG_FILE={tmp / f'crawl-{n}.log'}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, (tmp / f"crawl-{n}.log").read_text()[-3000:]
    return dict(json.loads(summary.read_text()))


def run_query(title: str, db, **names) -> list:  # type: ignore[no-untyped-def]
    """Run the python block under ``### title`` in docs/queries.md; its ``result``."""
    text = (ROOT / "docs" / "queries.md").read_text(encoding="utf-8")
    block = re.search(rf"^### {re.escape(title)}\n.*?```python\n(.*?)```", text,
                      re.DOTALL | re.MULTILINE)
    assert block, title
    scope = {"db": db, **names}
    exec(block.group(1), scope)  # noqa: S102 - the documented query, verbatim
    return list(scope["result"])


def test_second_crawl_admits_nothing_new(tmp_path: Path, register_corpus) -> None:  # type: ignore[no-untyped-def]
    with EmbeddedServices(tmp_path / "data") as services, DemoSite() as site:
        registered = len(site.content.expected.registered)
        done = register_corpus(site, services, tmp_path, "recrawl")
        assert done.returncode == 0, done.stderr
        assert f"{registered} added, 0 already registered" in done.stdout
        first = scrapy_crawl(site, services, tmp_path, 1)
        db = connect_mongo(services.mongo_uri)["recrawl"]
        pages = db.pages.count_documents({"host": {"$ne": "registered"}})
        assert first["dedup/unique"] == pages > 0
        assert first["dedup/pinyin_copy"] == len(site.content.expected.pirated)
        copies = db.matches.count_documents({})
        # the summary is written after the last write: its counts are MongoDB's
        assert (first["dedup/stored/pages"], first["dedup/stored/matches"]) == (pages, copies)
        again = register_corpus(site, services, tmp_path, "recrawl")  # idempotent
        assert f"0 added, {registered} already registered" in again.stdout, again.stderr
        second = scrapy_crawl(site, services, tmp_path, 2)
        assert "dedup/unique" not in second
        assert second["dedup/revisit"] == second["dedup/revisit/unchanged"] == pages
        assert db.pages.count_documents({}) == pages + registered
        # one match record per copy, however often it is crawled; each knows both crawls
        assert db.matches.count_documents({}) == copies
        assert {(len(m["crawl_ids"]), m["times_seen"]) for m in db.matches.find({})} == {(2, 2)}
        per_host = run_query("Duplicate rate per host", db)
        assert sum(row[2] for row in per_host) == copies
        one_crawl = run_query("Matches of one crawl", db, crawl_id=db.matches.find_one(
            {})["crawl_ids"][0])
        assert len(one_crawl) == copies
        assert not any(t in site.requests for t in site.content.expected.traps)


def test_a_database_named_alone_has_its_own_index(tmp_path: Path) -> None:
    """A crawl into the default database, then one into another database named alone
    (``DEDUP_DATABASE``, as ``./simcrawl URL --database NAME`` sets it): the second
    has its own index, so it admits the site's pages as the first did, and no match
    record of it names a page its database does not hold."""
    with EmbeddedServices(tmp_path / "data") as services, DemoSite() as site:
        first = scrapy_crawl(site, services, tmp_path, 1, "-s", "DEDUP_DATABASE=simcrawl")
        second = scrapy_crawl(site, services, tmp_path, 2, "-s", "DEDUP_DATABASE=sigtest")
        assert second["dedup/unique"] == first["dedup/unique"] > 0
        db = connect_mongo(services.mongo_uri)["sigtest"]
        held = {d["_id"] for d in db.pages.find({}, {"_id": 1})}
        originals = {m["original_id"] for m in db.matches.find({}, {"original_id": 1})}
        assert originals and originals <= held
        assert {m.get("original_url") for m in db.matches.find({})} - {None, ""} \
            and all(m.get("original_url") for m in db.matches.find({}))


def shared_crawl(site: DemoSite, tmp: Path, name: str) -> list[str]:
    return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
            f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=recrawl2", "-s",
            "DEDUP_NAMESPACE=recrawl2", "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
            "SIMCRAWL_FRONTIER=redis", "-s", f"LOG_FILE={tmp / (name + '.log')}",
            "-s", f"DEDUP_SUMMARY_FILE={tmp / (name + '.json')}"]


def test_a_recrawl_on_two_processes_keeps_every_verdict(tmp_path: Path) -> None:
    """Crawled by two processes, then again by two: every page stored the first time is a
    revisit, every copy is recorded against the same original again (its verdict kept:
    its text did not change), no URL is both stored and a copy, and no outlink of a copy
    is requested."""
    from crawler.examples.demosite import build
    from dedup.adapters.servers.services import connect_mongo

    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=80, zh_articles=2, novel_chapters=0)) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        db = connect_mongo(services.mongo_uri)["recrawl2"]
        records = []
        for round_ in (1, 2):
            procs = [subprocess.Popen(shared_crawl(site, tmp_path, f"r{round_}-{n}"), cwd=ROOT,
                                      env=env) for n in range(2)]
            assert [p.wait(timeout=600) for p in procs] == [0, 0]
            if round_ == 1:
                first_requests = len(site.requests)
            pages = {d["url"] for d in db.pages.find({})}
            matches = {(m["url"], m["original_url"], m["kind"]) for m in db.matches.find({})}
            assert not pages & {url for url, _, _ in matches}, "a URL both stored and a copy"
            records.append((pages, matches))
        assert records[1] == records[0]
        second = [json.loads((tmp_path / f"r2-{n}.json").read_text()) for n in range(2)]
        assert sum(s.get("dedup/unique", 0) for s in second) == 0
        assert sum(s.get("dedup/revisit/unchanged", 0) for s in second) == len(records[0][0])
        assert sum(s.get("dedup/near_duplicate", 0) + s.get("dedup/exact_duplicate", 0)
                   for s in second) == len(records[0][1])
        # the second crawl requested no outlink of a copy: only what the first did
        assert set(site.requests[first_requests:]) <= set(site.requests[:first_requests])
        traps = [t for t in site.content.expected.traps if t in site.requests]
        assert not traps, traps
        assert {c["state"] for c in db.crawls.find({})} == {"finished"}  # four, none running
        assert db.crawls.count_documents({}) == 4
