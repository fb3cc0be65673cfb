"""Extraction in worker processes: the same result as in the crawl process; a worker that
dies costs no page (its pages are extracted again in a new pool), and a page that kills
its worker every time is failed after a few attempts."""

import contextlib
import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

import pytest

import dedup
from crawler.extraction import Extractor, extract_and_fingerprint, fingerprint_params
from dedup.config import DedupConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "crawler" / "examples"


@pytest.fixture()
def extractor():
    ex = Extractor(DedupConfig(extract_workers=1))
    yield ex
    ex.close()


@pytest.fixture()
def slow_extractor():
    """Workers that read with trafilatura, which takes seconds over :func:`slow_page`
    (simcrawl's own reading takes a fraction of a second: too little to kill it at)."""
    ex = Extractor(DedupConfig(extract_workers=1, extractor="trafilatura"))
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


def slow_page() -> bytes:
    """A page a worker takes seconds over (2 MB of paragraphs)."""
    return b"<html><body><article>" + b"".join(
        b"<p>paragraph %d of a long story about nothing in particular</p>" % i
        for i in range(30000)) + b"</article></body></html>"


def kill_workers(pool) -> None:  # type: ignore[no-untyped-def]
    for pid in list(pool._processes):  # the OOM killer, say
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def wait_for_new_pool(extractor, pool) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 10
    while extractor._pool in (pool, None) and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_killed_worker_loses_no_page(slow_extractor):
    extractor = slow_extractor
    body = (EXAMPLES / "harbour-original.html").read_bytes()
    assert extractor.submit_future(body, "http://a/").result(timeout=60).tokens > 0
    pool = extractor._pool
    busy = extractor.submit_future(slow_page(), "http://a/big")
    time.sleep(0.5)  # the worker has it
    queued = [extractor.submit_future(body, f"http://a/{n}") for n in range(3)]
    kill_workers(pool)
    # the page the worker had and the pages queued behind it are extracted in a new pool
    assert busy.result(timeout=120).tokens > 0
    assert [f.result(timeout=60).url for f in queued] == [f"http://a/{n}" for n in range(3)]
    assert extractor._pool is not pool


def test_a_page_that_kills_its_worker_every_time_is_failed(slow_extractor):
    extractor = slow_extractor
    from crawler.extraction import ATTEMPTS

    body = (EXAMPLES / "harbour-original.html").read_bytes()
    assert extractor.submit_future(body, "http://a/").result(timeout=60).tokens > 0
    doomed = extractor.submit_future(slow_page(), "http://a/big")
    for attempt in range(ATTEMPTS):
        pool = extractor._pool
        deadline = time.monotonic() + 10
        while not pool._processes and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.5)  # the page is in the worker
        kill_workers(pool)
        if attempt < ATTEMPTS - 1:
            wait_for_new_pool(extractor, pool)
    with pytest.raises(BrokenProcessPool):
        doomed.result(timeout=60)
    assert extractor.submit_future(body, "http://a/again").result(timeout=60).tokens > 0


def test_workers_setting():
    assert Extractor(DedupConfig(extract_workers=0)).workers == 0
    assert Extractor(DedupConfig(extract_workers=3)).workers == 3
    assert Extractor(DedupConfig()).workers == (os.cpu_count() or 1)
    with pytest.raises(ValueError, match="DEDUP_EXTRACT_WORKERS"):
        DedupConfig(extract_workers=-2)


@pytest.mark.parametrize("parser", ["simcrawl", "trafilatura"])
def test_the_declared_canonical_url(parser: str) -> None:
    from dedup.reading import declared_canonical, parse_page

    def declared(head: str) -> str | None:
        html = f"<html><head>{head}</head><body><p>text</p></body></html>"
        return declared_canonical(parse_page(html, parser), "https://a.example/news/1?utm=x",
                                  html)

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
    assert declared('<link rel="alternate canonical" href="/c"><link rel=canonical href=/d>'
                    ) == "https://a.example/c"  # the first link whose rel has the word


