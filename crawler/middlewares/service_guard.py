"""The guard of the crawl's own services (a downloader middleware)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.exceptions import IgnoreRequest

from crawler.wiring import parts_of
from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


def _addresses(url: str) -> list[tuple[str, int]]:
    """``(host, port)`` of each server a service URL names (MongoDB URIs may list
    several; default ports 6379 and 27017)."""
    scheme, _, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].rsplit("@", 1)[-1]
    default = 6379 if scheme.startswith("redis") else 27017
    out = []
    for part in netloc.split(","):
        host, colon, port = part.rpartition(":") if "]" not in part.rsplit(":", 1)[-1] \
            else ("", "", "")
        if not colon:
            host, port = part, ""
        host = host.strip("[]").lower()
        if host:
            out.append((host, int(port) if port.isdigit() else default))
    return out


def _names_of(host: str) -> set[str]:
    """A service host and the loopback names that reach the same server."""
    names = {host.lower()}
    if host in ("127.0.0.1", "localhost", "::1", "0.0.0.0"):
        names |= {"127.0.0.1", "localhost", "::1", "0.0.0.0"}
    return names


class ServiceGuard:
    """Never request the crawl's own services, and (optionally) only allowed ports.

    Allowed domains are matched on host names, ports ignored, so a page or a redirect
    could send the crawler to ``http://127.0.0.1:6379/`` on an allowed host: its own
    Redis. This downloader middleware refuses any request (redirects included) to the
    address of the crawl's Redis or MongoDB, and, when ``SIMCRAWL_ALLOWED_PORTS`` is set
    (comma-separated, e.g. ``80,443,8080``), to any other port. A refused request goes to
    its errback, which counts it once, as ``dedup/skipped/forbidden_port``.

    Settings: SIMCRAWL_ALLOWED_PORTS (default: any port but the services').
    """

    def __init__(self, stats: Any, forbidden: set[tuple[str, int]],
                 allowed: set[int] | None) -> None:
        self.stats = stats
        self.forbidden = forbidden
        self.allowed = allowed
        self._logged = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ServiceGuard:
        parts = parts_of(crawler)
        forbidden = {(name, port) for url in (parts.redis_url, parts.mongo_uri)
                     for host, port in _addresses(url) for name in _names_of(host)}
        raw = value("SIMCRAWL_ALLOWED_PORTS", crawler.settings.get) or ""
        try:
            allowed = {int(p) for p in str(raw).split(",") if p.strip()} or None
        except ValueError:
            raise ValueError(f"SIMCRAWL_ALLOWED_PORTS must be comma-separated port numbers, "
                             f"got {raw!r}") from None
        return cls(crawler.stats, forbidden, allowed)

    def process_request(self, request: scrapy.Request, spider: Any = None) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(request.url)
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            port = -1
        host = (parts.hostname or "").lower()
        if (host, port) in self.forbidden or (self.allowed is not None
                                              and port not in self.allowed):
            if not self._logged:
                self._logged = True
                log.warning("refused %s: the port of one of this crawl's own services, or "
                            "not in SIMCRAWL_ALLOWED_PORTS (further ones counted in "
                            "dedup/skipped/forbidden_port)", request.url)
            raise IgnoreRequest(f"forbidden port: {request.url}")
