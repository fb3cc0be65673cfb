"""A page's text evidence in a few hundred bytes: a bottom-k sketch of its shingles.

The text check (:func:`dedup.decide.text_check`) asks how much of a page's own text is in a
candidate's, and how much of the candidate's is the page's. The decision has the page at
hand in full, but a candidate was admitted earlier, maybe by another crawl process, and its
text may not be stored yet. So every admitted page leaves, beside its fingerprint in the
index and in the same atomic step, a sketch of its own text (template lines left out), and
every process reads a candidate's sketch with the candidate
(:class:`dedup.index.NearDuplicateIndex`).

The sketch keeps the :data:`SKETCH_SIZE` smallest of the text's shingle hashes (64 bits,
mixed so that they are uniform; a text with fewer shingles keeps them all: its sketch is
exact) and the number of distinct shingles. Against a page at hand in full, each way is
estimated on a uniform sample, with no sketch-to-sketch error (:meth:`TextSketch.shares`):

* the page's text in the candidate's: the page's shingles up to the sketch's largest value
  (the others' membership is unknown) are the sample; the share of them in the sketch;
* the candidate's text in the page's: the sketch's values are the sample; the share of
  them among the page's shingles.

(:meth:`TextSketch.containment` gives the shorter text's share in the other, the rule
before 2026-11-26, still used to measure the sketch's error.)

Each value is stored as its low 16 bits (their order is the 64-bit values', which the
sketch's largest value, stored whole, bounds); a value of the page matches one of the
sketch's by chance with probability about 90 / 65,536, which raises a containment by
about 0.0014. Measured against exact containment on the development pairs
(``bench/quality_sketch.py``, docs/fingerprints.md): mean absolute error 0.01, and 0 of
538 and 3 of 1,634 pair decisions at the threshold 0.8 flipped.

The sketch also says which site the page is on and how the site names and sums it up (a
hash of the host, and the words of its title and of its description, the ``<meta
name="description">``, each word as a 16-bit code, at most :data:`WORD_CODES` of each),
for the rule that two pages of one site under different titles, or under one title with
different descriptions, are different documents where their texts leave it open
(:meth:`TextSketch.other_document`). Words are compared word by word: two different
words share a code with probability 1 / 65,536. (Until version 4, each title was a
64-bit set, one bit a word: "Article 12" and "Article 345" were one title whenever "12"
and "345" set the same bit, one pair in 64.)

Its :data:`ANCHORS` smallest values are kept whole as well: they are the page's *text
anchors*, under which the index files the page so that a page sharing its text is found
however far apart the two fingerprints are (:attr:`TextSketch.anchors`). They are 64-bit
because they are the smallest of a text's values: with 32 bits, the anchors of a billion
pages of 500 shingles would crowd into the lowest 2^25 values, a hundred unrelated pages
under each; with 64 bits two texts share one only by sharing the shingle.

A listing's sketch also says how many items it shows (:attr:`TextSketch.items`, from
version 5): two listings are one only when they show the same items.

With a 20-byte header, the anchors' high 48 bits, 86 values and at most 16 codes of each
of the title's and the description's words a sketch takes at most 292 bytes; with the
page's id and its length (16 bytes in the index, :mod:`dedup.adapters.redis_index`) a page's
record with Redis's own string header fits one 320-byte allocation of Redis, as version
3's 240 bytes did (``bench/bench_index.py --sketches`` at 1M, a 9-word title and a
23-word description: 376 bytes a page for the sketch's hash field with either version).
"""

from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass, field

import numpy as np
import xxhash

from dedup.overlap import SHINGLE_TOKENS, line_shingles, shingles
from dedup.simhash import normalize, token_hashes

#: Shingle hashes a sketch keeps (``DEDUP_SKETCH_SIZE`` is not a setting: every process of
#: a crawl and the index must agree, so it is fixed).
SKETCH_SIZE = 86

#: The smallest values of a text, kept whole, under which the index files the page (its
#: text anchors). Two texts of which one is mostly in the other share their smallest
#: values with a probability that grows with how much they share: on the development
#: pairs, two shared among six find 628 of the 630 labelled copies, all but 2 of the 54
#: more than 3 bits apart (docs/fingerprints.md, "Text anchors"). Fixed like the
#: sketch's size.
ANCHORS = 6

