"""A copy is judged on its original's text whichever process admitted the original, and
whether or not MongoDB has the original yet: two real crawl processes on one crawl's
Redis, the first admitting a development article, the second fetching its copy after the
article's page was taken out of MongoDB again (as when the first process has admitted it
and not stored it yet). The text comes with the candidate from the index."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from crawler.examples.pageserver import serve
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def crawl(url: str, services: EmbeddedServices, log: Path) -> None:
    env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_urls={url}",
         "-s", "DEDUP_DATABASE=two", "-s", "DEDUP_NAMESPACE=two", "-s",
         "AUTOTHROTTLE_ENABLED=0", "-s", "DEPTH_LIMIT=1", "-s", "ROBOTSTXT_OBEY=0",
         "-s", f"LOG_FILE={log}"], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=300, check=False)
    assert done.returncode == 0, log.read_text()[-3000:]


def test_a_copy_is_judged_on_the_text_of_an_original_not_yet_in_mongodb(
        dev_data: Path, tmp_path: Path) -> None:
    folder = dev_data / "near-dup-dev"
    rows = {r["page"]: r for r in map(json.loads, (folder / "pages.jsonl").open())}
    port = free_port()
    urls, pages = {}, {}
    for n, name in enumerate(("4a44ab3e4c-P", "4a44ab3e4c-AB")):  # an RT story, its copy
        parts = urlsplit(rows[name]["url"])
        urls[name] = f"http://127.0.0.{n + 2}:{port}{parts.path}"
        pages[urls[name]] = gzip.decompress((folder / "pages" / f"{name}.html.gz")
                                            .read_bytes())
    server, _ = serve(pages, port)
    try:
        with EmbeddedServices(tmp_path / "data") as services:
            db = connect_mongo(services.mongo_uri)["two"]
            crawl(urls["4a44ab3e4c-P"], services, tmp_path / "first.log")
            original = db.pages.find_one({"url": urls["4a44ab3e4c-P"]})
            assert original is not None
            fp = db.fingerprints.find_one({"_id": original["_id"]})
            db.pages.delete_one({"_id": original["_id"]})  # not stored (yet)
            db.fingerprints.delete_one({"_id": original["_id"]})
            crawl(urls["4a44ab3e4c-AB"], services, tmp_path / "second.log")
            match = db.matches.find_one({"url": urls["4a44ab3e4c-AB"]})
            copy_stored = db.pages.count_documents({"url": urls["4a44ab3e4c-AB"]})
    finally:
        server.shutdown()
    # six bits apart: the fingerprints alone never make it a copy; its text does
    assert fp is not None and "sketch" in fp
    assert match is not None, "the copy was admitted: its original's text was not at hand"
    assert (match["kind"], match["original_id"]) == ("simhash", original["_id"])
    assert match["distance"] > 3 and match["containment"] >= 0.8
    assert copy_stored == 0
