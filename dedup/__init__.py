"""dedup: near-duplicate detection with simhash (Charikar; Manku, Jain, Das Sarma 2007).

The fingerprint and index library of simcrawl; it does not import Scrapy.
"""

from .simhash import KERNEL, Fingerprint, fingerprint, hamming, normalize, simhash
from .text import ExtractedText, extract_text

__all__ = [
    "KERNEL",
    "ExtractedText",
    "Fingerprint",
    "extract_text",
    "fingerprint",
    "hamming",
    "normalize",
    "simhash",
]
