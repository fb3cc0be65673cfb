"""Prometheus metrics of a running crawl (``SIMCRAWL_METRICS_PORT``).

With the setting, each crawl process serves ``/metrics`` on that port (prometheus-client's
own HTTP server, on ``SIMCRAWL_METRICS_ADDRESS``, default ``127.0.0.1``), so a long
crawl can be watched by Prometheus, Grafana and the like:

``simcrawl_pages_total{outcome=...}``
    pages decided: ``unique``, ``near_duplicate``, ``exact_duplicate``, ``pinyin_copy``,
    ``revisit``, and ``skipped_<reason>`` (the ``dedup/*`` stats).
``simcrawl_stored_total{kind="pages"|"matches"}``
    records written to MongoDB.
``simcrawl_outlinks_dropped_total``
    links of copies that were never requested.
``simcrawl_responses_total``, ``simcrawl_requests_total``
    Scrapy's downloader counters.
``simcrawl_decision_seconds``
    a histogram of the time from a page's arrival to its decision (extraction, then the
    index, the checksum registry and the store), the dedup stage's latency.

Counters are read from Scrapy's stats when Prometheus scrapes, so they cost nothing
between scrapes. With several processes on one machine give each its own port (``./simcrawl
--processes N`` uses the port and the N - 1 after it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from dedup.setting_names import value

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

log = logging.getLogger(__name__)

#: Scrapy signal the dedup middleware sends once a page is decided, with ``seconds`` from
#: its arrival (extraction, then the index, the checksum registry and the store).
page_decided = object()

#: Decision latency buckets, seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def metrics_port(settings: Any) -> int:
    """``SIMCRAWL_METRICS_PORT``, checked (0: no metrics).

    Raises:
        ValueError: not a port number.
    """
    raw = value("SIMCRAWL_METRICS_PORT", settings.get) or 0
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise ValueError(f"SIMCRAWL_METRICS_PORT must be a port number, got {raw!r}"
                         ) from None


class StatsCollector:
    """A prometheus-client collector over a Scrapy stats collector."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        values = self.stats.get_stats()
        pages = CounterMetricFamily("simcrawl_pages", "Pages decided, by outcome",
                                    labels=["outcome"])
        for key, value in sorted(values.items()):
            if not isinstance(value, (int, float)) or not key.startswith("dedup/"):
                continue
            name = key[len("dedup/"):]
            if name in ("unique", "near_duplicate", "exact_duplicate", "pinyin_copy",
                        "revisit") or name.startswith("skipped/"):
                pages.add_metric([name.replace("/", "_")], value)
        yield pages
        stored = CounterMetricFamily("simcrawl_stored", "Records written to MongoDB",
                                     labels=["kind"])
        for kind in ("pages", "matches"):
            stored.add_metric([kind], values.get(f"dedup/stored/{kind}", 0))
        yield stored
        for name, key, text in (
                ("simcrawl_outlinks_dropped", "dedup/outlinks_dropped",
                 "Links of copies never requested"),
                ("simcrawl_responses", "downloader/response_count", "Responses downloaded"),
                ("simcrawl_requests", "downloader/request_count", "Requests sent")):
            yield CounterMetricFamily(name, text, value=values.get(key, 0))


class PrometheusMetrics:
    """Serve the crawl's metrics for Prometheus (a Scrapy extension; see the module).

    Settings: ``SIMCRAWL_METRICS_PORT`` (off when unset or 0),
    ``SIMCRAWL_METRICS_ADDRESS`` (default ``127.0.0.1``).
    """

    def __init__(self, crawler: Crawler, port: int, address: str) -> None:
        from prometheus_client import CollectorRegistry, Histogram, start_http_server

        self.registry = CollectorRegistry()
        self.registry.register(StatsCollector(crawler.stats))
        self.latency = Histogram("simcrawl_decision_seconds",
                                 "Seconds from a page's arrival to its decision",
                                 buckets=BUCKETS, registry=self.registry)
        try:
            self.server, self.thread = start_http_server(port, addr=address,
                                                         registry=self.registry)
        except OSError as exc:
            raise ValueError(f"SIMCRAWL_METRICS_PORT {port}: cannot listen on "
                             f"{address}:{port} ({exc.strerror})") from None
        self.port = self.server.server_port
        log.info("Prometheus metrics on http://%s:%d/metrics", address, self.port)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PrometheusMetrics:
        port = metrics_port(crawler.settings)
        if not port:
            raise NotConfigured("no SIMCRAWL_METRICS_PORT")
        ext = cls(crawler, port, value("SIMCRAWL_METRICS_ADDRESS", crawler.settings.get))
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.decided, signal=page_decided)
        return ext

    def decided(self, seconds: float) -> None:
        """A page was decided ``seconds`` after it arrived (:data:`page_decided`)."""
        self.latency.observe(seconds)

    def spider_closed(self, spider: Any = None) -> None:
        self.server.shutdown()
        self.server.server_close()
