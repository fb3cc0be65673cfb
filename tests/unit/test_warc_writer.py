"""The crawl as WARC (dedup/warc_writer.py), written with warcio and read back with it: an
original's request and response, a copy's record naming its original (a revisit when the
payload is the original's), files rolled at a size with a warcinfo record and a CDXJ index
each, and warcio's check passing over all of them."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

from dedup.warc_writer import (
    Fetch,
    WarcWriter,
    parse_fields,
    payload_digest,
    record_id_of,
    warc_date,
)

WHEN = dt.datetime(2026, 11, 29, 12, 0, tzinfo=dt.timezone.utc)
PAGE = b"<html><body><h1>Floods</h1><p>" + b"The river rose. " * 200 + b"</p></body></html>"


def fetch(url: str, body: bytes = PAGE) -> Fetch:
    return Fetch(url=url, status=200, reason="OK", date=WHEN, body=body,
                 headers=[("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                          ("Content-Length", "77")],
                 request_headers=[("User-Agent", "simcrawl-test"), ("Accept", "text/html")])


def records(folder: Path) -> list:  # type: ignore[type-arg]
    out = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for r in ArchiveIterator(fh):
                out.append((path.name, r.rec_type, r.rec_headers, r.http_headers,
                            r.content_stream().read()))
    return out


def checked(folder: Path) -> int:
    return Checker(SimpleNamespace(inputs=[str(p) for p in sorted(folder.glob("*.warc.gz"))],
                                   verbose=False)).process_all()


def test_originals_and_copies_are_records_that_name_each_other(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "crawl", {"software": "simcrawl/test"})
    writer.original(fetch("http://news.test/floods.html"), "p1")
    assert writer.copy(fetch("http://mirror.test/floods.html"), {
        "kind": "exact", "original_url": "http://news.test/floods.html", "original_id": "p1",
        "distance": 0}) == "revisit"
    assert writer.copy(fetch("http://news.test/print/floods.html", PAGE + b"<!-- print -->"), {
        "kind": "simhash", "original_url": "http://news.test/floods.html", "original_id": "p1",
        "distance": 2, "containment": 0.97}) == "response"
    writer.close()
    assert checked(tmp_path) == 0
    got = records(tmp_path)
    assert [t for _, t, *_ in got] == ["warcinfo", "response", "request", "revisit",
                                       "metadata", "response", "request", "metadata"]
    original = got[1][2]
    assert got[1][3].get_header("Content-Length") == str(len(PAGE))  # the body as held
    assert got[1][3].get_header("Content-Encoding") is None
    assert got[1][4] == PAGE and got[2][3].get_header("Host") == "news.test"
    revisit = got[3][2]
    assert revisit.get_header("WARC-Profile").endswith("identical-payload-digest")
    assert revisit.get_header("WARC-Payload-Digest") == payload_digest(PAGE)
    assert revisit.get_header("WARC-Refers-To-Target-URI") == "http://news.test/floods.html"
    assert revisit.get_header("WARC-Refers-To-Date") == original.get_header("WARC-Date")
    assert revisit.get_header("WARC-Refers-To") == original.get_header("WARC-Record-ID")
    near = parse_fields(got[7][4])
    assert (near["simcrawl-match"], near["kind"], near["distance"], near["containment"]) == (
        "copy", "simhash", "2", "0.97")
    assert got[7][2].get_header("Content-Type") == "application/warc-fields"
    assert got[7][2].get_header("WARC-Refers-To") == original.get_header("WARC-Record-ID")
    assert got[7][2].get_header("WARC-Concurrent-To") == got[5][2].get_header("WARC-Record-ID")
    cdxj = (tmp_path / "crawl-00001.cdxj").read_text()
    assert "http://news.test/floods.html" in cdxj and "http://mirror.test/floods.html" in cdxj
    # a replay of a copy's URL finds its response or revisit, not its match
    assert "warc-fields" not in cdxj and len(cdxj.splitlines()) == 3


def test_a_near_copy_can_keep_its_metadata_record_alone(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "crawl", {}, near="metadata")
    writer.original(fetch("http://news.test/a.html"), "p1")
    assert writer.copy(fetch("http://news.test/b.html", PAGE + b" "), {
        "kind": "simhash", "original_url": "http://news.test/a.html", "original_id": "p1",
        "distance": 1}) == "metadata"
    writer.close()
    assert [t for _, t, *_ in records(tmp_path)] == ["warcinfo", "response", "request",
                                                     "metadata"]
    assert checked(tmp_path) == 0


def test_a_copy_names_an_original_another_process_archived(tmp_path: Path) -> None:
    """Two writers (two crawl processes): an original's response record id comes from its
    page id and date, so the other writer's copy names it from what the store keeps of the
    original (its id and fetch time), and the id is that record's."""
    first, second = WarcWriter(tmp_path, "one", {}), WarcWriter(tmp_path, "two", {})
    page_id = "6b0b7111aa00000000000001"
    first.original(fetch("http://news.test/floods.html"), page_id)
    first.close()
    assert not second.holds(page_id, "http://news.test/floods.html")
    date = warc_date(WHEN)  # the store keeps the page's fetch time
    second.copy(fetch("http://mirror.test/floods.html", PAGE + b" "), {
        "kind": "simhash", "original_url": "http://news.test/floods.html",
        "original_id": page_id, "distance": 1}, elsewhere=(record_id_of(page_id, date), date))
    second.close()
    got = records(tmp_path)
    response = next(h for name, t, h, *_ in got if name.startswith("one") and t == "response")
    described = next(h for name, t, h, *_ in got if t == "metadata")
    assert described.get_header("WARC-Refers-To") == response.get_header("WARC-Record-ID")
    assert described.get_header("WARC-Refers-To-Date") == response.get_header("WARC-Date")
    assert checked(tmp_path) == 0


