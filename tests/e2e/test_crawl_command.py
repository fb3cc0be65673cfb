"""``simcrawl crawl URL`` takes Scrapy settings (``-s NAME=VALUE``, as ``scrapy crawl``
does) and the database to store into, and says which database it used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def simcrawl_crawl(services: EmbeddedServices, site: DemoSite, tmp: Path, *args: str
                   ) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    """``simcrawl crawl`` of the site's first start URL on ``services``, with ``args``
    (AutoThrottle off; the command's data folder under ``tmp``)."""
    env = dict(os.environ, REDIS_URL=services.redis_url or "",
               MONGO_URI=services.mongo_uri or "")
    return subprocess.run([sys.executable, "-m", "crawler.cli", "crawl", site.start_urls()[0], *args,
                           "-s", "AUTOTHROTTLE_ENABLED=0", "--data-dir", str(tmp / "cli")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                          check=False)


def test_a_crawl_of_urls_takes_scrapy_settings_and_a_database(tmp_path: Path) -> None:
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=12, zh_articles=0, novel_chapters=0)) as site:
        done = simcrawl_crawl(services, site, tmp_path, "--database", "mine",
                              "-s", "DEPTH_LIMIT=1")
        assert done.returncode == 0, done.stdout + done.stderr
        assert 'database "mine"' in done.stdout
        # a log a database: crawls of two databases in one folder wrote one log, mixed
        mine = tmp_path / "cli" / "crawl-mine.log"
        assert f"(log: {mine})" in done.stdout and "Spider opened" in mine.read_text()
        assert not (tmp_path / "cli" / "crawl.log").exists()
        client = connect_mongo(services.mongo_uri or "")
        assert client["mine"].pages.count_documents({}) > 0
        assert client["simcrawl"].pages.count_documents({}) == 0
        # DEPTH_LIMIT=1: the start page and the pages it links to, not the whole site
        pages = [r for r in site.requests if not r.endswith("/robots.txt")]
        links = site.content.pages["news"]["/"].body.count(b"href=")
        assert 1 < len(pages) <= 1 + links
        assert len(pages) < sum(len(p) for p in site.content.pages.values()) // 2
        assert "STOPPED before the end" not in done.stdout  # it ran out of pages


def test_a_crawl_cut_short_says_so(tmp_path: Path) -> None:
    """``CLOSESPIDER_PAGECOUNT`` stops a crawl with pages left: the summary names Scrapy's
    finish reason (it read as a crawl that was done)."""
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=12, zh_articles=0, novel_chapters=0)) as site:
        done = simcrawl_crawl(services, site, tmp_path, "-s", "CLOSESPIDER_PAGECOUNT=3")
        assert done.returncode == 0, done.stdout + done.stderr
        line = next(x for x in done.stdout.splitlines() if "STOPPED before the end" in x)
        assert "Scrapy's finish reason: closespider_pagecount" in line


def test_the_commands_own_settings_given_by_the_user_are_honoured(tmp_path: Path) -> None:
    """``-s DEDUP_SUMMARY_FILE=...`` gets the summary and the command still shows it (it
    replaced the file the command reads, which then said the crawl did not run, exit 1);
    with ``--processes 2`` the command names the two logs the processes write."""
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=8, zh_articles=0, novel_chapters=0)) as site:
        summary = tmp_path / "summary.json"
        done = simcrawl_crawl(services, site, tmp_path, "--processes", "2",
                              "-s", f"DEDUP_SUMMARY_FILE={summary}")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "did not run" not in done.stderr
        written = json.loads(summary.read_text())
        assert written["dedup/unique"] > 0 and f"{written['dedup/unique']}" in done.stdout
        logs = [tmp_path / "cli" / "crawl-1.log", tmp_path / "cli" / "crawl-2.log"]
        assert f"(log: {logs[0]}, {logs[1]})" in done.stdout
        assert all(log.is_file() for log in logs)


def test_a_crawl_with_dedup_off_accounts_for_every_request(tmp_path: Path) -> None:
    """With ``DEDUP_ENABLED=False`` every page is stored undecided: the summary says so
    and adds up (it said the stored pages were in flight when the crawl stopped). A
    mistyped setting beside it is named (it was accepted silently), Scrapy's own too."""
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=6, zh_articles=0, novel_chapters=0)) as site:
        done = simcrawl_crawl(services, site, tmp_path, "--database", "off",
                              "-s", "DEDUP_ENABLED=False", "-s", "DEDUP_MAX_DISTANC=3",
                              "-s", "DEPTH_LIMT=2")
        assert done.returncode == 0, done.stdout + done.stderr
        stored = connect_mongo(services.mongo_uri or "")["off"].pages.count_documents({})
        assert stored > 0
        assert "in flight" not in done.stdout
        line = next(x for x in done.stdout.splitlines() if "requests (all accounted for)" in x)
        assert f"0 pages decided + {stored} stored undecided" in line
        # a mistyped setting is named, with the one meant, before the crawl and in its log
        typo = ("DEDUP_MAX_DISTANC is not a simcrawl setting and does nothing; did you mean "
                "DEDUP_MAX_DISTANCE?")
        assert f"warning: {typo}" in done.stderr
        assert typo in (tmp_path / "cli" / "crawl-off.log").read_text()
        # and so is one of Scrapy's own (it was silent: only DEDUP_* / SIMCRAWL_* were)
        typo = "DEPTH_LIMT is not a Scrapy setting and does nothing; did you mean DEPTH_LIMIT?"
        assert f"warning: {typo}" in done.stderr
        assert typo in (tmp_path / "cli" / "crawl-off.log").read_text()


