"""simcrawl as a Scrapy add-on: one line in any project's settings,

    ADDONS = {"crawler.Addon": 300}

and each HTML response any of its spiders receives is decided on its main text, as
simcrawl's own crawl decides pages
(:class:`crawler.middlewares.near_duplicates.NearDuplicateMiddleware`):

- a copy's whole output (its items and its requests) is dropped, and a match record naming
  its original is stored in MongoDB;
- an original's output passes on unchanged, and the page, its fingerprints and the match
  records of its copies are stored as a simcrawl crawl stores them;
- a response the spider asked not to judge (``meta={"dont_dedup": True}``), a response
  that is not HTML or larger than ``DEDUP_MAX_BODY`` (5 MiB), and a page without text of
  its own (empty, or nothing but its site's template) pass on unchanged and are not
  stored;
- a response whose callback yields only requests (a listing) is judged like any page: a
  copy of a listing is dropped with its requests.

The services are ``REDIS_URL`` / ``MONGO_URI`` (settings or environment), else the
embedded ones; every ``DEDUP_*`` / ``SIMCRAWL_*`` setting works as in docs/settings.md. The
add-on sets its components at the add-on priority, below the project's: a setting the
project sets itself is left alone. It adds, and does not replace, the project's
middlewares, pipelines and extensions, except Scrapy's robots.txt middleware, which it
replaces with simcrawl's (:class:`crawler.middlewares.robots.RobotsTxt`: RFC 9309 on
unreachable robots.txt files, and every waiting request checked), and Scrapy's
meta-refresh middleware, which it replaces with one that decides the same without decoding
every page whole (:class:`crawler.middlewares.meta_refresh.MetaRefresh`).
``SIMCRAWL_FRONTIER=redis`` shares one crawl between processes as in simcrawl's own crawl
(docs/scaling.md); it and the other ``SIMCRAWL_*`` names docs/settings.md says may come
from the environment are read from it too, as in simcrawl's own crawl: every component
reads them through :func:`dedup.setting_names.value`, a setting first, then the
environment.
"""

from __future__ import annotations

from typing import Any

#: Spider middlewares, downloader middlewares, item pipelines and extensions the add-on
#: adds, with their order (the storage pipeline first: the project's pipelines never see
#: simcrawl's own records, which it takes out of the item stream once buffered). The
#: crawl's objects are built once, by the first component that asks
#: (:func:`crawler.wiring.parts_of`).
COMPONENTS: dict[str, dict[str, int | None]] = {
    "SPIDER_MIDDLEWARES": {"crawler.middlewares.near_duplicates.NearDuplicateMiddleware": 950},
    "DOWNLOADER_MIDDLEWARES": {
        "crawler.middlewares.settle_failures.SettleFailures": 10,
        "crawler.middlewares.service_guard.ServiceGuard": 50,
        "crawler.middlewares.url_rule_gate.UrlRuleGate": 60,
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "crawler.middlewares.robots.RobotsTxt": 100,
        "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
        "crawler.middlewares.meta_refresh.MetaRefresh": 580,
        "crawler.middlewares.cut_downloads.CutDownloads": 990},
    "ITEM_PIPELINES": {"crawler.pipelines.StoragePipeline": 0},
    "EXTENSIONS": {"crawler.extensions.job_guard.JobGuard": 0,
                   "crawler.disk.DiskGuard": 5,  # before the parts reach the services
                   "crawler.scheduler.SharedCrawlEnd": 10,
                   "crawler.extensions.progress.ProgressFile": 20,
                   "crawler.metrics.PrometheusMetrics": 30,
                   "crawler.extensions.send_again.SendAgain": 40,
                   "crawler.warc_out.WarcOut": 50,
                   "crawler.extensions.put_back.PutBackOnStop": 60},
}

#: Plain settings the add-on needs, at the add-on priority (the project's win).
SETTINGS: dict[str, Any] = {
    "SCHEDULER": "crawler.scheduler.Scheduler",  # Scrapy's, or the shared one in Redis
}


class Addon:
    """Scrapy add-on (``ADDONS = {"crawler.Addon": 300}``): see :mod:`crawler.addon`."""

    def update_settings(self, settings: Any) -> None:
        from scrapy.utils.misc import load_object

        for name, components in COMPONENTS.items():
            for component, order in components.items():  # a class the project names
                settings.setdefault_in_component_priority_dict(  # (as a path or not) stays
                    name, load_object(component), order)
        for name, value in SETTINGS.items():
            settings.set(name, value, priority="addon")
