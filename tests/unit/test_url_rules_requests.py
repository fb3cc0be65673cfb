"""A request the URL rules kept, sent after all (crawler/rule_learning.py): as the spider made
it, with its callback, errback, arguments and data; the spider's plain request of a URL
carries nothing."""

from __future__ import annotations

from typing import Any

import scrapy

from crawler.rule_learning import carry_of, request_again


class Shop(scrapy.Spider):
    name = "shop"

    def parse(self, response: Any) -> None:
        pass

    def parse_item(self, response: Any, sku: str = "") -> None:
        pass

    def failed(self, failure: Any) -> None:
        pass

    def item_failed(self, failure: Any) -> None:
        pass


def test_a_request_sent_again_has_its_callback_arguments_and_data() -> None:
    spider = Shop()
    asked = scrapy.Request("http://shop.test/item?id=3&ref=home", callback=spider.parse_item,
                           errback=spider.item_failed, cb_kwargs={"sku": "A-3"},
                           meta={"depth": 2, "category": "tea"},
                           headers={"Accept-Language": "de"})
    carry = carry_of(asked, spider)
    again = request_again(asked.url, 2, carry, spider)
    assert (again.url, again.callback, again.errback) == (
        asked.url, spider.parse_item, spider.item_failed)
    assert again.cb_kwargs == {"sku": "A-3"} and again.meta["category"] == "tea"
    assert again.headers.get("Accept-Language") == b"de"
    assert again.dont_filter and again.meta["depth"] == 2


def test_the_spiders_plain_request_carries_nothing() -> None:
    spider = Shop()
    plain = scrapy.Request("http://shop.test/a?ref=x", callback=spider.parse,
                           errback=spider.failed, meta={"depth": 1, "download_slot": "shop.test"},
                           headers={"Referer": "http://shop.test/"})
    assert carry_of(plain, spider) == ""
    again = request_again(plain.url, 1, "", spider)
    assert (again.callback, again.errback, again.dont_filter) == (spider.parse, spider.failed,
                                                                  True)
