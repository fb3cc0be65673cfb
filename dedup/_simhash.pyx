# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython simhash kernel: the same results as ``_simhash_py``, at C speed.

The kernel takes the normalised ``str`` itself, not a token list: it reads the string's
code points in place (PEP 393), classifies them with a 64 KiB table built by
:func:`dedup.text.bmp_class_table`, writes the UTF-8 bytes of each token into a buffer
(tokens separated by one space, so a shingle is one contiguous slice), hashes each
shingle with XXH3-64 and adds its bits to the counters.

Bit counting uses byte lanes: ``acc[b]`` holds eight 8-bit counters, for bits b, b+8, ...,
b+56 of the feature hashes, so one feature costs eight shift-mask-adds instead of 64
increments; the lanes are flushed into 32-bit counters every 255 features, before a byte
could overflow.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memmove

cdef extern from "Python.h":
    bint Py_UNICODE_ISALNUM(Py_UCS4 ch)
    bint Py_UNICODE_ISDECIMAL(Py_UCS4 ch)

cdef extern from "xxhash.h":
    ctypedef struct XXH3_state_t:
        pass
    ctypedef struct XXH128_hash_t:
        uint64_t low64
        uint64_t high64
    uint64_t XXH3_64bits(const void* data, size_t length) nogil
    XXH3_state_t* XXH3_createState() nogil
    int XXH3_freeState(XXH3_state_t* state) nogil
    int XXH3_128bits_reset(XXH3_state_t* state) nogil
    int XXH3_128bits_update(XXH3_state_t* state, const void* data, size_t length) nogil
    XXH128_hash_t XXH3_128bits_digest(const XXH3_state_t* state) nogil

import unicodedata

from .text import ASTRAL_CJK, CJK_RANGES, bmp_class_table, bmp_nfkc_table

KERNEL = "cython"

cdef enum:
    SEP = 0
    WORD = 1
    CJK = 2
    MARK = 3
    DIGIT = 4
    MAX_SHINGLE = 8

cdef extern from *:
    """
    #define SIMCRAWL_LANE_MASK 0x0101010101010101ULL
    """
    uint64_t LANE_MASK "SIMCRAWL_LANE_MASK"

cdef bytes _TABLE_OBJ = bmp_class_table()
cdef const uint8_t* _TABLE = _TABLE_OBJ
cdef bytes _NFKC_OBJ = bmp_nfkc_table()
cdef const uint8_t* _NFKC = _NFKC_OBJ
cdef uint32_t _ASTRAL_CJK_LO = ASTRAL_CJK[0]
cdef uint32_t _ASTRAL_CJK_HI = ASTRAL_CJK[1]


cdef inline int _classify(uint32_t c) noexcept:
    if c < 0x10000:
        return _TABLE[c]
    if _ASTRAL_CJK_LO <= c <= _ASTRAL_CJK_HI and Py_UNICODE_ISALNUM(<Py_UCS4>c):
        return CJK
    if Py_UNICODE_ISDECIMAL(<Py_UCS4>c):
        return DIGIT
    return WORD if Py_UNICODE_ISALNUM(<Py_UCS4>c) else SEP


cdef inline bint _unstable(uint32_t c) noexcept:
    return c >= 0x10000 or _NFKC[c]


def normalize(str text):
    """Normalise a text; see :func:`dedup.text.normalize` (same result, compiled scan)."""
    if text.isascii() or unicodedata.is_normalized("NFKC", text):
        return text.casefold()
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t i = 0, j, start, last = 0
    pieces = []
    while i < n:
        if not _unstable(<uint32_t>PyUnicode_READ(kind, data, i)):
            i += 1
            continue
        j = i + 1
        while j < n and _unstable(<uint32_t>PyUnicode_READ(kind, data, j)):
            j += 1
        # The stable character before the run may compose with it.
        start = i - 1 if i > last else i
        if start > last:
            pieces.append(text[last:start])
        pieces.append(unicodedata.normalize("NFKC", text[start:j]))
        last = i = j
    if last < n:
        pieces.append(text[last:])
    return "".join(pieces).casefold()


