"""The original is the page the pages say it is, whatever the order they are fetched in: a
real crawl that reaches a syndicated copy first (its start URL) and the source only
through the copy's credit link. The copy names the source canonical and says it was
published a day later; the source has a byte-identical mirror. The record keeps the
source as the original, under the id the copy was stored with, and the copy and the
mirror as its copies; the copy's record says it was turned round."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.pageserver import serve
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port
from tests.decision_cases import article

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def html(text: str, head: str = "", links: str = "") -> bytes:
    paragraphs = "".join(f"<p>{line}</p>" for line in text.split("\n"))
    return (f"<html><head><title>The harbour wall</title>{head}</head><body>"
            f"<article><h1>The harbour wall</h1>{paragraphs}</article>{links}"
            "</body></html>").encode()


def test_a_crawl_keeps_the_source_when_it_reaches_its_syndicated_copy_first(
        tmp_path: Path) -> None:
    port = free_port()
    copy, source, mirror, trap = (f"http://127.0.0.{n}:{port}/story" for n in (2, 3, 4, 5))
    text = article(11)
    pages = {
        copy: html(text + "\nThis story first appeared in the Harbour Times.",
                   f'<link rel="canonical" href="{source}">'
                   '<meta property="article:published_time" content="2024-05-03T09:00:00Z">',
                   f'<a href="{source}">Harbour Times</a> <a href="{trap}">more</a>'),
        source: html(text, '<meta property="article:published_time" '
                     'content="2024-05-02T09:00:00Z">', f'<a href="{mirror}">mirror</a>'),
        trap: html(article(12)),
    }
    pages[mirror] = pages[source]
    server, asked = serve(pages, port)
    try:
        with EmbeddedServices(tmp_path / "data") as services:
            env = dict(os.environ, REDIS_URL=services.redis_url,
                       MONGO_URI=services.mongo_uri)
            done = subprocess.run(
                [sys.executable, "-m", "scrapy", "crawl", "site", "-a", f"start_urls={copy}",
                 "-a", "allowed_domains=127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5",
                 "-s", "DEDUP_DATABASE=turn", "-s", "DEDUP_NAMESPACE=turn",
                 "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "ROBOTSTXT_OBEY=0",
                 "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"], cwd=ROOT, env=env,
                capture_output=True, text=True, timeout=300, check=False)
            assert done.returncode == 0, (tmp_path / "crawl.log").read_text()[-3000:]
            db = connect_mongo(services.mongo_uri)["turn"]
            stored = {d["url"]: d["_id"] for d in db.pages.find({}, {"url": 1})}
            matches = {d["url"]: d for d in db.matches.find()}
    finally:
        server.shutdown()
    log = (tmp_path / "crawl.log").read_text()
    assert source in stored and copy not in stored and mirror not in stored, stored
    first = matches[copy]  # stored first, now the source's copy, and saying why
    assert (first["original_url"], first["original_id"], first["turned"]) == (
        source, stored[source], "canonical")
    assert first["checksum"] and first["title"] == "The harbour wall"
    assert (matches[mirror]["original_url"], matches[mirror]["kind"]) == (source, "exact")
    assert f"turned round: {source} is the original of {copy}" in log
    # the copy's links were followed while it was the original: a crawl that fetches
    # the source first (breadth-first order, docs/settings.md) never asks for the trap
    assert trap in asked
