"""Which of the URLs a crawl finds it requests, beside the allowed domains: the URL
patterns of ``simcrawl crawl --include`` / ``--exclude`` (``SIMCRAWL_INCLUDE`` /
``SIMCRAWL_EXCLUDE``). They apply to the links of pages and to the pages of sitemaps
(:mod:`crawler.sitemaps`), never to start URLs; a link they leave out is never
requested and is counted in ``dedup/outlinks_excluded``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import Any

from dedup.setting_names import value


class UrlPatterns:
    """Which discovered URLs a crawl requests (``--include`` / ``--exclude``,
    ``SIMCRAWL_INCLUDE`` / ``SIMCRAWL_EXCLUDE``): those one of the include patterns finds
    (any URL when there are none) and none of the exclude patterns finds. A pattern is a
    Python regular expression searched for anywhere in the absolute URL, as wget's
    ``--accept-regex`` and Scrapy's ``LinkExtractor(allow=...)`` take them. Start URLs
    are always requested: they were named."""

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        self.include = [self._compile("SIMCRAWL_INCLUDE", p) for p in include]
        self.exclude = [self._compile("SIMCRAWL_EXCLUDE", p) for p in exclude]

    @staticmethod
    def _compile(setting: str, pattern: str) -> re.Pattern[str]:
        try:
            return re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{setting}: {pattern!r} is not a regular expression: "
                             f"{exc}") from None

    @classmethod
    def from_settings(cls, settings: Any) -> UrlPatterns:
        """The patterns of a crawl's settings (:func:`patterns_of` reads each)."""
        return cls(patterns_of(value("SIMCRAWL_INCLUDE", settings.get), "SIMCRAWL_INCLUDE"),
                   patterns_of(value("SIMCRAWL_EXCLUDE", settings.get), "SIMCRAWL_EXCLUDE"))

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def wanted(self, url: str) -> bool:
        """Whether the crawl requests ``url`` when it finds it."""
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)

    def keep(self, urls: Iterable[str]) -> Iterator[str]:
        """The wanted ones of ``urls``, in their order."""
        return (u for u in urls if self.wanted(u))


def patterns_of(value: Any, setting: str) -> list[str]:
    """A pattern setting's expressions: a list or tuple (a project's ``settings.py``), or
    a string: a JSON list (what ``simcrawl crawl --include`` passes on) or one
    expression (``-s SIMCRAWL_EXCLUDE=/tag/``; not split at commas, which a regular
    expression may hold)."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        items = list(value)
    elif isinstance(value, str) and value.lstrip().startswith("["):
        try:
            items = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{setting}: not a JSON list of regular expressions: "
                             f"{exc}") from None
        if not isinstance(items, list):
            raise ValueError(f"{setting}: not a JSON list of regular expressions")
    elif isinstance(value, str):
        items = [value]
    else:
        raise ValueError(f"{setting}: a regular expression or a list of them, got "
                         f"{value!r}")
    bad = [i for i in items if not isinstance(i, str) or not i]
    if bad:
        raise ValueError(f"{setting}: each pattern is a non-empty regular expression, got "
                         f"{bad[0]!r}")
    return items