#: Version byte of the encoding, so a future format can tell old sketches apart (version
#: 1 had 108 32-bit values and no anchors, version 2 no description, versions 1-3 their
#: title's and description's words as 64-bit sets, versions 1-4 no count of a
#: listing's items; all are still read, without the words, which those sets cannot give
#: back).
_VERSION = 5
# version, distinct shingles (at most 65,535), largest kept value, host hash, title words
_HEADER_V1 = struct.Struct("<BHIIQ")
# ... (the largest value 64-bit) and the number of anchors whose high 48 bits follow
_HEADER_V2 = struct.Struct("<BHQIQB")
# ... and the description's words before the number of anchors
_HEADER_V3 = struct.Struct("<BHQIQQB")
# version, distinct shingles, largest kept value, host hash, the number of title word
# codes, of description word codes, and of anchors; the codes (16-bit) follow, then the
# anchors' high 48 bits and the values' low 16
_HEADER_V4 = struct.Struct("<BHQIBBB")
# ... and the number of a listing's items after the number of anchors
_HEADER = struct.Struct("<BHQIBBBH")
_ANCHOR_HIGH = 6
_LISTING = 0x80  # the number of anchors' high bit: the page is a listing
_MAX_COUNT = 0xFFFF

_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)


def shingle_values(text: str) -> np.ndarray:
    """The text's distinct shingles as uniform 64-bit values, sorted (``uint64``)."""
    return values_of(shingles(text))


def values_of(hashes: np.ndarray) -> np.ndarray:
    """:func:`dedup.overlap.shingles` as the sketch's values, sorted and distinct (a 64-bit
    finaliser mixes the shingle hash). The finaliser is a bijection of 64-bit words (each
    step, a shift-xor or a product with an odd constant, can be undone), so distinct
    shingles stay distinct: they need sorting only."""
    x = _finalised(hashes)
    x.sort()
    return x


def _finalised(hashes: np.ndarray) -> np.ndarray:
    """The finaliser of :func:`values_of` over each hash (a new array)."""
    x = hashes.astype(np.uint64, copy=True)
    x ^= x >> _S33
    x *= _C1
    x ^= x >> _S33
    x *= _C2
    x ^= x >> _S33
    return x


def line_values(text: str, tokens: int) -> list[np.ndarray]:
    """:func:`shingle_values` of each line of ``text`` of at least ``tokens`` tokens, in
    order (:func:`dedup.overlap.line_shingles`: all lines' shingles hashed, mixed, sorted
    and made distinct together, not a line at a time; a line at a time when ``tokens`` is
    below the shingle size, where a line shorter than a shingle is one shingle)."""
    if tokens < SHINGLE_TOKENS:  # a line of fewer tokens than a shingle is one shingle
        return [values_of(shingles(line)) for line in text.split("\n")
                if len(token_hashes(normalize(line))) >= 8 * tokens]  # bytes: 8 a token
    mixed, counts = line_shingles(text, tokens)
    if not len(counts):
        return []
    values = _finalised(mixed)
    line = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((values, line))
    values, line = values[order], line[order]
    first = np.ones(len(values), dtype=bool)  # a line's distinct values
    first[1:] = (values[1:] != values[:-1]) | (line[1:] != line[:-1])
    values, line = values[first], line[first]
    return np.split(values, np.searchsorted(line, np.arange(1, len(counts))))


#: Two titles (or two descriptions) name the same document when at least this share of
#: the words of both (shared words over all words) are in each: a site's name in every
#: title (" – pv magazine International") does not make two articles' titles one.
TITLE_OVERLAP = 0.5

#: Word codes a sketch keeps of a title, and of a description: the smallest codes of its
#: distinct words (a uniform sample of a longer one, as the shingle values are). 90% of
#: the development pages' titles have at most 13 distinct words; their descriptions a
#: median 23 (sampled).
WORD_CODES = 16

_WORD = re.compile(r"\w+")


def host_key(host: str | None) -> int:
    """A site's 32-bit key (0: unknown)."""
    return xxhash.xxh32_intdigest(host.lower().encode()) if host else 0