@pytest.mark.parametrize("parser", ["simcrawl", "trafilatura"])
def test_the_pages_title_and_description(parser: str) -> None:
    from dedup.reading import page_facts, parse_page

    def facts(head: str, body: str = "<p>text</p>") -> tuple[str | None, str | None]:
        html = f"<html><head>{head}</head><body>{body}</body></html>"
        found = page_facts(parse_page(html, parser), "https://a.example/1", html)
        return found.title, found.description

    assert facts("<title> Harbour\n  reopens | Times </title>"
                 "<meta name=description content=' The wall is  back. '>"
                 "<meta property=og:description content='Other words.'>") == \
        ("Harbour reopens | Times", "The wall is back.")
    assert facts("<meta property=og:description content='Other words.'>") == \
        (None, "Other words.")  # the Open Graph description when there is no other
    assert facts("<meta property=description content='Not a description.'>") == (None, None)
    assert facts("<meta name=description content=''>"  # declared empty: none
                 "<meta property=og:description content='Other words.'>") == (None, None)
    assert facts("", "<svg><title>An icon</title></svg>") == ("An icon", None)


def test_a_thin_page_is_read_with_its_description_once() -> None:
    # a thin text is read with the page's description first, unless it says it already,
    # in its own spacing: a highlighted line of code is read with spaces between its words
    from dedup.reading import read_html

    code = "".join(f"<span class=n>{t}</span>" for t in
                   ["db", ".", "matches", ".", "find", "({", '"kind"', ":", '"url_rule"', "})"])

    def read(description: str) -> list[str]:
        html = (f"<html><head><meta name=description content='{description}'></head><body>"
                f"<article><h1>Querying them</h1><pre><code>{code}</code></pre></article>"
                "</body></html>")
        return read_html(html, "http://docs.test/q.html",
                         fingerprint_params(DedupConfig())).text.splitlines()

    def times(description: str) -> int:  # the lines saying the line of code
        return sum("matches" in line for line in read(description))

    assert times('db.matches.find({"kind": "url_rule"})') == 1
    assert times("db.matches.find({") == 1  # cut short (a quote left unescaped)
    assert read("How to query the match records")[0] == "How to query the match records"


@pytest.mark.parametrize("parser", ["simcrawl", "trafilatura"])
def test_when_a_page_says_it_was_first_published(parser: str) -> None:
    from dedup.reading import page_facts, parse_page

    def published(head: str, body: str = "<p>text</p>") -> str | None:
        html = f"<html><head>{head}</head><body>{body}</body></html>"
        found = page_facts(parse_page(html, parser), "https://a.example/1", html).published
        return None if found is None else found.isoformat()

    assert published("<meta property='article:published_time' "
                     "content='2024-05-02T09:30:00+02:00'>") == "2024-05-02T07:30:00+00:00"
    assert published("<meta name='DC.date.issued' content='2024-05-02'>") == \
        "2024-05-02T00:00:00+00:00"  # a date alone: its midnight, UTC
    assert published('<script type="application/ld+json">{"@type": "NewsArticle", '
                     '"dateModified": "2024-06-01", "datePublished": "2024-05-02T10:00:00Z"}'
                     "</script>") == "2024-05-02T10:00:00+00:00"
    assert published("", "<p>By A. Writer, <time itemprop=datePublished "
                     "datetime=2024-05-02T10:00>May 2</time></p>") == "2024-05-02T10:00:00+00:00"
    # a change is not a publication; a placeholder, a date to come and words are no dates
    assert published("<meta property='article:modified_time' content='2024-05-02'>") is None
    assert published("<meta name=date content='1970-01-01'>") is None
    assert published("<meta name=date content='2999-01-01'>") is None
    assert published("<meta name=date content='last Tuesday'>") is None
    assert published("<meta name=date content='2024-05-02'>"  # the first one counts
                     "<meta property=article:published_time content='2023-01-01'>") == \
        "2024-05-02T00:00:00+00:00"


