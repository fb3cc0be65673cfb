"""Prometheus metrics of a running crawl (SIMCRAWL_METRICS_PORT): a crawl that keeps
waiting for work serves /metrics, and its counters are the crawl's own."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def scrape(port: int) -> dict[str, float]:
    """``name{labels}`` -> value of every sample /metrics serves."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^([a-z_]+(?:\{[^}]*\})?) ([0-9.e+-]+)$", text, re.MULTILINE)}


def test_a_running_crawl_serves_its_counters_and_decision_latency(tmp_path: Path) -> None:
    port = free_port()
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(novel_chapters=0)) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri,
                   SIMCRAWL_METRICS_PORT=str(port))
        proc = subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
             f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=metrics", "-s",
             "DEDUP_NAMESPACE=metrics", "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
             "SIMCRAWL_FRONTIER=redis", "-s", "SIMCRAWL_KEEP_WAITING=1",
             "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"], cwd=ROOT, env=env)
        try:
            exp = site.content.expected
            db = connect_mongo(services.mongo_uri)["metrics"]
            want = len(exp.clusters) + len(exp.unique)
            deadline = time.monotonic() + 180
            metrics: dict[str, float] = {}

            def copies() -> float:
                return sum(metrics.get(f'simcrawl_pages_total{{outcome="{k}"}}', 0)
                           for k in ("near_duplicate", "exact_duplicate", "pinyin_copy"))

            while time.monotonic() < deadline:  # the crawl is done; it waits for more work
                time.sleep(1)
                try:
                    metrics = scrape(port)
                except OSError:
                    continue
                stored = (metrics.get('simcrawl_stored_total{kind="pages"}'),
                          metrics.get('simcrawl_stored_total{kind="matches"}'))
                if stored == (want, copies()) == (db.pages.count_documents({}),
                                                  db.matches.count_documents({})):
                    break  # every page decided and its record stored
            assert metrics.get('simcrawl_stored_total{kind="pages"}') == want
            assert metrics['simcrawl_stored_total{kind="matches"}'] == copies() == \
                db.matches.count_documents({}) > 0
            assert metrics['simcrawl_pages_total{outcome="unique"}'] == want
            assert metrics['simcrawl_pages_total{outcome="skipped_binary"}'] == 1
            decided = metrics["simcrawl_decision_seconds_count"]
            assert decided == want + copies()  # every decision's latency observed
            assert metrics['simcrawl_decision_seconds_bucket{le="+Inf"}'] == decided
            assert metrics["simcrawl_responses_total"] >= decided
        finally:
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=120) == 0
