"""The near-duplicate index: permuted tables over a store (in memory or in Redis).

    >>> from dedup.index import MemoryStore, NearDuplicateIndex
    >>> index = NearDuplicateIndex(MemoryStore(), capacity=1000)
    >>> index.check_and_add(0xFFFF0000FFFF0000, "a") is None
    True
    >>> index.query(0xFFFF0000FFFF0007)
    [Match(fingerprint=18446462603027742720, page_id='a', distance=3)]
"""

from ..config import check_namespace
from .core import (
                   DEFAULT_BATCH,
                   DEFAULT_CAPACITY,
                   IndexStore,
                   Match,
                   NearDuplicateIndex,
                   Probe,
                   check_fingerprint,
                   check_page_id,
)
from .layout import IndexLayout, IndexMismatchError
from .memory import MemoryStore
from .redis_store import DEFAULT_NAMESPACE, RedisStore

__all__ = [
    "DEFAULT_BATCH",
    "DEFAULT_CAPACITY",
    "DEFAULT_NAMESPACE",
    "IndexLayout",
    "IndexMismatchError",
    "IndexStore",
    "Match",
    "MemoryStore",
    "NearDuplicateIndex",
    "Probe",
    "RedisStore",
    "check_fingerprint",
    "check_namespace",
    "check_page_id",
]