def test_the_crawls_links_are_scrapys_default_link_extractors() -> None:
    from scrapy.http import HtmlResponse
    from scrapy.linkextractors import LinkExtractor

    from crawler.extraction import ParsedResponse, page_links
    from dedup.reading import parse_page

    hrefs = ["/a", "/b.pdf", "/c.PDF", "/d.jpg?size=2", "/e.zip;v=1", "/f.html#top", "/a",
             "http://other.example/g.tar.gz", "mailto:x@a.example", "/h.mp4/", "/i.png.html",
             " /j ", "javascript:void(0)", "/docs.pdf/view"]
    html = "<html><body>" + "".join(f'<a href="{h}">{h}</a>' for h in hrefs) + \
        '<area href="/map.gif"><area href="/k"></body></html>'
    body = html.encode()
    scrapys = [link.url for link in LinkExtractor().extract_links(
        HtmlResponse("https://a.example/x/", body=body, encoding="utf-8"))]
    response = ParsedResponse("https://a.example/x/", body=body, encoding="utf-8")
    response.tree = parse_page(response.text)
    assert page_links(response) == scrapys
    assert "https://a.example/a" in scrapys and "https://a.example/b.pdf" not in scrapys
    # the same links on pages of other schemes, hosts and bases: each resolved as Scrapy
    # resolves it, not as the page before (the crawl remembers how it resolved a link)
    hrefs += ["https://a.example/l", "http://a.example/m", "//cdn.example/n", "o?p=1", "#q",
              "HTTPS://A.example/r", "/s/../t", "https://a.example", "../u", "?v", "/é",
              "https://a.example/w?", "http://a.example/y?", "/z?"]
    for url, base in [("https://a.example/x/", None), ("http://a.example/x/y", None),
                      ("https://b.example/z", None), ("https://a.example/x/", "http://c.example/d/"),
                      ("http://b.example/", "https://b.example/e/f")]:
        head = f'<head><base href="{base}"></head>' if base else ""
        body = (f"<html>{head}<body>" + "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
                + "</body></html>").encode()
        scrapys = [link.url for link in LinkExtractor().extract_links(
            HtmlResponse(url, body=body, encoding="utf-8"))]
        response = ParsedResponse(url, body=body, encoding="utf-8")
        response.tree = parse_page(response.text)
        assert page_links(response) == scrapys, (url, base)


def test_the_spider_follows_links_on_its_domains_only() -> None:
    from crawler.spiders.site import SiteSpider

    spider = SiteSpider(start_urls="https://a.example/", allowed_domains="a.example,b.test")
    urls = ["https://a.example/p", "http://A.Example:8080/q?x=1", "https://www.a.example/",
            "https://user:pw@b.test/", "https://a.example#top", "https://a.example?q",
            "https://nota.example/", "https://a.example.evil.com/", "https://evil.com/a.example",
            "https://a.example@evil.com/", "https://evil.com?a.example", "ftp://b.test/f",
            "HTTPS://B.TEST/X", "https://[::1]/", "mailto:x@a.example", "https://sub.b.test:1/"]
    expected = ["https://a.example/p", "http://A.Example:8080/q?x=1", "https://www.a.example/",
                "https://user:pw@b.test/", "https://a.example#top", "https://a.example?q",
                "ftp://b.test/f", "HTTPS://B.TEST/X", "https://sub.b.test:1/"]
    assert spider.in_scope(urls) == expected
    assert spider.in_scope(list(reversed(urls))) == list(reversed(expected))  # remembered


