"""Scrapy settings for simcrawl: they live in :mod:`crawler.settings` (inside the package,
so an installed crawler finds them from any folder); this module re-exports them for
tools that look for a top-level ``settings``."""

from crawler.settings import *  # noqa: F403
