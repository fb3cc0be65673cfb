"""The crawl's AutoThrottle: a fast 404 lowers the delay as a fast 200 does (Scrapy's rule
lets it only raise it, which pinned a 404-heavy crawl at its start delay); 429 and 5xx
keep Scrapy's rule; SIMCRAWL_THROTTLE_SCRAPY_RULE keeps it for every status."""

from __future__ import annotations

import pytest
from scrapy.core.downloader import Slot
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from crawler.extensions import Throttle


def throttle(**settings: object) -> Throttle:
    made = Throttle(get_crawler(settings_dict={"AUTOTHROTTLE_ENABLED": True,
                                               "AUTOTHROTTLE_TARGET_CONCURRENCY": 4.0,
                                               "DOWNLOAD_DELAY": 0.0,
                                               "AUTOTHROTTLE_MAX_DELAY": 60.0, **settings}))
    made.mindelay, made.maxdelay = made._min_delay(), made._max_delay()
    return made


def after(t: Throttle, status: int, latency: float, delay: float = 0.5) -> float:
    slot = Slot(concurrency=8, delay=delay, jitter=0)
    for _ in range(5):
        t._adjust_delay(slot, latency, Response("http://a.test/x", status=status))
    return slot.delay


@pytest.mark.parametrize("status", [200, 301, 404, 410])
def test_a_fast_answer_lowers_the_delay_whatever_its_status(status: int) -> None:
    assert after(throttle(), status, latency=0.004) < 0.05


@pytest.mark.parametrize("status", [429, 500, 503])
def test_load_signs_never_lower_it(status: int) -> None:
    assert after(throttle(), status, latency=0.004) == 0.5
    assert after(throttle(), status, latency=8.0) > 0.5  # a slow one raises it


def test_scrapys_rule_on_request() -> None:
    assert after(throttle(SIMCRAWL_THROTTLE_SCRAPY_RULE=True), 404, latency=0.004) == 0.5
    assert after(throttle(SIMCRAWL_THROTTLE_SCRAPY_RULE=True), 200, latency=0.004) < 0.05


def test_the_crawl_uses_it_in_place_of_scrapys() -> None:
    from scrapy.settings import Settings

    from crawler import settings as crawl_settings

    enabled = Settings()
    enabled.setmodule(crawl_settings)
    extensions = enabled.getwithbase("EXTENSIONS")
    assert extensions["scrapy.extensions.throttle.AutoThrottle"] is None
    assert extensions["crawler.extensions.throttle.Throttle"] is not None