def test_a_page_at_the_depth_limit_gets_no_requests() -> None:
    from scrapy.utils.test import get_crawler

    from crawler.spiders.site import SiteSpider

    crawler = get_crawler(SiteSpider, {"DEPTH_LIMIT": 2})
    spider = SiteSpider.from_crawler(crawler, start_urls="https://a.example/")
    links = ["https://a.example/p", "https://a.example/q", "https://b.example/r"]
    assert [r.url for r in spider.follow(links, "https://a.example/", 1)] == links[:2]
    assert spider.follow(["https://a.example/s"], "https://a.example/p", 2) == []
    # its links were not taken for requested: a shallower page still asks for them
    assert [r.url for r in spider.follow(["https://a.example/s"], "https://a.example/", 0)] \
        == ["https://a.example/s"]
    unlimited = SiteSpider.from_crawler(get_crawler(SiteSpider, {"DEPTH_LIMIT": 0}),
                                        start_urls="https://a.example/")
    assert len(unlimited.follow(links, "https://a.example/", 40)) == 2


@pytest.mark.parametrize("html, language", [
    ("<html lang='de-CH'><body><p>Text</p></body></html>", "de-CH"),
    ("<!doctype html><HTML LANG=EN><body><p>Text</p></body></html>", "EN"),
    ("<html><body lang='fr'><p>Text</p></body></html>", None),  # not the page's
    ("<p>Text without an html element</p>", None),
    ("<html lang=''><body><p>Text</p></body></html>", ""),
])
def test_the_pages_language_is_its_html_elements_lang(html: str, language: str | None) -> None:
    from scrapy.http import HtmlResponse

    from crawler.extraction import read_page

    params = fingerprint_params(DedupConfig())
    page = read_page(html.encode(), "https://a.example/", "utf-8", params)
    assert page.language == language == HtmlResponse(
        "https://a.example/", body=html.encode(), encoding="utf-8").css("html::attr(lang)").get()


def test_pages_within_the_wait_share_one_decision_batch() -> None:
    from twisted.internet.defer import succeed
    from twisted.internet.task import Clock

    from crawler.middlewares.batches import Batcher

    batches: list[list[int]] = []

    def decide(batch: list[int]) -> list[int]:
        batches.append(batch)
        return [10 * v for v in batch]

    clock = Clock()
    batcher = Batcher(decide, 3, 0.1, clock=clock, run=lambda fn, arg: succeed(fn(arg)))
    results: list[int] = []
    for value in (1, 2):
        batcher.submit(value).addCallback(results.append)
    clock.advance(0.09)
    assert batches == []  # still waiting for more pages
    clock.advance(0.02)
    assert batches == [[1, 2]] and results == [10, 20]
    for value in (3, 4, 5, 6):  # a full batch goes at once, the rest waits again
        batcher.submit(value).addCallback(results.append)
    assert batches == [[1, 2], [3, 4, 5]]
    clock.advance(0.1)
    assert batches[-1] == [6] and results == [10, 20, 30, 40, 50, 60]


def test_a_page_with_no_other_on_its_way_is_decided_at_once() -> None:
    from twisted.internet.defer import succeed
    from twisted.internet.task import Clock

    from crawler.middlewares.batches import Batcher

    batches: list[list[int]] = []
    coming = [1]  # pages on their way besides the one submitted
    clock = Clock()
    batcher = Batcher(lambda batch: batches.append(batch) or batch, 10, 0.1, clock=clock,
                      run=lambda fn, arg: succeed(fn(arg)), alone=lambda: not coming[0])
    batcher.submit(1)
    assert batches == []  # another page is coming: it waits for it
    coming[0] = 0
    batcher.submit(2)  # the last page: no wait
    assert batches == [[1, 2]]
    clock.advance(1)
    assert batches == [[1, 2]]


