"""Extraction in worker processes: the same result as in the crawl process, and a worker
that dies fails only its own pages."""

import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

import dedup
from crawler.extraction import Extractor, extract_and_fingerprint, fingerprint_params
from dedup.config import DedupConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture()
def extractor():
    ex = Extractor(DedupConfig(extract_workers=1))
    yield ex
    ex.close()


def test_a_worker_gives_the_same_text_and_fingerprint_as_the_crawl_process(extractor):
    body = (EXAMPLES / "spring-town-copy.gbk.html").read_bytes()
    got = extractor.submit_future(body, "http://example.org/a").result(timeout=60)
    here = extract_and_fingerprint(body, "http://example.org/a",
                                   fingerprint_params(DedupConfig()))
    assert got == here
    assert "春" in got.text and got.tokens > 0
    assert got.simhash == dedup.fingerprint(got.text, cjk_ngram=2).simhash


def test_a_killed_worker_fails_its_page_and_the_next_page_is_extracted(extractor):
    body = (EXAMPLES / "harbour-original.html").read_bytes()
    assert extractor.submit_future(body, "http://a/").result(timeout=60).tokens > 0
    pool = extractor._pool
    doomed = extractor.submit_future(body * 200, "http://a/big")  # takes seconds
    for pid in list(pool._processes):  # its worker dies (the OOM killer, say)
        os.kill(pid, signal.SIGKILL)
    with pytest.raises(BrokenProcessPool):
        doomed.result(timeout=60)
    deadline = time.monotonic() + 10
    while extractor._pool is pool and time.monotonic() < deadline:
        time.sleep(0.01)
    assert extractor.submit_future(body, "http://a/again").result(timeout=60).tokens > 0


def test_workers_setting():
    assert Extractor(DedupConfig(extract_workers=0)).workers == 0
    assert Extractor(DedupConfig(extract_workers=3)).workers == 3
    assert Extractor(DedupConfig()).workers == (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="DEDUP_EXTRACT_WORKERS"):
        DedupConfig(extract_workers=-2)


def test_the_declared_canonical_url() -> None:
    from dedup.pages import declared_canonical
    from dedup.text import parse_html

    def declared(head: str) -> str | None:
        html = f"<html><head>{head}</head><body><p>text</p></body></html>"
        return declared_canonical(parse_html(html), "https://a.example/news/1?utm=x", html)

    assert declared('<link rel="canonical" href="/news/1">') == "https://a.example/news/1"
    assert declared('<meta property="og:url" content="https://b.example/story">') == \
        "https://b.example/story"
    assert declared('<link rel="canonical" href="https://c.example/x">'
                    '<meta property="og:url" content="https://b.example/y">') == \
        "https://c.example/x"  # rel=canonical first
    assert declared("") is None
    assert declared('<link rel="canonical" href="javascript:void(0)">') is None
    assert declared('<link rel="alternate canonical" href="/b">') == "https://a.example/b"
    assert declared('<base href="https://m.example/"><link rel="canonical" href="n/1">') == \
        "https://m.example/n/1"  # against the page's base URL, as Scrapy's urljoin
