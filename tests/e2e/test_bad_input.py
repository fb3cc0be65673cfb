"""Hostile pages are counted, never crashed on and never silently lost: JSON, a page
with hundreds of links, a decompression bomb, text nested thousands of levels deep."""

from __future__ import annotations

import csv
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, Page, build
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
WORDS = "The harbour master said the new pontoon would open to visiting yachts in May. "


def hostile_site(redis_port: int) -> DemoSite:
    content = build(novel_chapters=0)
    news = content.pages["news"]
    news["/moved.html"] = Page(b"", status=302,  # to the crawl's own Redis
                               location=f"http://127.0.0.1:{redis_port}/")
    news["/loop-a.html"] = Page(b"", status=302, location="/loop-b.html")  # a redirect loop
    news["/loop-b.html"] = Page(b"", status=302, location="/loop-a.html")
    news["/api/stories.json"] = Page(json.dumps({"stories": [1, 2, 3]}).encode(),
                                     content_type="application/json")
    news["/sitemap-all.html"] = Page(("<html><body><h1>All pages</h1>" + "".join(
        f'<a href="/gen/{i}.html">page {i}</a> ' for i in range(300)) + "</body></html>"
    ).encode())
    news["/bomb.html"] = Page(gzip.compress(b"<html><body>" + b" " * (40 * 1024 * 1024)),
                              headers={"Content-Encoding": "gzip"})
    news["/deep.html"] = Page(("<html><body>" + "<div>" * 10_000 + f"<p>{WORDS * 20}</p>"
                               + "</div>" * 10_000 + "</body></html>").encode())
    home = news["/"].body.replace(b"</ul>", b'<li><a href="/api/stories.json">API</a></li>'
                                  b'<li><a href="/sitemap-all.html">All</a></li><li><a href='
                                  b'"/bomb.html">Bomb</a></li><li><a href="/deep.html">Deep'
                                  b'</a></li><li><a href="/moved.html">Moved</a></li>'
                                  b'<li><a href="/loop-a.html">Loop</a></li></ul>')
    news["/"] = Page(home)
    return DemoSite(content)


def test_hostile_pages_are_counted_and_deep_text_is_kept(tmp_path: Path, adds_up) -> None:  # type: ignore[no-untyped-def]
    services = EmbeddedServices(tmp_path / "data").start()
    redis_port = services.servers["redis"].port or 0
    with services, hostile_site(redis_port) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        summary = tmp_path / "summary.json"
        done = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
             f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=hostile", "-s",
             "DEDUP_NAMESPACE=hostile", "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
             "SIMCRAWL_MAX_OUTLINKS=50", "-s", f"DEDUP_SUMMARY_FILE={summary}",
             "-o", str(tmp_path / "items.jsonl"), "-o", str(tmp_path / "items.csv"), "-s",
             f"LOG_FILE={tmp_path / 'crawl.log'}"], cwd=ROOT, env=env, timeout=600,
            check=False)
        assert done.returncode == 0
        stats = json.loads(summary.read_text())
        log = (tmp_path / "crawl.log").read_text()
        assert "Traceback" not in log and "Cannot use css" not in log
        assert "news/api/stories.json" in site.requests
        assert stats["dedup/skipped/not_html"] == 1  # the JSON (.pdf links are not followed)
        assert stats["dedup/skipped/too_big"] == 2  # the oversized page and the bomb
        assert (stats["dedup/outlinks_capped/pages"],
                stats["dedup/outlinks_capped/links"]) == (1, 250)
        assert sum(1 for r in site.requests if r.startswith("news/gen/")) == 50
        db = connect_mongo(services.mongo_uri)["hostile"]
        deep = db.pages.find_one({"url": site.url("news") + "/deep.html"})
        assert deep is not None and "visiting yachts" in deep["text"]
        assert "news/moved.html" in site.requests  # the redirect to Redis is not followed
        # every request that does not become a page is counted once, under its reason
        assert stats["dedup/skipped/forbidden_port"] == 1
        assert stats["dedup/skipped/redirect_loop"] == 1
        assert "dedup/skipped/ignored" not in stats
        # ... so the requests the crawl took add up: each became a page, a skip or a loss
        assert adds_up(stats) and stats["dedup/requests"] > 100
        redis_log = (tmp_path / "data" / "redis.log").read_text()
        assert "SECURITY ATTACK" not in redis_log
        # Scrapy's feed export writes pages and match records (-o items.jsonl)
        items = [json.loads(line) for line in (tmp_path / "items.jsonl").open()]
        assert {"page_id", "text", "simhash"} <= set(items[0]) or \
            {"original_url", "kind"} <= set(items[0])
        assert sum(1 for i in items if "original_url" in i) == stats["dedup/near_duplicate"] + \
            stats["dedup/exact_duplicate"]
        assert sum(1 for i in items if "page_id" in i and i.get("decision") == "new") == \
            stats["dedup/unique"]
        with (tmp_path / "items.csv").open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        matches = [r for r in rows if r["original_url"]]  # match records keep their fields
        assert len(matches) == stats["dedup/near_duplicate"] + stats["dedup/exact_duplicate"]
        assert all(r["kind"] in ("simhash", "exact") and r["distance"] for r in matches)
