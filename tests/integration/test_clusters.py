"""``simcrawl clusters`` on a real store (SecantusDB) and Redis: every page gets a cluster,
a copy the crawl admitted twice is recorded as a ``batch`` match of the page crawled
first, pages the crawl's rule keeps apart stay apart, the crawl's own match records get
their original's cluster, a second run changes nothing, and Spark gives the same store."""

from __future__ import annotations

import datetime as dt
import os
import random
import subprocess
import sys

import pytest
from bson import ObjectId

from dedup.simhash import fingerprint
from dedup.sketch import TextSketch
from dedup.adapters.mongo import fingerprint_document, match_document
from dedup.store.records import MatchRecord, fingerprint_row

WORDS = ["river", "harbour", "council", "budget", "school", "winter", "market", "bridge", "station", "library", "museum", "festival", "election", "doctor", "hospital", "teacher", "farmer", "engine", "railway", "storm", "garden", "village", "mayor", "report", "study", "price", "house", "road", "water", "energy", "forest", "coast", "island", "mountain", "valley", "music", "theatre", "science", "history", "courts", "police", "museum"]


def text(seed: int, n: int = 320) -> str:
    rng = random.Random(seed)
    sentences = [" ".join(rng.choice(WORDS) for _ in range(12)).capitalize() + "."
                 for _ in range(n // 12)]
    return "\n".join(sentences)


def edited(source: str, words: int, seed: int) -> str:
    rng = random.Random(seed)
    tokens = source.split(" ")
    for at in rng.sample(range(len(tokens)), words):
        tokens[at] = "changed"
    return " ".join(tokens)


def run_clusters(services, database: str, namespace: str, *extra: str
                 ) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "clusters", "--mongo-uri", services.mongo_uri,
         "--redis-url", services.redis_url, "--database", database, "--namespace",
         namespace, *extra], capture_output=True, text=True, timeout=600,
        env={**os.environ})


@pytest.fixture
def crawled(pages):  # type: ignore[no-untyped-def]
    """A crawl's store: an article admitted twice (the second crawled later, a few words
    edited), an article with a crawl match record, and unrelated pages."""
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    article = text(1)
    texts = {"first": article, "second": edited(article, 4, 2), "other": text(3),
             "third": text(4), "fourth": text(5)}
    ids = {name: str(ObjectId()) for name in texts}
    for n, (name, body) in enumerate(texts.items()):
        host = "b.example" if name == "second" else "a.example"
        pages.pages.insert_one({"_id": ObjectId(ids[name]), "url": f"http://{host}/{name}",
                                "host": host, "text": body, "title": name,
                                "fetched_at": start + dt.timedelta(minutes=n)})
        fp = fingerprint(body)
        pages.fingerprints.insert_one(fingerprint_document(fingerprint_row(
            ids[name], fp.simhash, checksum=f"{fp.checksum:032x}", tokens=fp.tokens, short=False,
            algorithm="test", sketch=TextSketch.of_text(body, host=host,
                                                        title=name).to_bytes())))
    pages.matches.insert_one(match_document(MatchRecord(url="http://c.example/copy",
                                                        host="c.example", original_id=ids["other"],
                                                        original_url="http://a.example/other",
                                                        original_host="a.example", distance=1,
                                                        kind="simhash").row(crawl_id=None)))
    for n in (1, 2):  # two copies the crawl dropped for the page the batch finds a copy
        pages.matches.insert_one(match_document(MatchRecord(url=f"http://c.example/second-{n}",
                                                            host="c.example",
                                                            original_id=ids["second"],
                                                            original_url="http://b.example/second",
                                                            original_host="b.example", distance=0,
                                                            kind="exact").row(crawl_id=None)))
    return ids


def test_clusters_records_the_copy_and_changes_nothing_twice(services, pages, crawled,
                                                            namespace: str) -> None:
    first = run_clusters(services, pages.db.name, namespace)
    assert first.returncode == 0, first.stderr
    assert "5 pages in 1 clusters of two or more" in first.stdout
    db = pages.db
    assert db.pages.count_documents({"cluster": {"$exists": False}}) == 0
    cluster = db.clusters.find_one({})
    assert cluster["_id"] == ObjectId(crawled["first"])  # the page crawled first
    assert cluster["members"] == sorted([ObjectId(crawled["first"]),
                                         ObjectId(crawled["second"])])
    assert db.pages.find_one({"_id": ObjectId(crawled["second"])})["cluster"] == cluster["_id"]
    alone = db.pages.find_one({"_id": ObjectId(crawled["third"])})
    assert alone["cluster"] == alone["_id"]
    batch = list(db.matches.find({"kind": "batch"}))
    assert [(b["url"], b["original_id"]) for b in batch] == [
        ("http://b.example/second", ObjectId(crawled["first"]))]
    assert batch[0]["cluster"] == cluster["_id"] and batch[0]["containment"] >= 0.8
    assert db.pages.count_documents({}) == 5  # nothing deleted
    record = db.matches.find_one({"kind": "simhash"})
    assert record["cluster"] == ObjectId(crawled["other"])
    # every crawl record of a page in a cluster gets that cluster, not only one of them
    assert [d["cluster"] for d in db.matches.find({"original_id": ObjectId(crawled["second"]),
                                                   "kind": "exact"})] == [cluster["_id"]] * 2

    again = run_clusters(services, pages.db.name, namespace)
    assert again.returncode == 0, again.stderr
    assert "1 written" not in again.stdout and "0 written, 1 unchanged, 0 deleted" in again.stdout
    assert "changed: 0 clusters written, 0 deleted, 0 pages and 0 crawl match records" \
        in again.stdout


