"""Scrapy's own settings, judged before a crawl starts: a value Scrapy cannot read, and a
name close to one of Scrapy's that is not one.

Scrapy reads a setting when the component that uses it is built, after the crawl has
started its services and its extraction workers: ``-s DEPTH_LIMIT=abc`` failed there with
``invalid literal for int() with base 10: 'abc'``, naming no setting, and
``-s DOWNLOAD_TIMEOUT=-5`` with tracebacks from the downloader. :func:`bad_values` reads
every one of Scrapy's numeric and yes/no settings the way Scrapy reads it (its own
``getint`` / ``getfloat`` / ``getbool``), so ``simcrawl crawl`` (before anything starts)
and the crawl process (:mod:`crawler.commands.crawl`, for ``scrapy crawl`` itself) say
in one line which setting is wrong and why, and exit with status 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

#: Scrapy's settings whose default is a whole number but which Scrapy reads as a number of
#: seconds that may have a fraction (``getfloat``).
FRACTIONAL = frozenset({"DOWNLOAD_DELAY", "DOWNLOAD_TIMEOUT", "DNS_TIMEOUT",
                        "CLOSESPIDER_TIMEOUT"})

#: Numeric settings that may be below zero: priorities, which order requests either way.
SIGNED_SUFFIXES = ("_PRIORITY", "_PRIORITY_ADJUST")

#: Settings that must be above zero: a download with no time, a crawl with no request
#: slots, a reactor with no threads cannot run. (Their siblings that say "0 = off",
#: ``CLOSESPIDER_TIMEOUT`` and ``CONCURRENT_REQUESTS_PER_IP``, may be 0.)
POSITIVE = frozenset({"DOWNLOAD_TIMEOUT", "DNS_TIMEOUT", "CONCURRENT_REQUESTS",
                      "CONCURRENT_REQUESTS_PER_DOMAIN", "CONCURRENT_ITEMS",
                      "REACTOR_THREADPOOL_MAXSIZE", "AUTOTHROTTLE_TARGET_CONCURRENCY"})


@lru_cache(maxsize=1)
def kinds() -> dict[str, str]:
    """Each of Scrapy's settings with a number or yes/no default, and how Scrapy reads it:
    ``"bool"``, ``"int"`` or ``"float"``."""
    from scrapy.settings import default_settings

    out = {}
    for name in dir(default_settings):
        if not name.isupper():
            continue
        value = getattr(default_settings, name)
        if isinstance(value, bool) or (name.endswith("_ENABLED") and value in (0, 1)):
            out[name] = "bool"
        elif isinstance(value, float) or (isinstance(value, int) and name in FRACTIONAL):
            out[name] = "float"
        elif isinstance(value, int):
            out[name] = "int"
    return out


@lru_cache(maxsize=1)
def scrapy_names() -> frozenset[str]:
    """Every setting name Scrapy declares a default for."""
    from scrapy.settings import default_settings

    return frozenset(n for n in dir(default_settings) if n.isupper() and not n.startswith("_"))


_SAID = {"bool": "yes or no (True, False, 1 or 0)", "int": "a whole number",
         "float": "a number"}


def bad_value(name: str, value: Any) -> str | None:
    """Why Scrapy cannot use ``value`` for its setting ``name`` (``None``: it can, or the
    setting is not one of Scrapy's numeric or yes/no ones)."""
    kind = kinds().get(name)
    if kind is None or value is None:
        return None
    from scrapy.settings import BaseSettings

    read = getattr(BaseSettings({name: value}), f"get{kind}")
    try:
        number = read(name)
    except (ValueError, TypeError):
        return f"{name} must be {_SAID[kind]}, got {value!r}"
    if kind == "bool":
        return None
    if name in POSITIVE and number <= 0:
        return f"{name} must be above 0, got {value!r}"
    if number < 0 and not name.endswith(SIGNED_SUFFIXES):
        return f"{name} cannot be below 0, got {value!r}"
    return None


def bad_values(settings: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[str]:
    """A line for each of Scrapy's settings in ``settings`` (a mapping or ``(name,
    value)`` pairs) whose value Scrapy cannot use, in name order."""
    pairs = settings.items() if isinstance(settings, Mapping) else settings
    values = dict(pairs)
    return [why for name in sorted(values) if (why := bad_value(name, values[name]))]


def mistyped(names: Iterable[str], known: Iterable[str] = ()) -> list[str]:
    """A line for each of ``names`` that is not a setting of Scrapy's (nor of ``known``,
    nor simcrawl's own, which :mod:`dedup.setting_names` judges) but is close to one of
    Scrapy's: ``DEPTH_LIMT`` did nothing and said nothing."""
    from dedup.setting_names import PREFIXES

    scrapy = scrapy_names()
    known = set(known)
    out = []
    for name in sorted(set(names)):
        if name in scrapy or name in known or name.startswith(PREFIXES):
            continue
        near = difflib.get_close_matches(name, scrapy, n=1, cutoff=0.85)
        if near:
            out.append(f"{name} is not a Scrapy setting and does nothing; did you mean "
                       f"{near[0]}?")
    return out
