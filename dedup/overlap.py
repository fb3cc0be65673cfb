"""How much of one text another contains: the crawl's text check of a near match.

A simhash within k bits says two texts have much the same words; it cannot say whether a
page repeats an article under other boilerplate (a copy) or rewrites it with the same
vocabulary (not a copy), and on a short article a few sentences of comments or teasers
move it several bits. The words in order can: a copy keeps the article's sentences, so
most of its three-token shingles appear in the original, whatever furniture each page
has around them; a rewrite keeps the words but not the phrasing. (Which way the
decision measures, and what else it asks: :func:`dedup.decide.text_check`.)

Measured on the development pairs (``docs/fingerprints.md``): every labelled copy has a
containment of at least 0.84, every heavy rewrite at most 0.76.

Tokens are those of the fingerprint, approximately: words of the normalised text
(:func:`dedup.text.normalize`), and each Han, kana or Hangul character on its own, so
Chinese text is compared by character trigrams.
"""

from __future__ import annotations

import numpy as np

from dedup.config import DEFAULT_CONTAINMENT as _DEFAULT_CONTAINMENT
from dedup.simhash import normalize, token_hashes
from dedup.text import token_pattern

#: Tokens per shingle.
SHINGLE_TOKENS = 3

#: A text with fewer tokens than this is *thin*: read with its page's description as its first
#: line (:func:`dedup.reading.fingerprint_text`). Derived from the development sets: every
#: article of near-dup-dev has at least 144 tokens, and all but 11 extraction failures of
#: near-dup-dev-2's 612 at least 100, while most template-only stub pages have fewer
#: (28 of 44 and 94 of 136).
THIN_TOKENS = 100

#: A near match within k stands when this share of the page's own text's shingles is in
#: the candidate's (``DEDUP_VERIFY_CONTAINMENT``; :func:`dedup.decide.text_check`):
#: declared in :mod:`dedup.config`.
DEFAULT_CONTAINMENT = _DEFAULT_CONTAINMENT

#: An odd 64-bit constant (the golden ratio's fraction) mixing token hashes into shingles.
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)


def shingles(text: str, size: int = SHINGLE_TOKENS) -> np.ndarray:
    """The hashed shingles (``size`` consecutive tokens) of a text, sorted and distinct
    (``uint64``); a text shorter than ``size`` tokens is one shingle; an empty text has
    none. The hashes are the same in every process (xxHash of each token), so arrays and
    sketches (:mod:`dedup.sketch`) made by different crawl processes compare. The array
    is read-only."""
    global _last
    last = _last
    if last is not None and last[1] == size and last[0] == text:
        return last[2]
    out = _shingles_of(_token_hashes(normalize(text)), size)
    _last = (text, size, out)
    return out


