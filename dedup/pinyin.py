"""The pinyin-initial frequency fingerprint of Chinese text (the 达观 content-tracking
fingerprint, as docs/design.md defines it).

A copy that swaps characters for homophones (same pinyin), converts Simplified to
Traditional characters or changes the encoding keeps the same sequence of pinyin
initials, so fingerprints of that sequence survive edits that change every character
n-gram a simhash sees.

1. Each Han character becomes the first letter of its pinyin (a table built from
   pypinyin's character dictionary at import: the first reading of each character).
   Other characters are dropped; sentence ends (。！？!?．.；;) are remembered.
2. Windows of ``size`` letters start at every sentence start, and every ``step`` letters
   inside a long sentence (``step = size × (1 − overlap)``). A window's start depends
   only on its own sentence, so text inserted elsewhere (ads, a navigation bar, an
   unrelated page around an embedded copy) leaves the other windows unchanged.
3. In each window, each of the ``letters`` most common initials gets its count's
   deviation from the reference frequency, in standard deviations of a binomial count
   (``(c − size·p) / sqrt(size·p·(1−p))``).
4. Each deviation is quantised into ``q`` levels at the standard normal's quantiles (so
   the levels are about equally likely), and the digits, in letter order, make one
   integer per window: 20 letters at q = 4 is a 40-bit code.

A document's fingerprint is its list of window codes (:class:`PinyinFingerprint`); a page
copies an original when enough of its window codes are among the original's
(:func:`score`).
"""

from __future__ import annotations

import itertools
import json
import math
import re
import statistics
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from dedup.config import (
    DEFAULT_PINYIN_ANCHORS,
    DEFAULT_PINYIN_OVERLAP,
    DEFAULT_PINYIN_Q,
    DEFAULT_PINYIN_SIZE,
)
from dedup.kernels import load

#: Characters that end a sentence (window starts align to what follows them).
SENTENCE_ENDS = "。！？!?．.；;｡"

#: The shipped reference distribution (``simcrawl pinyin-reference`` writes one).
DEFAULT_REFERENCE = Path(__file__).with_name("data") / "pinyin_reference.json"

#: The windows' letters, overlap, quantisation and anchors by default: declared in
#: :mod:`dedup.config` (why seven eighths, there).
DEFAULT_SIZE = DEFAULT_PINYIN_SIZE
DEFAULT_OVERLAP = DEFAULT_PINYIN_OVERLAP
DEFAULT_Q = DEFAULT_PINYIN_Q
DEFAULT_LETTERS = 20
DEFAULT_ANCHORS = DEFAULT_PINYIN_ANCHORS

_END_MARK = "|"

#: Letters of context that decide a content-defined window start.
_CONTEXT = 4

ANCHORS = ("sentences", "content", "both")


@lru_cache(maxsize=1)
def initials_table() -> dict[int, str]:
    """``str.translate`` table: Han character → the upper-case first letter of its first
    pinyin reading (from pypinyin's character dictionary); sentence ends → ``|``."""
    from pypinyin.pinyin_dict import pinyin_dict

    table: dict[int, str] = {}
    for code, readings in pinyin_dict.items():
        first = unicodedata.normalize("NFKD", readings.split(",")[0])[:1].upper()
        if "A" <= first <= "Z":
            table[code] = first
    for ch in SENTENCE_ENDS:
        table[ord(ch)] = _END_MARK
    return table


_NOT_KEPT = re.compile(r"[^A-Z|]+")

#: The first character pypinyin's dictionary gives a reading (U+3007, IDEOGRAPHIC NUMBER
#: ZERO): a text with none at or above it has no initials, and is fingerprinted without
#: loading the dictionary (the test suite holds the table to it).
FIRST_READ = "\u3007"
_MAY_READ = re.compile(f"[{FIRST_READ}-\U0010ffff]")

# dedup.kernels: SIMCRAWL_PURE_PYTHON and the warning; the NumPy twin below gives the
# same codes
_kernel: Any = load("_pinyin")
#: Which implementation is in use: ``"cython"`` or ``"python"``.
KERNEL = "python" if _kernel is None else "cython"


@lru_cache(maxsize=1)
def _byte_table() -> np.ndarray:
    """The kernel's table: code point → lower-case letter byte, 1 = sentence end, 0 =
    skip."""
    table = initials_table()
    out = np.zeros(max(table) + 1, dtype=np.uint8)
    for code, letter in table.items():
        out[code] = 1 if letter == _END_MARK else ord(letter.lower())
    return out


