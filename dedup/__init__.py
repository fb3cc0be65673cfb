"""dedup: near-duplicate detection with simhash (Charikar; Manku, Jain, Das Sarma 2007).

The fingerprint and index library of simcrawl; it does not import Scrapy.

    >>> import dedup
    >>> dedup.hamming(dedup.simhash("Hello, World!"), dedup.simhash("hello   world"))
    0
"""

from dedup.all_pairs import MemoryIndex, clusters, find_all
from dedup.simhash import KERNEL, Fingerprint, fingerprint, hamming, normalize, simhash
from dedup.tables import Design, Table, block_design, plan, two_level_design
from dedup.text import ExtractedText, extract_text

__all__ = [
    "KERNEL",
    "Design",
    "ExtractedText",
    "Fingerprint",
    "MemoryIndex",
    "Table",
    "block_design",
    "clusters",
    "extract_text",
    "find_all",
    "fingerprint",
    "hamming",
    "normalize",
    "plan",
    "simhash",
    "two_level_design",
]