def line_shingles(text: str, tokens: int, size: int = SHINGLE_TOKENS
                  ) -> tuple[np.ndarray, np.ndarray]:
    """The shingles (``size`` tokens, as :func:`shingles` hashes them) of each line of
    ``text`` of at least ``tokens`` tokens, all lines' in one array, each line's in text
    order (not made distinct), and how many each line has. ``tokens`` is at least
    ``size``: every such line has ``len - size + 1`` shingles."""
    if tokens < size:
        raise ValueError(f"lines of at least {size} tokens (the shingle size), not {tokens}")
    parts = []
    for line in text.split("\n"):
        hashes = token_hashes(normalize(line))
        if len(hashes) >= 8 * tokens:  # bytes: eight a token
            parts.append(hashes)
    if not parts:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    lengths = np.fromiter((len(b) // 8 for b in parts), dtype=np.int64, count=len(parts))
    mixed = _mixed(np.frombuffer(b"".join(parts), dtype=np.uint64), size)
    # the windows inside one line: each line's first len - size + 1 starts
    counts = lengths - (size - 1)
    starts = np.cumsum(lengths) - lengths
    inside = np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())
    return mixed[inside], counts


def _shingles_of(hashes: np.ndarray, size: int) -> np.ndarray:
    """:func:`shingles` of a text's :func:`_token_hashes` (read-only)."""
    out = np.unique(_mixed(hashes, min(size, len(hashes)))) if len(hashes) \
        else np.empty(0, dtype=np.uint64)
    out.flags.writeable = False
    return out


#: The last text :func:`shingles` was asked for, with its size and shingles: a page's text
#: is shingled for its listing check and again for its sketch (the arrays are read-only).
_last: tuple[str, int, np.ndarray] | None = None


def _token_hashes(normal: str) -> np.ndarray:
    """The hashes of a normalised text's tokens (:func:`token_pattern`), in order: XXH3-64
    of each token's UTF-8 bytes (the compiled kernel's
    :func:`dedup._simhash_py.token_hashes`)."""
    return np.frombuffer(token_hashes(normal), dtype=np.uint64)


def _mixed(hashes: np.ndarray, size: int) -> np.ndarray:
    """Each run of ``size`` tokens (``hashes``: their :func:`_token_hashes`) hashed to one
    ``uint64``, in text order: a polynomial in the tokens' hashes, modulo 2**64."""
    n = len(hashes) - size + 1
    mixed = hashes[:n].copy()
    for j in range(1, size):
        mixed *= _MULTIPLIER
        mixed += hashes[j:n + j]
    return mixed


def containment(a: np.ndarray, b: np.ndarray) -> float:
    """The share of the smaller set's shingles found in the other (0.0 if either is
    empty); ``a`` and ``b`` as :func:`shingles` returns them."""
    if not len(a) or not len(b):
        return 0.0
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return int(np.isin(small, large, assume_unique=True).sum()) / len(small)


def shared_text(text: str, other: np.ndarray, size: int = SHINGLE_TOKENS
                ) -> tuple[float, int, tuple[int, int]]:
    """How much of ``text`` is another text (``other``: that text's :func:`shingles`):
    the share of ``text``'s shingles found there, and the longest passage of ``text`` made
    of them (consecutive tokens each inside a found shingle): its length in characters
    and its ``(start, end)`` offsets in the normalised text (``0, (0, 0)``: none)."""
    normal = normalize(text)
    spans = [m.span() for m in token_pattern().finditer(normal)]
    if len(spans) < size or not len(other):
        return 0.0, 0, (0, 0)
    mixed = _mixed(_token_hashes(normal), size)
    n = len(mixed)
    found = np.isin(mixed, other)
    distinct = np.unique(mixed)
    share = int(np.isin(distinct, other, assume_unique=True).sum()) / len(distinct)
    covered = np.zeros(len(spans), dtype=bool)
    for j in range(size):  # a found shingle covers its tokens
        covered[j:n + j] |= found
    best, best_span, start = 0, (0, 0), None
    for i, inside in enumerate([*covered.tolist(), False]):
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            chars = sum(spans[t][1] - spans[t][0] for t in range(start, i))
            if chars > best:
                best, best_span = chars, (spans[start][0], spans[i - 1][1])
            start = None
    return share, best, best_span


#: A page's title line is one of its text's first lines (:func:`without_title`).
TITLE_LINES = 3


def without_title(text: str, title: str | None) -> str:
    """``text`` without its title line: the first of its first :data:`TITLE_LINES`
    lines whose words are all words of ``title`` and at least half of them (the heading
    that repeats a page's ``<title>``, which names the page and is compared as a title,
    not as its text). ``text`` itself when it has none, or nothing else."""
    find = token_pattern().findall
    words = set(find(normalize(title or "")))
    if not words:
        return text
    lines = text.split("\n")
    for n, line in enumerate(lines[:TITLE_LINES]):
        tokens = set(find(normalize(line)))
        if len(tokens) >= 2 and tokens <= words and 2 * len(tokens) >= len(words):
            rest = "\n".join(lines[:n] + lines[n + 1:])
            return rest if token_pattern().search(normalize(rest)) else text
    return text