def initials(text: str) -> tuple[str, list[int]]:
    """The pinyin initials of the Han characters of ``text`` (lower case) and the offsets
    in that string where sentences start.

    >>> initials("我们去北京。天安门！")
    ('wmqbjtam', [0, 5])
    """
    if _kernel is not None:
        letters, starts = _kernel.initials(text, _byte_table())
        return letters.decode("ascii"), starts
    return _initials_py(text)


def _initials_py(text: str) -> tuple[str, list[int]]:
    # Upper-case the output letters so that Latin letters already in the text (which the
    # table leaves alone) can be removed after the translation; then one C-speed pass.
    kept = _NOT_KEPT.sub("", text.translate(_lower_latin()).translate(initials_table()))
    starts: list[int] = []
    out: list[str] = []
    pos = 0
    for sentence in kept.split(_END_MARK):
        if sentence:
            starts.append(pos)
            out.append(sentence)
            pos += len(sentence)
    return "".join(out).lower(), starts


@lru_cache(maxsize=1)
def _lower_latin() -> dict[int, int]:
    # Latin capitals in the text must not survive as "initials".
    return {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


@dataclass(frozen=True)
class Reference:
    """The reference distribution: each initial letter's share of Han characters in a
    corpus (``simcrawl pinyin-reference CORPUS`` computes one)."""

    frequency: dict[str, float]
    characters: int = 0
    source: str = ""

    def letters(self, count: int) -> list[str]:
        """The ``count`` most frequent letters, in alphabetical order (the code's digit
        order)."""
        common = sorted(self.frequency, key=lambda k: (-self.frequency[k], k))[:count]
        return sorted(common)

    def save(self, path: str | Path) -> None:
        """Write as JSON."""
        Path(path).write_text(json.dumps({"frequency": self.frequency,
                                          "characters": self.characters,
                                          "source": self.source}, indent=1,
                                         sort_keys=True) + "\n")

    @classmethod
    def load(cls, path: str | Path = DEFAULT_REFERENCE) -> Reference:
        """Read a reference written by :meth:`save`.

        Raises:
            ValueError: the file is not a reference distribution.
        """
        try:
            data = json.loads(Path(path).read_text())
            freq = {str(k): float(v) for k, v in data["frequency"].items()}
        except (OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"{path} is not a pinyin reference distribution: {exc}") from None
        if not freq or any(not ("a" <= k <= "z" and len(k) == 1) or v < 0 for k, v in
                           freq.items()):
            raise ValueError(f"{path}: frequencies must map letters a-z to shares >= 0")
        return cls(freq, int(data.get("characters", 0)), str(data.get("source", "")))

    @classmethod
    def from_texts(cls, texts: Iterable[str], source: str = "") -> Reference:
        """Count initials over a corpus.

        Raises:
            ValueError: the texts hold no Han characters.
        """
        counts: dict[str, int] = {}
        for text in texts:
            letters, _ = initials(text)
            for ch in letters:
                counts[ch] = counts.get(ch, 0) + 1
        total = sum(counts.values())
        if not total:
            raise ValueError("the corpus holds no Han characters")
        return cls({k: round(v / total, 6) for k, v in sorted(counts.items())}, total, source)


@lru_cache(maxsize=4)
def default_reference() -> Reference:
    """The reference distribution shipped with simcrawl."""
    return Reference.load(DEFAULT_REFERENCE)


@dataclass(frozen=True)
class PinyinFingerprint:
    """A document's window codes.

    Attributes:
        codes: one integer per window, in document order.
        spans: each window's ``(first, last)`` offsets in the initials string (the Han
            characters of the text, counted from 0), as evidence of where a match lies.
        letters: how many Han characters the text has.
    """

    codes: list[int]
    spans: list[tuple[int, int]] = field(default_factory=list)
    letters: int = 0

    def __len__(self) -> int:
        return len(self.codes)


class PinyinFingerprinter:
    """Computes :class:`PinyinFingerprint` with fixed parameters.

    Args:
        size: letters per window (granularity).
        overlap: share of a window the next one in the same sentence overlaps (0 ≤ overlap
            < 1).
        q: quantisation levels per letter (2 to 10).
        letters: how many of the most common initials make the code.
        reference: the reference distribution (default: the shipped one).

    Raises:
        ValueError: a parameter out of range (the message names it).
    """

    def __init__(self, size: int = DEFAULT_SIZE, overlap: float = DEFAULT_OVERLAP,
                 q: int = DEFAULT_Q, letters: int = DEFAULT_LETTERS,
                 reference: Reference | None = None, anchors: str = DEFAULT_ANCHORS) -> None:
        if anchors not in ANCHORS:
            raise ValueError(f"anchors must be one of {', '.join(ANCHORS)}, got {anchors!r}")
        self.anchors = anchors
        if not 4 <= size <= 10_000:
            raise ValueError(f"window size must be in 4..10000 letters, got {size}")
        if not 0 <= overlap < 1:
            raise ValueError(f"overlap must be in [0, 1), got {overlap}")
        if not 2 <= q <= 10:
            raise ValueError(f"q must be in 2..10 levels, got {q}")
        self.reference = reference or default_reference()
        self.alphabet = self.reference.letters(letters)
        if not 1 <= letters <= len(self.reference.frequency) or q ** len(self.alphabet) >= 2**63:
            raise ValueError(f"letters must be in 1..{len(self.reference.frequency)} and "
                             f"q^letters below 2^63, got {letters} letters at q = {q}")
        self.size, self.overlap, self.q = size, overlap, q
        self.step = max(1, round(size * (1 - overlap)))
        # Level of a count c: how many thresholds c reaches (thresholds at the normal
        # quantiles i/q of the binomial count of each letter).
        cuts = [statistics.NormalDist().inv_cdf(i / q) for i in range(1, q)]
        thresholds = np.empty((len(self.alphabet), q - 1))
        for j, letter in enumerate(self.alphabet):
            p = self.reference.frequency[letter]
            sd = math.sqrt(max(size * p * (1 - p), 1e-9))
            thresholds[j] = [size * p + z * sd for z in cuts]
        self._thresholds = thresholds
        self._weights = np.array([q ** j for j in range(len(self.alphabet))], dtype=np.int64)
        lut = np.full(256, len(self.alphabet), dtype=np.intp)  # other letters: a spare column
        for j, letter in enumerate(self.alphabet):
            lut[ord(letter)] = j
        self._lut = lut
        self._column = np.minimum(lut, 255).astype(np.uint8)
        self._levels = np.array([[int((c >= t).sum()) for c in range(size + 1)]
                                 for t in thresholds], dtype=np.uint8)

    @classmethod
    def from_config(cls, config: Any) -> PinyinFingerprinter:
        """The fingerprinter of a :class:`~dedup.config.DedupConfig` (its
        ``DEDUP_PINYIN_*`` settings)."""
        return cls(size=config.pinyin_size, overlap=config.pinyin_overlap, q=config.pinyin_q,
                   anchors=config.pinyin_anchors)

    def describe(self) -> dict:
        """The parameters, as stored with fingerprints."""
        return {"size": self.size, "overlap": self.overlap, "q": self.q,
                "letters": "".join(self.alphabet), "anchors": self.anchors}

    def starts(self, sentence_starts: Sequence[int], length: int, letters: str = ""
               ) -> list[int]:
        """Window starts (only windows that fit in the text):

        - ``anchors="sentences"``: each sentence start, then every ``step`` letters inside
          the sentence;
        - ``"content"``: each position whose preceding 4 letters hash to 0 modulo
          ``step`` (content-defined, so independent of punctuation; ``step`` letters
          apart on average);
        - ``"both"``: sentence starts and content anchors.
        """
        if _kernel is not None:
            return self._kernel_starts(letters.encode("ascii"), sentence_starts)
        return self._starts_py(sentence_starts, length, letters)

    def _kernel_starts(self, raw: bytes, sentence_starts: Sequence[int]) -> list[int]:
        return _kernel.window_starts(raw, list(sentence_starts), self.size, self.step,
                                     self.anchors != "content", self.anchors != "sentences",
                                     _CONTEXT)

    def _starts_py(self, sentence_starts: Sequence[int], length: int, letters: str
                   ) -> list[int]:
        """The NumPy twin of the kernel's ``window_starts``."""
        last = length - self.size + 1
        out: set[int] = set()
        if self.anchors in ("sentences", "both"):
            bounds = [*sentence_starts, length]
            for s, end in itertools.pairwise(bounds):
                out.update(range(s, min(end, last),
                                 self.step if self.anchors == "sentences" else length + 1))
        if self.anchors in ("content", "both") and length > _CONTEXT:
            a = np.frombuffer(letters.encode("ascii"), dtype=np.uint8).astype(np.uint64)
            v = a[3:] + a[2:-1] * np.uint64(32) + a[1:-2] * np.uint64(1024) \
                + a[:-3] * np.uint64(32768)
            h = (v * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)
            hits = np.flatnonzero(h % np.uint64(self.step) == 0) + _CONTEXT
            out.update(int(s) for s in hits[hits < last])
        return sorted(out)

    def fingerprint(self, text: str) -> PinyinFingerprint:
        """The window codes of ``text``. A text with fewer Han characters than one window
        has no windows (an empty fingerprint): it is matched by simhash only."""
        if not _MAY_READ.search(text):  # no Han character: no initials
            return PinyinFingerprint([], [], 0)
        if _kernel is not None:  # the letters stay bytes from one kernel call to the next
            raw, sentence_starts = _kernel.initials(text, _byte_table())
            starts = self._kernel_starts(raw, sentence_starts)
            codes = _kernel.window_codes(raw, self._column, np.asarray(starts, dtype=np.int64),
                                         self.size, self._levels, self._weights).tolist() \
                if starts else []
            n = len(raw)
        else:
            letters, sentence_starts = _initials_py(text)
            n = len(letters)
            starts = self.starts(sentence_starts, n, letters)
            codes = self._codes_py(letters, starts) if starts else []
        return PinyinFingerprint(codes, [(s, s + self.size - 1) for s in starts], n)

    def _codes_py(self, letters: str, starts: list[int]) -> list[int]:
        """The NumPy twin of the kernel's ``window_codes``."""
        n = len(letters)
        columns = self._lut[np.frombuffer(letters.encode("ascii"), dtype=np.uint8)]
        onehot = np.zeros((n + 1, len(self.alphabet) + 1), dtype=np.int32)
        onehot[np.arange(1, n + 1), columns] = 1
        cumulative = np.cumsum(onehot, axis=0)[:, :-1]
        first = np.asarray(starts)
        counts = cumulative[first + self.size] - cumulative[first]
        levels = (counts[:, :, None] >= self._thresholds[None, :, :]).sum(axis=2)
        codes = levels.astype(np.int64) @ self._weights
        return [int(c) for c in codes]


@dataclass(frozen=True)
class PinyinScore:
    """How much of a page a candidate original covers.

    Attributes:
        share: the share of the page's windows whose code the original has.
        run: the longest run of consecutive matching windows (an embedded copy shows as a
            long run in a page that is mostly something else).
        span: ``(first, last)`` Han-character offsets of that run in the page.
        matched: matching windows.
    """

    share: float
    run: int
    span: tuple[int, int]
    matched: int


def score(page: PinyinFingerprint, original_codes: set[int] | frozenset[int]) -> PinyinScore:
    """Compare a page's windows with an original's codes.

    >>> score(PinyinFingerprint([1, 2, 3, 4], [(0, 9), (5, 14), (10, 19), (15, 24)]), {2, 3})
    PinyinScore(share=0.5, run=2, span=(5, 19), matched=2)
    """
    return score_windows(page, [i for i, c in enumerate(page.codes) if c in original_codes])


def score_windows(page: PinyinFingerprint, matched: Sequence[int]) -> PinyinScore:
    """The score of a page whose windows ``matched`` (indices, ascending) are an
    original's.

    >>> score_windows(PinyinFingerprint([7, 8, 9], [(0, 9), (5, 14), (10, 19)]), [0, 2])
    PinyinScore(share=0.6666666666666666, run=1, span=(0, 9), matched=2)
    """
    best = run = 0
    best_end = previous = -1
    for i in matched:
        run = run + 1 if i == previous + 1 else 1
        previous = i
        if run > best:
            best, best_end = run, i
    total = len(page.codes)
    span = (page.spans[best_end - best + 1][0], page.spans[best_end][1]) if best else (0, 0)
    return PinyinScore(len(matched) / total if total else 0.0, best, span, len(matched))


def is_copy(s: PinyinScore, min_share: float = 0.5, min_run: int = 4) -> bool:
    """The default decision: most of the page's windows, or a long enough run of them,
    are the original's."""
    return s.matched > 0 and (s.share >= min_share or s.run >= min_run)
