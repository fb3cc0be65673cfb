"""simcrawl's ``scrapy crawl`` command sets up the crawl process before Scrapy builds the
crawl: its garbage collector's threshold (SIMCRAWL_GC_THRESHOLD) and the extraction
workers' fork server."""

from __future__ import annotations

import subprocess
import sys

import pytest

SETUP = """
import argparse, gc, sys
from scrapy.settings import Settings
from crawler.commands.crawl import Command
cmd = Command()
cmd.settings = Settings({settings!r})
parser = argparse.ArgumentParser()
cmd.add_options(parser)
cmd.process_options([], parser.parse_args([]))
import os, time
def fork_server():
    kids = open(f"/proc/{{os.getpid()}}/task/{{os.getpid()}}/children").read().split()
    return any(b"forkserver" in open(f"/proc/{{k}}/cmdline", "rb").read() for k in kids)
# a child started by fork shows its own command line once it has exec'd: on a busy
# machine that can take a moment after the command returns
deadline = time.monotonic() + (10 if {settings!r}.get("DEDUP_EXTRACT_WORKERS") != "0" else 0)
while not fork_server() and time.monotonic() < deadline:
    time.sleep(0.05)
print(gc.get_threshold()[0], fork_server())
"""


def process_options(settings: dict) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-c", SETUP.format(settings=settings)],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize(("settings", "threshold"), [
    ({}, "50000"), ({"SIMCRAWL_GC_THRESHOLD": "1234"}, "1234"),
    ({"SIMCRAWL_GC_THRESHOLD": "0"}, "700")])  # 0: Python's own
def test_the_crawl_process_collects_garbage_less_often(settings: dict, threshold: str) -> None:
    done = process_options({**settings, "DEDUP_EXTRACT_WORKERS": "0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [threshold, "False"]  # no workers: no fork server


def test_a_bad_threshold_is_named() -> None:
    done = process_options({"SIMCRAWL_GC_THRESHOLD": "lots", "DEDUP_EXTRACT_WORKERS": "0"})
    assert done.returncode != 0 and "SIMCRAWL_GC_THRESHOLD must be an integer, got 'lots'" in done.stderr


def test_the_workers_fork_server_starts_before_the_crawl_is_built() -> None:
    done = process_options({"DEDUP_EXTRACT_WORKERS": "1"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["50000", "True"]