def test_serial_batches_run_one_after_another_in_the_order_their_pages_came() -> None:
    from twisted.internet.defer import Deferred
    from twisted.internet.task import Clock

    from crawler.middlewares.batches import Batcher

    running: list[tuple[list[int], Deferred]] = []

    def run(fn, batch):  # type: ignore[no-untyped-def]
        d: Deferred = Deferred()
        running.append((batch, d))
        return d

    clock = Clock()
    batcher = Batcher(lambda b: b, 2, 0.1, clock=clock, run=run, serial=True)
    for value in (1, 2, 3, 4, 5):
        batcher.submit(value)
    clock.advance(1)
    assert [b for b, _ in running] == [[1, 2]]  # the next waits for this one to be done
    running[0][1].callback([1, 2])
    assert [b for b, _ in running] == [[1, 2], [3, 4]]
    running[1][1].callback([3, 4])
    assert [b for b, _ in running] == [[1, 2], [3, 4], [5]]


def test_pages_ask_in_the_order_they_came_whatever_their_reading_takes() -> None:
    import asyncio

    from crawler.middlewares.batches import InOrder

    async def pages() -> list[str]:
        order, asked = InOrder(), []

        async def page(name: str, reading: float, skipped: bool = False) -> None:
            ticket = order.take()
            try:
                await asyncio.sleep(reading)  # read off the loop's thread
                if skipped:
                    return  # not decided: its turn passes all the same
                await order.turn(ticket)
                asked.append(name)
                order.passed(ticket)
            finally:
                order.passed(ticket)

        await asyncio.gather(page("first", 0.03), page("skipped", 0.0, skipped=True),
                             page("second", 0.0), page("third", 0.01))
        return asked

    assert asyncio.run(pages()) == ["first", "second", "third"]


def test_the_workers_start_with_the_crawl_not_at_its_first_page() -> None:
    ex = Extractor(DedupConfig(extract_workers=2))
    try:
        ex.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pool = ex._pool
            if pool is not None and len(pool._processes) == 2:
                break
            time.sleep(0.05)
        assert ex._pool is not None and len(ex._pool._processes) == 2  # no page given yet
        # forked from a fork server that has read a page already: the pinyin library and
        # tables are there before the first page
        assert ex._pool.submit(eval, "'pypinyin' in __import__('sys').modules").result(60)
        body = b"<html><body><p>" + b"word " * 80 + b"</p></body></html>"
        assert ex.submit_future(body, "http://example.org/").result(timeout=60).tokens == 80
    finally:
        ex.close()


def test_pages_given_while_the_workers_start_are_read_in_the_crawl_process() -> None:
    ex = Extractor(DedupConfig(extract_workers=1))
    try:
        assert not ex.reads_here()  # no start asked: the first page starts the pool
        ex.start()
        assert ex.reads_here()  # the crawl's first page does not wait for the start
        deadline = time.monotonic() + 60
        while ex.reads_here() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not ex.reads_here()  # started: the workers read every page
    finally:
        ex.close()
    assert Extractor(DedupConfig(extract_workers=0)).reads_here()


def test_a_page_read_by_a_worker_leaves_no_cyclic_garbage(extractor) -> None:
    """A page's futures and its result are freed when the crawl is done with them, not at
    the garbage collector's next turn (a closure that named itself kept each page's
    result, its text and links, until then)."""
    import gc
    from concurrent.futures import Future

    from dedup.page import Page

    body = b"<html><body><p>" + b"word " * 80 + b"</p></body></html>"
    extractor.submit_future(body, "http://example.org/").result(timeout=60)  # started
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)  # what a collection finds is kept in gc.garbage
    try:
        for n in range(20):
            assert extractor.submit_future(body, f"http://example.org/{n}").result(
                timeout=60).tokens == 80
        gc.collect()
        left = [o for o in gc.garbage if isinstance(o, (Future, Page))]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert not left, f"{len(left)} futures and pages in reference cycles after 20 pages"


def test_a_closed_extractor_starts_no_workers() -> None:
    ex = Extractor(DedupConfig(extract_workers=1))
    ex.close()
    ex.start()
    time.sleep(0.5)
    assert ex._pool is None
    assert Extractor(DedupConfig(extract_workers=0)).start() is None  # nothing to start