@functools.lru_cache(maxsize=4096)
def word_codes(words: str | None) -> tuple[int, ...]:
    """The distinct lowercased words of a title (or a description) as sorted 16-bit codes
    (none: no words). Cached: a page's title is compared with each of its candidates'."""
    return tuple(sorted({xxhash.xxh32_intdigest(word.encode()) & 0xFFFF
                         for word in _WORD.findall((words or "").lower())}))


def _other_words(kept: tuple[int, ...], words: str | None, overlap: float = TITLE_OVERLAP
                 ) -> bool | None:
    """Whether ``words`` (at hand in full) and the words a sketch ``kept`` of its own
    (:data:`WORD_CODES` at most, the smallest) share less than ``overlap``
    (:data:`TITLE_OVERLAP`) of their words, word by word: on the sample the sketch knows,
    the codes up to its largest when it kept a full set. ``None``: either has no words
    (unknown)."""
    theirs = word_codes(words)
    if not kept or not theirs:
        return None
    if len(kept) >= WORD_CODES:
        theirs = tuple(c for c in theirs if c <= kept[-1])
    ours, mine = set(kept), set(theirs)
    return len(ours & mine) < overlap * len(ours | mine)


def _count_in(values: np.ndarray, among: np.ndarray) -> int:
    """How many of ``values`` (each counted as often as it occurs) are in the sorted array
    ``among``: ``np.isin(values, among).sum()`` by binary search, a tenth of its cost on
    the few hundred values of a sketch."""
    if not len(among) or not len(values):
        return 0
    at = np.searchsorted(among, values)
    np.minimum(at, len(among) - 1, out=at)
    return int(np.count_nonzero(among[at] == values))


