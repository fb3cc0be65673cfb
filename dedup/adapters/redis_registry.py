"""The exact-copy registry in Redis (:class:`RedisRegistry`; the interface and the
memory one are :mod:`dedup.registry`), and the bulk registration the rebuild uses."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import redis

from dedup.errors import ServiceUnavailable
from dedup.registry import Claim, PipelineJournal


def checksum_key(namespace: str, checksum: str) -> tuple[str, bytes]:
    """Where a text checksum (32 hex digits) is registered in Redis: ``({ns}:sum:{first 4
    digits}, the other 14 bytes)``; the value is the page id."""
    return f"{namespace}:sum:{checksum[:4]}", bytes.fromhex(checksum[4:])


def register_checksums(client: redis.Redis, namespace: str,
                       pairs: Iterable[tuple[str, str]], batch: int = 5000) -> int:
    """Register ``(checksum, page id)`` pairs in Redis (``HSETNX``: the first page keeps
    a text); returns how many were new. Used by ``rebuild-index`` and ``register``."""
    added, pipe = 0, client.pipeline(transaction=False)
    for n, (checksum, page_id) in enumerate(pairs, 1):
        key, field_ = checksum_key(namespace, checksum)
        pipe.hsetnx(key, field_, page_id)
        if n % batch == 0:
            added += sum(pipe.execute())
    added += sum(pipe.execute())
    return added


class RedisRegistry:
    """The registry in Redis, shared by a namespace's crawl processes.

    Args:
        client: redis-py client (one server, or a cluster: the commands are single-key).
        namespace: the index's key prefix.
        journal: this process's admission journal: claims are journaled before they are
            read, dropped pages leave the journal at :meth:`settle`.
    """

    def __init__(self, client: redis.Redis, namespace: str,
                 journal: PipelineJournal | None = None) -> None:
        self.client = client
        self.namespace = namespace
        self.journal = journal

    def claim(self, claims: Sequence[Claim]) -> list[str | None]:
        """See :meth:`ChecksumRegistry.claim`: one pipeline (journal entries first)."""
        if not claims:
            return []
        try:
            pipe = self.client.pipeline(transaction=False)
            if self.journal is not None:
                self.journal.record(pipe, claims)
            for c in claims:
                key, field_ = checksum_key(self.namespace, c.checksum)
                if c.short:
                    pipe.hsetnx(key, field_, c.page_id)
                pipe.hget(key, field_)
            replies: list[Any] = pipe.execute()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed during the checksum check: {exc}",
                                     service="Redis") from exc
        at = 1 if self.journal is not None else 0
        out: list[str | None] = []
        for c in claims:
            at += 1 if c.short else 0  # the HSETNX reply
            owner = replies[at]
            at += 1
            out.append(owner.decode() if isinstance(owner, bytes) else owner)
        return out

    def settle(self, admitted: Sequence[tuple[str, str]], dropped: Sequence[str]) -> None:
        """See :meth:`ChecksumRegistry.settle`: one pipeline."""
        try:
            pipe = self.client.pipeline(transaction=False)
            for checksum, page_id in admitted:
                key, field_ = checksum_key(self.namespace, checksum)
                pipe.hsetnx(key, field_, page_id)
            if self.journal is not None:
                self.journal.forget(pipe, dropped)
            pipe.execute()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis failed while registering checksums: {exc}",
                                     service="Redis") from exc
