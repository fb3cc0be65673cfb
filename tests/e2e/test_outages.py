"""Redis or MongoDB failing mid-crawl: a short outage loses nothing (the crawl waits and
retries); a long one stops the crawl with exit status 1, naming the pages it could not
decide or store, and the next crawl completes the record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler.demosite import DemoSite, build
from dedup.services import EmbeddedServer, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def command(site: DemoSite, tmp: Path, name: str, retry: float) -> list[str]:
    return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
            f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=outage",
            "-s", "DEDUP_NAMESPACE=outage", "-s", "AUTOTHROTTLE_ENABLED=0",
            "-s", "CONCURRENT_REQUESTS=4", "-s", "DOWNLOAD_DELAY=0.02",
            "-s", f"DEDUP_RETRY_SECONDS={retry}", "-s", f"LOG_FILE={tmp / (name + '.log')}",
            "-s", f"DEDUP_SUMMARY_FILE={tmp / (name + '.json')}"]


def wait_for(site: DemoSite, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while len(site.requests) < n and time.monotonic() < deadline:
        assert proc.poll() is None, "the crawl ended too early"
        time.sleep(0.02)


@pytest.mark.parametrize("service", ["redis", "mongo"])
def test_a_short_outage_loses_nothing(tmp_path: Path, service: str, check_record,
                                      reference_crawl) -> None:  # type: ignore[no-untyped-def]
    redis_server, mongo = EmbeddedServer("redis", tmp_path), EmbeddedServer("mongo", tmp_path)
    redis_server.start()
    mongo.start()
    try:
        with DemoSite(build(articles=40, zh_articles=2, novel_chapters=0)) as site:
            env = dict(os.environ, REDIS_URL=redis_server.url, MONGO_URI=mongo.url)
            expected = reference_crawl(site, env, tmp_path)
            start = len(site.requests)
            proc = subprocess.Popen(command(site, tmp_path, "short", 120), cwd=ROOT, env=env)
            wait_for(site, start + 40, proc)
            server = redis_server if service == "redis" else mongo
            port = server.port
            server.kill()  # SIGKILL
            time.sleep(6)
            server.port = port
            server.start()  # back on the same port
            assert proc.wait(timeout=600) == 0, (tmp_path / "short.log").read_text()[-3000:]
            summary = json.loads((tmp_path / "short.json").read_text())
            assert summary["lost_urls"] == []
            assert summary.get("dedup/retries/decide", 0) + summary.get(
                "dedup/retries/store", 0) > 0  # the outage was felt, and waited out
            check_record(connect_mongo(mongo.url)["outage"], site, expected)
    finally:
        redis_server.stop()
        mongo.stop()


def test_a_long_outage_exits_1_naming_the_lost_pages(tmp_path: Path, check_record,
                                                     reference_crawl) -> None:  # type: ignore[no-untyped-def]
    redis_server, mongo = EmbeddedServer("redis", tmp_path), EmbeddedServer("mongo", tmp_path)
    redis_server.start()
    mongo.start()
    try:
        with DemoSite(build(articles=40, zh_articles=2, novel_chapters=0)) as site:
            env = dict(os.environ, REDIS_URL=redis_server.url, MONGO_URI=mongo.url)
            expected = reference_crawl(site, env, tmp_path)
            start = len(site.requests)
            proc = subprocess.Popen(command(site, tmp_path, "long", 2), cwd=ROOT, env=env)
            wait_for(site, start + 40, proc)
            port = mongo.port
            mongo.kill()
            assert proc.wait(timeout=600) == 1  # it stopped by itself, and says why
            summary = json.loads((tmp_path / "long.json").read_text())
            lost = summary["lost_urls"]
            assert lost
            log = (tmp_path / "long.log").read_text()
            assert "could not be decided or stored" in log and lost[0] in log
            mongo.port = port
            mongo.start()
            again = subprocess.run(command(site, tmp_path, "again", 120), cwd=ROOT, env=env,
                                   timeout=600, check=False)
            assert again.returncode == 0, (tmp_path / "again.log").read_text()[-3000:]
            check_record(connect_mongo(mongo.url)["outage"], site, expected)
    finally:
        redis_server.stop()
        mongo.stop()
