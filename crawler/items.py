"""Items the crawler yields: an admitted page, or the match record of a dropped copy."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any


@dataclass
class PageItem:
    """A fetched page. The spider fills the fetch fields; the dedup middleware adds the
    text, fingerprint and decision before the item reaches the storage pipeline."""

    url: str
    host: str
    status: int
    depth: int = 0
    referer: str | None = None
    title: str | None = None
    language: str | None = None
    fetched_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    body: bytes = b""
    encoding: str | None = None
    # set by the middleware
    page_id: str | None = None
    text: str = ""
    extraction: str = ""
    checksum: str = ""
    simhash: int = 0
    tokens: int = 0
    short: bool = False
    decision: str = ""
    pinyin: Any = None  # dedup.pinyin.PinyinFingerprint of a Chinese page
    verify: int | None = None  # the second-opinion simhash (word pairs)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class MatchItem:
    """The record of a dropped copy (one per dropped page)."""

    url: str
    host: str
    original_id: str
    original_url: str | None
    original_host: str | None
    distance: int
    kind: str
    outlinks_dropped: int
    title: str | None = None
    fetched_at: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.timezone.utc))
    source: str | None = None
    pinyin: dict[str, Any] | None = None  # share, run, span of a pinyin match
