"""A crawl that cannot start says why in one line, with an exit status that says what
kind of problem it is; it never prints a traceback."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite
from dedup.adapters.servers.services import EmbeddedServices, free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def scrapy_crawl(tmp: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scrapy", "crawl", "site", *args,
                           "-s", f"LOG_FILE={tmp / 'crawl.log'}",
                           "-s", f"DEDUP_DATA_DIR={tmp / 'data'}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                          env=env or dict(os.environ, REDIS_URL="", MONGO_URI=""))


@pytest.mark.parametrize("args,env,status,message", [
    (["-a", "start_urls=http://127.0.0.1:9/", "-s", "DEDUP_MAX_DISTANCE=x"], {}, 2,
     "DEDUP_MAX_DISTANCE must be an integer, got 'x'"),
    ([], {}, 2, "give http(s) start URLs"),
    # Scrapy's own settings, judged before the crawl starts anything (it failed where a
    # component read one, naming no setting, or with the downloader's tracebacks)
    (["-a", "start_urls=http://127.0.0.1:9/", "-s", "DEPTH_LIMIT=abc"], {}, 2,
     "DEPTH_LIMIT must be a whole number, got 'abc'"),
    (["-a", "start_urls=http://127.0.0.1:9/", "-s", "DOWNLOAD_TIMEOUT=-5"], {}, 2,
     "DOWNLOAD_TIMEOUT must be above 0, got '-5'"),
    (["-a", "start_urls=http://127.0.0.1:9/"], {"MONGO_URI": "garbage"}, 2,
     "MONGO_URI 'garbage' is not a MongoDB URI"),
    (["-a", "start_urls=http://127.0.0.1:9/", "-s", "DEDUP_START_WAIT=0"],
     {"REDIS_URL": "redis://127.0.0.1:{port}/0"}, 3,
     "Redis at redis://127.0.0.1:{port}/0 is unreachable"),
])
def test_start_errors_are_one_line(tmp_path: Path, args: list[str], env: dict, status: int,
                                   message: str) -> None:
    port = str(free_port())
    environ = dict(os.environ, REDIS_URL="", MONGO_URI="")
    environ.update({k: v.replace("{port}", port) for k, v in env.items()})
    started = time.monotonic()
    done = scrapy_crawl(tmp_path, *args, env=environ)
    assert done.returncode == status, done.stderr
    assert done.stderr.startswith(f"error: {message.replace('{port}', port)}")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    log = tmp_path / "crawl.log"  # none when the crawl was refused before its logging
    assert not log.exists() or "Task exception was never retrieved" not in log.read_text()
    assert time.monotonic() - started < 30  # a malformed URI is refused at once


def test_a_server_that_answers_within_the_start_wait_is_waited_for(tmp_path: Path) -> None:
    """A crawl process started while its MongoDB is frozen exited 3 at once; it tries
    again for DEDUP_START_WAIT seconds, says so in its log, and crawls once the server
    answers; past the wait it exits 3 with the server's one line."""
    with EmbeddedServices(tmp_path / "servers") as services, DemoSite() as site:
        mongo_pid = services.servers["mongo"].pid
        assert mongo_pid
        env = dict(os.environ, REDIS_URL=services.redis_url or "",
                   MONGO_URI=services.mongo_uri or "")
        args = ["-a", f"start_urls={site.start_urls()[0]}", "-s", "DEPTH_LIMIT=0",
                "-s", "DEDUP_DATABASE=waited"]
        os.kill(mongo_pid, signal.SIGSTOP)  # frozen as the crawl starts
        try:
            crawl = subprocess.Popen([sys.executable, "-m", "scrapy", "crawl", "site", *args,
                                      "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
            log = tmp_path / "crawl.log"  # frozen until the crawl says it waits (a loaded
            deadline = time.monotonic() + 120  # machine takes longer than a quiet one)
            while time.monotonic() < deadline and crawl.poll() is None and not (
                    log.exists() and "(DEDUP_START_WAIT)" in log.read_text()):
                time.sleep(0.2)
            time.sleep(1)  # and a second more of waiting
        finally:
            os.kill(mongo_pid, signal.SIGCONT)
        _, err = crawl.communicate(timeout=300)
        assert crawl.returncode == 0, err
        said = (tmp_path / "crawl.log").read_text()
        assert "trying again for up to 30 s (DEDUP_START_WAIT)" in said
        os.kill(mongo_pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            done = scrapy_crawl(tmp_path, *args, "-s", "DEDUP_START_WAIT=3", env=env)
        finally:
            os.kill(mongo_pid, signal.SIGCONT)
        assert done.returncode == 3, done.stderr
        assert time.monotonic() - started >= 3
        assert done.stderr.startswith("error: MongoDB at ") and done.stderr.count("\n") == 1


def test_a_second_crawl_on_a_live_namespace_is_refused(tmp_path: Path) -> None:
    with EmbeddedServices(tmp_path / "services") as services, DemoSite() as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        slow = subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
             f"start_urls={site.start_urls()[0]}", "-s", "DOWNLOAD_DELAY=2", "-s",
             "AUTOTHROTTLE_ENABLED=0", "-s", "DEDUP_NAMESPACE=shared", "-s",
             f"LOG_FILE={tmp_path / 'first.log'}"], cwd=ROOT, env=env)
        try:
            deadline = time.monotonic() + 60
            while not site.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            second = scrapy_crawl(tmp_path, "-a", f"start_urls={site.start_urls()[0]}", "-s",
                                  "DEDUP_NAMESPACE=shared", env=env)
            assert second.returncode == 1
            assert second.stderr.startswith("error: another crawl is running on namespace "
                                            "'shared'") and "DEDUP_CONCURRENT" in second.stderr
            assert second.stderr.count("\n") == 1
        finally:
            slow.send_signal(signal.SIGINT)
            slow.wait(timeout=120)


@pytest.mark.parametrize("group", [False, True], ids=["the command", "its process group"])
def test_sigterm_to_the_main_command_stops_the_crawl_and_the_services(tmp_path: Path,
                                                                      group: bool) -> None:
    """SIGTERM to the command, or to its whole process group (systemd, a shell's kill --
    -PGID): one clean shutdown of the crawl (Scrapy gets it once, never "twice, forcing
    unclean shutdown"), and nothing left running."""
    import json

    from dedup.adapters.servers.services import process_alive

    data = tmp_path / "data"
    env = dict(os.environ, REDIS_URL="", MONGO_URI="", SIMCRAWL_TEST_MARK=str(tmp_path))
    # the demo crawl slowed to a request each half second: it would otherwise be over
    # (about a second) before the signal reaches it
    proc = subprocess.Popen([sys.executable, "-m", "crawler.cli", "crawl", "--data-dir", str(data),
                             "-s", "DOWNLOAD_DELAY=0.5"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not (data / "demo-crawl.log").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    state = json.loads((data / "services.json").read_text())
    servers = [state[n]["pid"] for n in ("redis", "mongo")]
    while "Spider opened" not in (data / "demo-crawl.log").read_text() \
            and time.monotonic() < deadline:
        time.sleep(0.05)  # the crawl is under way, its signal handlers in place
    if group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0 and "Traceback" not in err
    log = (data / "demo-crawl.log").read_text()
    assert "Received SIGTERM, shutting down gracefully" in log, log[-2000:]
    assert "twice" not in log and "unclean" not in log, log[-2000:]  # once, cleanly
    deadline = time.monotonic() + 30
    while any(process_alive(p) for p in servers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(process_alive(p) for p in servers), "SIGTERM left the servers running"
    assert not (data / "services.json").exists()
    children = [p for p in Path("/proc").iterdir() if p.name.isdigit()
                and _has_mark(p, str(tmp_path))]
    assert children == [], "the crawl or its workers still run"


def _has_mark(proc_dir: Path, mark: str) -> bool:
    try:
        return f"SIMCRAWL_TEST_MARK={mark}".encode() in (proc_dir / "environ").read_bytes()
    except OSError:
        return False


@pytest.mark.parametrize("args,env,status,message", [
    (["example.org"], {}, 2, "not a start URL: example.org (not an http or https URL)"),
    (["http://127.0.0.1:{port}/"], {"REDIS_URL": "foo://x"}, 2,
     "REDIS_URL 'foo://x' is not a Redis URL"),
    (["http://127.0.0.1:{port}/", "-s", "DEDUP_START_WAIT=0"],
     {"MONGO_URI": "mongodb://127.0.0.1:{port}/"}, 3,
     "MongoDB at mongodb://127.0.0.1:{port}/ is unreachable"),
    # a bad setting, which the crawl process judges: its one line, no other
    (["http://127.0.0.1:{port}/", "-s", "DEDUP_MAX_DISTANCE=99"], {}, 2,
     "error: DEDUP_MAX_DISTANCE must be in 0..31, got 99"),
    # more crawl processes than the machine can run: refused, saying its cores
    (["http://127.0.0.1:{port}/", "--processes", "500"], {}, 2,
     "--processes 500 is more than this machine can run"),
    # a bad value of one of Scrapy's own settings: named, before anything starts
    (["http://127.0.0.1:{port}/", "-s", "DEPTH_LIMIT=abc"], {}, 2,
     "error: DEPTH_LIMIT must be a whole number, got 'abc'"),
    (["http://127.0.0.1:{port}/", "-s", "DOWNLOAD_TIMEOUT=-5"], {}, 2,
     "error: DOWNLOAD_TIMEOUT must be above 0, got '-5'"),
    (["http://127.0.0.1:{port}/", "--warc", "/proc/no-archive-here"], {}, 2,
     "error: DEDUP_WARC_DIR /proc/no-archive-here cannot be written"),
    (["http://127.0.0.1:{port}/", "--warc", "archive", "-s", "DEDUP_WARC_NEAR=all"], {}, 2,
     "error: DEDUP_WARC_NEAR must be one of response, metadata, got 'all'"),
    # simcrawl warc: a file that is not an archive, one gzip stream, an output folder
    # that cannot be written, a bad digest policy: one line each, before anything starts
    (["warc", "README.md"], {}, 2, "error: README.md: not a WARC or ARC file"),
    (["warc", "tests/data/warcio/example-bad-non-chunked.warc.gz"], {}, 2,
     "`warcio recompress FILE NEW` writes it record by record"),
    (["warc", "tests/data/warcio/example.warc.gz", "--warc", "/proc/no-archive-here"], {}, 2,
     "error: --warc /proc/no-archive-here cannot be written"),
    (["warc", "tests/data/warcio/example.warc.gz", "-s", "DEDUP_WARC_DIGESTS=maybe"], {}, 2,
     "error: DEDUP_WARC_DIGESTS must be one of decide, skip, raise, got 'maybe'"),
    # (robots.txt not tried again: its RFC 9309 retries, 7 s, are not what this checks)
    (["http://127.0.0.1:{port}/"], {"SIMCRAWL_ROBOTS_RETRIES": "0"}, 1,
     "none of the start URLs could be fetched: connection refused"),
])
def test_the_simcrawl_command_exits_as_its_table_says(tmp_path: Path, args: list[str],
                                                      env: dict, status: int,
                                                      message: str) -> None:
    """What users run (``simcrawl URL``, the wrapper of the crawl processes): the exit
    status of the table in ``simcrawl help`` and the README, and a one-line reason."""
    # the unreachable port is held, bound and not listening, while the command runs: it
    # refuses connections, and the embedded services cannot take it (a free port let go
    # was once taken by the crawl's own Redis, and the start URL refused as its port)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = str(held.getsockname()[1])
        environ = dict(os.environ, REDIS_URL="", MONGO_URI="")
        environ.update({k: v.replace("{port}", port) for k, v in env.items()})
        done = subprocess.run([sys.executable, "-m", "crawler.cli",
                               *[a.replace("{port}", port) for a in args],
                               "--data-dir", str(tmp_path / "data")], cwd=ROOT, env=environ,
                              capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == status, done.stderr
    assert message.replace("{port}", port) in done.stderr
    assert "Traceback" not in done.stderr
    if status in (2, 3) and not done.stderr.startswith("usage:"):
        # one line (argparse's own errors show the usage above it): no stale progress
        # line, no "the crawl did not run" after it
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "progress:" not in done.stdout


def test_a_start_url_that_gives_no_page_says_so_and_exits_1(tmp_path: Path) -> None:
    """A start URL that answers 404 (or 500, a binary, a page over the size cap) gave no
    page: exit 0 with no line at all, nothing stored. It exits 1, as the table says of a
    crawl that fetched none of its start URLs, naming why."""
    from crawler.examples.pageserver import serve

    port = free_port()
    server, asked = serve({}, port)  # every URL answers 404
    try:
        done = subprocess.run([sys.executable, "-m", "crawler.cli",
                               f"http://127.0.0.1:{port}/missing", "--data-dir",
                               str(tmp_path / "data")], cwd=ROOT,
                              env=dict(os.environ, REDIS_URL="", MONGO_URI=""),
                              capture_output=True, text=True, timeout=180, check=False)
    finally:
        server.shutdown()
    assert f"http://127.0.0.1:{port}/missing" in asked
    assert done.returncode == 1, done.stdout + done.stderr
    assert "error: none of the start URLs gave a page to decide (skipped: http_404" \
        in done.stderr
    assert "Traceback" not in done.stderr
