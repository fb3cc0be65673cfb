"""Redis or MongoDB failing mid-crawl: a short outage loses nothing (the crawl waits and
retries); a long one stops the crawl with exit status 1, naming the pages it could not
decide or store, and the next crawl completes the record."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build
from dedup.adapters.servers.services import EmbeddedServer, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def command(site: DemoSite, tmp: Path, name: str, retry: float, frontier: str = "memory"
            ) -> list[str]:
    return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
            f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=outage",
            "-s", "DEDUP_NAMESPACE=outage", "-s", "AUTOTHROTTLE_ENABLED=0",
            "-s", "CONCURRENT_REQUESTS=4", "-s", "DOWNLOAD_DELAY=0.02",
            "-s", f"DEDUP_RETRY_SECONDS={retry}", "-s", f"LOG_FILE={tmp / (name + '.log')}",
            "-s", f"DEDUP_SUMMARY_FILE={tmp / (name + '.json')}",
            "-s", f"SIMCRAWL_FRONTIER={frontier}"]


def wait_for(site: DemoSite, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 120
    while len(site.requests) < n and time.monotonic() < deadline:
        assert proc.poll() is None, "the crawl ended too early"
        time.sleep(0.02)


@dataclass
class Setup:
    """Servers the test can kill and restart, the site, the environment of a crawl on
    them, and what an uninterrupted crawl of the site ends with."""

    redis: EmbeddedServer
    mongo: EmbeddedServer
    site: DemoSite
    env: dict[str, str]
    expected: tuple


@pytest.fixture
def setup(tmp_path: Path, reference_crawl) -> Iterator[Setup]:  # type: ignore[no-untyped-def]
    redis_server, mongo = EmbeddedServer("redis", tmp_path), EmbeddedServer("mongo", tmp_path)
    redis_server.start()
    mongo.start()
    try:
        with DemoSite(build(articles=40, zh_articles=2, novel_chapters=0)) as site:
            env = dict(os.environ, REDIS_URL=redis_server.url, MONGO_URI=mongo.url)
            yield Setup(redis_server, mongo, site, env, reference_crawl(site, env, tmp_path))
    finally:
        redis_server.stop()
        mongo.stop()


def start_crawl(s: Setup, tmp: Path, name: str, retry: float, frontier: str = "memory"
                ) -> subprocess.Popen:
    """Start a crawl and return once it has fetched 40 pages."""
    start = len(s.site.requests)
    proc = subprocess.Popen(command(s.site, tmp, name, retry, frontier), cwd=ROOT,
                            env=s.env)
    wait_for(s.site, start + 40, proc)
    return proc


def restart(server: EmbeddedServer, port: int) -> None:
    server.port = port
    server.start()  # back on the same port


@pytest.mark.parametrize("service", ["redis", "mongo"])
def test_a_short_outage_loses_nothing(tmp_path: Path, service: str, setup: Setup,
                                      check_record, adds_up) -> None:  # type: ignore[no-untyped-def]
    proc = start_crawl(setup, tmp_path, "short", 120)
    server = setup.redis if service == "redis" else setup.mongo
    port = server.port or 0
    server.kill()  # SIGKILL
    time.sleep(6)
    restart(server, port)
    assert proc.wait(timeout=600) == 0, (tmp_path / "short.log").read_text()[-3000:]
    summary = json.loads((tmp_path / "short.json").read_text())
    assert summary["lost_urls"] == []
    assert adds_up(summary)  # every request taken: a page decided or a skip, once
    assert summary.get("dedup/retries/decide", 0) + summary.get(
        "dedup/retries/store", 0) > 0  # the outage was felt, and waited out
    # the recovery names the service that failed, and only that one
    log = (tmp_path / "short.log").read_text()
    failed, other = ("Redis", "MongoDB") if service == "redis" else ("MongoDB", "Redis")
    assert f"{failed} answers again after" in log
    assert f"{other} answers again" not in log and "Redis and MongoDB answer" not in log
    # the outage is said once, then once more with the count when it is over, never a
    # line per failed attempt
    recovery = re.search(rf"{failed} answers again after [0-9.]+ s \(([0-9,]+) attempts? "
                         r"failed\)", log)
    assert recovery and int(recovery.group(1).replace(",", "")) >= 1
    said = Counter(re.sub(r"[0-9]+", "N", line.split("] ", 1)[-1])
                   for line in log.splitlines() if " WARNING: " in line or " ERROR: " in line)
    assert max(said.values()) == 1, said.most_common(3)
    check_record(connect_mongo(setup.mongo.url)["outage"], setup.site, setup.expected)


@pytest.mark.parametrize("frontier", ["memory", "redis"])
def test_a_long_outage_exits_1_naming_the_lost_pages(tmp_path: Path, setup: Setup,
                                                     check_record, frontier: str) -> None:  # type: ignore[no-untyped-def]
    # with the shared frontier, an admitted page's links wait for its record: the crawl
    # that gave up waited for those pages' responses forever (until the periodic write
    # gave the buffer up too)
    proc = start_crawl(setup, tmp_path, "long", 2, frontier)
    port = setup.mongo.port or 0
    setup.mongo.kill()
    assert proc.wait(timeout=120) == 1  # it stopped by itself, and says why
    summary = json.loads((tmp_path / "long.json").read_text())
    lost = summary["lost_urls"]
    assert lost
    log = (tmp_path / "long.log").read_text()
    assert "could not be decided or stored" in log and lost[0] in log
    restart(setup.mongo, port)
    again = subprocess.run(command(setup.site, tmp_path, "again", 120, frontier), cwd=ROOT,
                           env=setup.env, timeout=600, check=False)
    assert again.returncode == 0, (tmp_path / "again.log").read_text()[-3000:]
    check_record(connect_mongo(setup.mongo.url)["outage"], setup.site, setup.expected)


def test_a_crawl_forced_out_while_it_waits_for_a_service_exits_130(
        tmp_path: Path, setup: Setup) -> None:
    """Ctrl-C while MongoDB is down: the crawl waits to write its last pages; a second
    Ctrl-C forces it out before it closed, and that never exits 0 (130, interrupted)."""
    proc = start_crawl(setup, tmp_path, "forced", 120)
    setup.mongo.kill()
    time.sleep(1)
    proc.send_signal(signal.SIGINT)  # a clean stop: it waits for MongoDB to write
    time.sleep(2)
    assert proc.poll() is None, "it closed without waiting for MongoDB"
    proc.send_signal(signal.SIGINT)  # Scrapy's forced shutdown
    assert proc.wait(timeout=120) == 130
    log = (tmp_path / "forced.log").read_text()
    assert "forcing unclean shutdown" in log and "forced out before it closed" in log


def test_redis_out_of_memory_is_waited_out_and_then_given_up_naming_the_lost_pages(
        tmp_path: Path, setup: Setup, check_record, adds_up) -> None:  # type: ignore[no-untyped-def]
    """Redis at its ``maxmemory`` refuses every write (OOM): up, but not serving the
    crawl. The crawl treats it as an outage (waits, then gives up with exit status 1,
    naming the pages it could not decide); none is dropped unsaid. With memory again, the
    next crawl completes the record."""
    import redis

    client = redis.Redis.from_url(setup.redis.url)
    proc = start_crawl(setup, tmp_path, "oom", 2)
    client.config_set("maxmemory", 1)  # noeviction (the default): writes are refused
    try:
        assert proc.wait(timeout=600) == 1, (tmp_path / "oom.log").read_text()[-3000:]
    finally:
        client.config_set("maxmemory", 0)
    summary = json.loads((tmp_path / "oom.json").read_text())
    assert summary["lost_urls"] and adds_up(summary)
    log = (tmp_path / "oom.log").read_text()
    assert "maxmemory" in log and summary["lost_urls"][0] in log
    assert "Spider error" not in log and "Traceback" not in log
    again = subprocess.run(command(setup.site, tmp_path, "again", 120), cwd=ROOT, env=setup.env,
                           timeout=600, check=False)
    assert again.returncode == 0, (tmp_path / "again.log").read_text()[-3000:]
    check_record(connect_mongo(setup.mongo.url)["outage"], setup.site, setup.expected)


def test_a_decision_refused_for_another_reason_stops_the_crawl_naming_the_lost_pages(
        tmp_path: Path, setup: Setup, check_record, adds_up) -> None:  # type: ignore[no-untyped-def]
    """A Redis user that may read the index's tables but not write them (an ACL): every
    new page's decision is refused (NOPERM), which is no outage, and would be refused
    for every page after it. The crawl says why once, stops with exit status 1 and names
    the pages it could not decide, each counted (none left as a spider error); with the
    permission given, the next crawl completes the record."""
    import redis

    admin = redis.Redis.from_url(setup.redis.url)
    admin.acl_setuser("crawler", enabled=True, passwords=["+secret"], commands=["+@all"],
                      keys=["~outage:[^t]*", "~outage:tpl*", "%R~outage:t*"])
    env = dict(setup.env, REDIS_URL=setup.redis.url.replace("redis://",
                                                            "redis://crawler:secret@"))
    try:
        done = subprocess.run(command(setup.site, tmp_path, "acl", 120), cwd=ROOT, env=env,
                              timeout=600, check=False)
    finally:
        admin.acl_deluser("crawler")
    log = (tmp_path / "acl.log").read_text()
    assert done.returncode == 1, log[-3000:]
    summary = json.loads((tmp_path / "acl.json").read_text())
    assert summary["lost_urls"] and adds_up(summary)
    assert summary["dedup/errors/decide"] >= 1
    assert "NoPermissionError" in log and summary["lost_urls"][0] in log
    assert "Spider error" not in log
    assert log.count("Traceback") == 1  # said once
    again = subprocess.run(command(setup.site, tmp_path, "again", 120), cwd=ROOT, env=setup.env,
                           timeout=600, check=False)
    assert again.returncode == 0, (tmp_path / "again.log").read_text()[-3000:]
    check_record(connect_mongo(setup.mongo.url)["outage"], setup.site, setup.expected)
