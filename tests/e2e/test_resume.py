"""A crawl stopped half-way (SIGINT) and resumed from its JOBDIR ends like an
uninterrupted one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def command(site: DemoSite, name: str, tmp: Path, jobdir: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
           f"start_urls={site.start_urls()[0]}", "-s", f"DEDUP_DATABASE={name}",
           "-s", f"DEDUP_NAMESPACE={name}", "-s", "AUTOTHROTTLE_ENABLED=0",
           "-s", "DOWNLOAD_DELAY=0.05", "-s", "CONCURRENT_REQUESTS=2",
           "-s", f"LOG_FILE={tmp / (name + '.log')}"]
    return cmd + (["-s", f"JOBDIR={jobdir}"] if jobdir else [])


def outcome(db) -> tuple[set, set]:  # type: ignore[no-untyped-def]
    return ({p["url"] for p in db.pages.find({})},
            {(m["url"], m["original_url"], m["kind"]) for m in db.matches.find({})})


def test_interrupted_and_resumed_crawl_ends_like_an_uninterrupted_one(  # type: ignore[no-untyped-def]
        tmp_path: Path, register_corpus) -> None:
    with EmbeddedServices(tmp_path / "data") as services, DemoSite() as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        mongo = connect_mongo(services.mongo_uri)
        for name in ("whole", "parts"):
            assert register_corpus(site, services, tmp_path, name).returncode == 0
        subprocess.run(command(site, "whole", tmp_path, None), cwd=ROOT, env=env, check=True,
                       timeout=600)
        expected = outcome(mongo["whole"])
        jobdir = tmp_path / "job"
        before = len(site.requests)
        proc = subprocess.Popen(command(site, "parts", tmp_path, jobdir), cwd=ROOT, env=env)
        deadline = time.monotonic() + 120
        while len(site.requests) < before + 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)  # a graceful stop, as Ctrl-C
        assert proc.wait(timeout=120) == 0
        stopped = outcome(mongo["parts"])
        assert 0 < len(stopped[0]) + len(stopped[1]) < len(expected[0]) + len(expected[1])
        subprocess.run(command(site, "parts", tmp_path, jobdir), cwd=ROOT, env=env, check=True,
                       timeout=600)
        pages, matches = outcome(mongo["parts"])
        assert pages == expected[0]
        assert matches == expected[1]
        assert not any(t in site.requests for t in site.content.expected.traps)


def test_a_forced_shutdown_is_not_resumed_empty(tmp_path: Path, check_record,
                                                reference_crawl) -> None:  # type: ignore[no-untyped-def]
    """A double Ctrl-C loses Scrapy's queue but keeps its seen-requests file: the resume
    must re-seed the job, not end "finished" with pages never fetched."""
    from crawler.examples.demosite import build

    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(novel_chapters=0)) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        expected = reference_crawl(site, env, tmp_path)
        jobdir = tmp_path / "job"
        before = len(site.requests)
        proc = subprocess.Popen(command(site, "forced", tmp_path, jobdir), cwd=ROOT, env=env)
        deadline = time.monotonic() + 120
        while len(site.requests) < before + 15 and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.02)
        proc.send_signal(signal.SIGINT)  # the forced shutdown, while it closes
        proc.wait(timeout=120)
        subprocess.run(command(site, "forced", tmp_path, jobdir), cwd=ROOT, env=env, check=True,
                       timeout=600)
        assert "did not close cleanly" in (tmp_path / "forced.log").read_text()
        check_record(connect_mongo(services.mongo_uri)["forced"], site, expected)
        # a clean stop is resumed as before: the marker is gone
        assert not (jobdir / "simcrawl.running").exists()
