"""The record stays true across kills: a crawler SIGKILLed at several moments (with
admitted pages still buffered), then a full re-crawl, leaves exactly one stored page per
copy group, every match naming a stored page, and no extraction worker behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def crawl_command(site: DemoSite, name: str, log: Path) -> list[str]:
    # A long flush interval keeps many admitted pages buffered at any moment: the window
    # in which a kill used to lose them.
    return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
            f"start_urls={site.start_urls()[0]}", "-s", f"DEDUP_DATABASE={name}",
            "-s", f"DEDUP_NAMESPACE={name}", "-s", "AUTOTHROTTLE_ENABLED=0",
            "-s", "CONCURRENT_REQUESTS=4", "-s", "DEDUP_FLUSH_SECONDS=5",
            "-s", "DEDUP_EXTRACT_WORKERS=2", "-s", f"LOG_FILE={log}"]


def processes_with(marker: str) -> list[int]:
    """Processes whose environment holds ``marker`` (the crawl and its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("stop", ["SIGKILL", "double SIGINT"])
def test_kills_then_a_recrawl_leave_one_page_per_copy_group(tmp_path: Path, stop: str,
                                                            check_record, reference_crawl
                                                            ) -> None:  # type: ignore[no-untyped-def]
    content = build(articles=60, zh_articles=2, novel_chapters=0)
    name = "kills"
    marker = f"SIMCRAWL_TEST_MARK={uuid.uuid4().hex}"
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        env[marker.split("=")[0]] = marker.split("=")[1]
        db = connect_mongo(services.mongo_uri)[name]
        expected = reference_crawl(site, env, tmp_path)
        for n, moment in enumerate((12, 45, 90)):
            before = len(site.requests)
            proc = subprocess.Popen(crawl_command(site, name, tmp_path / f"{n}.log"),
                                    cwd=ROOT, env=env)
            deadline = time.monotonic() + 120
            while len(site.requests) < before + moment and time.monotonic() < deadline:
                assert proc.poll() is None, "the crawl ended before the kill"
                time.sleep(0.02)
            if stop == "SIGKILL":
                proc.kill()
            else:  # Scrapy's forced shutdown: the second Ctrl-C
                proc.send_signal(signal.SIGINT)
                time.sleep(0.3)
                proc.send_signal(signal.SIGINT)
            status = proc.wait(timeout=60)
            log = (tmp_path / f"{n}.log").read_text()
            forced, closed = log.find("forcing unclean shutdown"), log.find("dedup summary")
            if forced >= 0:  # forced out before it closed: never "done"; a crawl whose
                # close had begun may still finish it (its summary logged after the
                # forced line) and then it is done
                assert status == (0 if closed >= 0 else 130), (status, forced, closed)
            deadline = time.monotonic() + 15
            while processes_with(marker) and time.monotonic() < deadline:
                time.sleep(0.2)
            assert processes_with(marker) == [], "processes of the killed crawl linger"
        done = subprocess.run(crawl_command(site, name, tmp_path / "last.log"), cwd=ROOT,
                              env=env, timeout=600, check=False)
        assert done.returncode == 0, (tmp_path / "last.log").read_text()[-3000:]
        check_record(db, site, expected)
        log = (tmp_path / "last.log").read_text()
        assert "recovered" in log or stop != "SIGKILL"
        # no crawl is left "running": the killed ones are marked interrupted by the next
        states = [d.get("state") for d in db["crawls"].find()]
        assert "running" not in states and "finished" in states, states
        if stop == "SIGKILL":
            assert states.count("interrupted") == 3, states
            assert "marked interrupted" in log


def test_a_killed_process_of_a_shared_crawl_does_not_hide_the_others(tmp_path: Path) -> None:
    # `simcrawl crawl URL --processes 2`, one crawl process SIGKILLed: the command prints
    # each process's outcome and the totals of the one that finished, and exits 1.
    import psutil

    content = build(articles=6, zh_articles=0, novel_chapters=0)
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        wrapper = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "crawl", site.start_urls()[0], "--processes", "2",
             "--data-dir", str(tmp_path / "run")], cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while len(site.requests) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        crawls = [p for p in psutil.Process(wrapper.pid).children()
                  if "crawl" in " ".join(p.cmdline()) and "scrapy" in " ".join(p.cmdline())]
        assert len(crawls) == 2
        crawls[1].kill()
        out, err = wrapper.communicate(timeout=300)
    assert wrapper.returncode == 1, err
    assert "process 2" in out and "ended without a summary (exit status -9)" in out
    assert "finished" in out and "pages handled" in out
    fetched = int(next(line.split("responses downloaded", 1)[1].split()[0]
                       for line in out.splitlines()
                       if line.strip().startswith("responses downloaded")))
    assert fetched > 0  # the finished process's totals, not discarded
    assert "crawl processes ended without a summary" in err
