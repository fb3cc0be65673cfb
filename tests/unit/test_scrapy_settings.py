"""Scrapy's own settings judged before a crawl starts (crawler/scrapy_settings.py)."""

from __future__ import annotations

import pytest

from crawler.scrapy_settings import bad_value, bad_values, mistyped


@pytest.mark.parametrize("name,value,said", [
    ("DEPTH_LIMIT", "abc", "DEPTH_LIMIT must be a whole number, got 'abc'"),
    ("DEPTH_LIMIT", "1.5", "DEPTH_LIMIT must be a whole number, got '1.5'"),
    ("DOWNLOAD_DELAY", "abc", "DOWNLOAD_DELAY must be a number, got 'abc'"),
    ("DOWNLOAD_DELAY", "-1", "DOWNLOAD_DELAY cannot be below 0, got '-1'"),
    ("DOWNLOAD_TIMEOUT", "-5", "DOWNLOAD_TIMEOUT must be above 0, got '-5'"),
    ("DOWNLOAD_TIMEOUT", "0", "DOWNLOAD_TIMEOUT must be above 0, got '0'"),
    ("CONCURRENT_REQUESTS", "0", "CONCURRENT_REQUESTS must be above 0, got '0'"),
    ("ROBOTSTXT_OBEY", "maybe", "ROBOTSTXT_OBEY must be yes or no (True, False, 1 or 0), "
     "got 'maybe'"),
    ("TELNETCONSOLE_ENABLED", "on", "TELNETCONSOLE_ENABLED must be yes or no (True, False, "
     "1 or 0), got 'on'"),
])
def test_a_value_scrapy_cannot_use_is_named_with_why(name: str, value: str, said: str) -> None:
    assert bad_value(name, value) == said


@pytest.mark.parametrize("name,value", [
    ("DEPTH_LIMIT", "0"), ("DEPTH_LIMIT", 3), ("DOWNLOAD_DELAY", "0.25"),
    ("DOWNLOAD_TIMEOUT", "7.5"), ("DEPTH_PRIORITY", "-1"), ("RETRY_PRIORITY_ADJUST", -1),
    ("CLOSESPIDER_TIMEOUT", "0"), ("ROBOTSTXT_OBEY", "False"), ("ROBOTSTXT_OBEY", True),
    ("TELNETCONSOLE_ENABLED", "0"),
    # not a numeric or yes/no setting of Scrapy's: not judged here
    ("USER_AGENT", "-5"), ("DEDUP_MAX_DISTANCE", "abc"), ("MY_OWN", "x"),
])
def test_a_value_scrapy_reads_passes(name: str, value: object) -> None:
    assert bad_value(name, value) is None


def test_every_bad_value_is_said_and_the_last_value_of_a_name_wins() -> None:
    assert bad_values([("DEPTH_LIMIT", "abc"), ("DEPTH_LIMIT", "2"),
                       ("RETRY_TIMES", "x"), ("DOWNLOAD_DELAY", "y")]) == [
        "DOWNLOAD_DELAY must be a number, got 'y'",
        "RETRY_TIMES must be a whole number, got 'x'"]


def test_a_name_close_to_a_scrapy_setting_is_warned_of() -> None:
    assert mistyped(["DEPTH_LIMT", "DOWNLOAD_DELAY", "DEDUP_MAX_DISTANC", "MY_SETTING",
                     "CONCURENT_REQUESTS"]) == [
        "CONCURENT_REQUESTS is not a Scrapy setting and does nothing; did you mean "
        "CONCURRENT_REQUESTS?",
        "DEPTH_LIMT is not a Scrapy setting and does nothing; did you mean DEPTH_LIMIT?"]
    assert mistyped(["DEPTH_LIMT"], known=["DEPTH_LIMT"]) == []
