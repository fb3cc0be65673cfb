"""robots.txt as RFC 9309 reads it: a robots.txt that cannot be had (a server error) is
asked for again while the host's pages wait, and one that never answers disallows the
host; never does a failed robots.txt let the crawl into a disallowed path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crawler.examples.demosite import DemoSite, Page, build
from dedup.adapters.servers.services import EmbeddedServices

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


class BusyRobots(dict):
    """A host's pages whose robots.txt answers 503 to its first ``failures`` requests."""

    def __init__(self, pages: dict[str, Page], failures: int) -> None:
        super().__init__(pages)
        self.failures = failures

    def get(self, path: str, default: Any = None) -> Any:
        if path == "/robots.txt" and self.failures > 0:
            self.failures -= 1
            return Page(b"<html><body>Service unavailable</body></html>", status=503)
        return super().get(path, default)


def crawl(site: DemoSite, services: EmbeddedServices, tmp: Path, name: str, *settings: str,
          start: str | None = None) -> tuple[subprocess.CompletedProcess, dict, str]:
    env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri,
               PYTHONPATH=os.pathsep.join([str(Path(__file__).parent / "helpers"),
                                           os.environ.get("PYTHONPATH", "")]))
    summary = tmp / f"{name}.json"
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
         f"start_urls={start or site.start_urls()[0]}", "-s", f"DEDUP_DATABASE={name}", "-s",
         f"DEDUP_NAMESPACE={name}", "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
         "SIMCRAWL_ROBOTS_RETRY_SECONDS=0.2", "-s", f"DEDUP_SUMMARY_FILE={summary}",
         "-s", f"LOG_FILE={tmp / f'{name}.log'}", *settings],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    stats = json.loads(summary.read_text()) if summary.exists() else {}
    return done, stats, (tmp / f"{name}.log").read_text()


def test_a_busy_robots_txt_is_asked_again_and_then_obeyed(tmp_path: Path) -> None:
    content = build(novel_chapters=0)
    # Scrapy's retry middleware asks three times; the fourth and fifth answers (in our
    # second round) fail and succeed
    content.pages["news"] = BusyRobots(content.pages["news"], failures=4)
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        done, stats, log = crawl(site, services, tmp_path, "busy")
        assert done.returncode == 0, done.stderr[-2000:]
        assert site.requests.count("news/robots.txt") == 5
        assert "news/private/secret.html" not in site.requests
        assert "robots.txt of 127.0.0.1" in log and "asking again" in log
        assert stats["dedup/skipped/robots_txt"] == 1  # the disallowed page, counted
        assert "dedup/robots/unreachable" not in stats
        # the host's pages waited, then were crawled as usual
        articles = [p for p in site.requests if p.startswith("news/articles/")]
        assert len(articles) == len({p for p in content.pages["news"]
                                     if p.startswith("/articles/")})


def test_a_robots_txt_that_never_answers_disallows_its_host(tmp_path: Path) -> None:
    content = build(novel_chapters=0)
    content.pages["news"] = BusyRobots(content.pages["news"], failures=10**6)
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        done, stats, log = crawl(site, services, tmp_path, "down")
        # nothing of the host but its robots.txt was requested: the start page neither
        assert set(site.requests) == {"news/robots.txt"}
        assert site.requests.count("news/robots.txt") == 3 * 4  # 4 rounds of 3 tries
        assert stats["dedup/robots/unreachable"] == 1
        assert stats["dedup/skipped/robots_txt"] == 1  # the start page, counted
        assert "none of its pages is requested" in log
        assert done.returncode == 0, done.stderr[-2000:]  # scrapy crawl: nothing was lost
        # simcrawl crawl URL says that it fetched nothing, and why (exit status 1)
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri,
                   SIMCRAWL_ROBOTS_RETRY_SECONDS="0.2")
        done = subprocess.run([sys.executable, "-m", "crawler.cli", "crawl", site.start_urls()[0],
                               "--data-dir", str(tmp_path / "cli")], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "robots.txt could not be had" in done.stderr


def test_a_robots_txt_refused_before_it_is_asked_disallows_its_host(tmp_path: Path) -> None:
    """A robots.txt request that a downloader middleware refuses (IgnoreRequest) is no
    answer: Scrapy's middleware then allows the whole host (its parser is None), which let
    a crawl request news/private/secret.html; simcrawl disallows the host."""
    content = build(novel_chapters=0)
    refuse = json.dumps({"robots_refused.RefuseRobotsTxt": 60,
                         "crawler.middlewares.service_guard.ServiceGuard": 50,
                         "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
                         "crawler.middlewares.robots.RobotsTxt": 100})
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        done, stats, log = crawl(site, services, tmp_path, "refused", "-s",
                                 f"DOWNLOADER_MIDDLEWARES={refuse}")
        assert done.returncode == 0, done.stderr[-2000:]
        assert not [r for r in site.requests if r.startswith("news/")], site.requests
        assert "refused before it was asked for" in log
        assert stats["dedup/skipped/robots_txt"] == 1  # the start page, counted


def test_every_request_that_waited_for_robots_txt_is_checked_against_it(tmp_path: Path
                                                                        ) -> None:
    """Requests of a host that wait while its robots.txt is fetched are each checked once
    it comes. Scrapy 2.19's middleware hands the parser to the first of them only (the
    others get None: allow all, as the wait's Future consumes the Deferred's result), so a
    disallowed page among them was requested: seen once in about 15 runs of the
    three-process crawl, whose second process starts with a queue full of one host's
    URLs. Here the start URLs are that queue, and the robots.txt is slow."""
    content = build(novel_chapters=0)
    robots = content.pages["news"]["/robots.txt"]
    content.pages["news"]["/robots.txt"] = Page(robots.body, robots.content_type, delay=0.5)
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        news = site.url("news")
        start = ",".join(f"{news}{path}" for path in (
            "/", "/articles/harbour-0.html", "/missing.html", "/private/secret.html",
            "/broken.html"))
        done, stats, _ = crawl(site, services, tmp_path, "waiters", start=start)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "news/private/secret.html" not in site.requests
        assert stats["dedup/skipped/robots_txt"] == 1
