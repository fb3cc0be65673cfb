"""The decision's cases of tests/decision_cases.py through the Redis and MongoDB adapters
(the checksum registry and index in Redis, the facts from MongoDB and the journals): the
same verdicts as on memory stores (tests/unit/test_decision.py)."""

from __future__ import annotations

import pytest
from decision_cases import *  # the shared cases, collected here

from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import open_index, redis_store
from dedup.adapters.redis_templates import HostTemplates
from dedup.config import DedupConfig
from dedup.decide import Rules
from dedup.deduplicator import Deduplicator
from dedup.store.records import MatchRecord, fingerprint_record, page_record

pytestmark = pytest.mark.integration

CONFIG = DedupConfig()


class ServerWorld:
    """The stores of tests/decision_cases.py on the real servers of the test session."""

    def __init__(self, client, pages, namespace: str) -> None:  # type: ignore[no-untyped-def]
        self.client, self.pages, self.namespace = client, pages, namespace
        self.tables = redis_store(client, namespace)  # sharded on a Redis Cluster

    def deduplicator(self, rules: Rules | None = None, *, template_pages: int = 0
                     ) -> Deduplicator:
        index = open_index(self.tables, k=CONFIG.max_distance, capacity=1000)
        templates = HostTemplates(self.client, self.namespace, template_pages, refresh=0) \
            if template_pages else None
        return on_servers(index, self.client, self.pages, self.namespace,
                          rules or Rules.from_config(CONFIG), templates=templates)

    def store(self, p, decision=None) -> None:  # type: ignore[no-untyped-def]
        if decision is not None and decision.turn is not None:  # as the crawl's writer
            p.page_id = decision.page_id
            assert self.pages.turn_round(page_record(p), fingerprint_record(p),
                                         MatchRecord.of_turn(p, decision.turn).row(crawl_id=None))
            return
        self.pages.save_pages([page_record(p)], [fingerprint_record(p)])  # the crawl's

    def indexed(self) -> int:
        return self.tables.count()

    def record_copy(self, p, d) -> None:  # type: ignore[no-untyped-def]
        self.pages.save_matches([MatchRecord(url=p.url, host=p.host, original_id=d.original_id,
                                             original_url=None, original_host=None,
                                             distance=d.distance, kind=d.kind, checksum=p.checksum,
                                             containment=d.containment).row(crawl_id=None)])


@pytest.fixture
def world(redis_client, pages, namespace):  # type: ignore[no-untyped-def]
    w = ServerWorld(redis_client, pages, namespace)
    yield w
    w.tables.clear()
