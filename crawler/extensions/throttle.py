"""AutoThrottle that lets fast 404s count (:class:`Throttle`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy.extensions.throttle import AutoThrottle

from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)


#: Statuses whose latency says how fast the server answers, as a 200's does: redirects and
#: client errors but 429 (:class:`Throttle`).
LIKE_200 = frozenset([*range(200, 429), *range(430, 500)])


class Throttle(AutoThrottle):
    """Scrapy's AutoThrottle, except for what a response that is not a 200 says about the
    server (enabled by ``AUTOTHROTTLE_ENABLED``, in the place of Scrapy's).

    Scrapy lets such a response raise the delay but never lower it, since error pages are
    small and quick. On a site whose links are mostly missing pages that pins the delay at
    its start value: a crawl of such a site ran at about 3 requests a second however fast
    the server answered. Here a redirect or a client error (4xx but 429) is evidence like
    a 200: the server computed and sent it as fast as it answers anything. Only 429 (too
    many requests) and server errors (5xx) keep Scrapy's rule, as signs of load.
    ``SIMCRAWL_THROTTLE_SCRAPY_RULE = True`` keeps Scrapy's rule for every status.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.scrapy_rule = value("SIMCRAWL_THROTTLE_SCRAPY_RULE", crawler.settings.get)

    def _adjust_delay(self, slot: Any, latency: float, response: Any) -> None:
        if self.scrapy_rule or response.status not in LIKE_200:
            super()._adjust_delay(slot, latency, response)
            return
        target = latency / self.target_concurrency  # Scrapy's policy for a 200
        delay = max(target, (slot.delay + target) / 2.0)
        slot.delay = min(max(self.mindelay, delay), self.maxdelay)
