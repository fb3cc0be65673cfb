"""Cython kernel of the pinyin fingerprint (dedup.pinyin holds the definition and a
NumPy twin; both give the same codes).

``initials`` maps each code point through a byte table (a letter, 1 for a sentence end, 0
for anything else) in one pass over the string's own buffer; ``window_codes`` counts the
code letters of each window from running counts and looks each count's level up in a
table, all in C.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc

import numpy as np


def initials(str text, const uint8_t[::1] table):
    """(letters as bytes, sentence start offsets) of ``text``; ``table[code point]`` is
    the letter byte, 1 for a sentence end, 0 to skip; code points past the table are
    skipped."""
    cdef Py_ssize_t n = PyUnicode_GET_LENGTH(text), i, m = 0
    cdef int kind = PyUnicode_KIND(text)
    cdef void *data = PyUnicode_DATA(text)
    cdef Py_ssize_t size = table.shape[0]
    cdef Py_UCS4 ch
    cdef uint8_t v
    cdef bint at_start = True
    out = bytearray(n)
    cdef uint8_t[::1] o = out
    starts = []
    for i in range(n):
        ch = PyUnicode_READ(kind, data, i)
        if ch >= <Py_UCS4>size:
            continue
        v = table[ch]
        if v == 0:
            continue
        if v == 1:
            at_start = True
            continue
        if at_start:
            starts.append(m)
            at_start = False
        o[m] = v
        m += 1
    return bytes(out[:m]), starts


def window_codes(const uint8_t[::1] letters, const uint8_t[::1] column,
                 const int64_t[::1] starts, int size, const uint8_t[:, ::1] levels,
                 const int64_t[::1] weights):
    """One code per window: ``Σ levels[j, count_j] · weights[j]`` where ``count_j`` is
    how often code letter j (``column[letter byte]``; ``len(weights)`` for other
    letters) occurs in ``letters[start:start + size]``."""
    cdef Py_ssize_t n = letters.shape[0], w = starts.shape[0], L = weights.shape[0]
    cdef Py_ssize_t i, j, s, e
    cdef uint8_t c
    cdef int64_t code
    cdef int32_t *cum = <int32_t *> malloc((n + 1) * L * sizeof(int32_t))
    if cum == NULL:
        raise MemoryError()
    result = np.empty(w, dtype=np.int64)
    cdef int64_t[::1] r = result
    try:
        for j in range(L):
            cum[j] = 0
        for i in range(n):
            for j in range(L):
                cum[(i + 1) * L + j] = cum[i * L + j]
            c = column[letters[i]]
            if c < L:
                cum[(i + 1) * L + c] += 1
        for i in range(w):
            s = starts[i]
            e = s + size
            code = 0
            for j in range(L):
                code += levels[j, cum[e * L + j] - cum[s * L + j]] * weights[j]
            r[i] = code
    finally:
        free(cum)
    return result
