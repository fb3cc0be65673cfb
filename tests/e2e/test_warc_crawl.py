"""The demo crawl written as WARC (``--warc DIR``; crawler/warc_out.py): warcio's check finds no
error in any file, every stored original is a response record, and every copy the crawl
fetched is a metadata record naming its original (after its own response or a revisit)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

from dedup.warc_writer import parse_fields

pytestmark = pytest.mark.e2e


def test_the_demo_crawl_is_a_valid_archive_of_originals_and_copies(demo_run) -> None:  # type: ignore[no-untyped-def]
    proc, db = demo_run
    assert proc.returncode == 0, proc.stdout + proc.stderr
    files = sorted((proc.folder / "warc").glob("*.warc.gz"))
    assert files, "no WARC file written"
    assert Checker(SimpleNamespace(inputs=[str(f) for f in files], verbose=False)
                   ).process_all() == 0
    responses, copies = set(), {}
    for path in files:
        assert path.with_suffix("").with_suffix(".cdxj").is_file()
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type == "response":
                    responses.add(uri)
                elif record.rec_type == "metadata":
                    copies[uri] = (parse_fields(record.content_stream().read()),
                                   record.rec_headers.get_header("WARC-Refers-To-Target-URI"))
    stored = {d["url"] for d in db.pages.find({"host": {"$ne": "registered"}}, {"url": 1})}
    assert stored and stored <= responses
    fetched = {d["url"]: d.get("original_url") for d in db.matches.find(
        {"kind": {"$in": ["exact", "simhash", "pinyin"]}}, {"url": 1, "original_url": 1})}
    assert fetched and set(fetched) == set(copies)
    for url, (match, refers) in copies.items():
        assert refers == fetched[url] == match["original_url"]


def _warc_in(proc, *args: str, **env_vars: str):  # type: ignore[no-untyped-def]
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, REDIS_URL=proc.services.redis_url, MONGO_URI=proc.services.mongo_uri,
               **env_vars)
    return subprocess.run([sys.executable, "-m", "crawler.cli", "warc", *args,
                           "--data-dir", str(proc.folder)],
                          cwd=root, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def archived_pages(folder: Path) -> list[tuple[str, str, list, bytes]]:  # type: ignore[type-arg]
    """The response records of the WARC files in ``folder``, in order: (URL, status line,
    HTTP headers, payload decoded)."""
    pages = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    pages.append((record.rec_headers.get_header("WARC-Target-URI"),
                                  record.http_headers.statusline,
                                  record.http_headers.headers, record.content_stream().read()))
    return pages


def fields_record(writer, url: str, fields: bytes):  # type: ignore[no-untyped-def]
    """A crawler's ``metadata`` record of ``url`` (warc-fields lines), as warcio makes it."""
    from io import BytesIO

    return writer.create_warc_record(url, "metadata", payload=BytesIO(fields),
                                     length=len(fields),
                                     warc_content_type="application/warc-fields")


def groups(database) -> set[frozenset[str]]:  # type: ignore[no-untyped-def]
    """The groups of copies a database's match records make: each original with the
    exact and near copies that name it."""
    by_original: dict[str, set[str]] = {}
    for d in database.matches.find({"kind": {"$in": ["exact", "simhash"]}},
                                   {"url": 1, "original_url": 1}):
        by_original.setdefault(d["original_url"], {d["original_url"]}).add(d["url"])
    return {frozenset(g) for g in by_original.values()}


