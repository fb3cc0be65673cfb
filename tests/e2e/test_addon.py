"""simcrawl in any Scrapy project: ``ADDONS = {"crawler.Addon": 300}`` in a project made by
``scrapy startproject``, with the project's own spiders (a plain one that yields dicts and
follows links with ``response.follow``, and a ``CrawlSpider``), crawling the demo site with
its mirrors, syndicated copies and trap pages linked only from copies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build
from crawler.examples.pageserver import serve
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

pytestmark = pytest.mark.e2e

SPIDERS = '''
import scrapy
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule


class PagesSpider(scrapy.Spider):
    name = "pages"

    def __init__(self, start=None, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [start]

    def parse(self, response):
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)


class RulesSpider(CrawlSpider):
    name = "rules"
    rules = (Rule(LinkExtractor(), callback="parse_item", follow=True),)

    def __init__(self, start=None, **kwargs):
        self.start_urls = [start]
        super().__init__(**kwargs)

    def parse_item(self, response):
        yield {"url": response.url, "heading": response.css("h1::text").get()}
'''


def project(tmp: Path) -> Path:
    """A project as ``scrapy startproject`` makes it, with the add-on's entry in the
    ``ADDONS`` its settings already have (as the README says to add it)."""
    subprocess.run([sys.executable, "-m", "scrapy", "startproject", "shop", str(tmp / "shop")],
                   check=True, capture_output=True, timeout=120)
    folder = tmp / "shop"
    (folder / "shop" / "spiders" / "mine.py").write_text(SPIDERS)
    settings = folder / "shop" / "settings.py"
    text = settings.read_text()
    assert text.count("ADDONS = {}") == 1, "startproject's settings have ADDONS = {}"
    settings.write_text(text.replace("ADDONS = {}", 'ADDONS = {"crawler.Addon": 300}'))
    return folder


def crawl(folder: Path, env: dict[str, str], spider: str, start: str, name: str,
          *extra: str) -> list[dict]:
    out = folder / f"{name}.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", spider, "-a", f"start={start}", "-O",
         str(out), "-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=8",
         "-s", f"DEDUP_DATABASE={name}", "-s", f"DEDUP_NAMESPACE={name}",
         "-s", f"LOG_FILE={folder / (name + '.log')}", *extra],
        cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, (folder / f"{name}.log").read_text()[-3000:]
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_the_add_on_drops_copies_and_their_links_in_any_projects_spiders(tmp_path: Path
                                                                          ) -> None:
    folder = project(tmp_path)
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(build(novel_chapters=0)) as site:  # no originals registered
        env = {**os.environ, "REDIS_URL": services.redis_url or "",
               "MONGO_URI": services.mongo_uri or ""}
        start = site.start_urls()[0]
        plain = crawl(folder, env, "pages", start, "plain", "-s", "ADDONS={}")
        before = len(site.requests)
        items = crawl(folder, env, "pages", start, "added")
        requested = site.requests[before:]
        # the crawl says the add-on is active, and where it stores; without it, nothing
        said = (folder / "added.log").read_text()
        assert "simcrawl add-on active (crawler.Addon)" in said and "database 'added'" in said
        assert "simcrawl add-on active" not in (folder / "plain.log").read_text()
        db = connect_mongo(services.mongo_uri or "")["added"]
        copies = {m["url"]: m for m in db.matches.find({})}
        stored = {p["url"] for p in db.pages.find({}, {"url": 1})}
        # match records name their originals, which are stored; copies emit nothing
        assert len(copies) >= 20
        assert all(m["original_url"] in stored for m in copies.values())
        assert not {i["url"] for i in items} & set(copies)
        # an original's items are those of the same project without the add-on
        by_url = {i["url"]: i for i in plain}
        assert items and all(by_url[i["url"]] == i for i in items)
        assert stored <= set(by_url) and {i["url"] for i in items} >= stored
        # a copy's links were never followed: no trap page requested (the run without the
        # add-on requests them all)
        traps = site.content.expected.traps
        assert [t for t in traps if t in site.requests[:before]], "the site has no traps"
        assert not [t for t in traps if t in requested and not t.endswith("secret.html")]
        # simcrawl's own records stay out of the project's feed, and out of its figures:
        # they are not items its spider dropped (each was counted so: 48 in this crawl)
        assert all(set(i) == {"url", "title"} for i in items)
        dumped = said[said.index("Dumping Scrapy stats"):]
        assert "'item_dropped_count'" not in dumped, dumped
        assert f"'item_scraped_count': {len(items)}," in dumped

        before = len(site.requests)
        ruled = crawl(folder, env, "rules", start, "ruled")
        requested = site.requests[before:]
        db = connect_mongo(services.mongo_uri or "")["ruled"]
        copies = {m["url"] for m in db.matches.find({})}
        assert len(copies) >= 20 and not {i["url"] for i in ruled} & copies
        assert not [t for t in traps if t in requested and not t.endswith("secret.html")]


def test_the_add_on_shares_one_crawl_of_a_projects_spider_between_processes(
        tmp_path: Path) -> None:
    """``SIMCRAWL_FRONTIER=redis`` under the add-on: two processes of a project's plain
    spider (no errback) share one crawl of the demo site, whose 404s, robots.txt refusals
    and failed downloads are settled too: each ends by itself, every URL is requested once
    across them, and the copies and their links are dropped as in one process."""
    import collections

    folder = project(tmp_path)
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(novel_chapters=0)) as site:
        env = {**os.environ, "REDIS_URL": services.redis_url or "",
               "MONGO_URI": services.mongo_uri or ""}
        start = site.start_urls()[0]
        alone = {i["url"] for i in crawl(folder, env, "pages", start, "alone")}
        before = len(site.requests)
        shared = ["-s", "SIMCRAWL_IDLE_SECONDS=2", "-s", "DEDUP_NAMESPACE=shared"]
        # the first is told with -s, the second by the environment (a project never
        # loads simcrawl's own settings file, which read it there)
        told = [(["-s", "SIMCRAWL_FRONTIER=redis"], env),
                ([], {**env, "SIMCRAWL_FRONTIER": "redis"})]
        procs = [subprocess.Popen(
            [sys.executable, "-m", "scrapy", "crawl", "pages", "-a", f"start={start}", "-O",
             str(folder / f"shared-{n}.jsonl"), "-s", "DOWNLOAD_DELAY=0", "-s",
             "DEDUP_DATABASE=shared", "-s", f"LOG_FILE={folder / f'shared-{n}.log'}",
             *shared, *told[n][0]], cwd=folder, env=told[n][1]) for n in range(2)]
        assert [p.wait(timeout=300) for p in procs] == [0, 0]  # each ended by itself
        fetched = collections.Counter(r for r in site.requests[before:]
                                      if not r.endswith("/robots.txt"))
        # Scrapy's start requests are dont_filter: each process asks for its start URL
        # (and a link back to it is one more request); every other URL once
        home = "news/"  # the site's record of its start URL: the news home page
        assert fetched[home] <= 3
        assert not {u: n for u, n in fetched.items() if n > 1 and u != home}
        items = [json.loads(line) for n in range(2)
                 for line in (folder / f"shared-{n}.jsonl").read_text().splitlines()]
        assert {i["url"] for i in items} == alone  # the same originals as one process
        db = connect_mongo(services.mongo_uri or "")["shared"]
        assert db.matches.count_documents({}) >= 20
        # the demo's page of 7 MB (Scrapy's DOWNLOAD_MAXSIZE lets it in) passes unread
        assert [i for i in items if i["url"].endswith("/big.html")]
        assert not db.pages.count_documents({"url": {"$regex": "big[.]html$"}})
        traps = site.content.expected.traps
        assert not [t for t in traps if t in fetched and not t.endswith("secret.html")]
        assert all("the crawl is complete" in (folder / f"shared-{n}.log").read_text()
                   for n in range(2))


def test_the_add_on_leaves_a_projects_own_settings_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from scrapy.settings import Settings

    from crawler import Addon
    from dedup.setting_names import value

    # the names that may come from the environment do, below the project's own
    monkeypatch.setenv("SIMCRAWL_FRONTIER", "redis")
    monkeypatch.setenv("SIMCRAWL_IDLE_SECONDS", "2")
    told = Settings({"SIMCRAWL_IDLE_SECONDS": 5}, priority="project")
    Addon().update_settings(told)
    assert value("SIMCRAWL_FRONTIER", told.get) == "redis"
    assert value("SIMCRAWL_IDLE_SECONDS", told.get) == 5
    monkeypatch.delenv("SIMCRAWL_FRONTIER")
    monkeypatch.delenv("SIMCRAWL_IDLE_SECONDS")

    settings = Settings({
        "SPIDER_MIDDLEWARES": {"scrapy.spidermiddlewares.referer.RefererMiddleware": 543},
        "ITEM_PIPELINES": {"scrapy.pipelines.files.FilesPipeline": 300},
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": 120},
        "SCHEDULER": "shop.scheduler.Mine", "CONCURRENT_ITEMS": 50}, priority="project")
    Addon().update_settings(settings)

    def named(setting: str, of: Settings) -> dict[str, int | None]:
        from scrapy.utils.misc import load_object

        classes = {load_object(k): v for k, v in of.getdict(setting).items()}
        return {f"{c.__module__}.{c.__qualname__}": v for c, v in classes.items()}

    assert named("SPIDER_MIDDLEWARES", settings) == {
        "scrapy.spidermiddlewares.referer.RefererMiddleware": 543,
        "crawler.middlewares.near_duplicates.NearDuplicateMiddleware": 950}
    assert named("ITEM_PIPELINES", settings) == {
        "scrapy.pipelines.files.FilesPipeline": 300, "crawler.pipelines.StoragePipeline": 0}
    downloader = named("DOWNLOADER_MIDDLEWARES", settings)
    assert downloader["scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] == 120
    assert downloader["crawler.middlewares.robots.RobotsTxt"] == 100
    assert settings["SCHEDULER"] == "shop.scheduler.Mine"
    assert settings.getint("CONCURRENT_ITEMS") == 50
    fresh = Settings()
    Addon().update_settings(fresh)
    assert fresh["SCHEDULER"] == "crawler.scheduler.Scheduler"
    assert named("DOWNLOADER_MIDDLEWARES", fresh)[
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] is None
    # Scrapy's meta-refresh redirect is replaced by one that decides the same
    assert named("DOWNLOADER_MIDDLEWARES", fresh)[
        "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware"] is None
    assert named("DOWNLOADER_MIDDLEWARES", fresh)["crawler.middlewares.meta_refresh.MetaRefresh"] == 580


def test_the_add_on_records_each_copy_its_url_rules_kept_from_the_wire_once(
        tmp_path: Path) -> None:
    """Pages whose ``?v=2`` print view is the same page: after three such copies a URL
    rule predicts the rest, which are not requested. The project's callback fails on the
    empty response made for each (a plain spider's ``response.css``); its match record
    was given twice, by the failure and by the output (``times_seen: 2`` on every one,
    the stats' stored matches counted twice). Each is stored once."""
    from tests.e2e.test_url_rules import page

    folder = project(tmp_path)
    port = free_port()
    origin = f"http://127.0.0.1:{port}"
    pages = {}
    for n in range(12):
        pages[f"{origin}/p/{n}"] = pages[f"{origin}/p/{n}?v=2"] = page(n).replace(
            b"</body>", f'<a href="/p/{n}?v=2">print</a></body>'.encode())
    pages[origin + "/"] = ("<html><head><title>Home</title></head><body><ul>" + "".join(
        f'<li><a href="/p/{n}">page {n}</a></li>' for n in range(12))
        + "</ul></body></html>").encode()
    server, asked = serve(pages, port)
    try:
        with EmbeddedServices(tmp_path / "data") as services:
            env = {**os.environ, "REDIS_URL": services.redis_url or "",
                   "MONGO_URI": services.mongo_uri or ""}
            for spider in ("pages", "rules"):
                del asked[:]  # each crawl's own requests (when a rule is learned varies)
                crawl(folder, env, spider, origin + "/", spider, "-s", "ROBOTSTXT_OBEY=0",
                      "-s", "CONCURRENT_REQUESTS=1", "-s", "DOWNLOAD_DELAY=0.1",
                      "-s", "RANDOMIZE_DOWNLOAD_DELAY=0", "-s", "AUTOTHROTTLE_ENABLED=0",
                      "-s", "SCHEDULER_MEMORY_QUEUE=scrapy.squeues.FifoMemoryQueue",
                      "-s", "DEDUP_URL_RULES_EXPLORE=0")
                db = connect_mongo(services.mongo_uri or "")[spider]
                ruled = list(db.matches.find({"kind": "url_rule"}))
                assert len(ruled) >= 5, spider  # copies never requested
                assert {m["times_seen"] for m in ruled} == {1}, spider
                assert not {m["url"] for m in ruled} & set(asked)
                log = (folder / f"{spider}.log").read_text()
                dumped = log[log.index("Dumping Scrapy stats"):]
                stored = db.matches.count_documents({})
                assert f"'dedup/stored/matches': {stored}," in dumped, (spider, dumped)
    finally:
        server.shutdown()
