"""Simhash: the selector between the Cython kernel and the pure-Python reference.

The compiled kernel (``dedup._simhash``) is used when it was built; otherwise, or when the
environment variable ``SIMCRAWL_PURE_PYTHON=1`` is set, the reference
(``dedup._simhash_py``) is. Both return identical results. :data:`KERNEL` says which one
loaded (``"cython"`` or ``"python"``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from dedup import _simhash_py
from dedup.kernels import load

log = logging.getLogger(__name__)

FINGERPRINT_BITS = 64
MASK64 = (1 << 64) - 1

_kernel = load("_simhash") or _simhash_py  # dedup.kernels: the switch and the warning

#: Which implementation is in use: ``"cython"`` or ``"python"``.
KERNEL: str = _kernel.KERNEL
_normalize = _kernel.normalize
#: The text :func:`normalize` was last given (the same object) and its normal form.
_last_normal: tuple[str, str] = ("", "")


def normalize(text: str) -> str:
    """:func:`dedup.text.normalize` from the implementation in use. A page's text is
    normalised for its simhash, its second opinion, its template lines and its shingles:
    the normal form of the text last given, the same ``str`` object, is kept for the next
    call."""
    global _last_normal
    last = _last_normal
    if last[0] is text:
        return last[1]
    normal = _normalize(text)
    _last_normal = (text, normal)
    return normal


#: :func:`dedup._simhash_py.token_hashes` and :func:`dedup._simhash_py.line_keys` from the
#: implementation in use (the shingles' and the template lines' tokens).
token_hashes, line_keys = _kernel.token_hashes, _kernel.line_keys

#: Default tokens per feature (shingle). Chosen on the near-duplicate development set:
#: see docs/fingerprints.md.
DEFAULT_SHINGLE = 1
#: Default characters per feature for Han, kana and Hangul text (character bigrams).
DEFAULT_CJK_NGRAM = 2
#: Default for dropping number-only tokens.
DEFAULT_DROP_NUMBERS = False
#: Below this many tokens a text is *short*: never a near duplicate on simhash alone.
DEFAULT_MIN_TOKENS = 30


@dataclass(frozen=True)
class Fingerprint:
    """The fingerprints of one text.

    Attributes:
        simhash: 64-bit simhash, an ``int`` in ``[0, 2**64)``.
        checksum: 128-bit XXH3 of the token stream; equal checksums mean equal normalised
            text (case, white space, punctuation and Unicode form aside).
        tokens: number of tokens.
        features: number of features (shingles) hashed.
        short: fewer than ``min_tokens`` tokens. A short text's simhash is not reliable
            (Manku et al. §4 saw clusters of near-empty pages): match it by checksum only.
    """

    simhash: int
    checksum: int
    tokens: int
    features: int
    short: bool

    @property
    def hex(self) -> str:
        """The simhash as 16 lower-case hex digits."""
        return f"{self.simhash:016x}"

    @property
    def checksum_hex(self) -> str:
        """The checksum as 32 lower-case hex digits."""
        return f"{self.checksum:032x}"


def _as_text(text: str | bytes) -> str:
    if isinstance(text, bytes):
        # Documented: bytes are read as UTF-8, undecodable bytes become U+FFFD (a separator).
        return text.decode("utf-8", "replace")
    if not isinstance(text, str):
        raise TypeError(f"text must be str or bytes, not {type(text).__name__}")
    return text


def fingerprint(text: str | bytes, *, shingle: int = DEFAULT_SHINGLE,
                drop_numbers: bool = DEFAULT_DROP_NUMBERS,
                min_tokens: int = DEFAULT_MIN_TOKENS,
                cjk_ngram: int = DEFAULT_CJK_NGRAM) -> Fingerprint:
    """Fingerprint a text: simhash, content checksum and size.

    Args:
        text: the text; ``bytes`` are decoded as UTF-8 with replacement characters.
        shingle: tokens per feature ending in a word (1 to 8).
        drop_numbers: ignore tokens made only of digits (counters, dates, prices).
        min_tokens: below this many tokens the result is marked ``short``.
        cjk_ngram: characters per feature ending in a Han, kana or Hangul character.

    Returns:
        A :class:`Fingerprint`.

    Raises:
        TypeError: ``text`` is neither ``str`` nor ``bytes``.
        ValueError: ``shingle`` is out of range.

    Example:
        >>> fingerprint("The quick brown fox").tokens
        4
    """
    simhash_value, checksum, tokens, features = _kernel.fingerprint_text(
        normalize(_as_text(text)), shingle, drop_numbers, cjk_ngram)
    return Fingerprint(simhash_value, checksum, tokens, features, tokens < min_tokens)


def simhash(text: str | bytes, *, shingle: int = DEFAULT_SHINGLE,
            drop_numbers: bool = DEFAULT_DROP_NUMBERS,
            cjk_ngram: int = DEFAULT_CJK_NGRAM) -> int:
    """Return the 64-bit simhash of a text as an unsigned ``int``.

    See :func:`fingerprint` for the arguments; the feature and hash definition is in
    :mod:`dedup._simhash_py`. An empty text (no tokens) has simhash 0.
    """
    return fingerprint(text, shingle=shingle, drop_numbers=drop_numbers,
                       cjk_ngram=cjk_ngram).simhash


def hamming(a: int, b: int) -> int:
    """Return the number of bits in which two 64-bit fingerprints differ.

    Raises:
        ValueError: either value is outside ``[0, 2**64)``.
    """
    if not (0 <= a <= MASK64 and 0 <= b <= MASK64):
        raise ValueError(f"fingerprints must be unsigned 64-bit integers, got {a!r}, {b!r}")
    return (a ^ b).bit_count()
