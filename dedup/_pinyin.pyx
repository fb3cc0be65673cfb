"""Cython kernel of the pinyin fingerprint (dedup.pinyin holds the definition and a
NumPy twin; both give the same codes).

``initials`` maps each code point through a byte table (a letter, 1 for a sentence end, 0
for anything else) in one pass over the string's own buffer; ``window_codes`` counts the
code letters of each window from running counts and looks each count's level up in a
table, all in C.
"""

from cpython.unicode cimport PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND, PyUnicode_READ
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
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


def window_starts(const uint8_t[::1] letters, list sentence_starts, int size, int step,
                  bint sentences, bint content, int context):
    """Sorted window starts (see ``PinyinFingerprinter.starts``): sentence starts (and,
    when ``content`` is off, every ``step`` letters inside a sentence) and content
    anchors (the ``context`` letters before a position hash to 0 modulo ``step``)."""
    cdef Py_ssize_t n = letters.shape[0], last = n - size + 1, i, k, s, end
    cdef Py_ssize_t ns = len(sentence_starts)
    cdef uint8_t *mark
    cdef uint64_t v, h
    out = []
    if last <= 0:
        return out
    mark = <uint8_t *> malloc(last)
    if mark == NULL:
        raise MemoryError()
    try:
        for i in range(last):
            mark[i] = 0
        if sentences:
            for k in range(ns):
                s = sentence_starts[k]
                end = sentence_starts[k + 1] if k + 1 < ns else n
                if end > last:
                    end = last
                while s < end:
                    mark[s] = 1
                    if content:
                        break
                    s += step
        if content and n > context:
            for i in range(context, last):
                v = 0
                for k in range(i - context, i):
                    v = v * 32 + letters[k]
                h = (v * <uint64_t> 0x9E3779B97F4A7C15ULL) >> 40
                if h % <uint64_t> step == 0:
                    mark[i] = 1
        for i in range(last):
            if mark[i]:
                out.append(i)
    finally:
        free(mark)
    return out
