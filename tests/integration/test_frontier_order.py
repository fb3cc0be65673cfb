"""The shared frontier's queue (crawler/frontier.py, ArrivalQueue) on a real redis-server:
requests of one priority are taken in the order they came, not by URL, and a higher
priority comes first."""

from __future__ import annotations

import time

import scrapy

from crawler.frontier import ArrivalQueue, JsonSerializer


def test_requests_of_one_priority_are_taken_in_the_order_they_came(redis_client,  # type: ignore[no-untyped-def]
                                                                   namespace: str) -> None:
    spider = scrapy.Spider(name="order")
    queue = ArrivalQueue(redis_client, spider, f"{namespace}:frontier:queue",
                         serializer=JsonSerializer)
    try:
        came = ["http://b.test/zebra", "http://a.test/print/1", "http://b.test/apple",
                "http://a.test/news/1"]
        for url in came:
            queue.push(scrapy.Request(url))
            time.sleep(0.002)  # the queue's clock counts milliseconds
        queue.push(scrapy.Request("http://c.test/urgent", priority=5))
        taken = [queue.pop().url for _ in range(len(came) + 1)]
        assert taken == ["http://c.test/urgent", *came]
        assert queue.pop() is None
    finally:
        redis_client.delete(f"{namespace}:frontier:queue")
