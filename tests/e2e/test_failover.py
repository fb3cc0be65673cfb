"""A Redis Cluster primary killed under a shared crawl (three primaries, three replicas,
two crawl processes): the replica takes over, every process keeps going through the
outage (the frontier's Redis calls wait and retry as the decisions do), each ends by
itself with its summary, and the record is the one an undisturbed crawl gives."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build_groups
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = "{failover}"


def crawl(site: DemoSite, tmp: Path, n: int) -> list[str]:
    return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
            f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=failover", "-s",
            f"DEDUP_NAMESPACE={NAMESPACE}", "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
            "SIMCRAWL_FRONTIER=redis", "-s", "SIMCRAWL_IDLE_SECONDS=2", "-s",
            "DOWNLOAD_DELAY=0.01", "-s", "CONCURRENT_REQUESTS=4",
            "-s", "DEDUP_RETRY_SECONDS=120", "-s", f"LOG_FILE={tmp / f'failover-{n}.log'}",
            "-s", f"DEDUP_SUMMARY_FILE={tmp / f'failover-{n}.json'}"]


def test_a_primary_killed_mid_crawl_fails_over_and_the_crawl_goes_on(
        tmp_path: Path, redis_cluster_with_replicas, check_exact_groups,
        adds_up) -> None:  # type: ignore[no-untyped-def]
    nodes = redis_cluster_with_replicas
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build_groups(150)) as site:
        env = dict(os.environ, REDIS_URL=nodes.url, MONGO_URI=services.mongo_uri)
        procs = [subprocess.Popen(crawl(site, tmp_path, n), cwd=ROOT, env=env)
                 for n in range(2)]
        deadline = time.monotonic() + 120
        while len(site.requests) < 60 and time.monotonic() < deadline:
            assert all(p.poll() is None for p in procs), "a crawl ended too early"
            time.sleep(0.02)
        at_kill = len(site.requests)
        nodes.kill(nodes.primary_of(f"{NAMESPACE}:layout"))  # the crawl's one slot
        try:
            codes = [p.wait(timeout=300) for p in procs]
        finally:
            for p in procs:
                p.kill()
        logs = [(tmp_path / f"failover-{n}.log").read_text() for n in range(2)]
        assert codes == [0, 0], "\n".join(log[-3000:] for log in logs)
        for log in logs:
            assert "Unhandled error" not in log and "Traceback" not in log, log[-3000:]
            assert "the crawl is complete" in log
        # each process wrote its summary, and the outage was felt and waited out
        summaries = [json.loads((tmp_path / f"failover-{n}.json").read_text())
                     for n in range(2)]
        assert all(s["lost_urls"] == [] for s in summaries)
        assert all(adds_up(s) for s in summaries), summaries
        # the primary died mid-crawl and the crawl went on: pages were requested after it.
        # (Whether a process felt the outage is timing: redis-py's cluster client retries a
        # refused connection on the new topology itself when the replica is promoted in
        # time, and the crawl then logs no outage at all; it did so on a quiet machine.)
        assert len(site.requests) > at_kill, "the crawl had ended before the kill"
        db = connect_mongo(services.mongo_uri)["failover"]
        check_exact_groups(db, site)
        assert {c["state"] for c in db.crawls.find({})} == {"finished"}  # none left running
        fetched = collections.Counter(r for r in site.requests if not r.endswith("robots.txt"))
        assert fetched, "nothing was crawled"
