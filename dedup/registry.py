"""The exact-copy registry: which admitted page owns a text (its normalised checksum).

The decision (:class:`dedup.deduplicator.Deduplicator`) asks the registry, for a batch of
pages, who owns each text, and tells it afterwards which pages were admitted. It holds no
client: a registry is one of

* :class:`MemoryRegistry`, for one process (scans, scripts, unit tests);
* :class:`RedisRegistry`, shared by every crawl process on a namespace: one Redis hash per
  checksum bucket, ``{namespace}:sum:{first 4 hex digits}`` (field: the other 14 bytes,
  value: the page id). With an admission journal (:mod:`dedup.journal`) the pages about to
  be decided are journaled in the same round trip as the registry is read, before any
  admission step runs.

Only admitted pages own a text, so an exact copy never names a page that was itself
dropped. A short text's registration (first come, first served) is its whole decision,
so it is claimed in the same atomic step as it is read (``HSETNX``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from .errors import ServiceUnavailable


@dataclass(frozen=True)
class Claim:
    """One page offered to the registry.

    Attributes:
        page_id: the page's id.
        checksum: its normalised text's checksum (32 hex digits).
        short: a short text, registered now if no page owns it (its whole decision).
        simhash, verify, url, host: what the journal keeps of it (a shared crawl's other
            processes read them before the page is stored).
    """

    page_id: str
    checksum: str
    short: bool = False
    simhash: int = 0
    verify: int | None = None
    url: str = ""
    host: str = ""


class ChecksumRegistry(Protocol):
    """What the decision needs from the registry."""

    def claim(self, claims: Sequence[Claim]) -> list[str | None]:
        """For each claim in order, the page id that owns its checksum (``None``: no
        page); a short claim whose text nobody owns becomes its owner in the same
        atomic step.

        Raises:
            ServiceUnavailable: the registry's server failed; the call may be repeated.
        """

    def settle(self, admitted: Sequence[tuple[str, str]], dropped: Sequence[str]) -> None:
        """Register the texts of admitted pages (``(checksum, page id)``; the first owner
        keeps a text), and tell the journal, if any, that the ``dropped`` page ids were
        copies after all.

        Raises:
            ServiceUnavailable: the registry's server failed; the call may be repeated.
        """


class PipelineJournal(Protocol):
    """What :class:`RedisRegistry` needs of an admission journal (:mod:`dedup.journal`):
    commands queued on the registry's own pipeline, so they cost no round trip."""

    def record(self, pipe: Any, entries: Iterable[Claim]) -> None:
        """Queue the entries of pages about to be decided."""

    def forget(self, pipe: Any, page_ids: Sequence[str]) -> None:
        """Queue the removal of entries of pages that were copies after all."""


class MemoryRegistry:
    """A registry in this process (a dict)."""

    def __init__(self) -> None:
        self.owners: dict[str, str] = {}

    def claim(self, claims: Sequence[Claim]) -> list[str | None]:
        """See :meth:`ChecksumRegistry.claim`."""
        out = []
        for c in claims:
            if c.short:
                self.owners.setdefault(c.checksum, c.page_id)
            out.append(self.owners.get(c.checksum))
        return out

    def settle(self, admitted: Sequence[tuple[str, str]], dropped: Sequence[str]) -> None:
        """See :meth:`ChecksumRegistry.settle`."""
        for checksum, page_id in admitted:
            self.owners.setdefault(checksum, page_id)


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