cdef inline Py_ssize_t _utf8(uint32_t c, uint8_t* out) noexcept nogil:
    if c < 0x80:
        out[0] = <uint8_t>c
        return 1
    if c < 0x800:
        out[0] = <uint8_t>(0xC0 | (c >> 6))
        out[1] = <uint8_t>(0x80 | (c & 0x3F))
        return 2
    if c < 0x10000:
        out[0] = <uint8_t>(0xE0 | (c >> 12))
        out[1] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
        out[2] = <uint8_t>(0x80 | (c & 0x3F))
        return 3
    out[0] = <uint8_t>(0xF0 | (c >> 18))
    out[1] = <uint8_t>(0x80 | ((c >> 12) & 0x3F))
    out[2] = <uint8_t>(0x80 | ((c >> 6) & 0x3F))
    out[3] = <uint8_t>(0x80 | (c & 0x3F))
    return 4


cdef struct Acc:
    uint64_t lanes[8]
    uint32_t counts[64]
    uint32_t pending
    uint64_t features


cdef inline void _flush(Acc* acc) noexcept nogil:
    cdef int b, lane
    for b in range(8):
        for lane in range(8):
            acc.counts[lane * 8 + b] += <uint32_t>((acc.lanes[b] >> (8 * lane)) & 0xFF)
        acc.lanes[b] = 0
    acc.pending = 0


cdef inline void _add(Acc* acc, uint64_t h) noexcept nogil:
    acc.lanes[0] += h & LANE_MASK
    acc.lanes[1] += (h >> 1) & LANE_MASK
    acc.lanes[2] += (h >> 2) & LANE_MASK
    acc.lanes[3] += (h >> 3) & LANE_MASK
    acc.lanes[4] += (h >> 4) & LANE_MASK
    acc.lanes[5] += (h >> 5) & LANE_MASK
    acc.lanes[6] += (h >> 6) & LANE_MASK
    acc.lanes[7] += (h >> 7) & LANE_MASK
    acc.pending += 1
    acc.features += 1
    if acc.pending == 255:
        _flush(acc)