def test_rewrites_stay_apart(services, pages, namespace: str) -> None:
    base = text(7)
    for n, body in enumerate((base, edited(base, 60, 8))):  # a fifth of the words, spread
        pid = str(ObjectId())
        pages.pages.insert_one({"_id": ObjectId(pid), "url": f"http://a.example/{n}",
                                "host": "a.example", "text": body, "title": "same title",
                                "fetched_at": dt.datetime(2026, 11, 1, 0, n)})
        fp = fingerprint(body)
        pages.fingerprints.insert_one(fingerprint_document(fingerprint_row(
            pid, fp.simhash, checksum=f"{fp.checksum:032x}", tokens=fp.tokens, short=False,
            algorithm="test", sketch=TextSketch.of_text(body).to_bytes())))
    result = run_clusters(services, pages.db.name, namespace, "-k", "31")
    assert result.returncode == 0, result.stderr
    assert "1 kept apart" in result.stdout
    assert pages.db.matches.count_documents({"kind": "batch"}) == 0
    assert pages.db.clusters.count_documents({}) == 0


@pytest.mark.spark
def test_spark_engine_writes_the_same_store(services, pages, crawled, namespace: str) -> None:
    pytest.importorskip("pyspark")
    local = run_clusters(services, pages.db.name, namespace)
    assert local.returncode == 0
    on_spark = run_clusters(services, pages.db.name, namespace, "--engine", "spark",
                            "--master", "local[2]")
    assert on_spark.returncode == 0, on_spark.stderr[-2000:]
    assert "changed: 0 clusters written, 0 deleted, 0 pages and 0 crawl match records" \
        in on_spark.stdout
    assert "0 written, 1 unchanged, 0 deleted" in on_spark.stdout
    candidates = [line for line in local.stdout.splitlines() if line.startswith("candidate")]
    assert candidates and candidates[0] in on_spark.stdout  # the same pairs judged


def test_report_and_console_show_clusters_and_batch_copies(services, pages, crawled,
                                                          namespace: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crawler.console.report_file import write_report
    from crawler.console.app import create_app
    from dedup.adapters.mongo.reads import MongoReads

    assert run_clusters(services, pages.db.name, namespace).returncode == 0
    found = write_report(MongoReads(pages.db), tmp_path / "report")
    assert (found.clusters, found.pages_in_clusters, found.batch_copies) == (1, 2, 1)
    assert found.matches == 3  # the crawl's own records; the batch one is not a drop
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h2>Clusters</h2>" in html and "1 copy the crawl admitted" in html
    app = create_app(MongoReads(pages.db), figures_folder=tmp_path / "figures", refresh=3600)
    app.extensions["simcrawl"].figures.wait(60)
    client = app.test_client()
    dashboard = client.get("/").get_data(as_text=True)
    assert 'id="clusters"' in dashboard and "http://a.example/first" in dashboard
    copy_page = client.get(f"/page/{crawled['second']}").get_data(as_text=True)
    assert 'id="batch"' in copy_page and "http://a.example/first" in copy_page
    assert "Its cluster (2 pages" in copy_page
    original = client.get(f"/page/{crawled['first']}").get_data(as_text=True)
    assert "this page is the original" in original


def test_the_documented_cluster_queries(services, pages, crawled, namespace: str) -> None:  # type: ignore[no-untyped-def]
    from test_queries import run as run_query  # tests/integration is on sys.path

    assert run_clusters(services, pages.db.name, namespace).returncode == 0
    got = run_query("Every page and copy of an article", pages.db,
                    url="http://b.example/second")
    assert got == {"pages": ["http://a.example/first", "http://b.example/second"],
                   "copies": ["http://b.example/second", "http://c.example/second-1",
                              "http://c.example/second-2"]}
    got = run_query("Every page and copy of an article", pages.db, url="http://a.example/other")
    assert got == {"pages": ["http://a.example/other"], "copies": ["http://c.example/copy"]}
    got = run_query("Copies the crawl let through", pages.db)
    assert [(r["url"], r["original_url"]) for r in got] == [
        ("http://b.example/second", "http://a.example/first")]


def test_the_default_k_is_the_one_the_crawls_index_was_built_with(services, pages, crawled,
                                                                   namespace: str) -> None:
    from dedup.index import IndexLayout

    pages.save_layout("simcrawl", IndexLayout.plan(1000, 5).describe())
    result = run_clusters(services, pages.db.name, "simcrawl")
    assert result.returncode == 0 and "k = 5" in result.stdout
    found = subprocess.run([sys.executable, "-m", "crawler.cli", "find-all", "--store", "--mongo-uri",
                            services.mongo_uri, "--database", pages.db.name],
                           capture_output=True, text=True, timeout=120)
    assert found.returncode == 0 and "within k = 5" in found.stderr
