"""The web console's page times on a store of a million pages, against a limit.

It generates a store like a long crawl's (``--pages`` pages on hosts of very different
sizes, admitted over two weeks, with their fingerprints; a copy record for every
``--copy-rate`` of them, with the copy's text; registered originals of three sources),
on the embedded SecantusDB, with the crawl's indexes; then serves the console over it
with waitress and times each kind of page over HTTP (several different requests of each:
other hosts, other records, deeper pages), once the dashboard's figures are drawn (that
drawing reads the whole store in the background, timed separately).

Every page is compared with a limit of ``--limit-ms`` (default 250 ms) at the 95th
percentile. The store is kept in ``--store`` (default ``.bench-console``) and reused by
the next run with the same ``--pages``.

    python bench/bench_console.py [--pages 1000000] [--requests 15] [--limit-ms 250]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bson import ObjectId

from crawler.console.app import create_app
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port
from dedup.adapters.mongo import PageStore, fingerprint_document, match_document
from dedup.adapters.mongo.reads import MongoReads
from dedup.store.records import MatchRecord, fingerprint_row

ROOT = Path(__file__).resolve().parents[1]

WORDS = ["council", "harbour", "railway", "bridge", "festival", "school", "library", "housing",
         "flood", "market", "plan", "budget", "said", "on", "Monday", "after", "months", "of",
         "delay", "the", "a", "residents", "report", "published", "found", "that", "per",
         "cent", "were", "affected", "approved", "votes", "meeting"]
SOURCES = ("novels", "newswire", "photo-agency")


def _oid(when: dt.datetime, rng: random.Random) -> ObjectId:
    return ObjectId(int(when.timestamp()).to_bytes(4, "big") + rng.randbytes(8))


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def generate(db: Any, pages: int, copy_rate: float, seed: int = 1) -> dict[str, Any]:
    """Fill ``db`` like a long crawl; returns what the timings need (host names...)."""
    rng = random.Random(seed)
    hosts = [f"site{n}.example" for n in range(max(10, pages // 200))]
    weights = [1 / (n + 1) for n in range(len(hosts))]  # a few big hosts, many small
    start = dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=14)
    step = dt.timedelta(days=14) / pages
    text = _text(rng, 130)  # ~800 characters: long enough for the diff, light to store
    batch = 5000
    page_ids: list[ObjectId] = []
    written = 0
    started = time.monotonic()
    chosen = rng.choices(hosts, weights, k=pages)
    for at in range(0, pages, batch):
        docs, fps, matches = [], [], []
        for n in range(at, min(at + batch, pages)):
            when = start + step * n
            host = chosen[n]
            oid = _oid(when, rng)
            url = f"https://{host}/{rng.choice(WORDS)}/{n}.html"
            docs.append({"_id": oid, "url": url, "host": host, "title": f"Page {n}",
                         "status": 200, "fetched_at": when, "depth": rng.randint(0, 5),
                         "text": text, "text_length": len(text), "extraction": "trafilatura",
                         "crawl_id": f"crawl{n * 4 // pages}", "checksum": f"{n:032x}"})
            fps.append(fingerprint_document(fingerprint_row(
                str(oid), rng.getrandbits(64), checksum=f"{n:032x}", tokens=130, short=False,
                algorithm="simhash64-xxh3", created_at=when)))
            page_ids.append(oid)
            if rng.random() < copy_rate:
                original = page_ids[rng.randrange(len(page_ids))]
                copy_host = rng.choices(hosts, weights)[0]
                doc = match_document(MatchRecord(url=f"https://{copy_host}/copy/{n}.html",
                                                 host=copy_host, original_id=str(original),
                                                 original_url=None, original_host=None,
                                                 distance=rng.choice([0, 1, 1, 2, 2, 3]),
                                                 kind="simhash",
                                                 text=text.replace("council", "county"),
                                                 title=f"Copy {n}").row(
                    crawl_id=f"crawl{n * 4 // pages}", detected_at=when, text_cap=10**6))
                doc["_id"] = _oid(when, rng)
                doc["crawl_ids"] = [doc["crawl_id"]]
                matches.append(doc)
        db.pages.insert_many(docs, ordered=False)
        db.fingerprints.insert_many(fps, ordered=False)
        if matches:
            db.matches.insert_many(matches, ordered=False)
        written += len(docs)
        print(f"\r  generated {written:,} / {pages:,} pages "
              f"({written / (time.monotonic() - started):,.0f}/s)", end="", file=sys.stderr)
    print(file=sys.stderr)
    originals = []
    for s, source in enumerate(SOURCES):
        docs = [{"_id": _oid(start, rng), "url": f"file:///corpus/{source}/{n:05d}.txt",
                 "host": "registered", "source": source, "title": f"{source} {n}",
                 "text": text, "text_length": len(text), "registered_at": start}
                for n in range(2000 * (s + 1) // 2)]
        db.pages.insert_many(docs, ordered=False)
        originals += [(d["_id"], source) for d in docs]
    copies = []
    for n in range(pages // 100):
        original, source = rng.choice(originals)
        when = start + step * rng.randrange(pages)
        doc = match_document(MatchRecord(url=f"https://pirate{n % 50}.example/read/{n}.html",
                                         host=f"pirate{n % 50}.example", original_id=str(original),
                                         original_url=None, original_host="registered",
                                         distance=None, kind="pinyin",
                                         pinyin={"share": 0.9, "run": 20, "span": 25},
                                         source=source,
                                         text=text).row(
            detected_at=when, crawl_id="crawl0", text_cap=10**6))
        doc["_id"] = _oid(when, rng)
        copies.append(doc)
    db.matches.insert_many(copies, ordered=False)
    for c in range(4):
        db.crawls.insert_one({"_id": f"crawl{c}", "state": "finished",
                              "started_at": start + dt.timedelta(days=3.5 * c),
                              "updated_at": start + dt.timedelta(days=3.5 * (c + 1)),
                              "counters": {"fetched": pages // 3, "admitted": pages // 4,
                                           "dropped": int(pages * copy_rate / 4),
                                           "skipped": 1000, "queue": 0,
                                           "elapsed": 3.5 * 86400},
                              "stats": {"dedup/skipped/http_404": 1000}})
    started = time.monotonic()
    PageStore(db.client, db.name).ensure_indexes()
    print(f"  indexes built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return {"hosts": hosts[:3] + hosts[-3:], "pages": pages}


def timed(url: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as answer:
        body = answer.read()
    return (time.perf_counter() - started) * 1000, body


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=1_000_000)
    parser.add_argument("--copy-rate", type=float, default=0.3,
                        help="copy records per page (default 0.3)")
    parser.add_argument("--requests", type=int, default=15,
                        help="requests of each kind of page (default 15)")
    parser.add_argument("--limit-ms", type=float, default=250.0)
    parser.add_argument("--store", type=Path, default=ROOT / ".bench-console")
    args = parser.parse_args()
    marker = args.store / f"generated-{args.pages}.json"
    with EmbeddedServices(args.store, redis=False) as services:
        client = connect_mongo(services.mongo_uri or "", op_timeout=None)
        db = client["console_bench"]
        if marker.exists():
            facts = json.loads(marker.read_text())
            print(f"reusing the store of {args.pages:,} pages in {args.store}", file=sys.stderr)
        else:
            client.drop_database("console_bench")
            print(f"generating a store of {args.pages:,} pages in {args.store} ...",
                  file=sys.stderr)
            facts = generate(db, args.pages, args.copy_rate)
            marker.write_text(json.dumps(facts))
        app = create_app(MongoReads(db), refresh=10 ** 9)
        started = time.monotonic()
        cache = app.extensions["simcrawl"].figures
        cache.wait(timeout=3600)
        drawing = time.monotonic() - started
        port = free_port()
        from waitress import create_server

        server = create_server(app, host="127.0.0.1", port=port, threads=4)
        threading.Thread(target=server.run, daemon=True).start()
        base = f"http://127.0.0.1:{port}"
        rng = random.Random(5)
        found = cache.found
        big_hosts, small_hosts = facts["hosts"][:3], facts["hosts"][3:]
        match_ids = [str(m["_id"]) for m in db.matches.find(
            {"host": big_hosts[0]}, {"_id": 1}).limit(200)]
        top = found.copies_per_original[0]["original_id"] if found.copies_per_original else None

        def deeper(host: str, depth: int = 5) -> str:  # the fifth page of a big host
            url = f"{base}/search?q={host}&what=pages"
            for _ in range(depth):
                _, body = timed(url)
                marker_ = b"before="
                at = body.find(marker_)
                if at < 0:
                    break
                url = f"{base}/search?q={host}&what=pages&before=" + \
                    body[at + len(marker_): at + len(marker_) + 24].decode()
            return url

        kinds: dict[str, Any] = {
            "dashboard /": lambda: f"{base}/",
            "search: a big host": lambda: f"{base}/search?q={rng.choice(big_hosts)}",
            "search: a small host": lambda: f"{base}/search?q={rng.choice(small_hosts)}",
            "search: 5th page of a big host": lambda: deeper(rng.choice(big_hosts)),
            "search: URL prefix": lambda: f"{base}/search?q=https://{big_hosts[0]}/"
                                         f"{rng.choice(WORDS)}/1",
            "match page (diff)": lambda: f"{base}/match/{rng.choice(match_ids)}",
            "original with most copies": lambda: f"{base}/page/{top}",
            "registered sources": lambda: f"{base}/sources",
            "one source": lambda: f"{base}/sources/{rng.choice(SOURCES)}",
            "figure PNG": lambda: f"{base}/figures/distances.png",
        }
        rows = []
        for name, make in kinds.items():
            times = []
            for _ in range(args.requests):
                url = make()
                ms, _ = timed(url)
                times.append(ms)
            times.sort()
            p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
            rows.append((name, statistics.median(times), p95, times[-1]))
        server.close()
    pages_n = f"{facts['pages']:,}"
    print(f"\nconsole page times on a store of {pages_n} pages, {found.matches:,} copy records "
          f"(SecantusDB, embedded; {os.cpu_count()} cores; {args.requests} requests each)")
    print(f"dashboard figures drawn in the background in {drawing:.0f} s "
          f"({(found.pages + found.matches) / max(drawing, 1e-9):,.0f} records/s)\n")
    print(f"| page | median ms | p95 ms | max ms | limit {args.limit_ms:.0f} ms (p95) |")
    print("|---|---:|---:|---:|---|")
    failed = 0
    for name, median, p95, worst in rows:
        ok = p95 <= args.limit_ms
        failed += not ok
        print(f"| {name} | {median:.1f} | {p95:.1f} | {worst:.1f} | "
              f"{'within' if ok else 'OVER'} |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