def fingerprint_text(str text, int shingle=1, bint drop_numbers=False, int cjk_ngram=2):
    """Fingerprint a normalised text; see :func:`dedup._simhash_py.fingerprint_text`.

    Returns:
        ``(simhash, checksum, tokens, features)``, identical to the reference.
    """
    if not 1 <= shingle <= MAX_SHINGLE:
        raise ValueError(f"shingle must be between 1 and {MAX_SHINGLE}, got {shingle}")
    if not 1 <= cjk_ngram <= MAX_SHINGLE:
        raise ValueError(f"cjk_ngram must be between 1 and {MAX_SHINGLE}, got {cjk_ngram}")
    cdef int ring = shingle if shingle > cjk_ngram else cjk_ngram   # the widest window
    cdef int width
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text)
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef Py_ssize_t cap = 1 << 16
    cdef uint8_t* buf = <uint8_t*>malloc(cap)
    cdef XXH3_state_t* state = XXH3_createState()
    if buf == NULL or state == NULL:
        free(buf)
        XXH3_freeState(state)
        raise MemoryError()
    cdef Acc acc
    cdef Py_ssize_t starts[MAX_SHINGLE]   # ring of the last `ring` token starts
    cdef Py_ssize_t i, pos = 0, tok_start = 0, keep, shift
    cdef uint64_t ntokens = 0
    cdef uint32_t c = 0
    cdef int cls, k
    cdef bint in_word = False, all_digits = True, ended
    cdef uint8_t* grown
    cdef XXH128_hash_t digest
    cdef uint64_t simhash = 0
    for k in range(8):
        acc.lanes[k] = 0
    for k in range(64):
        acc.counts[k] = 0
    acc.pending = 0
    acc.features = 0
    XXH3_128bits_reset(state)
    try:
        i = 0
        while i <= n:
            if i < n:
                c = <uint32_t>PyUnicode_READ(kind, data, i)
                cls = _classify(c)
            else:
                cls = SEP          # the end of the text closes the last word
            i += 1
            if cls == MARK:
                continue
            # Room for one more character and a space; keep only the tokens still needed.
            if pos + 8 > cap:
                keep = tok_start if in_word else pos
                if ntokens > 0 and ring > 1:
                    keep = min(keep, starts[(ntokens - ring + 1) % ring]
                               if ntokens >= <uint64_t>ring - 1 else 0)
                if keep > 0:
                    memmove(buf, buf + keep, pos - keep)
                    pos -= keep
                    tok_start -= keep
                    for k in range(ring):
                        starts[k] -= keep
                if pos + 8 > cap:
                    cap *= 2
                    grown = <uint8_t*>realloc(buf, cap)
                    if grown == NULL:
                        raise MemoryError()
                    buf = grown
            if cls == WORD or cls == DIGIT:
                if not in_word:
                    in_word = True
                    all_digits = True
                    tok_start = pos
                if cls == WORD:
                    all_digits = False
                pos += _utf8(c, buf + pos)
                continue
            # A separator or a CJK character ends the current word ...
            for k in range(2):
                ended = False
                if k == 0 and in_word:
                    in_word = False
                    ended = True
                elif k == 1 and cls == CJK:
                    tok_start = pos
                    pos += _utf8(c, buf + pos)
                    ended = True
                if not ended:
                    continue
                if drop_numbers and k == 0 and all_digits:
                    pos = tok_start
                    continue
                buf[pos] = 32
                pos += 1
                XXH3_128bits_update(state, buf + tok_start, pos - tok_start)
                starts[ntokens % ring] = tok_start
                ntokens += 1
                width = cjk_ngram if k == 1 else shingle
                if ntokens >= <uint64_t>width:
                    keep = starts[(ntokens - width) % ring]
                    _add(&acc, XXH3_64bits(buf + keep, pos - 1 - keep))
        if ntokens > 0 and acc.features == 0:
            # Too few tokens for one window: the whole stream is the one feature.
            keep = starts[0]
            _add(&acc, XXH3_64bits(buf + keep, pos - 1 - keep))
        _flush(&acc)
        for k in range(64):
            if 2 * <uint64_t>acc.counts[k] > acc.features:
                simhash |= (<uint64_t>1) << k
        digest = XXH3_128bits_digest(state)
    finally:
        free(buf)
        XXH3_freeState(state)
    checksum = ((<object>digest.high64) << 64) | <object>digest.low64
    return simhash, checksum, ntokens, acc.features


# ---------------------------------------------------- the tokens of dedup.text.token_pattern

# The shingles, template lines and text checks tokenise as ``token_pattern`` does (a
# regular expression): each character of CJK_RANGES (Basic Multilingual Plane only) is a
# token, runs of other letters and digits (``str.isalnum``: ``\w`` without ``_``) are
# tokens, everything else separates. These kernels read the string in place and hash each
# token's UTF-8 bytes with XXH3-64, as ``xxhash.xxh3_64_intdigest(token.encode())`` does.

cdef uint32_t _CJK_LO[16]
cdef uint32_t _CJK_HI[16]
cdef int _N_CJK = len(CJK_RANGES)
for _k, (_lo, _hi) in enumerate(CJK_RANGES):
    _CJK_LO[_k] = _lo
    _CJK_HI[_k] = _hi


cdef inline int _token_class(uint32_t c) noexcept:
    """0: a separator, 1: part of a word, 2: a CJK character (a token alone)."""
    cdef int k
    if c < 0x80:
        return 1 if (0x30 <= c <= 0x39 or 0x61 <= c <= 0x7A or 0x41 <= c <= 0x5A) else 0
    if c >= 0x1100 and c <= 0xFFDC:
        for k in range(_N_CJK):
            if _CJK_LO[k] <= c <= _CJK_HI[k]:
                return 2
    return 1 if Py_UNICODE_ISALNUM(<Py_UCS4>c) else 0