def test_files_roll_at_their_size_each_with_its_warcinfo_and_index(tmp_path: Path) -> None:
    writer = WarcWriter(tmp_path, "crawl", {"software": "simcrawl/test"}, max_bytes=2048)
    for n in range(6):
        noise = random.Random(n).randbytes(3000)  # does not compress: a file a page or two
        writer.original(fetch(f"http://news.test/{n}.html", PAGE + noise), f"p{n}")
    writer.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) >= 3 and len(writer.files) == len(files)
    by_file: dict[str, list[str]] = {}
    for name, kind, *_ in records(tmp_path):
        by_file.setdefault(name, []).append(kind)
    assert all(kinds[0] == "warcinfo" and kinds.count("warcinfo") == 1
               for kinds in by_file.values())
    assert all(p.with_suffix("").with_suffix(".cdxj").is_file() for p in files)
    assert checked(tmp_path) == 0


def test_a_bad_choice_is_refused_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="response, metadata"):
        WarcWriter(tmp_path, "crawl", {}, near="nothing")


def test_the_index_is_the_one_cdxj_indexer_writes(tmp_path: Path) -> None:
    """The CDXJ lines kept as records are written are cdxj-indexer's for the file (pywb
    reads them), without reading the file back."""
    from cdxj_indexer.main import CDXJIndexer

    writer = WarcWriter(tmp_path, "crawl", {"software": "simcrawl/test"})
    writer.original(fetch("http://News.test/a.html?b=2&a=1"), "p1")
    writer.copy(fetch("http://mirror.test/a.html"), {
        "kind": "exact", "original_url": "http://News.test/a.html?b=2&a=1", "original_id": "p1",
        "distance": 0})
    writer.copy(fetch("http://news.test/print/a.html", PAGE + b"<!-- print -->"), {
        "kind": "simhash", "original_url": "http://News.test/a.html?b=2&a=1",
        "original_id": "p1", "distance": 2})
    writer.close()
    theirs = tmp_path / "theirs.cdxj"
    CDXJIndexer(str(theirs), [str(writer.files[0])], sort=True).process_all()
    mine = (tmp_path / "crawl-00001.cdxj").read_text()
    assert mine.splitlines() == theirs.read_text().splitlines() and len(mine.splitlines()) == 3


def test_a_record_of_another_archive_is_written_as_it_is(tmp_path: Path) -> None:
    """``copied``: a record of an archive read (an ARC record too, made WARC), its date,
    URL and payload unchanged, indexed as cdxj-indexer indexes it; the file passes
    warcio's check."""
    from cdxj_indexer.main import CDXJIndexer

    data = Path(__file__).resolve().parents[1] / "data" / "warcio"
    writer = WarcWriter(tmp_path, "kept", {"software": "simcrawl/test"})
    writer.copied(data / "example.arc.gz", 171)  # its response record
    writer.copied(data / "example.warc.gz", 2012)  # a request record
    writer.close()
    with open(writer.files[0], "rb") as fh:
        kept = [(r.rec_type, r.rec_headers.get_header("WARC-Date"),
                 r.content_stream().read()) for r in ArchiveIterator(fh)]
    assert [(t, d) for t, d, _ in kept] == [("warcinfo", kept[0][1]),
                                             ("response", "2014-02-16T05:02:21Z"),
                                             ("request", "2017-03-06T04:02:06Z")]
    assert b"Example Domain" in kept[1][2]
    theirs = tmp_path / "theirs.cdxj"
    CDXJIndexer(str(theirs), [str(writer.files[0])], sort=True).process_all()
    mine = (tmp_path / "kept-00001.cdxj").read_text()
    assert mine.splitlines() == theirs.read_text().splitlines() and len(mine.splitlines()) == 1
    assert Checker(SimpleNamespace(inputs=[str(writer.files[0])], verbose=False)
                   ).process_all() == 0


def test_a_payload_digest_is_one_key_in_base_32_or_16() -> None:
    """A revisit record finds the response it repeats by its payload digest, however the
    two writers wrote it (crawler/spiders/warc.py)."""
    import base64
    import hashlib

    from dedup.archive import digest_key

    raw = hashlib.sha1(b"<html>the page</html>").digest()
    key = digest_key("sha1:" + base64.b32encode(raw).decode())
    assert key is not None and key == digest_key("SHA1:" + raw.hex()) \
        == digest_key(" sha1:" + base64.b32encode(raw).decode().lower())
    assert key != digest_key("sha1:" + base64.b32encode(hashlib.sha1(b"other").digest()).decode())
    assert digest_key(None) is None and digest_key("sha1:not a digest!") is None
