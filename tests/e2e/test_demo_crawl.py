"""The main command crawls the demo site end to end: `scrapy crawl` in a subprocess on real
servers, checked against the site's known outcome and MongoDB's records."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import QUOTE_CHARS, build
from dedup.config import DEFAULT_MAX_DISTANCE

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_crawl_matches_the_known_outcome(demo_run) -> None:  # type: ignore[no-untyped-def]
    proc, _ = demo_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    exp = build().expected
    originals = len(exp.clusters) + len(exp.unique)
    copies = sum(len(c) - 1 for c in exp.clusters)
    assert f"originals stored          {originals} / {originals}" in proc.stdout
    assert f"copies dropped, naming their original   {copies} / {copies}" in proc.stdout
    assert "trap pages requested      0 (must be 0)" in proc.stdout


def test_the_demos_hints_name_commands_this_machine_has(demo_run) -> None:  # type: ignore[no-untyped-def]
    import shutil

    from crawler.cli.main import VERBS

    proc, _ = demo_run
    # the hints name simcrawl as it runs here (./simcrawl in a checkout, simcrawl on the
    # PATH, else this Python's -m crawler.cli), and that command answers
    hint = next(line for line in proc.stdout.splitlines() if " export matches" in line)
    me = hint.strip().split(" export matches")[0]
    ran = subprocess.run([*shlex.split(me), "--version"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=False)
    assert ran.returncode == 0 and ran.stdout.startswith("simcrawl "), (me, ran.stderr)
    named = re.findall(rf"^\s+{re.escape(me)} ([a-z-]+)", proc.stdout, re.MULTILINE)
    assert named and all(verb in VERBS for verb in named), named
    assert "python -m dedup" not in proc.stdout
    if shutil.which("mongosh") is None:
        assert "mongosh" not in proc.stdout
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "simcrawl-report/" in ignored  # the report's default folder


def test_mongodb_holds_each_original_once_and_a_record_per_copy(demo_run) -> None:  # type: ignore[no-untyped-def]
    _, db = demo_run
    exp = build().expected
    crawled = {"host": {"$ne": "registered"}}
    assert db.pages.count_documents(crawled) == len(exp.clusters) + len(exp.unique)
    assert db.pages.count_documents({"source": "demo-novels"}) == len(exp.registered)
    assert db.fingerprints.count_documents({}) == db.pages.count_documents({})
    kinds = {m["url"].split("/", 3)[3]: m["kind"] for m in db.matches.find({})}
    assert len(kinds) == sum(len(c) - 1 for c in exp.clusters) + len(exp.pirated)
    for cluster in exp.clusters:
        for copy in cluster[1:]:
            path = copy.split("/", 1)[1]
            # a print version is the article's text under its heading: an exact copy
            exact = copy.startswith(("zh/", "news/print/"))
            assert kinds[path] == ("exact" if exact else "simhash"), copy
    for m in db.matches.find({}):
        original = db.pages.find_one({"_id": m["original_id"]})
        assert original is not None and original["url"] == m["original_url"]
        assert m["outlinks_dropped"] >= 1
        if m["kind"] == "pinyin":  # no Hamming distance: measured by its windows
            assert m["distance"] is None and m["similarity"] == m["pinyin"]["share"]
        else:
            assert m["distance"] <= DEFAULT_MAX_DISTANCE
            assert m["similarity"] == round(1 - m["distance"] / 64, 4)


def test_copies_of_registered_originals_name_the_original_and_source(demo_run) -> None:  # type: ignore[no-untyped-def]
    _, db = demo_run
    exp = build().expected
    for path, name in exp.pirated.items():
        m = db.matches.find_one({"url": {"$regex": f"/{path.split('/', 1)[1]}$"}})
        assert m is not None, path
        assert m["kind"] == "pinyin" and m["source"] == "demo-novels"
        assert m["original_url"].endswith(f"/demo-corpus/{name}")
        assert m["title"] and m["fetched_at"] and m["outlinks_dropped"] >= 1
        assert m["pinyin"]["share"] > 0.9  # a whole chapter with homophones
        first, last = m["pinyin"]["span"]
        assert last > first
        fp = db.fingerprints.find_one({"_id": m["original_id"]})
        assert fp["pinyin"]["codes"] and fp["pinyin"]["params"]["size"] == 40


def test_a_quotation_of_a_registered_original_is_kept_with_an_excerpt_record(demo_run) -> None:  # type: ignore[no-untyped-def]
    _, db = demo_run
    exp = build().expected
    assert exp.quoted
    for path, name in exp.quoted.items():
        tail = {"$regex": f"/{path.split('/', 1)[1]}$"}
        page = db.pages.find_one({"url": tail})
        assert page is not None and db.matches.find_one({"url": tail}) is None  # kept
        e = db.excerpts.find_one({"url": tail})
        assert e is not None and e["kind"] == "excerpt" and e["source"] == "demo-novels"
        assert e["original_url"].endswith(f"/demo-corpus/{name}")
        assert e["page_id"] == page["_id"]
        quoted = 150 if path.endswith("/1.html") else QUOTE_CHARS  # the smallest recorded
        start, end = e["span"]
        # the passage found: most of what was quoted (Han characters; punctuation aside)
        assert 2 * quoted // 3 <= e["characters"] <= 3 * quoted // 2, (path, e["characters"])
        assert end - start >= 2 * quoted // 3
        assert e["containment"] < 0.5  # the post is mostly not the chapter
    assert len(exp.quoted) == 2


def test_gbk_pages_are_stored_as_chinese(demo_run) -> None:  # type: ignore[no-untyped-def]
    _, db = demo_run
    titles = {p["title"] for p in db.pages.find({"language": "zh"})}
    assert set(build().expected.zh_titles) <= titles
    text = db.pages.find_one({"title": build().expected.zh_titles[0]})["text"]
    assert "的" in text and "\ufffd" not in text


def test_bad_input_is_counted_not_crashed(demo_run) -> None:  # type: ignore[no-untyped-def]
    proc, _ = demo_run
    for reason in ("binary", "http_404", "robots_txt", "too_big"):
        assert f"skipped: {reason}" in proc.stdout
    assert "Traceback" not in proc.stderr
    # every request the crawl took is a page decided, a skip or a loss, once: they add up
    line = re.search(r"requests \(all accounted for\)\s+(\d+) = (\d+) pages decided \+ "
                     r"(\d+) skipped \+ (\d+) lost", proc.stdout)
    assert line, proc.stdout
    taken, decided, skipped, lost = map(int, line.groups())
    assert taken == decided + skipped + lost and decided > 0 and skipped > 0
    # the responses are told apart from the requests: the robots.txt files are named
    # (the demo's four hosts), so "59" beside "57" needs no guessing
    got = re.search(r"responses downloaded\s+(\d+) \((\d+) of them robots\.txt files",
                    proc.stdout)
    assert got, proc.stdout
    responses, robots = map(int, got.groups())
    assert robots == 4 and responses <= taken + robots


def test_the_crawl_log_is_readable_and_private(demo_run) -> None:  # type: ignore[no-untyped-def]
    proc, db = demo_run
    folder = proc.folder
    log = folder / "demo-crawl.log"
    text = log.read_text(encoding="utf-8")
    assert "[pymongo" not in text  # third-party loggers at WARNING
    assert " DEBUG: " not in text  # INFO by default
    assert "telnet console listening" not in text.lower() and "password" not in text.lower()
    assert "remote control http server" not in text.lower()  # no code-running endpoint
    page = db.pages.find_one({"text": {"$exists": True}, "text_length": {"$gt": 500}})
    assert page["text"][100:200] not in text  # items are one short line, never the text
    assert len(text) < 200_000


def test_export_streams_the_records_the_queries_see(demo_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import csv
    import json

    _, db = demo_run
    host, port = db.client.address
    env = dict(os.environ, MONGO_URI=f"mongodb://{host}:{port}/")

    def export(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "crawler.cli", "export", *args,
                               "--database", "simcrawl_demo"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    out = tmp_path / "matches.csv"
    done = export("matches", "--format", "csv", "-o", str(out))
    assert done.returncode == 0, done.stderr
    with out.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == db.matches.count_documents({}) > 0
    assert f"exported {len(rows):,} matches to {out}" in done.stderr
    by_url = {r["url"]: r for r in rows}
    for m in db.matches.find({}):
        r = by_url[m["url"]]
        assert (r["original_url"], r["original_id"], r["kind"]) == (
            m["original_url"], str(m["original_id"]), m["kind"])
        assert r["distance"] == ("" if m["distance"] is None else str(m["distance"]))
    per_host = {d["_id"]: d["n"] for d in db.matches.aggregate(
        [{"$group": {"_id": "$host", "n": {"$sum": 1}}}])}
    assert {h: sum(r["host"] == h for r in rows) for h in per_host} == per_host
    # pages as JSON lines on standard output; one crawl's; a time range
    done = export("pages", "--format", "jsonl")
    pages = [json.loads(line) for line in done.stdout.splitlines()]
    assert {p["url"] for p in pages} == {d["url"] for d in db.pages.find({}, {"url": 1})}
    crawl_id = db.pages.find_one({"host": {"$ne": "registered"}})["crawl_id"]
    done = export("pages", "--format", "jsonl", "--crawl-id", crawl_id)
    assert len(done.stdout.splitlines()) == db.pages.count_documents({"crawl_id": crawl_id})
    assert export("matches", "--crawl-id", "no-such-crawl").stdout.count("\n") == 1  # header
    assert export("matches", "--since", "2999-01-01").stdout.count("\n") == 1
    # bad arguments: one line, exit 2
    bad = export("matches", "--since", "yesterday")
    assert bad.returncode == 2 and "not an ISO date" in bad.stderr


def test_the_report_draws_what_the_store_holds(demo_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import json

    _, db = demo_run
    host, port = db.client.address
    env = dict(os.environ, MONGO_URI=f"mongodb://{host}:{port}/")
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "report", "-o", str(out),
                           "--database", "simcrawl_demo"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads((out / "report.json").read_text())
    # the k the demo crawl's index was built with (one k): the crawl's
    assert found["k"] == DEFAULT_MAX_DISTANCE
    # the figures' numbers are the store's
    near = db.matches.aggregate([{"$match": {"distance": {"$ne": None},
                                             "kind": {"$ne": "exact"}}},
                                 {"$group": {"_id": "$distance", "n": {"$sum": 1}}}])
    assert {int(k): v for k, v in found["distances"].items()} == {d["_id"]: d["n"] for d in near}
    per_host = db.matches.aggregate([{"$group": {"_id": "$host", "n": {"$sum": 1}}}])
    assert found["copies_per_host"] == {d["_id"]: d["n"] for d in per_host}
    assert found["matches"] == db.matches.count_documents({})
    # the pages the crawl stored and the registered originals are told apart (the demo
    # registers three chapters): the headline's pages are the crawl's
    registered = db.pages.count_documents({"source": {"$exists": True, "$ne": None}})
    assert registered and found["registered"] == registered
    assert found["pages"] == db.pages.count_documents({}) - registered
    assert f"{found['pages']} pages stored (and {registered} registered originals)" \
        in (out / "report.html").read_text(encoding="utf-8")
    top = found["copies_per_original"][0]
    assert top["copies"] == db.matches.count_documents({"original_url": top["original_url"]})
    assert sum(found["dropped_per_minute"].values()) == found["matches"]
    # the skips, from the crawl's summary kept in MongoDB: those the crawl logged
    import ast

    proc, _ = demo_run
    line = next(ln for ln in (proc.folder / "demo-crawl.log").read_text().splitlines()
                if "dedup summary: " in ln)
    logged = ast.literal_eval(line.split("dedup summary: ", 1)[1])
    assert found["skip_reasons"] == {k.split("/", 2)[2]: v for k, v in logged.items()
                                     if k.startswith("dedup/skipped/")}
    assert {"binary", "too_big", "http_404", "robots_txt"} <= set(found["skip_reasons"])
    assert sum(found["skipped_per_minute"].values()) == sum(found["skip_reasons"].values())
    # one self-contained file: every figure embedded, nothing fetched from elsewhere
    page = (out / "report.html").read_text(encoding="utf-8")
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert {"distances.png", "hosts.png", "originals.png", "minutes.png", "skips.png",
            "sources.png"} <= set(pngs)
    assert all((out / p).read_bytes().startswith(b"\x89PNG") for p in pngs)
    assert page.count("src='data:image/png;base64,") == len(pngs)
    assert "src='http" not in page and "<script" not in page
    assert top["original_url"] in page  # the largest copy groups, linked


def test_a_match_record_carries_the_copy_text(demo_run) -> None:  # type: ignore[no-untyped-def]
    """The evidence to show a copy beside its original later (DEDUP_MATCH_TEXT)."""
    _, db = demo_run
    matches = list(db.matches.find({}))
    assert matches and all(m.get("text") and len(m["text"]) <= 20_000 for m in matches)
    for m in matches:
        if m["kind"] != "simhash":
            continue
        original = db.pages.find_one({"_id": m["original_id"]})
        last = original["text"].split("\n")[-1][:50]  # a sentence of the story itself
        assert last in m["text"], m["url"]


def test_the_crawl_keeps_its_record_with_its_counters(demo_run) -> None:  # type: ignore[no-untyped-def]
    """Each crawl process's record in `crawls`: finished, with the counters the console
    shows, equal to what it stored."""
    _, db = demo_run
    records = list(db.crawls.find({}))
    assert records and all(r["state"] == "finished" and r["finished_at"] for r in records)
    for r in records:
        counters = r["counters"]
        assert counters["admitted"] == db.pages.count_documents({"crawl_id": r["_id"]})
        assert counters["dropped"] == db.matches.count_documents({"crawl_id": r["_id"]})
        assert counters["fetched"] >= counters["admitted"] + counters["dropped"]
        assert counters["skipped"] == sum(v for k, v in r["stats"].items()
                                          if k.startswith("dedup/skipped/"))


def test_calibrate_measures_the_share_of_copies_per_distance(demo_run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`simcrawl calibrate` on the demo's store: the dropped copies (distances 0-3) are
    judged copies from their texts, the stored pages' pairs at larger distances are not
    (different articles under one template), and the suggested k is the crawl's."""
    _, db = demo_run
    host, port = db.client.address
    env = dict(os.environ, MONGO_URI=f"mongodb://{host}:{port}/")
    out = tmp_path / "calibrate"
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "calibrate", "-o", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    import json

    found = json.loads((out / "calibrate.json").read_text())
    for d in range(4):
        dropped = db.matches.count_documents({"kind": "simhash", "distance": d})
        assert found["found"][str(d)] >= dropped
        assert found["copies"][str(d)] == found["judged"][str(d)]  # every one a copy
    far = [d for d in range(5, 13) if found["judged"][str(d)]]
    assert far and all(found["copies"][str(d)] == 0 for d in far)
    assert found["suggested_k"] == 3 and "suggested k: 3" in done.stdout
    assert found["k"] == DEFAULT_MAX_DISTANCE  # its index's
    assert f"the crawl's k: {DEFAULT_MAX_DISTANCE}" in done.stdout
    page = (out / "calibrate.html").read_text(encoding="utf-8")
    assert "data:image/png;base64," in page and "<mark" in page