cdef class _Bytes:
    """A growing byte buffer."""
    cdef uint8_t* data
    cdef Py_ssize_t size, cap

    def __cinit__(self, Py_ssize_t cap):
        self.data = <uint8_t*>malloc(cap)
        if self.data == NULL:
            raise MemoryError()
        self.size, self.cap = 0, cap

    def __dealloc__(self):
        free(self.data)

    cdef int room(self, Py_ssize_t more) except -1:
        cdef uint8_t* grown
        if self.size + more > self.cap:
            while self.size + more > self.cap:
                self.cap *= 2
            grown = <uint8_t*>realloc(self.data, self.cap)
            if grown == NULL:
                raise MemoryError()
            self.data = grown
        return 0

    cdef int add_char(self, uint32_t c, bint spaced) except -1:
        """``c``'s UTF-8 bytes, after one space if ``spaced`` and the buffer holds some."""
        self.room(5)
        if spaced and self.size:
            self.data[self.size] = 32
            self.size += 1
        self.size += _utf8(c, self.data + self.size)
        return 0

    cdef int add_hash(self, uint64_t h) except -1:
        self.room(8)
        memcpy(self.data + self.size, &h, 8)
        self.size += 8
        return 0


def token_hashes(str text):
    """XXH3-64 of each token of a normalised text, in order, as the bytes of a native
    ``uint64`` array; see :func:`dedup._simhash_py.token_hashes`."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef _Bytes word = _Bytes(256)
    cdef _Bytes out = _Bytes(8 * (n // 4 + 16))
    cdef uint8_t one[4]
    cdef uint32_t c
    cdef int cls
    for i in range(n + 1):
        c = <uint32_t>PyUnicode_READ(kind, data, i) if i < n else 10  # the end: a separator
        cls = _token_class(c)
        if cls == 1:
            word.add_char(c, False)
            continue
        if word.size:
            out.add_hash(XXH3_64bits(word.data, word.size))
            word.size = 0
        if cls == 2:
            out.add_hash(XXH3_64bits(one, _utf8(c, one)))
    return (<char*>out.data)[:out.size]


def line_keys(str text):
    """Of each line of a normalised text (split at ``\\n``), XXH3-64 of its tokens joined
    by one space, or ``None`` for a line without tokens; see
    :func:`dedup._simhash_py.line_keys`."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i
    cdef int kind = PyUnicode_KIND(text)
    cdef void* data = PyUnicode_DATA(text)
    cdef _Bytes line = _Bytes(1024)
    cdef uint32_t c
    cdef int cls
    cdef bint in_word = False
    keys = []
    for i in range(n + 1):
        c = <uint32_t>PyUnicode_READ(kind, data, i) if i < n else 10  # the end: a line's
        cls = _token_class(c)
        if cls == 1:
            line.add_char(c, not in_word)
            in_word = True
            continue
        in_word = False
        if cls == 2:
            line.add_char(c, True)
        elif c == 10:
            keys.append(XXH3_64bits(line.data, line.size) if line.size else None)
            line.size = 0
    return keys


# ------------------------------------------------------------------ batch search kernels

cdef extern from *:
    int popcount64 "__builtin_popcountll"(unsigned long long x) nogil


