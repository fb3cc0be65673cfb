"""URL rules in a real crawl (crawler/rule_learning.py): a parameter that did not change the
first pages is learned as a rule, requests it predicts are not sent and are recorded as
``url_rule`` copies; a page it is wrong about, requested to check it, drops the rule, and
every request it kept is sent: each of those pages is stored, none is lost."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.pageserver import serve
from dedup.adapters.redis_url_rules import RedisUrlRules
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, connect_redis, free_port
from dedup.url_rules import explores

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
WORDS = sorted(set(re.findall(r"[a-z]{4,}", (ROOT / "README.md").read_text().lower())))
EXPLORE = 0.3


def page(n: int) -> bytes:
    """A page with a text of its own (120 words of the README's, drawn by ``n``)."""
    rng = random.Random(n)
    text = " ".join(rng.choice(WORDS) for _ in range(120))
    return (f"<html><head><title>Page {n}</title></head><body><article><h1>Page {n}</h1>"
            f"<p>{text}</p></article></body></html>").encode()


def site(origin: str) -> tuple[dict[str, bytes], list[str], list[str]]:
    """Pages 0-2 under ``?v=2`` are the same pages (copies); then six pages of their own;
    then pages whose ``?v=2`` is another page: three the crawl will not check (at the
    exploration share) and one it will. The home page links them in that order."""
    pages: dict[str, bytes] = {}
    links: list[str] = []
    for n in range(3):
        pages[f"{origin}/p/{n}"] = pages[f"{origin}/p/{n}?v=2"] = page(n)
        links += [f"/p/{n}", f"/p/{n}?v=2"]
    for n in range(6):
        pages[f"{origin}/b/{n}"] = page(50 + n)
        links.append(f"/b/{n}")
    kept, checked = [], []
    for n in range(3, 200):
        url = f"{origin}/p/{n}?v=2"
        if explores(url, EXPLORE) and len(kept) == 3 and not checked:
            checked.append(n)
        elif not explores(url, EXPLORE) and len(kept) < 3:
            kept.append(n)
        if checked:
            break
    wrong = []
    for n in kept + checked:
        pages[f"{origin}/p/{n}"], pages[f"{origin}/p/{n}?v=2"] = page(n), page(1000 + n)
        links += [f"/p/{n}", f"/p/{n}?v=2"]
        wrong.append(f"{origin}/p/{n}?v=2")
    pages[origin + "/"] = ("<html><head><title>Home</title></head><body><ul>" + "".join(
        f'<li><a href="{u}">{u}</a></li>' for u in links) + "</ul></body></html>").encode()
    return pages, wrong, [f"{origin}/p/{n}?v=2" for n in range(3)]


def test_a_wrong_rule_is_dropped_and_the_requests_it_kept_are_sent(tmp_path: Path) -> None:
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    pages, wrong, copies = site(origin)
    server, asked = serve(pages, port)
    summary = tmp_path / "summary.json"
    try:
        with EmbeddedServices(tmp_path / "data") as services:
            env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
            done = subprocess.run(
                [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                 f"start_urls={origin}/", "-s", "DEDUP_DATABASE=rules", "-s",
                 "AUTOTHROTTLE_ENABLED=0", "-s", "ROBOTSTXT_OBEY=0", "-s",
                 "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.25", "-s",
                 "RANDOMIZE_DOWNLOAD_DELAY=0", "-s",
                 "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue", "-s",
                 "SCHEDULER_DISK_QUEUE=scrapy.squeues.PickleFifoDiskQueue", "-s",
                 f"DEDUP_URL_RULES_EXPLORE={EXPLORE}", "-s", f"DEDUP_SUMMARY_FILE={summary}",
                 "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
            log = (tmp_path / "crawl.log").read_text()
            assert done.returncode == 0, log[-3000:]
            stats = json.loads(summary.read_text())
            db = connect_mongo(services.mongo_uri)["rules"]
            stored = {d["url"] for d in db.pages.find({}, {"url": 1})}
            matches = {d["url"]: d for d in db.matches.find({})}
            rows = RedisUrlRules(connect_redis(services.redis_url or ""), "rules").rows()
            listed = subprocess.run([sys.executable, "-m", "crawler.cli", "rules", "--all",
                                     "--database", "rules"], cwd=ROOT, env=env,
                                    capture_output=True, text=True, timeout=120, check=False)
            held = subprocess.run([sys.executable, "-m", "crawler.cli", "rules", "--database", "rules"],
                                  cwd=ROOT, env=env, capture_output=True, text=True,
                                  timeout=120, check=False)
            cleared = subprocess.run([sys.executable, "-m", "crawler.cli", "rules", "--clear",
                                      "--database", "rules"], cwd=ROOT, env=env,
                                     capture_output=True, text=True, timeout=120, check=False)
            after = RedisUrlRules(connect_redis(services.redis_url or ""), "rules").rows()
    finally:
        server.shutdown()
    # the rule was learned, held, and was dropped by the page requested to check it
    rule = next(r for r in rows if r.rule.kind == "drop_param" and r.rule.arg == "v")
    assert rule.support >= 3 and rule.against >= 1 and not rule.holds, log[-3000:]
    # every page of its own is stored: the ones it kept were requested after all
    assert set(wrong) <= stored, (sorted(set(wrong) - stored), log[-3000:])
    assert stats.get("dedup/url_rules/resent", 0) >= 1, (stats, log[-3000:])
    # simcrawl rules lists it (it holds no more: only with --all), and clears it
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if "drop_param v" in x)
    assert line.split()[-1] == "no" and int(line.split()[3]) >= 3, listed.stdout
    assert "no URL rule holds" in held.stdout, held.stdout
    assert cleared.returncode == 0 and after == [], cleared.stdout + cleared.stderr
    assert sum(1 for u in asked if u in wrong) >= len(wrong)
    assert not set(matches) & stored  # no page is both stored and recorded as a copy
    assert set(copies) <= set(matches)  # the true copies are recorded
    assert all(matches[u]["original_url"] == u.replace("?v=2", "") for u in copies)
    # every request the crawl took is accounted for
    decided = sum(stats.get(k, 0) for k in ("dedup/unique", "dedup/near_duplicate",
                                             "dedup/exact_duplicate", "dedup/revisit"))
    skipped = sum(v for k, v in stats.items() if k.startswith("dedup/skipped/"))
    assert stats["dedup/requests"] == decided + skipped
    # Scrapy's own figures count what was downloaded, not the empty responses made for
    # requests never sent, and no item dropped: simcrawl's records are not the spider's
    not_sent = stats.get("dedup/skipped/url_rule", 0) + stats.get("dedup/skipped/url_rule_held", 0)
    assert not_sent >= 1, stats
    assert stats["downloader/response_count"] == len(asked), (stats, asked)
    dumped = log[log.index("Dumping Scrapy stats"):]
    assert "'item_dropped_count'" not in dumped and "item_dropped_reasons" not in dumped
    assert f"'response_received_count': {len(asked)}," in dumped
