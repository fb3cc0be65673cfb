"""simcrawl's Scrapy side. ``crawler.Addon`` adds near-duplicate dropping to any Scrapy
project (``ADDONS = {"crawler.Addon": 300}``: :mod:`crawler.addon`)."""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "Addon":  # imported when asked for: `import crawler.x` stays light
        from crawler.addon import Addon

        return Addon
    raise AttributeError(f"module 'crawler' has no attribute {name!r}")
