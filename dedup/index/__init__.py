"""The near-duplicate index: permuted tables over a store (in memory here; in Redis,
one node or a cluster, in :mod:`dedup.adapters`).

    >>> from dedup.index import MemoryStore, NearDuplicateIndex
    >>> index = NearDuplicateIndex(MemoryStore(), capacity=1000)
    >>> index.check_and_add(0xFFFF0000FFFF0000, "a") is None
    True
    >>> index.query(0xFFFF0000FFFF0007)
    [Match(fingerprint=18446462603027742720, page_id='a', distance=3)]
"""


from dedup.config import check_namespace
from dedup.index.core import (
    DEFAULT_BATCH,
    DEFAULT_CAPACITY,
    IndexStore,
    Match,
    NearDuplicateIndex,
    Probe,
    check_fingerprint,
    check_page_id,
)
from dedup.index.layout import IndexLayout, IndexMismatchError
from dedup.index.memory_store import MemoryStore

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_CAPACITY",
    "IndexLayout",
    "IndexMismatchError",
    "IndexStore",
    "Match",
    "MemoryStore",
    "NearDuplicateIndex",
    "Probe",
    "check_fingerprint",
    "check_namespace",
    "check_page_id",
]
