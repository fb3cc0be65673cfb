"""The demo crawl's archive replayed by pywb (the Webrecorder replay tool archivists run),
from simcrawl's own CDXJ index: every stored original, and every copy's response or
revisit, comes back byte for byte.

pywb pins redis-py 2.10 (a version this project cannot run), so it cannot share this project's
environment: it gets one of its own, ``.venv-pywb`` beside the checkout, built from the
package registry on first use (about ten seconds)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_timestamp

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]

#: pywb's version, and its environment.
PYWB = "pywb==2.10.0"
VENV = ROOT / ".venv-pywb"


def wayback() -> Path:
    """pywb's ``wayback`` server, installed in its own environment when missing."""
    binary = VENV / "bin" / "wayback"
    if not binary.exists():
        shutil.rmtree(VENV, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, timeout=120)
        done = subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", PYWB],
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"pip install {PYWB} failed: {done.stderr[-2000:]}"
    return binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def replay(demo_run, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """pywb serving the demo crawl's archive as collection ``crawl``, from simcrawl's
    CDXJ files; its base URL."""
    proc, _ = demo_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    root = tmp_path_factory.mktemp("pywb")
    archive, indexes = root / "collections/crawl/archive", root / "collections/crawl/indexes"
    archive.mkdir(parents=True)
    indexes.mkdir(parents=True)
    for path in (proc.folder / "warc").glob("*.warc.gz"):
        shutil.copy(path, archive)
    for path in (proc.folder / "warc").glob("*.cdxj"):
        shutil.copy(path, indexes)
    port = free_port()
    server = subprocess.Popen([str(wayback()), "-p", str(port), "-b", "127.0.0.1",
                               "-d", str(root)], cwd=root, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/", timeout=2).close()
                break
            except (urllib.error.URLError, OSError):
                assert server.poll() is None, server.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "pywb did not answer in 60 s"
                time.sleep(0.3)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=30)


def fetched(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as answer:
        return answer.code, answer.read()


def test_pywb_replays_every_original_and_copy_byte_for_byte(demo_run, replay) -> None:  # type: ignore[no-untyped-def]
    proc, db = demo_run
    kept: dict[str, tuple[str, bytes]] = {}  # URL -> (14-digit date, payload)
    revisits: list[tuple[str, str, str]] = []  # (URL, date, the original's URL)
    for path in sorted((proc.folder / "warc").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                headers = record.rec_headers
                url = headers.get_header("WARC-Target-URI")
                date = iso_date_to_timestamp(headers.get_header("WARC-Date"))
                if record.rec_type == "response":
                    kept[url] = (date, record.content_stream().read())
                elif record.rec_type == "revisit":
                    revisits.append((url, date, headers.get_header("WARC-Refers-To-Target-URI")))
    stored = {d["url"] for d in db.pages.find({"host": {"$ne": "registered"}}, {"url": 1})}
    assert stored and stored <= set(kept)  # every stored original is in the archive
    wrong = []
    for url, (date, payload) in kept.items():
        # id_: the page as archived, not rewritten for the replay's frame
        status, body = fetched(f"{replay}/crawl/{date}id_/{url}")
        if status != 200 or body != payload:
            wrong.append(f"{url}: status {status}, {len(body)} bytes of {len(payload)}")
    for url, date, original in revisits:  # a revisit replays its original's payload
        status, body = fetched(f"{replay}/crawl/{date}id_/{url}")
        if status != 200 or body != kept[original][1]:
            wrong.append(f"revisit {url}: status {status}, not {original}'s payload")
    assert not wrong, "\n".join(wrong)