def test_the_archive_read_back_gives_the_crawls_groups(demo_run) -> None:  # type: ignore[no-untyped-def]
    """``simcrawl warc`` over the demo crawl's own archive decides its pages as the crawl
    did: the same groups of copies (the copies of registered chapters aside: that
    database has none registered)."""
    from dedup.adapters.servers.services import connect_mongo

    proc, db = demo_run
    ran = _warc_in(proc, str(proc.folder / "warc"), "--database", "warc_in")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "files cut short by a record that cannot be read: 0" in ran.stdout
    # the progress line says how far through its files the run is: at its end, all of them
    size = sum(p.stat().st_size for p in (proc.folder / "warc").glob("*.warc.gz"))
    assert f"read {size / 1e6:.1f} of {size / 1e6:.1f} MB (100%)" in ran.stdout, ran.stdout
    again = connect_mongo(proc.services.mongo_uri)["warc_in"]
    # the same groups; which page of a group is its original follows the files' order
    # (the order the crawl's pages left its pipelines), not always the crawl's
    assert groups(db) and groups(again) == groups(db)
    # the deduplicated dataset: every original's text, no copy's
    import os
    import subprocess
    import sys

    env = dict(os.environ, MONGO_URI=proc.services.mongo_uri)
    out = subprocess.run([sys.executable, "-m", "crawler.cli", "export", "pages", "--text",
                          "--format", "jsonl", "--database", "warc_in"],
                         cwd=Path(__file__).resolve().parents[2], env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    texts = {r["url"]: r["text"] for r in map(json.loads, out.stdout.splitlines())}
    assert set(texts) == {d["url"] for d in again.pages.find({}, {"url": 1})}
    assert all(texts.values()) and not set(texts) & {
        u for g in groups(again) for u in g} - {d["original_url"] for d in again.matches.find()}


def test_a_truncated_archive_is_named_with_its_offset_and_the_run_goes_on(demo_run,  # type: ignore[no-untyped-def]
                                                                          tmp_path) -> None:
    proc, _ = demo_run
    whole = min((proc.folder / "warc").glob("*.warc.gz"))
    data = whole.read_bytes()
    # cut in the middle of a response record past the first half of the file (its CDXJ
    # line says where each record is)
    lines = [json.loads(line.split(" ", 2)[2]) for line in
             whole.with_suffix("").with_suffix(".cdxj").read_text().splitlines()]
    middle = min((int(r["offset"]) + int(r["length"]) // 2 for r in lines
                  if r.get("status") and int(r["offset"]) > len(data) // 2), default=None)
    assert middle is not None
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data[:middle])
    ran = _warc_in(proc, str(cut), "--database", "warc_cut")
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "files cut short by a record that cannot be read: 1" in ran.stdout
    log = (proc.folder / "warc.log").read_text()
    assert f"{cut}: the record at offset" in log and "the rest of this file cannot be" in log
    decided = int(next(line.split()[-1] for line in ran.stdout.splitlines()
                       if "admitted (unique)" in line))
    assert decided > 0  # the records before the cut were decided


@pytest.mark.skipif(shutil.which("wget") is None, reason="GNU Wget is not installed "
                    "(./run-tests installs it with apt-get where it can)")
def test_wgets_archive_of_the_demo_site_gives_the_demos_groups(demo_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``wget --recursive --warc-file`` of the demo site (WARC/1.0, every page and trap
    it links), read by ``simcrawl warc``: the groups of copies are the demo's known
    ones, those the crawl finds."""
    import subprocess

    from crawler.examples.demosite import DemoSite, build
    from dedup.adapters.servers.services import connect_mongo

    proc, _ = demo_run
    content = build(novel_chapters=0)  # no registered chapters in this database
    with DemoSite(content) as site:
        got = subprocess.run(["wget", "--recursive", "--level=6", "--span-hosts",
                              "--domains=127.0.0.1", "--no-verbose", "-e", "robots=off",
                              f"--warc-file={tmp_path / 'wget'}", "--delete-after",
                              "-P", str(tmp_path / "files"), site.start_urls()[0]],
                             capture_output=True, text=True, timeout=300, check=False)
        assert (tmp_path / "wget.warc.gz").is_file(), got.stderr[-2000:]
        bases = {name: site.url(name) for name in content.pages}
    ran = _warc_in(proc, str(tmp_path / "wget.warc.gz"), "--database", "warc_wget")
    assert ran.returncode == 0, ran.stdout + ran.stderr

    def key(url: str) -> str:
        return next((name + url[len(base):] for name, base in bases.items()
                     if url.startswith(base)), url)

    by_original: dict[str, set[str]] = {}
    for d in connect_mongo(proc.services.mongo_uri)["warc_wget"].matches.find(
            {"kind": {"$in": ["exact", "simhash"]}}, {"url": 1, "original_url": 1}):
        original = key(d["original_url"])
        by_original.setdefault(original, {original}).add(key(d["url"]))
    assert {frozenset(g) for g in by_original.values()} == \
        {frozenset(c) for c in content.expected.clusters}


def test_copies_name_the_originals_other_processes_archived(tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The demo crawled by two processes sharing one crawl, each writing its own WARC
    files: a copy's metadata record names its original's response record by id and date
    whichever process archived it, and every record it names is in the archive."""
    import os
    import subprocess
    import sys

    from dedup.adapters.servers.services import EmbeddedServices

    root = Path(__file__).resolve().parents[2]
    with EmbeddedServices(tmp_path / "data") as services:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        done = subprocess.run([sys.executable, "-m", "crawler.cli", "crawl", "--processes", "2",
                               "--data-dir", str(tmp_path / "data"), "--warc",
                               str(tmp_path / "warc")], cwd=root, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    responses, named = {}, []  # record id -> (date, writer); the copies' names
    for path in sorted((tmp_path / "warc").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                headers = record.rec_headers
                if record.rec_type == "response":
                    responses[headers.get_header("WARC-Record-ID")] = (
                        headers.get_header("WARC-Date"), path.name.rsplit("-", 1)[0])
                elif record.rec_type == "metadata" and headers.get_header("WARC-Refers-To"):
                    named.append((headers.get_header("WARC-Refers-To"),
                                  headers.get_header("WARC-Refers-To-Date"),
                                  path.name.rsplit("-", 1)[0]))
    assert named  # (which process archives which original is the crawl's timing)
    for record_id, date, writer in named:
        assert record_id in responses, record_id  # never a record that is not there
        assert responses[record_id][0] == date
    across = sum(1 for record_id, _, writer in named if responses[record_id][1] != writer)
    print(f"copies naming an original another process archived: {across} of {len(named)}")


def test_an_archive_in_common_crawls_shape_gives_the_crawls_groups(demo_run,  # type: ignore[no-untyped-def]
                                                                   tmp_path) -> None:
    """The demo crawl's pages written as Common Crawl writes its WARC files (WARC/1.0, a
    request, response and metadata record a page, the payload stored decoded with the
    HTTP encodings' headers renamed ``X-Crawler-*``, a payload over the limit cut short
    and marked ``WARC-Truncated: length``), read by ``simcrawl warc``: the crawl's groups
    of copies, and the cut page kept with the text before the cut."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from dedup.adapters.servers.services import connect_mongo

    proc, db = demo_run
    pages = archived_pages(proc.folder / "warc")
    lonely = {d["url"] for d in db.pages.find({"host": {"$ne": "registered"}}, {"url": 1})} - {
        u for d in db.matches.find({}, {"url": 1, "original_url": 1})
        for u in (d["url"], d.get("original_url"))}
    texts = {d["url"]: d.get("text") or "" for d in db.pages.find({}, {"url": 1, "text": 1})}
    # the longest page in no group of copies: cut in the middle of its payload, its text is
    cut_url = max((u for u, *_ in pages if u in lonely), key=lambda u: (len(texts.get(u, "")), u))
    out = tmp_path / "CC-MAIN-20261129000000-20261129010000-00000.warc.gz"
    with open(out, "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.0")
        for url, status, headers, payload in pages:
            renamed = [(f"X-Crawler-{k}" if k.lower() in ("content-encoding", "content-length",
                                                          "transfer-encoding") else k, v)
                       for k, v in headers] + [("X-Crawler-Content-Encoding", "gzip")]
            cut = url == cut_url
            body = payload[: len(payload) // 2] if cut else payload
            extra = {"WARC-Truncated": "length"} if cut else {}
            request = writer.create_warc_record(url, "request", http_headers=StatusAndHeaders(
                "GET / HTTP/1.1", [("User-Agent", "CCBot/2.0")], is_http_request=True))
            response = writer.create_warc_record(
                url, "response", payload=BytesIO(body), length=len(body),
                http_headers=StatusAndHeaders(status, renamed, protocol="HTTP/1.1"),
                warc_headers_dict={"WARC-Identified-Payload-Type": "text/html", **extra})
            metadata = fields_record(writer, url,
                                     b"fetchTimeMs: 120\r\ncharset-detected: UTF-8\r\n")
            for record in (request, response, metadata):
                writer.write_record(record)
    ran = _warc_in(proc, str(out), "--database", "warc_cc")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"records not decided (not HTML pages): {2 * len(pages)}" in ran.stdout
    again = connect_mongo(proc.services.mongo_uri)["warc_cc"]

    assert groups(again) == groups(db)
    kept = again.pages.find_one({"url": cut_url}, {"text": 1})
    whole = db.pages.find_one({"url": cut_url}, {"text": 1})
    assert kept and whole and 0 < len(kept["text"]) < len(whole["text"])


def test_an_archive_in_heritrixs_shape_decides_its_revisits_as_the_pages_they_repeat(
        demo_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The demo crawl's pages written as Heritrix writes its WARC files (WARC/1.0: a
    ``warcinfo`` record, ``dns:`` records, a response, request and metadata record a page,
    and for a payload fetched before a ``revisit`` record of profile
    identical-payload-digest holding the HTTP headers alone), read by ``simcrawl warc``:
    the crawl's groups of copies, each stored original's revisit under another URL an
    exact copy of it, a revisit under its own URL the page unchanged, and a revisit of a
    response not in the files counted and named, not decided. The pages are decided in
    file order: the original of every copy comes before it in the file (unless the pages
    say otherwise: a match turned round), however long each page takes to read."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from dedup.adapters.servers.services import connect_mongo

    proc, db = demo_run
    pages = [(url, status, [(k, v) for k, v in headers if k.lower() != "content-encoding"],
              payload) for url, status, headers, payload in archived_pages(proc.folder / "warc")]
    stored = sorted(d["url"] for d in db.pages.find({"host": {"$ne": "registered"}},
                                                    {"url": 1}))
    mirrored = stored[:3]  # each fetched again under another URL: a revisit record there
    out = tmp_path / "HERITRIX-20261129000000000-00000-1234~crawler~8443.warc.gz"
    digests: dict[str, tuple[str, str]] = {}  # url -> (payload digest, date)
    order: list[str] = []  # the pages' URLs in file order
    with open(out, "wb") as fh:
        writer = WARCWriter(fh, gzip=True, warc_version="1.0")
        writer.write_record(writer.create_warcinfo_record(
            out.name, {"software": "Heritrix/3.4.0 http://crawler.archive.org",
                       "format": "WARC File Format 1.0", "robots": "obey"}))
        dns = b"20261129000000\n127.0.0.1.\t300\tIN\tA\t127.0.0.1\n"
        writer.write_record(writer.create_warc_record(
            "dns:127.0.0.1", "response", payload=BytesIO(dns), length=len(dns),
            warc_content_type="text/dns"))

        def revisit(url: str, of: str, headers: list) -> None:  # type: ignore[type-arg]
            digest, date = digests[of]
            record = writer.create_revisit_record(
                url, digest, of, date,
                http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"))
            record.rec_headers.add_header("WARC-Truncated", "length")
            writer.write_record(record)
            order.append(url)

        for url, status, headers, payload in pages:
            order.append(url)
            response = writer.create_warc_record(
                url, "response", payload=BytesIO(payload), length=len(payload),
                http_headers=StatusAndHeaders(status, headers, protocol="HTTP/1.1"))
            request = writer.create_warc_record(url, "request", http_headers=StatusAndHeaders(
                "GET / HTTP/1.1", [("User-Agent", "Mozilla/5.0 (compatible; heritrix/3.4.0)")],
                is_http_request=True))
            request.rec_headers.add_header("WARC-Concurrent-To",
                                           response.rec_headers.get_header("WARC-Record-ID"))
            metadata = fields_record(
                writer, url, b"via: dns:127.0.0.1\r\nhopsFromSeed: L\r\nfetchTimeMs: 12\r\n")
            for record in (response, request, metadata):
                writer.write_record(record)
            digests[url] = (response.rec_headers.get_header("WARC-Payload-Digest"),
                            response.rec_headers.get_header("WARC-Date"))
            if url in mirrored:
                revisit(url + "?from=feed", url, headers)
        revisit(stored[0], stored[0], pages[0][2])  # the same page fetched again
        digests["elsewhere"] = ("sha1:" + "A" * 32, "2026-01-01T00:00:00Z")
        revisit(stored[0] + "?from=old-crawl", "elsewhere", pages[0][2])
    ran = _warc_in(proc, str(out), "--database", "warc_heritrix")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "revisit records decided as the response they repeat: 4; repeating a response " \
           "not in the files: 1" in ran.stdout, ran.stdout
    assert f"records not decided (not HTML pages): {2 * len(pages) + 2}" in ran.stdout
    assert "?from=old-crawl) repeats a response not in the files" in \
        (proc.folder / "warc.log").read_text()
    again = connect_mongo(proc.services.mongo_uri)["warc_heritrix"]
    expected = set(groups(db))
    for url in mirrored:
        group = next((g for g in expected if url in g), frozenset({url}))
        expected = (expected - {group}) | {group | {url + "?from=feed"}}
    assert groups(again) == expected
    for url in mirrored:
        match = again.matches.find_one({"url": url + "?from=feed"})
        assert match and match["kind"] == "exact" and match["original_url"] == url, match
    assert not again.matches.find_one({"url": {"$regex": "from=old-crawl"}})
    assert again.pages.count_documents({"url": stored[0]}) == 1
    at = {url: n for n, url in reversed(list(enumerate(order)))}  # a URL's first place
    for d in again.matches.find({"kind": {"$in": ["exact", "simhash"]},
                                 "turned": {"$exists": False}}):
        assert at[d["original_url"]] < at[d["url"]], (d, at[d["original_url"]], at[d["url"]])


def _others_archives(pages: list, folder: Path) -> dict[str, str]:  # type: ignore[type-arg]
    """Files in the shapes other tools write, of the demo's ``pages`` (URL, status line,
    headers, payload), written by warcio into ``folder``; each page's capture date by URL:

    - ``clueweb.warc``: WARC/0.18, uncompressed, every digest computed another way than
      warcio's (as ClueWeb09's are), dated 2009;
    - ``brotli.warc.gz``: a request and a brotli-encoded response (wget's order), then a
      URI-agnostic revisit of it under another host (webrecorder's), 2019 and 2020;
    - ``resource.warc.gz``: a ``resource`` record of text/html, 2017;
    - ``example.arc.gz``: warcio's own ARC file (tests/data/warcio), 2014."""
    import base64
    import hashlib
    from io import BytesIO

    import brotli
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    dates: dict[str, str] = {}

    def http(status: str, headers: list, *extra: tuple[str, str]) -> StatusAndHeaders:  # type: ignore[type-arg]
        kept = [(k, v) for k, v in headers if k.lower() not in ("content-encoding",
                                                                 "content-length")]
        return StatusAndHeaders(status, kept + list(extra), protocol="HTTP/1.1")

    with open(folder / "clueweb.warc", "wb") as fh:
        writer = WARCWriter(fh, gzip=False, warc_version="0.18")
        wrong = "sha1:" + base64.b32encode(hashlib.sha1(b"another way").digest()).decode()
        for n, (url, status, headers, body) in enumerate(pages[:8]):
            record = writer.create_warc_record(url, "response", payload=BytesIO(body),
                                               length=len(body),
                                               http_headers=http(status, headers))
            dates[url] = f"2009-01-13T1{n}:00:00Z"
            record.rec_headers.replace_header("WARC-Date", dates[url])
            record.rec_headers.replace_header("WARC-Payload-Digest", wrong)
            record.rec_headers.replace_header("WARC-Block-Digest", wrong)
            writer.write_record(record)
    url, status, headers, body = pages[8]
    mirror = "http://mirror.example.net/" + url.rsplit("/", 1)[-1]
    with open(folder / "brotli.warc.gz", "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        request = writer.create_warc_record(url, "request", http_headers=StatusAndHeaders(
            "GET / HTTP/1.1", [("User-Agent", "Wget/1.21.3"), ("Accept-Encoding", "br")],
            is_http_request=True))
        squeezed = brotli.compress(body)
        response = writer.create_warc_record(
            url, "response", payload=BytesIO(squeezed), length=len(squeezed),
            http_headers=http(status, headers, ("Content-Encoding", "br"),
                              ("Set-Cookie", "sid=1; Domain=.example.co.uk; Path=/")))
        response.rec_headers.add_header("WARC-Concurrent-To",
                                        request.rec_headers.get_header("WARC-Record-ID"))
        dates[url] = "2019-05-04T03:02:01Z"
        for record in (request, response):
            record.rec_headers.replace_header("WARC-Date", dates[url])
            writer.write_record(record)
        revisit = writer.create_revisit_record(
            mirror, "sha1:" + base64.b32encode(hashlib.sha1(squeezed).digest()).decode(),
            url, dates[url], http_headers=http(status, headers, ("Content-Encoding", "br")))
        revisit.rec_headers.replace_header(
            "WARC-Profile",
            "http://netpreserve.org/warc/1.1/revisit/uri-agnostic-identical-payload-digest")
        dates[mirror] = "2020-06-07T08:09:10Z"
        revisit.rec_headers.replace_header("WARC-Date", dates[mirror])
        writer.write_record(revisit)
    url, _status, _headers, body = pages[9]
    with open(folder / "resource.warc.gz", "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        record = writer.create_warc_record(url, "resource", payload=BytesIO(body),
                                           length=len(body),
                                           warc_content_type="text/html; charset=utf-8")
        dates[url] = "2017-04-29T01:30:30Z"
        record.rec_headers.replace_header("WARC-Date", dates[url])
        writer.write_record(record)
    shutil.copy(Path(__file__).resolve().parents[1] / "data" / "warcio" / "example.arc.gz",
                folder)
    dates["http://example.com/"] = "2014-02-16T05:02:21Z"
    return dates


def test_archives_other_tools_wrote_are_read_dated_as_captured(demo_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """ClueWeb09's digests, brotli, webrecorder's URI-agnostic revisits, resource records
    and ARC files (issue 69): every page is decided, each stored page and the archive
    written from them keep the capture's date, and the request record written is the one
    the archive held. With ``DEDUP_WARC_DIGESTS=skip`` the pages that fail their digests
    are counted and not decided; with ``raise`` the run stops at the first."""
    from warcio.archiveiterator import ArchiveIterator

    from dedup.archive import warc_time
    from dedup.adapters.servers.services import connect_mongo

    proc, db = demo_run
    stored = {d["url"] for d in db.pages.find({"host": {"$ne": "registered"}}, {"url": 1})}
    pages = [p for p in archived_pages(proc.folder / "warc") if p[0] in stored
             and p[1].startswith("200")][:10]
    files = tmp_path / "others"
    files.mkdir()
    dates = _others_archives(pages, files)
    out = tmp_path / "deduplicated"
    # a cookie set: Scrapy reads its domain with tldextract, which must not go for the
    # public suffix list (offline here: a traceback in the log), with no list cached
    ran = _warc_in(proc, str(files), "--database", "warc_others", "--warc", str(out),
                   TLDEXTRACT_CACHE=str(tmp_path / "no-suffix-list-cached"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "tldextract" not in (proc.folder / "warc.log").read_text()
    assert "records whose digest does not match their bytes: 8, per DEDUP_WARC_DIGESTS" \
        in ran.stdout, ran.stdout
    assert "revisit records decided as the response they repeat: 1;" in ran.stdout
    again = connect_mongo(proc.services.mongo_uri)["warc_others"]
    mirror = next(u for u in dates if u.startswith("http://mirror.example.net/"))
    kept = {d["url"]: d["fetched_at"] for d in again.pages.find({}, {"url": 1, "fetched_at": 1})}
    assert set(kept) == set(dates) - {mirror}, set(dates) ^ set(kept)
    for url, when in kept.items():
        assert when.replace(tzinfo=None) == warc_time(dates[url]).replace(tzinfo=None), url
    match = again.matches.find_one({"url": mirror})
    assert match and match["kind"] == "exact" and match["original_url"] == pages[8][0]
    written: dict[str, str] = {}
    asked: dict[str, list] = {}  # type: ignore[type-arg]
    requests: list[str] = []
    for path in sorted(out.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                if record.rec_type in ("response", "revisit", "metadata"):
                    written[uri] = record.rec_headers.get_header("WARC-Date")
                elif record.rec_type == "request":
                    asked[uri] = record.http_headers.headers
                    requests.append(uri)
        for line in path.with_suffix("").with_suffix(".cdxj").read_text().splitlines():
            uri, stamp = json.loads(line.split(" ", 2)[2])["url"], line.split(" ")[1]
            assert stamp == warc_time(dates[uri]).strftime("%Y%m%d%H%M%S"), (uri, stamp)
    assert set(written) == set(dates)
    assert sorted(requests) == sorted(set(requests)), requests  # one request a page
    for uri, date in written.items():
        assert warc_time(date) == warc_time(dates[uri]), (uri, date, dates[uri])
    assert ("User-Agent", "Wget/1.21.3") in asked[pages[8][0]]
    # one record's fault costs that record: skipped, or the run stopped there
    clueweb = str(files / "clueweb.warc")
    skipped = _warc_in(proc, clueweb, "--database", "warc_skip", "-s",
                       "DEDUP_WARC_DIGESTS=skip")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr
    assert connect_mongo(proc.services.mongo_uri)["warc_skip"].pages.count_documents({}) == 0
    assert "records whose digest does not match their bytes: 8" in skipped.stdout
    stopped = _warc_in(proc, clueweb, "--database", "warc_raise", "-s",
                       "DEDUP_WARC_DIGESTS=raise")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "records whose digest does not match their bytes: 1, the run stopped at the " \
           "first" in stopped.stdout, stopped.stdout


def test_a_page_skipped_is_kept_in_the_deduplicated_archive(demo_run, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A page the run reads and does not decide (no text at all) copies nothing: the
    deduplicated archive keeps its response and its request record, even with
    ``DEDUP_WARC_KEEP=pages`` (it was left out: the archive lost it)."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    proc, _ = demo_run
    url, status, headers, body = archived_pages(proc.folder / "warc")[0]
    empty_url = "http://archive.example/empty.html"
    source = tmp_path / "in.warc.gz"
    with open(source, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for u, line, fields, payload in ((url, status, headers, body), (
                empty_url, "200 OK", [("Content-Type", "text/html")],
                b"<html><head></head><body><div></div></body></html>")):
            response = writer.create_warc_record(
                u, "response", payload=BytesIO(payload), length=len(payload),
                http_headers=StatusAndHeaders(line, [(k, v) for k, v in fields
                                                     if k.lower() != "content-encoding"],
                                              protocol="HTTP/1.1"))
            writer.write_record(response)
            request = writer.create_warc_record(
                u, "request", payload=BytesIO(b""), length=0,
                http_headers=StatusAndHeaders(f"GET /{u.rsplit('/', 1)[1]} HTTP/1.1",
                                              [("User-Agent", "test-archiver/1")],
                                              is_http_request=True))
            request.rec_headers.add_header("WARC-Concurrent-To",
                                           response.rec_headers.get_header("WARC-Record-ID"))
            writer.write_record(request)
    out = tmp_path / "deduplicated"
    ran = _warc_in(proc, str(source), "--database", "warc_skipped", "--warc", str(out),
                   "-s", "DEDUP_WARC_KEEP=pages")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    kinds: dict[str, list[str]] = {}
    for path in sorted(out.glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                uri = record.rec_headers.get_header("WARC-Target-URI")
                kinds.setdefault(uri, []).append(record.rec_type)
                if uri == empty_url and record.rec_type == "request":
                    assert ("User-Agent", "test-archiver/1") in record.http_headers.headers
    assert sorted(kinds.get(empty_url, [])) == ["request", "response"], kinds
    assert sorted(kinds.get(url, [])) == ["request", "response"], kinds


def _decisions(database) -> tuple[set[str], dict[str, tuple[str, str]]]:  # type: ignore[no-untyped-def]
    """A run's record: the pages stored, and each copy's (kind, original)."""
    return ({d["url"] for d in database.pages.find({}, {"url": 1})},
            {d["url"]: (d["kind"], d["original_url"]) for d in database.matches.find(
                {}, {"url": 1, "kind": 1, "original_url": 1})})


def _split(pages: list, folder: Path, parts: int) -> list[Path]:  # type: ignore[type-arg]
    """``pages`` (URL, status line, headers, payload) written in order as ``parts`` WARC
    files, each a run of consecutive pages, named in that order."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    folder.mkdir()
    size = -(-len(pages) // parts)
    files = []
    for n in range(parts):
        path = folder / f"part-{n:03d}.warc.gz"
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=True)
            for url, status, headers, body in pages[n * size:(n + 1) * size]:
                kept = [(k, v) for k, v in headers if k.lower() != "content-encoding"]
                writer.write_record(writer.create_warc_record(
                    url, "response", payload=BytesIO(body), length=len(body),
                    http_headers=StatusAndHeaders(status, kept, protocol="HTTP/1.1")))
        files.append(path)
    return files


@pytest.mark.spark
def test_pages_read_on_spark_are_decided_as_one_process_decides_them(demo_run,  # type: ignore[no-untyped-def]
                                                                    tmp_path) -> None:
    """``simcrawl warc --engine spark`` (issue 69): the demo crawl's pages, in 16 files,
    read on Spark (``local[2]``) a task a file and decided in file order, make the
    decisions ``simcrawl warc`` makes reading them itself, page for page; every page was
    read on Spark and none again."""
    pytest.importorskip("pyspark", reason="the Spark engine needs the extra simcrawl[spark]")
    from dedup.adapters.servers.services import connect_mongo

    proc, _ = demo_run
    pages = archived_pages(proc.folder / "warc")
    files = tmp_path / "parts"
    _split(pages, files, 16)
    alone = _warc_in(proc, str(files), "--database", "warc_alone")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    spark = _warc_in(proc, str(files), "--database", "warc_spark", "--engine", "spark",
                     "--master", "local[2]", "--stage", str(tmp_path / "stage"))
    assert spark.returncode == 0, spark.stdout + spark.stderr
    assert f"read {len(pages)} pages of {len(pages)} records on Spark" in spark.stdout
    assert f"pages read ahead on Spark, not read again: {len(pages)}" in spark.stdout
    client = connect_mongo(proc.services.mongo_uri)
    mine, theirs = _decisions(client["warc_alone"]), _decisions(client["warc_spark"])
    assert mine[0] and mine[1] and theirs == mine
    assert len(list((tmp_path / "stage").glob("*.pages"))) == 16


@pytest.mark.spark
def test_a_standalone_spark_cluster_reads_the_pages_for_the_same_decisions(  # type: ignore[no-untyped-def]
        demo_run, standalone, tmp_path) -> None:
    """The same run on a standalone master and two one-core workers (the installed
    pyspark's): the decisions of ``local[2]``, of one process."""
    from dedup.adapters.servers.services import connect_mongo

    proc, _ = demo_run
    pages = archived_pages(proc.folder / "warc")
    files = tmp_path / "parts"
    _split(pages, files, 16)
    ran = _warc_in(proc, str(files), "--database", "warc_standalone", "--engine", "spark",
                   "--master", standalone)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"on Spark ({standalone})" in ran.stdout
    assert f"pages read ahead on Spark, not read again: {len(pages)}" in ran.stdout
    alone = _warc_in(proc, str(files), "--database", "warc_alone_2")
    assert alone.returncode == 0, alone.stdout + alone.stderr
    client = connect_mongo(proc.services.mongo_uri)
    assert _decisions(client["warc_standalone"]) == _decisions(client["warc_alone_2"])