def test_a_crawl_starts_from_a_file_reads_the_sitemaps_and_keeps_to_the_url_patterns(
        tmp_path: Path) -> None:
    """What a user of wget or Heritrix reaches for (issue 72 item 11): start URLs from a
    file (``-i``, as ``wget -i``), a page no link reaches found through the sitemap its
    robots.txt names (a sitemap index, a gzipped sitemap), and ``--exclude`` patterns that
    keep links from ever being requested, the sitemap's pages included."""
    import gzip

    from crawler.examples.demosite import Page

    content = build(articles=6, zh_articles=0, novel_chapters=0)
    orphan = ("<html><head><title>The old ferry</title></head><body><article><h1>The old "
              "ferry</h1>" + "".join(
                  f"<p>The ferry that crossed the estuary for {n + 40} years made its last "
                  f"run on a grey morning, and {n + 3} of its old hands came to see it off "
                  "from the slipway by the harbour wall.</p>" for n in range(6))
              + "</article></body></html>").encode()
    news = content.pages["news"]
    news["/old/ferry.html"] = Page(orphan)  # no page links to it
    news["/robots.txt"] = Page(news["/robots.txt"].body
                               + b"Sitemap: {news}/sitemaps/index.xml\n", "text/plain")
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        base = site.url("news")
        listed = "".join(f"<url><loc>{base}{p}</loc></url>" for p in (
            "/old/ferry.html", "/print/harbour-0.html", "/articles/harbour-0.html"))
        news["/sitemaps/index.xml"] = Page(
            f'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
            f'sitemap/0.9"><sitemap><loc>{base}/sitemaps/pages.xml.gz</loc></sitemap>'
            f"</sitemapindex>".encode(), "application/xml")
        news["/sitemaps/pages.xml.gz"] = Page(gzip.compress(
            f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/'
            f'sitemap/0.9">{listed}</urlset>'.encode()), "application/gzip")
        start = tmp_path / "start.txt"
        start.write_text(f"# where the crawl starts\n\n{base}/\n")
        env = dict(os.environ, REDIS_URL=services.redis_url or "",
                   MONGO_URI=services.mongo_uri or "")
        done = subprocess.run(
            [sys.executable, "-m", "crawler.cli", "crawl", "-i", str(start), "--sitemaps",
             "--exclude", "/print/", "--exclude", "/tag/", "--database", "mapped",
             "-s", "AUTOTHROTTLE_ENABLED=0", "--data-dir", str(tmp_path / "cli")],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        requested = set(site.requests)
        assert "news/old/ferry.html" in requested  # reached through the sitemap alone
        assert {"news/sitemaps/index.xml", "news/sitemaps/pages.xml.gz"} <= requested
        assert not [r for r in requested if r.startswith(("news/print/", "news/tag/"))]
        stored = connect_mongo(services.mongo_uri or "")["mapped"].pages.find_one(
            {"url": f"{base}/old/ferry.html"})
        assert stored is not None and stored["title"] == "The old ferry"
        lines = done.stdout.splitlines()
        assert any("sitemaps read" in x and "2, listing 2 pages to crawl" in x for x in lines)
        assert any("links left out by the URL patterns" in x for x in lines)
        assert "requests (all accounted for)" in done.stdout


def test_the_crawl_reaches_a_page_before_the_pages_it_links_to(tmp_path: Path) -> None:
    """Breadth-first, as the README advises a project (issue 72 item 12): every page one
    link from the start is requested before any page two links away, so an article is
    met before the print view or syndicated copy its neighbours link to. Scrapy's default
    (depth-first) took the last link first: /, /b1, /a1, ... (/b2 before /a1 when the
    pages are decided sooner)."""
    from crawler.examples.demosite import Page

    def page(*links: str) -> Page:
        return Page(("<html><body>" + "".join(f'<p><a href="{link}">{link}</a></p>'
                                              for link in links) + "</body></html>").encode())

    content = build(articles=4, zh_articles=0, novel_chapters=0)
    content.pages["news"] = {"/": page("/a1", "/b1"), "/a1": page("/a2"), "/a2": page("/a3"),
                             "/a3": page(), "/b1": page("/b2"), "/b2": page(),
                             "/robots.txt": Page(b"User-agent: *\n", "text/plain")}
    depth = {"news/": 0, "news/a1": 1, "news/b1": 1, "news/a2": 2, "news/b2": 2,
             "news/a3": 3}
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        done = simcrawl_crawl(services, site, tmp_path, "-s", "CONCURRENT_REQUESTS=1")
        assert done.returncode == 0, done.stdout + done.stderr
        order = [r for r in site.requests if r in depth]
    assert sorted(order) == sorted(depth)
    assert [depth[r] for r in order] == sorted(depth[r] for r in order), order
    # and the links of one page in the order they came (depth-first took the last first)
    assert order[:3] == ["news/", "news/a1", "news/b1"], order
