"""The deduplicator on the crawl's servers (:func:`on_servers`): the registry in
Redis, the facts from MongoDB and the journals."""

from __future__ import annotations

from typing import Any

from dedup.adapters.redis_registry import RedisRegistry
from dedup.adapters.redis_turns import RedisTurns
from dedup.adapters.store_facts import StoreFacts
from dedup.decide import (
    Rules,
)
from dedup.deduplicator import Deduplicator
from dedup.index import NearDuplicateIndex
from dedup.index.windows import WindowIndex
from dedup.templates import TemplateStore


def on_servers(index: NearDuplicateIndex, client: Any, pages: Any, namespace: str,
               rules: Rules | None = None, *, journal: Any = None,
               windows: WindowIndex | None = None,
               templates: TemplateStore | None = None) -> Deduplicator:
    """A deduplicator on the crawl's servers: the checksum registry in Redis (with this
    process's admission journal, if given), the facts from the MongoDB page store and the
    shared crawl's journals, the ledger of turned originals in Redis.

    Args:
        index: the index (over a :class:`~dedup.adapters.redis_index.RedisStore`).
        client: the index's redis-py client.
        pages: the :class:`~dedup.adapters.mongo.PageStore`.
        namespace: the index's key prefix.
        rules, windows, templates: as :class:`Deduplicator`'s.
        journal: this process's :class:`~dedup.adapters.journal.AdmissionJournal`.
    """
    return Deduplicator(index, RedisRegistry(client, namespace, journal),
                        StoreFacts(pages, client, namespace), rules, windows=windows,
                        templates=templates, turns=RedisTurns(client, namespace))
