"""The exact-copy registry: which admitted page owns a text (its normalised checksum).

The decision (:class:`dedup.deduplicator.Deduplicator`) asks the registry, for a batch of
pages, who owns each text, and tells it afterwards which pages were admitted. It holds no
client: a registry is one of

* :class:`MemoryRegistry`, for one process (scans, scripts, unit tests);
* :class:`RedisRegistry`, shared by every crawl process on a namespace: one Redis hash per
  checksum bucket, ``{namespace}:sum:{first 4 hex digits}`` (field: the other 14 bytes,
  value: the page id). With an admission journal (:mod:`dedup.adapters.journal`) the pages about to
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
    """What :class:`RedisRegistry` needs of an admission journal (:mod:`dedup.adapters.journal`):
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
