"""Web archives others wrote, read a record at a time (dedup/archive.py): warcio's own test
files (tests/data/warcio/, Apache 2.0) and files warcio writes here in the shapes other
tools write (brotli, deflate and gzip payloads; webrecorder's URI-agnostic revisits;
ClueWeb09's digests, computed another way)."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import hashlib
import zlib
from io import BytesIO
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from dedup.archive import (
    BadRecord,
    archive_files,
    check_archive,
    digest_key,
    page_at,
    records,
    request_at,
    warc_time,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "warcio"
HTML = b"<html><head><title>Floods</title></head><body><p>The river rose.</p></body></html>"


def entries(path: Path) -> list:  # type: ignore[type-arg]
    with open(path, "rb") as fh:
        return list(records(fh))


def write(path: Path, *pages: tuple[str, bytes, str | None], gz: bool = True) -> None:
    """A WARC file as warcio writes one: a response and a request record a page (URL,
    payload as sent, its Content-Encoding)."""
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gz)
        for url, payload, encoding in pages:
            headers = [("Content-Type", "text/html; charset=utf-8")]
            if encoding:
                headers.append(("Content-Encoding", encoding))
            response = writer.create_warc_record(
                url, "response", payload=BytesIO(payload), length=len(payload),
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"))
            request = writer.create_warc_record(url, "request", http_headers=StatusAndHeaders(
                "GET / HTTP/1.1", [("User-Agent", "a-tool/1.0")], is_http_request=True))
            request.rec_headers.add_header("WARC-Concurrent-To",
                                           response.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(response)
            writer.write_record(request)


@pytest.mark.parametrize("encoding, encode", [
    ("gzip", gzip.compress),
    ("deflate", zlib.compress),
    ("br", lambda body: __import__("brotli").compress(body)),
])
def test_every_content_encoding_warcio_knows_is_read(tmp_path: Path, encoding: str,
                                                     encode) -> None:  # type: ignore[no-untyped-def]
    """A page stored with its Content-Encoding (as wget and warcio store what the server
    sent) is read decoded: brotli too, whichever brotli package is installed."""
    path = tmp_path / f"{encoding}.warc.gz"
    write(path, ("http://example.org/floods", encode(HTML), encoding))
    page = next(e for e in entries(path) if e.kind == "page")
    read = page_at(path, page.offset)
    assert read.body == HTML
    assert not any(k.lower() == "content-encoding" for k, _ in read.headers)


def test_a_payload_not_in_the_encoding_it_names_is_read_as_sent(tmp_path: Path) -> None:
    """A server that names an encoding it did not use (warcio's reading: the bytes as they
    are); a record that cannot be read where it was found says why."""
    path = tmp_path / "plain-said-br.warc.gz"
    write(path, ("http://example.org/floods", HTML, "br"))
    page = next(e for e in entries(path) if e.kind == "page")
    assert page_at(path, page.offset).body == HTML
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(path.read_bytes()[:page.offset + 20])
    with pytest.raises(ValueError, match=r"no record at offset \d+: the file ends, or is cut"):
        page_at(cut, page.offset)
    # five words on a line are an ARC record's header: text is not read as a page
    text = tmp_path / "notes.txt"
    text.write_bytes(b"this is not an archive\n" * 5)
    with pytest.raises(ValueError, match="no record starts at offset 0"):
        page_at(text, 0)


def test_a_digest_that_does_not_match_is_said_on_its_own_record() -> None:
    """warcio's example-trunc.warc: the response at 1197 does not match its digests; the
    problem is on that record, at its own offset, and the records after it are read."""
    got = entries(DATA / "example-trunc.warc")
    assert [(e.kind, e.offset) for e in got] == [
        ("other", 0), ("other", 488), ("page", 1197), ("request", 2566)]
    assert got[2].problems and all("digest failed" in p for p in got[2].problems)
    assert not got[3].problems


def test_digests_computed_another_way_cost_each_record_alone(tmp_path: Path) -> None:
    """ClueWeb09's digests do not match warcio's reading of their records: every record
    is still read, each with its problem."""
    path = tmp_path / "clueweb-like.warc"
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=False, warc_version="0.18")
        for n in range(5):
            body = HTML.replace(b"river", b"river %d" % n)
            record = writer.create_warc_record(
                f"http://example.org/{n}", "response", payload=BytesIO(body), length=len(body),
                http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html")],
                                              protocol="HTTP/1.1"))
            wrong = "sha1:" + base64.b32encode(hashlib.sha1(b"another way").digest()).decode()
            record.rec_headers.replace_header("WARC-Payload-Digest", wrong)
            record.rec_headers.replace_header("WARC-Block-Digest", wrong)
            writer.write_record(record)
    got = entries(path)
    assert [e.kind for e in got] == ["page"] * 5
    assert all(e.problems for e in got)


def test_a_record_cut_short_is_named_at_its_own_offset(tmp_path: Path) -> None:
    whole = tmp_path / "whole.warc"
    write(whole, *((f"http://example.org/{n}", HTML * 20, None) for n in range(3)), gz=False)
    offsets = [e.offset for e in entries(whole)]
    third = offsets[4]  # the third page's response
    cut = tmp_path / "cut.warc"
    cut.write_bytes(whole.read_bytes()[:third + 300])
    with open(cut, "rb") as fh:
        reader = records(fh)
        read = [next(reader) for _ in range(4)]
        with pytest.raises(BadRecord) as caught:
            next(reader)
    assert [e.offset for e in read] == offsets[:4]
    assert caught.value.offset == third and "cut short" in caught.value.reason


def test_arc_files_are_read_as_pages_dated_as_captured() -> None:
    for name in ("example.arc", "example.arc.gz"):
        page = next(e for e in entries(DATA / name) if e.kind == "page")
        assert page.url == "http://example.com/"
        assert warc_time(page.date) == dt.datetime(2014, 2, 16, 5, 2, 21,
                                                   tzinfo=dt.timezone.utc)
        read = page_at(DATA / name, page.offset)
        assert b"Example Domain" in read.body and read.status == 200
    assert archive_files([str(DATA)]) == sorted(
        p for p in DATA.iterdir() if p.name.endswith((".warc", ".warc.gz", ".arc", ".arc.gz")))


def test_a_resource_record_of_html_is_a_page() -> None:
    page = next(e for e in entries(DATA / "example-resource.warc.gz") if e.kind == "page")
    read = page_at(DATA / "example-resource.warc.gz", page.offset)
    assert page.url == "http://example.com/" and read.status == 200
    assert dict(read.headers)["Content-Type"].startswith("text/html")
    assert b"Example Domain" in read.body


def test_a_revisit_names_the_payload_it_repeats_uri_agnostic_too(tmp_path: Path) -> None:
    got = entries(DATA / "example.warc.gz")
    response = next(e for e in got if e.kind == "page")
    revisit = next(e for e in got if e.kind == "revisit")
    assert revisit.payload == response.payload is not None and revisit.html
    # webrecorder's URI-agnostic revisit: another URL's payload
    path = tmp_path / "agnostic.warc.gz"
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        record = writer.create_revisit_record(
            "http://mirror.example.net/floods", "sha1:" + base64.b32encode(
                hashlib.sha1(HTML).digest()).decode(), "http://example.org/floods",
            "2020-01-01T00:00:00Z", http_headers=StatusAndHeaders(
                "200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1"))
        record.rec_headers.replace_header(
            "WARC-Profile",
            "http://netpreserve.org/warc/1.1/revisit/uri-agnostic-identical-payload-digest")
        writer.write_record(record)
    (agnostic,) = entries(path)
    assert agnostic.kind == "revisit" and agnostic.payload == digest_key(
        "sha1:" + base64.b32encode(hashlib.sha1(HTML).digest()).decode())


def test_the_request_record_of_a_page_is_read() -> None:
    got = entries(DATA / "example-iana.org-chunked.warc")
    page = next(e for e in got if e.kind == "page")
    request = next(e for e in got if e.kind == "request")
    assert page.record_id in request.concurrent_to
    asked = request_at(DATA / "example-iana.org-chunked.warc", request.offset)
    assert asked is not None and asked.method == "GET"
    assert ("User-agent", "curl/7.43.0") in asked.headers
    assert request_at(DATA / "example-iana.org-chunked.warc", page.offset) is None
    body = page_at(DATA / "example-iana.org-chunked.warc", page.offset).body
    assert body.rstrip().endswith(b"</html>")  # de-chunked


def test_files_that_cannot_be_read_a_record_at_a_time_are_refused_in_a_line(
        tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="warcio recompress") as caught:
        check_archive(DATA / "example-bad-non-chunked.warc.gz")
    assert "\n" not in str(caught.value)
    readme = tmp_path / "README.md"
    readme.write_text("# Not an archive\n\nA few words.\n")
    with pytest.raises(ValueError, match="not a WARC or ARC file"):
        check_archive(readme)
    for name in ("example.warc.gz", "example.arc", "example-trunc.warc"):
        check_archive(DATA / name)  # read, problems and all
