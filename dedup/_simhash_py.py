"""Pure-Python reference of the simhash kernel: readable, slow, and the test oracle.

The Cython kernel (``_simhash.pyx``) must return exactly what these functions return.
Both have the same names and signatures; :mod:`dedup.simhash` chooses one.

Definition (Charikar's simhash as used by Manku et al., WWW 2007, §2):

1. The text is split into tokens by :func:`dedup.text.iter_tokens` (words and single CJK
   characters); number tokens are dropped when asked.
2. Every token ends one feature: the window of the last ``shingle`` tokens when it is a
   word, of the last ``cjk_ngram`` tokens when it is a CJK character (character n-grams
   for Chinese, Japanese and Korean), the tokens joined by one space (U+0020). A token
   too early in the text for its window ends none; a text too short for any window has
   one feature, all its tokens. Every occurrence counts (term-frequency weights).
3. Each feature is hashed with XXH3-64 (seed 0) of its UTF-8 bytes.
4. Bit ``j`` of the simhash is 1 when more than half of the features have bit ``j`` set.

The content checksum is XXH3-128 (seed 0) of the token stream, each token followed by one
space: texts that differ only in case, white space, punctuation or Unicode form share it.
"""

from __future__ import annotations

import numpy as np
import xxhash

from dedup.text import CJK, char_class, iter_tokens, normalize, token_pattern

__all__ = ["KERNEL", "fingerprint_text", "line_keys", "normalize", "probe", "scan_sorted",
           "token_hashes"]

KERNEL = "python"


def fingerprint_text(text: str, shingle: int = 1, drop_numbers: bool = False,
                     cjk_ngram: int = 2) -> tuple[int, int, int, int]:
    """Fingerprint a normalised text.

    Args:
        text: output of :func:`dedup.text.normalize`.
        shingle: tokens per feature ending in a word (1 to 8).
        drop_numbers: leave out tokens made only of decimal digits.
        cjk_ngram: tokens per feature ending in a CJK character (1 to 8).

    Returns:
        ``(simhash, checksum, tokens, features)``: the 64-bit simhash, the 128-bit
        checksum, the number of tokens and of features. An empty token stream gives
        simhash 0 and no features.
    """
    if not 1 <= shingle <= 8:
        raise ValueError(f"shingle must be between 1 and 8, got {shingle}")
    if not 1 <= cjk_ngram <= 8:
        raise ValueError(f"cjk_ngram must be between 1 and 8, got {cjk_ngram}")
    tokens = list(iter_tokens(text, drop_numbers))
    checksum = xxhash.xxh3_128_intdigest("".join(t + " " for t in tokens).encode("utf-8",
                                         "surrogatepass"))
    if not tokens:
        return 0, checksum, 0, 0
    features = []
    for end, token in enumerate(tokens, 1):
        width = cjk_ngram if char_class(token[0]) == CJK else shingle
        if end >= width:
            features.append(" ".join(tokens[end - width:end]))
    if not features:
        features = [" ".join(tokens)]
    counts = [0] * 64
    for feature in features:
        h = xxhash.xxh3_64_intdigest(feature.encode("utf-8", "surrogatepass"))
        for j in range(64):
            counts[j] += (h >> j) & 1
    simhash = 0
    for j in range(64):
        if 2 * counts[j] > len(features):
            simhash |= 1 << j
    return simhash, checksum, len(tokens), len(features)


def token_hashes(text: str) -> bytes:
    """XXH3-64 (seed 0) of the UTF-8 bytes of each token of a normalised text, in order, as
    the bytes of a native ``uint64`` array. Tokens as :func:`dedup.text.token_pattern`
    finds them (each Han, kana or Hangul character of the Basic Multilingual Plane, runs
    of other letters and digits)."""
    tokens = token_pattern().findall(text)
    return np.fromiter((xxhash.xxh3_64_intdigest(t.encode()) for t in tokens),
                       dtype=np.uint64, count=len(tokens)).tobytes()


