"""One decision for every entry point: development pages crawled over HTTP by the real
crawler (``scrapy crawl site`` on the embedded services) get the same verdicts as the same
pages, in the order the crawl fetched them, given to :func:`dedup.reading.decide_pages` in
memory (no server). Each site of the set is served on its own loopback address, so each
keeps its own host (its template lines are its own)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawler.examples.pageserver import serve
from dedup.reading import decide_pages
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def test_a_crawl_and_the_in_memory_decision_give_the_same_verdicts(
        dev_data: Path, tmp_path: Path) -> None:
    folder = dev_data / "near-dup-dev"
    rows = [json.loads(line) for line in (folder / "pages.jsonl").open()]
    # every other article with all its versions (copies, rewrites, stubs): the suite's time
    clusters = sorted({row["cluster"] for row in rows})[::2]
    rows = [row for row in rows if row["cluster"] in clusters]
    port = free_port()
    hosts: dict[str, str] = {}  # each site on an address of its own
    pages: dict[str, bytes] = {}
    for row in rows:
        parts = urlsplit(row["url"])
        address = hosts.setdefault(parts.netloc, f"127.0.0.{len(hosts) + 2}")
        url = f"http://{address}:{port}{parts.path or '/'}"
        pages[url] = gzip.decompress((folder / "pages" / f"{row['page']}.html.gz").read_bytes())
    (tmp_path / "start.txt").write_text("\n".join(pages) + "\n")
    server, asked = serve(pages, port)
    try:
        with EmbeddedServices(tmp_path / "data") as services:
            env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
            done = subprocess.run(
                [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                 f"start_file={tmp_path / 'start.txt'}", "-s", "DEDUP_DATABASE=same",
                 "-s", "DEDUP_NAMESPACE=same", "-s", "AUTOTHROTTLE_ENABLED=0",
                 "-s", "DEPTH_LIMIT=1", "-s", "ROBOTSTXT_OBEY=0",
                 # one page at a time, each decided before the next is fetched (the
                 # engine backs out while a response is being processed): the order the
                 # server saw is the order of the decisions
                 "-s", "CONCURRENT_REQUESTS=1", "-s", "SCRAPER_SLOT_MAX_ACTIVE_SIZE=1",
                 "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
            assert done.returncode == 0, (tmp_path / "crawl.log").read_text()[-3000:]
            db = connect_mongo(services.mongo_uri)["same"]
            stored = {d["url"] for d in db.pages.find({}, {"url": 1})}
            copies = {d["url"]: (d["kind"], d["original_url"]) for d in db.matches.find({})}
    finally:
        server.shutdown()
    order = [u for u in dict.fromkeys(asked) if u in pages]
    assert sorted(order) == sorted(pages)  # every page fetched once
    crawled = {u: ("new", None) if u in stored else copies.get(u, ("skipped", None))
               for u in order}
    verdicts = decide_pages((u, pages[u]) for u in order)
    in_memory = {v.url: (v.kind, v.original_url) if v.kind != "new" else ("new", None)
                 for v in verdicts}
    for v in verdicts:  # a match turned round: the page decided first is the copy now
        if v.decision is not None and v.decision.turn is not None:
            in_memory[v.decision.turn.url] = (v.decision.turn.kind, v.url)
    in_memory = {u: k if k[0] in ("new", "exact", "simhash", "pinyin") else ("skipped", None)
                 for u, k in in_memory.items()}
    differ = {u: (crawled[u], in_memory[u]) for u in order if crawled[u] != in_memory[u]}
    assert not differ, differ
    kinds = [k for k, _ in crawled.values()]
    assert kinds.count("new") > 25 and kinds.count("simhash") + kinds.count("exact") > 50
