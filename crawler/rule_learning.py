"""Requests not sent: the crawl's side of the URL rules (:mod:`dedup.url_rules`, kept in
Redis by :mod:`dedup.adapters.redis_url_rules`).

- :class:`crawler.middlewares.url_rule_gate.UrlRuleGate` (a downloader middleware): a
  request the rules predict to be a copy of a decided page is not sent; it becomes that
  page's ``url_rule`` match record.
  One predicted to be the page of a URL not decided yet is held until that one is. A
  share of predictions is sent anyway, and the page it brings checks the rules. Checked
  when the request is about to be sent, not when it is queued: the rules a crawl learns
  meanwhile apply to what it queued before. The requests that come while a screen is out
  are screened together, in one round trip a host.
- :class:`RuleLearning` (used by the dedup middleware after each decision): the rules
  learn from the page at once, an explored page checks them, and the links held for the
  page are recorded as its copies.
- :class:`crawler.extensions.send_again.SendAgain` (an extension): the requests a dropped
  rule kept are sent, within seconds; when the crawl goes idle, so are the held ones whose
  page never got decided. A document is never lost to a rule.

Settings: ``DEDUP_URL_RULES`` (on by default) and the three of docs/settings.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.exceptions import NotConfigured

from crawler.wiring import Parts, parts_of
from dedup.adapters.redis_url_rules import RedisUrlRules
from dedup.config import config_value
from dedup.errors import ServiceUnavailable
from dedup.store.records import MatchRecord
from dedup.url_rules import Rule, host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: A request sent to check its rules carries its prediction here: the claimant, the rules.
META = "dedup_url_rule"

#: A request not sent carries its prediction here (its response is empty, made here).
PREDICTED = "dedup_url_rule_predicted"

#: The skips a request not sent counts as: recorded as a copy now, or held.
NOT_SENT, HELD = "dedup/skipped/url_rule", "dedup/skipped/url_rule_held"

#: Seconds between two looks for links to send again.
SEND_SECONDS = 2.0

#: Seconds after the crawl goes idle before the links still held are sent.
RELEASE_SECONDS = 2.0


#: Meta keys a request sent again may do without (Scrapy's own, set on the way, and the
#: crawl's): a request with others carries them (:func:`carry_of`).
PLAIN_META = frozenset({"depth", "download_slot", "download_latency", "download_timeout"})


def carry_of(request: scrapy.Request, spider: Any) -> str:
    """What a request kept from being sent must carry to be sent again as it was: ``""``
    for the spider's plain request of a URL (its ``parse``, its default errback, no
    arguments, no data), else the request serialized (as the shared frontier keeps it).
    Serializing costs about 30 us, paid by requests that need it only."""
    callback, errback = request.callback, request.errback
    plain = (callback is None or callback == getattr(spider, "parse", None)) \
        and (errback is None or errback == getattr(spider, "failed", None)) \
        and not request.cb_kwargs \
        and all(k in PLAIN_META or k.startswith(("dedup", "simcrawl")) for k in request.meta) \
        and all(k.lower() == b"referer" for k in request.headers)
    if plain:
        return ""
    from crawler.frontier import JsonSerializer

    return JsonSerializer.dumps(request.to_dict(spider=spider)).decode("utf-8")


def request_again(url: str, depth: int, carry: str, spider: Any) -> scrapy.Request:
    """The request of a link kept by the rules, to send after all (never filtered as seen:
    it was, when it was kept): as it was (:func:`carry_of`), or the spider's plain one."""
    if carry:
        from scrapy.utils.request import request_from_dict

        from crawler.frontier import JsonSerializer

        request = request_from_dict(JsonSerializer.loads(carry), spider=spider)
        return request.replace(dont_filter=True, meta={**request.meta, "depth": depth})
    return scrapy.Request(url, callback=getattr(spider, "parse", None),
                          errback=getattr(spider, "failed", None), dont_filter=True,
                          meta={"depth": depth})


def rule_texts(rules: list[Rule]) -> list[str]:
    return [r.whole() for r in rules]


def rules_of(texts: list[str]) -> list[Rule]:
    return [Rule.parse(text) for text in texts]


def match_of(url: str, claimant: str, rules: list[Rule], original_url: str,
             original_id: str) -> MatchRecord:
    """The match record of a link not requested: a copy of ``original_url``, as its
    rules predict (through ``claimant``, the URL they take it to)."""
    return MatchRecord.of_link(url, host_of(url), claimant=claimant,
                               rules=[str(r) for r in rules], original_url=original_url,
                               original_host=host_of(original_url), original_id=original_id)


def rules_parts(crawler: Crawler) -> Parts:
    """The crawl's parts, when it uses URL rules.

    Raises:
        NotConfigured: ``DEDUP_ENABLED`` or ``DEDUP_URL_RULES`` is off.
    """
    if not config_value("DEDUP_ENABLED", crawler.settings.get):
        raise NotConfigured("DEDUP_ENABLED is off")
    parts = parts_of(crawler)
    if parts.urlrules is None:
        raise NotConfigured("DEDUP_URL_RULES is off")
    return parts