@dataclass(frozen=True)
class TextSketch:
    """A text's bottom-k shingle sketch (see the module docstring).

    Attributes:
        count: distinct shingles of the text (at most 65,535: a longer text counts as
            that long, which only ever makes it the longer text of a pair).
        top: the largest value kept (every value of the text up to it is kept).
        low: the low 16 bits of each kept value, in the values' order (``uint16``).
        host: the page's :func:`host_key` (0: unknown).
        title: the page's title's :func:`word_codes`, the :data:`WORD_CODES` smallest
            (none: no title, or a sketch before version 4).
        high: the high 48 bits of the first kept values, the anchors (``uint64``; empty
            in a version-1 sketch).
    """

    count: int
    top: int
    low: np.ndarray
    host: int = 0
    title: tuple[int, ...] = ()
    high: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    #: how far a text's values are shifted right before they are compared (32 for a
    #: version-1 sketch, whose values were the top halves)
    shift: int = 0
    #: the page's description's :func:`word_codes`, the :data:`WORD_CODES` smallest (none:
    #: no description, or a sketch before version 4)
    about: tuple[int, ...] = ()
    #: the page is a listing, made of repeated items (:mod:`dedup.listing`; stored in the
    #: high bit of the number of anchors, ``False`` in sketches written before)
    listing: bool = False
    #: how many items a listing shows (:func:`dedup.listing.listing_items`; at most
    #: 65,535; 0: not a listing, or not known, a sketch before version 5)
    items: int = 0

    @classmethod
    def of_text(cls, text: str, size: int = SKETCH_SIZE, *, host: str | None = None,
                title: str | None = None, description: str | None = None,
                listing: bool = False, items: int = 0) -> TextSketch:
        """The sketch of a text (of a page on ``host`` titled ``title``, described by
        ``description``; ``listing``: the page is a listing of ``items`` items)."""
        return cls.of_values(shingle_values(text), size, host=host, title=title,
                             description=description, listing=listing, items=items)

    @classmethod
    def of_values(cls, values: np.ndarray, size: int = SKETCH_SIZE, *,
                  host: str | None = None, title: str | None = None,
                  description: str | None = None, listing: bool = False, items: int = 0
                  ) -> TextSketch:
        """The sketch of a text's :func:`shingle_values`."""
        kept = values[:size]
        return cls(min(len(values), _MAX_COUNT), int(kept[-1]) if len(kept) else 0,
                   (kept & 0xFFFF).astype(np.uint16), host_key(host),
                   word_codes(title)[:WORD_CODES], kept[:ANCHORS] >> np.uint64(16),
                   about=word_codes(description)[:WORD_CODES], listing=listing,
                   items=min(items, _MAX_COUNT) if listing else 0)

    @property
    def anchors(self) -> list[int]:
        """The text's :data:`ANCHORS` smallest values, whole (fewer for a short text; none
        in a version-1 sketch)."""
        n = len(self.high)
        return ((self.high << np.uint64(16)) | self.low[:n].astype(np.uint64)).tolist()

    def other_document(self, host: str | None, title: str | None,
                       description: str | None = None, overlap: float = TITLE_OVERLAP
                       ) -> bool:
        """Whether a page on ``host`` titled ``title`` and described by ``description`` is
        another document of this sketch's site: on one site a title names a document and
        a description sums it up, so two pages under titles, or under one title with
        descriptions, that share less than ``overlap`` (:data:`TITLE_OVERLAP`) of their
        words (word by word) are different documents, whatever template text they share. ``False`` when
        the host is unknown or another, or when neither the titles nor the descriptions
        of both are known."""
        if not self.on_site(host):
            return False
        return bool(_other_words(self.title, title, overlap)
                    or _other_words(self.about, description, overlap))

    def described_alike(self, host: str | None, description: str | None,
                        overlap: float = TITLE_OVERLAP) -> bool:
        """Whether a page on ``host`` described by ``description`` is on this sketch's
        site and both are described in the same words (at least ``overlap``, :data:`TITLE_OVERLAP`,
        of them shared): the site says they are about one thing."""
        return self.on_site(host) and _other_words(self.about, description, overlap) is False

    def on_site(self, host: str | None) -> bool:
        """Whether a page on ``host`` is on this sketch's site."""
        return bool(self.host) and self.host == host_key(host)

    def undescribed_on_site(self, host: str | None, description: str | None) -> bool:
        """Whether a page on ``host`` described by ``description`` is on this sketch's
        site and neither of the two is described: what the site says of them (after
        :meth:`other_document`) then cannot tell them apart. (Where it describes one
        only, the other may be its print version or a URL variant without the
        description.)"""
        return bool(self.host) and self.host == host_key(host) \
            and not self.about and not word_codes(description)

    @property
    def complete(self) -> bool:
        """Whether every shingle of the text is kept (the text check is then exact)."""
        return len(self.low) >= self.count

    def to_bytes(self) -> bytes:
        """The stored form: a 20-byte header, two bytes per word code, six bytes per
        anchor and two bytes per kept value."""
        high = self.high.astype("<u8").view(np.uint8).reshape(-1, 8)[:, :_ANCHOR_HIGH]
        words = np.array(self.title + self.about, "<u2")
        return _HEADER.pack(_VERSION, self.count, self.top, self.host, len(self.title),
                            len(self.about), len(self.high) | (_LISTING if self.listing else 0),
                            self.items) \
            + words.tobytes() + high.tobytes() + self.low.astype("<u2").tobytes()

    @classmethod
    def from_bytes(cls, raw: bytes) -> TextSketch:
        """Read :meth:`to_bytes`.

        Raises:
            ValueError: not a sketch of this version.
        """
        if raw[:1] == b"\x01" and len(raw) >= _HEADER_V1.size \
                and not (len(raw) - _HEADER_V1.size) % 2:
            _, count, top, host, _bits = _HEADER_V1.unpack_from(raw)
            return cls(count, top, np.frombuffer(raw, dtype="<u2", offset=_HEADER_V1.size),
                       host, shift=32)
        header = {_VERSION: _HEADER, 4: _HEADER_V4, 3: _HEADER_V3, 2: _HEADER_V2}.get(raw[0]) \
            if raw else None
        if header is None or len(raw) < header.size \
                or raw[header.size - (3 if header is _HEADER else 1)] & ~_LISTING > ANCHORS:
            raise ValueError(f"not a text sketch (version {_VERSION}): {raw[:16]!r}")
        titles = abouts = items = 0
        if header is _HEADER:
            _, count, top, host, titles, abouts, n, items = header.unpack_from(raw)
            if max(titles, abouts) > WORD_CODES:
                raise ValueError(f"not a text sketch (version {_VERSION}): {raw[:16]!r}")
        elif header is _HEADER_V4:
            _, count, top, host, titles, abouts, n = header.unpack_from(raw)
            if max(titles, abouts) > WORD_CODES:
                raise ValueError(f"not a text sketch (version {_VERSION}): {raw[:16]!r}")
        else:  # the words were 64-bit sets then: not words any more
            _, count, top, host, *_, n = header.unpack_from(raw)
        listing, n = bool(n & _LISTING), n & ~_LISTING
        start = header.size + 2 * (titles + abouts)
        at = start + n * _ANCHOR_HIGH
        if len(raw) < at or (len(raw) - at) % 2:
            raise ValueError(f"a text sketch cut short: {raw[:16]!r}")
        words = np.frombuffer(raw, "<u2", titles + abouts, header.size).tolist()
        high = np.zeros((n, 8), np.uint8)
        high[:, :_ANCHOR_HIGH] = np.frombuffer(raw, np.uint8, n * _ANCHOR_HIGH,
                                               start).reshape(n, _ANCHOR_HIGH)
        return cls(count, top, np.frombuffer(raw, dtype="<u2", offset=at), host,
                   tuple(words[:titles]), high.view("<u8").reshape(n).astype(np.uint64),
                   about=tuple(words[titles:]), listing=listing, items=items)

    def _sampled(self, values: np.ndarray) -> np.ndarray:
        """The low 16 bits of a text's sorted values up to this sketch's largest (those
        whose membership in the sketched text the sketch knows)."""
        below = values[:np.searchsorted(values, self.top, side="right")]
        return (below & 0xFFFF).astype(np.uint16)

    @functools.cached_property
    def _sorted_low(self) -> np.ndarray:
        """The kept values' low 16 bits, sorted: for :meth:`sample_found`, which a
        decision asks once for the page's text and once for each of its lines."""
        return np.sort(self.low)

    def sample_found(self, values: np.ndarray) -> tuple[int, int]:
        """Of a text's sorted values (its :func:`shingle_values`, or a line's), how many
        the sketched text holds and how many the sketch can tell: those up to its
        largest value, or all of them when the sketch is complete (a value above it is
        then not in the sketched text)."""
        low = self._sampled(values)
        return _count_in(low, self._sorted_low), len(values) if self.complete else len(low)

    def missing_from(self, values: np.ndarray) -> int:
        """How many of the sketch's kept values a text's sorted values lack."""
        return len(self.low) - _count_in(self.low, np.sort(self._sampled(values)))

    def shares(self, values: np.ndarray) -> tuple[float, float, int]:
        """How much of a text at hand in full (``values``: its :func:`shingle_values`) is
        in this sketch's text, and how much of this sketch's text is in it, each measured
        directly: the first on the text's values up to the sketch's largest (a uniform
        sample of the text whose membership the sketch knows), the second on the
        sketch's kept values. Returns ``(inside, held, sample)``: ``sample`` is the size
        of the first's sample (0: nothing to measure, both shares 0.0)."""
        if not len(values) or not self.count:
            return 0.0, 0.0, 0
        if self.shift:
            values = np.unique(values >> np.uint64(self.shift))
        found, sample = self.sample_found(values)
        held = (len(self.low) - self.missing_from(values)) / len(self.low) \
            if len(self.low) else 0.0
        return (found / sample if sample else 0.0), held, sample

    def containment(self, values: np.ndarray) -> tuple[float, int]:
        """How much of the shorter text is in the other: this sketch's text and a text
        at hand in full (``values``: its :func:`shingle_values`), read off
        :meth:`shares`. Returns the share and the size of the sample it was measured on
        (0: nothing to measure, share 0.0)."""
        inside, held, sample = self.shares(values)
        n = len(np.unique(values >> np.uint64(self.shift))) if self.shift else len(values)
        if not n or not self.count:
            return 0.0, 0
        if n <= self.count:  # the page at hand is the shorter text
            return (inside, sample) if sample else (0.0, 0)
        return held, len(self.low)