def scan_sorted(const uint64_t[::1] keys, int prefix_bits, int k,
                const uint64_t[::1] earlier_masks):
    """All pairs within ``k`` bits among sorted permuted keys that share a prefix bucket.

    A pair is reported by the first table whose prefix it shares: ``earlier_masks`` holds
    the prefix masks of the earlier tables, mapped into this table's bit order, and a pair
    whose XOR is zero under one of them was already reported there.

    Returns:
        ``(a, b, distance)`` lists: the two permuted keys and their Hamming distance.
    """
    cdef Py_ssize_t n = keys.shape[0], i = 0, j, x, y, e
    cdef Py_ssize_t n_masks = earlier_masks.shape[0]
    cdef int shift = 64 - prefix_bits
    cdef uint64_t top, diff
    cdef int d
    cdef bint seen
    out_a, out_b, out_d = [], [], []
    while i < n:
        top = keys[i] >> shift
        j = i + 1
        while j < n and (keys[j] >> shift) == top:
            j += 1
        for x in range(i, j - 1):
            for y in range(x + 1, j):
                diff = keys[x] ^ keys[y]
                d = popcount64(diff)
                if d > k:
                    continue
                seen = False
                for e in range(n_masks):
                    if diff & earlier_masks[e] == 0:
                        seen = True
                        break
                if not seen:
                    out_a.append(keys[x])
                    out_b.append(keys[y])
                    out_d.append(d)
        i = j
    return out_a, out_b, out_d


cdef Py_ssize_t _lower_bound(const uint64_t[::1] row, uint64_t value) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = row.shape[0], mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if row[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def probe(const uint64_t[:, ::1] keys, const int64_t[:, ::1] ids,
          const int32_t[::1] prefix_bits, const uint64_t[::1] queries, int k):
    """Probe every table for entries within ``k`` bits of a query.

    Args:
        keys: per table, the sorted permuted fingerprints.
        ids: per table, the entry id of each key.
        prefix_bits: per table, p.
        queries: per table, the permuted query.
        k: the largest distance.

    Returns:
        A dict ``{id: distance}`` of the entries found (each once).
    """
    cdef Py_ssize_t t, pos, n = keys.shape[1]
    cdef uint64_t q, lo, span
    cdef int d, shift
    found = {}
    for t in range(keys.shape[0]):
        q = queries[t]
        shift = 64 - prefix_bits[t]
        span = ((<uint64_t>1) << shift) - 1 if shift < 64 else <uint64_t>0xFFFFFFFFFFFFFFFF
        lo = q & ~span
        pos = _lower_bound(keys[t], lo)
        while pos < n and (keys[t, pos] & ~span) == lo:
            d = popcount64(keys[t, pos] ^ q)
            if d <= k:
                found[ids[t, pos]] = d
            pos += 1
    return found


def coordinates(const uint64_t[::1] fps, const int32_t[:, ::1] moves, int ntables,
                int bucket_bits):
    """Place fingerprints in every table: bucket and rest of each permuted value.

    Args:
        fps: the fingerprints.
        moves: rows ``(table, source low bit, width, destination low bit)``, grouped by
            table: the segments of each table's permutation.
        ntables: number of tables.
        bucket_bits: leading bits of a permuted value that name its bucket.

    Returns:
        ``(buckets, rests)``: ``uint64`` arrays of shape (len(fps), ntables).
    """
    import numpy as np
    cdef Py_ssize_t n = fps.shape[0], i, r, nm = moves.shape[0]
    buckets = np.zeros((n, ntables), dtype=np.uint64)
    rests = np.zeros((n, ntables), dtype=np.uint64)
    cdef uint64_t[:, ::1] bv = buckets
    cdef uint64_t[:, ::1] rv = rests
    cdef uint64_t fp, mask
    cdef int shift = 64 - bucket_bits
    cdef uint64_t rest_mask = (((<uint64_t>1) << shift) - 1) if shift < 64 else <uint64_t>0xFFFFFFFFFFFFFFFF
    cdef int t, width
    with nogil:
        for i in range(n):
            fp = fps[i]
            for r in range(nm):
                t = moves[r, 0]
                width = moves[r, 2]
                mask = (((<uint64_t>1) << width) - 1) if width < 64 else <uint64_t>0xFFFFFFFFFFFFFFFF
                rv[i, t] |= ((fp >> moves[r, 1]) & mask) << moves[r, 3]
            for t in range(ntables):
                if shift < 64:
                    bv[i, t] = rv[i, t] >> shift
                rv[i, t] &= rest_mask
    return buckets, rests