def predicted_records(response: scrapy.http.Response) -> list[MatchRecord] | None:
    """The records of a response
    :class:`crawler.middlewares.url_rule_gate.UrlRuleGate` made for a request it did not send
    (the match record of a predicted copy; none for a held one), or ``None``: a response
    of a request that was sent."""
    prediction = response.meta.get(PREDICTED) if response.request is not None else None
    if prediction is None:
        return None
    if not prediction.get("original_url"):
        return []
    return [match_of(response.url, prediction["claimant"], rules_of(prediction["rules"]),
                     prediction["original_url"], prediction["original_id"] or "")]


def not_downloaded(response: scrapy.http.Response, crawler: Crawler | None
                   ) -> list[tuple[str, int]]:
    """What Scrapy's stats count for ``response`` as a download, and by how much: the
    downloader stats middleware's three counters (when ``DOWNLOADER_STATS`` is on, as
    :class:`scrapy.downloadermiddlewares.stats.DownloaderStats` reckons them) and the
    core stats' responses received."""
    out = [("response_received_count", 1)]
    if crawler is None or crawler.settings.getbool("DOWNLOADER_STATS", True):
        from scrapy.downloadermiddlewares.stats import get_header_size, get_status_size

        size = get_header_size(response.headers) + get_status_size(response.status) + 4 \
            + len(response.body)
        out += [("downloader/response_count", 1),
                (f"downloader/response_status_count/{response.status}", 1),
                ("downloader/response_bytes", size)]
    return out


class RuleLearning:
    """What each decision tells the URL rules (see the module docstring)."""

    def __init__(self, rules: RedisUrlRules, stats: Any) -> None:
        self.rules, self.stats = rules, stats
        self._failed_logged = False
        #: page URL -> (the URL requested, its prediction) for pages sent to check rules
        self._checks: dict[str, tuple[str, dict[str, Any]]] = {}

    def expect(self, request: scrapy.Request | None, url: str) -> None:
        """The page of ``url`` comes from a request sent to check its rules: its
        decision checks them (:meth:`learn`)."""
        prediction = request.meta.get(META) if request is not None else None
        if prediction and request is not None:
            self._checks[url] = (request.url, prediction)

    def learn(self, pages: list[tuple[str, str, tuple[str | None, str | None] | None]]
              ) -> dict[str, list[MatchRecord]]:
        """Pages just decided, ``(URL, page id, copy_of)`` (``copy_of``: the original's
        URL and id, ``None`` for a page stored as an original), in the worker thread that
        decided them, with their batch (one Redis pipeline for it, no wait of its own):
        the rules learn from them at once; a page requested to check its rules checks
        them (a rule it contradicts is dropped, and what it kept is sent again); the
        links held for them are returned as their match records, by page URL. Redis
        failing costs savings only: it is counted and said once."""
        originals = [(url, page_id) for url, page_id, copy_of in pages if copy_of is None]
        copies = [(url, copy_of[0], copy_of[1] or "") for url, _, copy_of in pages
                  if copy_of is not None and copy_of[0]]
        try:
            for url, _, copy_of in pages:
                check = self._checks.pop(url, None)
                if check is not None:
                    self._check(url, check[0], check[1], copy_of)
            held = self.rules.decided(originals, copies)
        except (ServiceUnavailable, ValueError, KeyError) as exc:
            self._failed(exc)
            return {}
        if held:
            self.stats.inc_value("dedup/url_rule", len(held))
        out: dict[str, list[MatchRecord]] = {}
        for h in held:
            out.setdefault(h.claimant, []).append(match_of(
                h.url, h.claimant, h.rules, h.original_url or "", h.original_id or ""))
        return out

    def _check(self, url: str, requested: str, prediction: dict[str, Any],
               copy_of: tuple[str | None, str | None] | None) -> None:
        verdict = self.rules.check(requested, prediction["claimant"],
                                   rules_of(prediction["rules"]), copy_of)
        if verdict is None:
            return
        self.stats.inc_value(f"dedup/url_rules/{'confirmed' if verdict else 'contradicted'}")
        if not verdict:
            log.info("URL rules %s contradicted by %s (%s): dropped",
                     ", ".join(prediction["rules"]), url,
                     "stored as an original" if copy_of is None
                     else f"a copy of {copy_of[0] or copy_of[1]}")

    def _failed(self, exc: Exception) -> None:
        self.stats.inc_value("dedup/url_rules/errors")
        if not self._failed_logged:
            self._failed_logged = True
            log.warning("URL rules could not be read or written (%s): links are requested "
                        "without them meanwhile (further failures counted in "
                        "dedup/url_rules/errors)", exc)
