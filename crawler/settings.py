"""Scrapy settings for simcrawl, inside the package so an installed crawler runs from any
folder: ``scrapy.cfg`` names this module in the source tree, and elsewhere
``SCRAPY_SETTINGS_MODULE=crawler.settings`` does (``simcrawl crawl`` sets it).

Service URLs come from the environment: ``REDIS_URL`` and ``MONGO_URI`` (unset: embedded
servers with data under ``SIMCRAWL_DATA``, default ``./simcrawl-data``). Every ``DEDUP_*``
setting is documented in :class:`dedup.config.DedupConfig` and in docs/settings.md.
"""

import os

from crawler.items import EXPORT_FIELDS
from dedup.setting_names import value

BOT_NAME = "simcrawl"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"
# `scrapy crawl` that exits non-zero when pages were lost (crawler/commands/crawl.py)
COMMANDS_MODULE = "crawler.commands"

# Identify ourselves, obey robots.txt, throttle, cap bodies.
USER_AGENT = value("SIMCRAWL_USER_AGENT")
ROBOTSTXT_OBEY = True
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 0.5
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
# Scrapy starts this many tasks for each response's output. A page yields one item and
# then its new links (scheduled at once), so two are enough; 100 (the default) cost about
# a sixth of the crawl process's CPU and 16 about a twentieth (docs/benchmarks.md).
CONCURRENT_ITEMS = 2
DOWNLOAD_MAXSIZE = value("SIMCRAWL_MAX_BODY")
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
DEPTH_LIMIT = value("SIMCRAWL_DEPTH_LIMIT")
# Breadth-first, as the README advises a project under the add-on: a page is reached
# before the pages it links to, so an article is met before its /print/ and /syndicated/
# copies, and becomes their original (Scrapy's default, depth-first, met the copies
# first, followed their links, and turned them round later: docs/fingerprints.md, "The
# right original"). The shared frontier takes one priority in the order requests came.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"
REQUEST_FINGERPRINTER_IMPLEMENTATION = "2.7"
# Logs people can read: INFO (SIMCRAWL_LOG_LEVEL=DEBUG for more); third-party libraries
# log at WARNING (crawler/logs.py); items print as one short line (crawler/items.py).
LOG_LEVEL = value("SIMCRAWL_LOG_LEVEL")
# Scrapy's telnet console would listen on a port and log its password, and its remote
# control would serve an HTTP endpoint that runs Python code in the crawler (which holds
# the services' credentials): both off.
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False
FEED_EXPORT_ENCODING = "utf-8"
# -o items.csv: a column for every field of pages and match records (crawler/items.py)
FEED_EXPORT_FIELDS = EXPORT_FIELDS

# simcrawl itself comes in as any project takes it (crawler/addon.py): the dedup
# middleware, the storage pipeline, the guard of the crawl's own services, robots.txt as
# RFC 9309 reads it, the JOBDIR guard, the shared crawl's end, the progress file, the
# Prometheus metrics and the scheduler. The settings below tune them.
ADDONS = {"crawler.Addon": 300}
# simcrawl's own settings (SIMCRAWL_*, and DEDUP_* beside dedup.config.DedupConfig's) are
# declared once, with their defaults, in dedup/setting_names.py, and read from there (a
# setting first, then the environment where docs/settings.md says so): the robots.txt
# retries, the Prometheus metrics, the frontier ("memory", Scrapy's own, or "redis", one
# shared by every crawl process on the namespace: crawler/frontier.py) and its idle end.
# AutoThrottle that lets fast 404s count (crawler/extensions/throttle.py)
EXTENSIONS = {"scrapy.extensions.throttle.AutoThrottle": None,
              "crawler.extensions.throttle.Throttle": 0}

# Dedup: dedup.config.DedupConfig declares each DEDUP_* setting and its default.
REDIS_URL = os.environ.get("REDIS_URL", "")
MONGO_URI = os.environ.get("MONGO_URI", "")