def line_keys(text: str) -> list[int | None]:
    """Of each line of a normalised text (``text.split("\\n")``), XXH3-64 of the UTF-8 bytes
    of its tokens (:func:`token_hashes`) joined by one space; ``None`` for a line
    without tokens."""
    find, digest = token_pattern().findall, xxhash.xxh3_64_intdigest
    return [digest(" ".join(tokens).encode()) if (tokens := find(line)) else None
            for line in text.split("\n")]


def scan_sorted(keys, prefix_bits: int, k: int, earlier_masks):  # type: ignore[no-untyped-def]
    """All pairs within ``k`` bits among sorted permuted keys that share a prefix bucket,
    each reported only by the first table whose prefix it shares.

    Args:
        keys: sorted permuted fingerprints (a sequence of ints or a ``uint64`` array).
        prefix_bits: p of this table.
        k: the largest distance.
        earlier_masks: the prefix masks of the earlier tables in this table's bit order.

    Returns:
        ``(a, b, distance)`` lists: the two permuted keys and their Hamming distance.
    """
    keys = [int(x) for x in keys]
    masks = [int(m) for m in earlier_masks]
    shift = 64 - prefix_bits
    out_a: list[int] = []
    out_b: list[int] = []
    out_d: list[int] = []
    i = 0
    while i < len(keys):
        j = i + 1
        while j < len(keys) and keys[j] >> shift == keys[i] >> shift:
            j += 1
        for x in range(i, j - 1):
            for y in range(x + 1, j):
                diff = keys[x] ^ keys[y]
                d = diff.bit_count()
                if d <= k and all(diff & m for m in masks):
                    out_a.append(keys[x])
                    out_b.append(keys[y])
                    out_d.append(d)
        i = j
    return out_a, out_b, out_d


def probe(keys, ids, prefix_bits, queries, k: int) -> dict[int, int]:  # type: ignore[no-untyped-def]
    """Probe every table for entries within ``k`` bits of a query.

    Args:
        keys: per table, the sorted permuted fingerprints (2-D ``uint64`` array).
        ids: per table, the entry id of each key.
        prefix_bits: per table, p.
        queries: per table, the permuted query.
        k: the largest distance.

    Returns:
        A dict ``{id: distance}`` of the entries found (each once).
    """
    found: dict[int, int] = {}
    for t in range(len(keys)):
        q = int(queries[t])
        span = (1 << (64 - int(prefix_bits[t]))) - 1
        lo = q & ~span
        row = keys[t]
        pos = int(np.searchsorted(row, np.uint64(lo), side="left"))
        while pos < len(row) and int(row[pos]) & ~span == lo:
            d = (int(row[pos]) ^ q).bit_count()
            if d <= k:
                found[int(ids[t][pos])] = d
            pos += 1
    return found


def coordinates(fps, moves, ntables: int, bucket_bits: int):  # type: ignore[no-untyped-def]
    """Place fingerprints in every table: bucket and rest of each permuted value.

    Args:
        fps: ``uint64`` array of fingerprints.
        moves: rows ``(table, source low bit, width, destination low bit)``, grouped by
            table: the segments of each table's permutation.
        ntables: number of tables.
        bucket_bits: leading bits of a permuted value that name its bucket.

    Returns:
        ``(buckets, rests)``: ``uint64`` arrays of shape (len(fps), ntables).
    """
    fps = np.asarray(fps, dtype=np.uint64)
    permuted = np.zeros((fps.size, ntables), dtype=np.uint64)
    for t, src, width, dst in np.asarray(moves).tolist():
        mask = np.uint64((1 << width) - 1)
        permuted[:, t] |= ((fps >> np.uint64(src)) & mask) << np.uint64(dst)
    shift = 64 - bucket_bits
    if shift >= 64:
        return np.zeros_like(permuted), permuted
    return permuted >> np.uint64(shift), permuted & np.uint64((1 << shift) - 1)
