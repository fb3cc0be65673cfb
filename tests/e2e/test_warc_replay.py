"""The demo crawl's archive replayed by pywb (the Webrecorder replay tool archivists run),
from simcrawl's own CDXJ index: every stored original, and every copy's response or
revisit, comes back byte for byte.

pywb pins redis-py 2.10 (a version this project cannot run), so it cannot share this project's
environment: it gets one of its own, ``.venv-pywb`` beside the checkout, built from the
package registry on first use (about ten seconds)."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def serving(warc_folder: Path, root: Path) -> Iterator[str]:
    """pywb serving the WARC files of ``warc_folder`` as collection ``crawl`` from
    simcrawl's CDXJ files beside them (its collections under ``root``); its base URL."""
    archive, indexes = root / "collections/crawl/archive", root / "collections/crawl/indexes"
    archive.mkdir(parents=True)
    indexes.mkdir(parents=True)
    for path in warc_folder.glob("*.warc.gz"):
        shutil.copy(path, archive)
    for path in warc_folder.glob("*.cdxj"):
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


@pytest.fixture(scope="module")
def replay(demo_run, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """pywb serving the demo crawl's archive as collection ``crawl``, from simcrawl's
    CDXJ files; its base URL."""
    proc, _ = demo_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with serving(proc.folder / "warc", tmp_path_factory.mktemp("pywb")) as base:
        yield base


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


def test_a_deduplicated_archive_replays_its_pages_resources(demo_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``simcrawl warc IN --warc OUT`` keeps the records of IN that are not pages it
    decides, as they are (``DEDUP_WARC_KEEP=all``, the default): a page's stylesheet and
    image, a redirect, a ``dns:`` record, each with its date. pywb replays the page's
    resources from OUT byte for byte; a copy of the page is kept as its copy."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from tests.e2e.test_warc_crawl import _warc_in, archived_pages

    proc, _ = demo_run
    url, status, headers, body = next(p for p in archived_pages(proc.folder / "warc")
                                      if p[1].startswith("200"))
    host = url.split("/")[2]
    css, png = b"body { color: #333 }\n", b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    resources = {f"http://{host}/style.css": (css, "text/css"),
                 f"http://{host}/logo.png": (png, "image/png")}
    page_headers = [(k, v) for k, v in headers if k.lower() not in ("content-encoding",
                                                                     "content-length")]
    dates = {url: "2021-03-04T05:06:07Z", f"http://{host}/copy.html": "2021-03-05T00:00:00Z",
             f"http://{host}/style.css": "2021-03-04T05:06:08Z",
             f"http://{host}/logo.png": "2021-03-04T05:06:09Z",
             f"http://{host}/old.html": "2021-03-04T05:06:10Z",
             f"dns:{host.split(':')[0]}": "2021-03-04T05:06:06Z"}
    source = tmp_path / "in"
    source.mkdir()
    with open(source / "site.warc.gz", "wb") as fh:
        writer = WARCWriter(fh, gzip=True)

        def response(target: str, payload: bytes, http: StatusAndHeaders | None,
                     kind: str = "") -> None:
            record = writer.create_warc_record(target, "response", payload=BytesIO(payload),
                                               length=len(payload), http_headers=http,
                                               warc_content_type=kind or None)
            record.rec_headers.replace_header("WARC-Date", dates[target])
            writer.write_record(record)
            if http is not None:
                request = writer.create_warc_record(target, "request", http_headers=(
                    StatusAndHeaders("GET / HTTP/1.1", [("User-Agent", "a-crawler/1")],
                                     is_http_request=True)))
                request.rec_headers.add_header(
                    "WARC-Concurrent-To", record.rec_headers.get_header("WARC-Record-ID"))
                request.rec_headers.replace_header("WARC-Date", dates[target])
                writer.write_record(request)

        dns = f"20210304050606\n{host.split(':')[0]}.\t300\tIN\tA\t127.0.0.1\n".encode()
        response(f"dns:{host.split(':')[0]}", dns, None, "text/dns")
        response(url, body, StatusAndHeaders(status, page_headers, protocol="HTTP/1.1"))
        for target, (payload, kind) in resources.items():
            response(target, payload, StatusAndHeaders(
                "200 OK", [("Content-Type", kind)], protocol="HTTP/1.1"))
        response(f"http://{host}/old.html", b"", StatusAndHeaders(
            "301 Moved Permanently", [("Location", url), ("Content-Type", "text/html")],
            protocol="HTTP/1.1"))
        response(f"http://{host}/copy.html", body, StatusAndHeaders(
            status, page_headers, protocol="HTTP/1.1"))
    out = tmp_path / "out"
    ran = _warc_in(proc, str(source), "--database", "warc_keep", "--warc", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    written: dict[str, tuple[str, str]] = {}  # URL -> (record type, WARC-Date), last
    requests: list[str] = []
    for path in out.glob("*.warc.gz"):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                target = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "request":
                    requests.append(target)
                if record.rec_type != "request" and target:
                    written[target] = (record.rec_type,
                                       iso_date_to_timestamp(record.rec_headers.get_header(
                                           "WARC-Date")))
    assert set(written) == set(dates), set(written) ^ set(dates)
    assert sorted(requests) == sorted(set(requests)), requests  # each request once
    assert written[f"http://{host}/copy.html"][0] == "metadata"  # the copy named as one
    for target, date in dates.items():
        assert written[target][1] == iso_date_to_timestamp(date), target
    with serving(out, tmp_path / "pywb") as base:
        for target, (payload, _kind) in resources.items():
            stamp = iso_date_to_timestamp(dates[target])
            assert fetched(f"{base}/crawl/{stamp}id_/{target}") == (200, payload), target
        stamp = iso_date_to_timestamp(dates[url])
        assert fetched(f"{base}/crawl/{stamp}id_/{url}") == (200, body)
