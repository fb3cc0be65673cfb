"""The shared frontier's pieces that need no server: request serialization (JSON, never
pickle) and the setting's validation."""

from __future__ import annotations

import pytest
import scrapy
from scrapy.settings import Settings
from scrapy.utils.request import request_from_dict

from crawler.frontier import JsonSerializer, frontier_of
from crawler.spiders.site import SiteSpider


def test_requests_round_trip_through_json() -> None:
    spider = SiteSpider(start_urls="https://a.example/")
    request = scrapy.Request("https://a.example/p?q=1", callback=spider.parse,
                             errback=spider.failed, headers={"Referer": "https://a.example/"},
                             body=b"\x00\xffbytes", meta={"depth": 2, "redirect_urls": ["x"]},
                             priority=-3)
    data = JsonSerializer.dumps(request.to_dict(spider=spider))
    assert data.startswith(b"{") and b"pickle" not in data  # plain JSON in Redis
    again = request_from_dict(JsonSerializer.loads(data), spider=spider)
    assert (again.url, again.body, again.priority, again.meta) == \
        (request.url, request.body, request.priority, request.meta)
    assert again.headers == request.headers and again.callback == spider.parse


def test_the_frontier_setting_is_checked() -> None:
    assert frontier_of(Settings({})) == "memory"
    assert frontier_of(Settings({"SIMCRAWL_FRONTIER": "Redis"})) == "redis"
    with pytest.raises(ValueError, match="SIMCRAWL_FRONTIER must be memory or redis"):
        frontier_of(Settings({"SIMCRAWL_FRONTIER": "kafka"}))
