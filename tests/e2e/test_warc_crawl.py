"""The demo crawl written as WARC (``--warc DIR``; crawler/warc.py): warcio's check finds no
error in any file, every stored original is a response record, and every copy the crawl
fetched is a metadata record naming its original (after its own response or a revisit)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.checker import Checker

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
                    copies[uri] = (json.loads(record.content_stream().read()),
                                   record.rec_headers.get_header("WARC-Refers-To-Target-URI"))
    stored = {d["url"] for d in db.pages.find({"host": {"$ne": "registered"}}, {"url": 1})}
    assert stored and stored <= responses
    fetched = {d["url"]: d.get("original_url") for d in db.matches.find(
        {"kind": {"$in": ["exact", "simhash", "pinyin"]}}, {"url": 1, "original_url": 1})}
    assert fetched and set(fetched) == set(copies)
    for url, (match, refers) in copies.items():
        assert refers == fetched[url] == match["original_url"]
