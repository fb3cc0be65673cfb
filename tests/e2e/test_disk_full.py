"""A full disk mid-crawl (crawler/disk.py): Redis and MongoDB keep their data on a small
filesystem the test makes (tmpfs, which needs root), and the test fills it while the
crawl runs. Waiting (the default), the crawl says which disk is full, sends no request
until there is room again, then goes on and ends with the record of an undisturbed
crawl; told to stop, it stops with exit status 1 and loses nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build
from dedup.adapters.servers.services import EmbeddedServer, connect_mongo

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting the small filesystem that fills needs root")]
ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
#: The crawl's DEDUP_DISK_MIN_FREE, and what the filler leaves free: under it.
MIN_FREE, LEFT = 32, 12


@dataclass
class Disk:
    """A small filesystem holding the servers' data, the servers, and the site."""

    folder: Path
    mongo: EmbeddedServer
    site: DemoSite
    env: dict[str, str]

    def fill(self) -> Path:
        """Take all of the disk's room but :data:`LEFT` megabytes."""
        st = os.statvfs(self.folder)
        filler = self.folder / "filler"
        with open(filler, "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0, st.f_bavail * st.f_frsize - LEFT * MB)
        return filler


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    folder = tmp_path / "disk"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m", "tmpfs", str(folder)],
                   check=True)
    servers = [EmbeddedServer("redis", folder), EmbeddedServer("mongo", folder)]
    try:
        for server in servers:
            server.start()
        with DemoSite(build(articles=40, zh_articles=2, novel_chapters=0)) as site:
            env = dict(os.environ, REDIS_URL=servers[0].url, MONGO_URI=servers[1].url)
            yield Disk(folder, servers[1], site, env)
    finally:
        for server in servers:
            server.stop()
        subprocess.run(["umount", "-l", str(folder)], check=False)


def crawl(d: Disk, tmp: Path, name: str, *settings: str) -> subprocess.Popen:
    """Start a crawl whose disk guard watches the servers' disk; return once it has
    fetched 30 pages."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
         f"start_urls={d.site.start_urls()[0]}", "-s", f"DEDUP_DATABASE={name}",
         "-s", f"DEDUP_NAMESPACE={name}", "-s", "AUTOTHROTTLE_ENABLED=0",
         "-s", "CONCURRENT_REQUESTS=4", "-s", "DOWNLOAD_DELAY=0.05",
         "-s", f"DEDUP_DISK_WATCH={d.folder}", "-s", f"DEDUP_DISK_MIN_FREE={MIN_FREE}",
         "-s", f"LOG_FILE={tmp / (name + '.log')}",
         "-s", f"DEDUP_SUMMARY_FILE={tmp / (name + '.json')}", *settings],
        cwd=ROOT, env=d.env)
    deadline = time.monotonic() + 120
    while len(d.site.requests) < 30 and time.monotonic() < deadline:
        assert proc.poll() is None, "the crawl ended too early"
        time.sleep(0.02)
    return proc


def said(log: Path, text: str, proc: subprocess.Popen, within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text():
            return
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not said in {within} s: {log.read_text()[-3000:]}")


def test_a_full_disk_is_waited_out_and_the_crawl_ends_as_an_undisturbed_one(
        tmp_path: Path, disk: Disk, reference_crawl, check_record, adds_up) -> None:  # type: ignore[no-untyped-def]
    expected = reference_crawl(disk.site, disk.env, tmp_path)
    disk.site.requests.clear()
    progress = tmp_path / "progress.json"  # what ./simcrawl's live line shows
    proc = crawl(disk, tmp_path, "full", "-s", f"SIMCRAWL_PROGRESS_FILE={progress}",
                 "-s", "SIMCRAWL_PROGRESS_SECONDS=0.5")
    filler = disk.fill()
    log = tmp_path / "full.log"
    said(log, f"the disk holding {disk.folder} is full", proc)
    assert "DEDUP_DISK_FULL=wait" in log.read_text()
    time.sleep(1.5)  # the requests in flight end
    asked = len(disk.site.requests)
    time.sleep(4)  # more than Scrapy's heartbeat (5 s from the pause): none is sent
    assert len(disk.site.requests) == asked and proc.poll() is None
    assert json.loads(progress.read_text())["disk_full"] == str(disk.folder)
    filler.unlink()
    said(log, f"the disk holding {disk.folder} has room again", proc)
    assert proc.wait(timeout=300) == 0, log.read_text()[-3000:]
    summary = json.loads((tmp_path / "full.json").read_text())
    assert summary["lost_urls"] == [] and adds_up(summary)
    assert summary["dedup/disk/full"] == 1 and summary["dedup/disk/waited_seconds"] >= 4
    check_record(connect_mongo(disk.mongo.url)["full"], disk.site, expected)


def test_a_full_disk_stops_the_crawl_when_told_and_loses_nothing(
        tmp_path: Path, disk: Disk, adds_up) -> None:  # type: ignore[no-untyped-def]
    proc = crawl(disk, tmp_path, "stop", "-s", "DEDUP_DISK_FULL=stop")
    disk.fill()
    assert proc.wait(timeout=120) == 1
    log = (tmp_path / "stop.log").read_text()
    assert f"the disk holding {disk.folder} is full" in log
    assert "stopping the crawl (DEDUP_DISK_FULL=stop)" in log and "Traceback" not in log
    summary = json.loads((tmp_path / "stop.json").read_text())
    assert summary["finish_reason"] == "disk_full"
    assert summary["lost_urls"] == [] and adds_up(summary)
    assert summary["dedup/stored/pages"] > 0
