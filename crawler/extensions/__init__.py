"""Scrapy extensions of the crawler, a module each: the JOBDIR guard
(:mod:`crawler.extensions.job_guard`), the stop's put-back
(:mod:`crawler.extensions.put_back`), the progress file
(:mod:`crawler.extensions.progress`), the URL rules' resending
(:mod:`crawler.extensions.send_again`) and simcrawl's AutoThrottle
(:mod:`crawler.extensions.throttle`). The names are kept here too, where they were
before."""

from crawler.extensions.job_guard import RUNNING, JobGuard
from crawler.extensions.progress import ProgressFile, crawl_counters
from crawler.extensions.put_back import CUT, PutBackOnStop
from crawler.extensions.send_again import SendAgain
from crawler.extensions.throttle import LIKE_200, Throttle

__all__ = ["CUT", "LIKE_200", "RUNNING", "JobGuard", "ProgressFile", "PutBackOnStop",
           "SendAgain", "Throttle", "crawl_counters"]
