"""simcrawl's Scrapy middlewares, one component a module:

- :mod:`crawler.middlewares.near_duplicates`: the near-duplicate decision, before any
  outlink of a page is scheduled (a spider middleware), with its batches
  (:mod:`crawler.middlewares.batches`);
- :mod:`crawler.middlewares.settle_failures`: failed requests settled in the frontier;
- :mod:`crawler.middlewares.service_guard`: the crawl's own services never crawled;
- :mod:`crawler.middlewares.url_rule_gate`: a request the URL rules predict to be a copy
  not sent;
- :mod:`crawler.middlewares.robots`: robots.txt as RFC 9309 reads it;
- :mod:`crawler.middlewares.meta_refresh`: the meta-refresh redirect, read from a page's
  beginning;
- :mod:`crawler.middlewares.cut_downloads`: a download the stop cut put back, not failed
  (the downloader middlewares).

The add-on (:mod:`crawler.addon`) names each by its module. The package also gives each
class under its name here (``crawler.middlewares.RobotsTxt``), as settings written before
the package named them.
"""

from crawler.middlewares.meta_refresh import MetaRefresh
from crawler.middlewares.near_duplicates import NearDuplicateMiddleware
from crawler.middlewares.robots import RobotsTxt
from crawler.middlewares.service_guard import ServiceGuard
from crawler.middlewares.settle_failures import SettleFailures
from crawler.middlewares.url_rule_gate import UrlRuleGate

__all__ = ["MetaRefresh", "NearDuplicateMiddleware", "RobotsTxt", "ServiceGuard",
           "SettleFailures", "UrlRuleGate"]
