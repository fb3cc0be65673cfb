"""Ctrl-C on a crawl (issue 72 item 9): it stops within its bound, prints what it did,
and says truly what became of the embedded services."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, Page, build
from crawler.pipelines import summary_adds_up
from dedup.adapters.servers.services import EmbeddedServices, connect_redis

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _as_from_a_terminal() -> None:
    # Ctrl-C's default disposition: a test run started as a background job of a shell
    # without job control has SIGINT ignored, and children inherit that
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def stop_while_fetching(site: DemoSite, data: Path, path: str, *settings: str
                        ) -> tuple[subprocess.Popen, str, str, float]:
    """Crawl the news site from ``path`` and its home page, send Ctrl-C once ``path``
    was requested and the home page's links are on their way, and wait for the command:
    (the process, its stdout, its stderr, seconds from the Ctrl-C to its end)."""
    base = site.url("news")
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawler.cli", "crawl", f"{base}{path}", f"{base}/",
         "--data-dir", str(data), "-s", "AUTOTHROTTLE_ENABLED=0",
         *(x for setting in settings for x in ("-s", setting))],
        cwd=ROOT, env=dict(os.environ, REDIS_URL="", MONGO_URI=""),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_as_from_a_terminal)  # noqa: PLW1509
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
                f"news{path}" in site.requests and len(site.requests) >= 8):
            time.sleep(0.1)
        assert f"news{path}" in site.requests, site.requests
        time.sleep(1.0)  # the pages fetched are decided meanwhile
        stopped = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=150)
        return proc, out, err, time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_crawl_stopped_with_a_page_in_flight_ends_within_its_bound_and_says_what_it_did(
        tmp_path: Path) -> None:
    """A page whose server answers after two minutes is in flight when Ctrl-C comes: the
    crawl gets ``SIMCRAWL_STOP_SECONDS`` (3 here) to finish, is then forced out, and the
    command prints what was done, says the crawl was forced out, and leaves the
    embedded services up for the process that still uses them (this test): it said
    "the embedded services are stopped" even then, and waited on the slow page."""
    content = build(articles=6, zh_articles=0, novel_chapters=0)
    content.pages["news"]["/slow.html"] = Page(b"<html><body><p>At last.</p></body></html>",
                                               delay=120)
    data = tmp_path / "data"
    with EmbeddedServices(data) as held, DemoSite(content) as site:
        proc, out, err, took = stop_while_fetching(site, data, "/slow.html",
                                                   "SIMCRAWL_STOP_SECONDS=3")
        assert proc.returncode == 130, out + err
        assert "Traceback" not in err
        # the bound held: 3 s, then forced out (killed 10 s later at most), not the two
        # minutes the slow page would have kept it
        assert took < 60, took
        assert "stopping: the crawl finishes what is in flight" in err
        assert "did not stop within SIMCRAWL_STOP_SECONDS and was forced out" in err
        # what was done: the forced process left no summary, so its last counters
        done = next(line for line in out.splitlines() if "what was done:" in line)
        assert "admitted" in done and "admitted 0 " not in done, out
        # the services serve this test still: up, and said so
        assert "the embedded services stay up: other processes use them" in err
        assert connect_redis(held.redis_url or "").ping()


def test_a_stopped_crawl_without_a_page_in_flight_prints_its_summary(tmp_path: Path) -> None:
    """The same stop with nothing slow: the crawl stops cleanly within the bound, and
    the command prints its summary (it printed none) and exits 130; the services it
    started alone are stopped, as it says."""
    content = build(articles=12, zh_articles=0, novel_chapters=0)
    data = tmp_path / "data"
    with DemoSite(content) as site:
        base = site.url("news")
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawler.cli", "crawl", f"{base}/", "--data-dir",
             str(data), "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "DOWNLOAD_DELAY=0.3",
             "-s", f"DEDUP_SUMMARY_FILE={tmp_path / 'summary.json'}"],
            cwd=ROOT, env=dict(os.environ, REDIS_URL="", MONGO_URI=""),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=_as_from_a_terminal)  # noqa: PLW1509
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(site.requests) < 6:
                time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=150)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert "admitted (unique)" in out and "requests" in out  # the summary of what it did
    assert "STOPPED before the end" in out and "shutdown" in out
    # the requests waiting for their download delay were put back, not fetched one by
    # one through the stop
    assert "put back unsent when the crawl stopped" in out, out
    assert "put back (not sent): http://" in _log_of(out)  # each named
    # and the summary adds up with them: each request taken decided, skipped, lost or
    # put back (the chaos runs found summaries 8 requests short, one for each put back)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["dedup/put_back"] > 0 and summary_adds_up(summary), summary
    assert "requests (all accounted for)" in out, out
    assert "forced out" not in err
    assert "interrupted: the pages it had not reached were not fetched" in err
    assert "the embedded services are stopped" in err
    assert not (data / "services.json").exists()


def test_a_download_that_drips_is_cut_at_half_the_bound_and_put_back(tmp_path: Path) -> None:
    """A page whose body drips in a byte a second is being downloaded when Ctrl-C comes:
    at half of ``SIMCRAWL_STOP_SECONDS`` (8 s here) the crawl cuts it and puts it back,
    then closes by itself with its summary: it is not forced out (it was, the download
    running on until the bound)."""
    content = build(articles=6, zh_articles=0, novel_chapters=0)
    content.pages["news"]["/drip.html"] = Page(
        b"<html><body>" + b"<p>one byte at a time</p>" * 20 + b"</body></html>", drip=1.0)
    data = tmp_path / "data"
    with DemoSite(content) as site:
        proc, out, err, _ = stop_while_fetching(site, data, "/drip.html",
                                                "SIMCRAWL_STOP_SECONDS=8")
    assert proc.returncode == 130, out + err
    assert "Traceback" not in err
    assert "forced out" not in err, err
    assert "STOPPED before the end" in out, out
    assert "put back unsent when the crawl stopped" in out, out
    said = _log_of(out)
    assert "1 downloads still running after 4 s (half of SIMCRAWL_STOP_SECONDS) are cut" \
        in said, said[-3000:]
    assert "put back (its download cut): http://" in said and "/drip.html" in said


def _log_of(out: str) -> str:
    """The crawl's log, which the command names as it starts (``crawling ... (log: PATH)``)."""
    named = next(line for line in out.splitlines() if "(log: " in line).split("(log: ")[1]
    return Path(named.split(")")[0]).read_text()
