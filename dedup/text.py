"""Text: main-text extraction, normalisation, character classes and tokens.

The token rules here are the contract that both simhash implementations keep (the
Cython kernel in ``_simhash.pyx`` and the reference in ``_simhash_py.py``):

* **Normalisation** (:func:`normalize`): Unicode NFKC, then case folding. White space
  and punctuation need no further treatment: they separate tokens.
* **Character classes** (:func:`char_class`): every code point is one of

  - ``WORD``: a letter or number (general category ``L*``, ``Nl``, ``No``), part of a word;
  - ``DIGIT``: a decimal digit (``Nd``), part of a word; a word made only of digits is
    a *number token* (counters, dates, prices);
  - ``CJK``: a Han, kana or Hangul letter; each one is a token of its own, so Chinese,
    Japanese and Korean text is fingerprinted by character n-grams without a segmenter;
  - ``MARK``: a combining mark (``M*``); ignored, and it does not split a word (Arabic
    harakat, Devanagari vowel signs, accents NFKC could not compose);
  - ``SEP``: everything else (white space, punctuation, symbols, controls, NUL).

  For code points outside the Basic Multilingual Plane the rule is: CJK Extension B–H
  letters are ``CJK``; otherwise ``str.isdecimal`` gives ``DIGIT``, ``str.isalnum`` gives
  ``WORD``, and anything else is ``SEP`` (astral combining marks included).
* **Tokens**: maximal runs of ``WORD``/``DIGIT`` characters (marks skipped), and single
  ``CJK`` characters, in text order; number tokens are dropped when ``drop_numbers`` is on.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from html.parser import HTMLParser
from typing import Any

SEP, WORD, CJK, MARK, DIGIT = 0, 1, 2, 3, 4

#: Blocks whose letters are CJK tokens (one token per character).
CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3005, 0x3007),  # 々 〆 〇
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xA960, 0xA97F),  # Hangul Jamo Extended-A
    (0xAC00, 0xD7FF),  # Hangul Syllables, Jamo Extended-B
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF66, 0xFFDC),  # half-width Katakana and Hangul (NFKC widens them)
)
#: CJK Unified Ideographs Extensions B to H (planes 2 and 3).
ASTRAL_CJK = (0x20000, 0x323AF)


@lru_cache(maxsize=1)
def token_pattern() -> re.Pattern[str]:
    """The tokens of a normalised text as the shingles, the template lines and the text
    checks count them (:mod:`dedup.overlap`): each Han, kana or Hangul character of
    :data:`CJK_RANGES`, and runs of other letters and digits."""
    cjk = "".join(f"\\u{lo:04x}-\\u{hi:04x}" for lo, hi in CJK_RANGES)
    return re.compile(f"[{cjk}]|[^\\W_{cjk}]+")


def class_words(*groups: str) -> re.Pattern[str]:
    """A pattern matching any of ``groups``' words as a whole token of a class or id
    (tokens split at white space, ``-`` and ``_``), case-insensitively: what an element's
    name says it is (``comment-list``: comments; ``js-answer``: an answer). A word after
    ``has``, ``with``, ``no`` or ``is`` says what the element holds or how it looks, not
    what it is (``summary-item-has-author`` is an item with a byline, ``no-sidebar`` a
    layout), and so does a word after a utility's property (Tailwind's ``w-screen``, a
    width, not a screen-reader's text), a modifier after ``--`` (``card--featured``) or a
    custom property's name (``top-[var(--nav-height)]``).

    >>> bool(class_words("answers?").search("answer js-answer")), bool(
    ...     class_words("answers?").search("answered"))
    (True, False)
    >>> [bool(class_words("author").search(name))
    ...  for name in ("post-author", "summary-item-has-author", "with_author", "is-author")]
    [True, False, False, False]
    >>> [bool(class_words("screen|nav").search(name))
    ...  for name in ("screen-reader-text", "w-screen relative", "top-[var(--nav-height)]")]
    [True, False, False]
    """
    return re.compile(r"(?:^|[\s_-])(?<!--)" + "".join(rf"(?<!\b{word}[-_])" for word in _STATES)
                      + r"(?:" + "|".join(groups) + r")(?:$|[\s_-])", re.I)


#: Words that make the class word after them a state, a content flag or a utility's value
#: (:func:`class_words`).
_STATES = ("has", "with", "no", "is", "w", "h")


def char_class(ch: str) -> int:
    """Return the token class of one character (``SEP``, ``WORD``, ``CJK``, ``MARK``, ``DIGIT``)."""
    cp = ord(ch)
    if cp > 0xFFFF:
        if ASTRAL_CJK[0] <= cp <= ASTRAL_CJK[1] and ch.isalnum():
            return CJK
        if ch.isdecimal():
            return DIGIT
        return WORD if ch.isalnum() else SEP
    cat = unicodedata.category(ch)
    major = cat[0]
    if major == "M":
        return MARK
    if major not in "LN":
        return SEP
    for lo, hi in CJK_RANGES:
        if lo <= cp <= hi:
            return CJK
    return DIGIT if cat == "Nd" else WORD


@lru_cache(maxsize=1)
def bmp_class_table() -> bytes:
    """The class of every code point below U+10000, as one byte each (65,536 bytes)."""
    return bytes(char_class(chr(cp)) if not 0xD800 <= cp <= 0xDFFF else SEP
                 for cp in range(0x10000))


def _needs_nfkc(ch: str) -> bool:
    """Whether NFKC may change how ``ch`` tokenises (see :func:`normalize`)."""
    if unicodedata.category(ch)[0] == "M" or 0x1160 <= ord(ch) <= 0x11FF:
        return True  # combining marks and Hangul vowel/final jamo compose with a neighbour
    image = unicodedata.normalize("NFKC", ch)
    if image == ch:
        return False
    # A separator that maps to separators (full-width punctuation, ideographic and
    # no-break spaces, ...) splits tokens the same way before and after.
    return not (char_class(ch) == SEP and all(char_class(c) == SEP for c in image))


@lru_cache(maxsize=1)
def bmp_nfkc_table() -> bytes:
    """For every code point below U+10000, 1 when :func:`normalize` must apply NFKC to it."""
    return bytes(0 if 0xD800 <= cp <= 0xDFFF else int(_needs_nfkc(chr(cp)))
                 for cp in range(0x10000))


@lru_cache(maxsize=1)
def _unstable_run() -> re.Pattern[str]:
    table = bmp_nfkc_table()
    ranges: list[str] = []
    start = None
    for cp in range(0x10001):
        flag = cp < 0x10000 and table[cp]
        if flag and start is None:
            start = cp
        elif not flag and start is not None:
            ranges.append(f"\\u{start:04x}-\\u{cp - 1:04x}")
            start = None
    # Astral planes: rare in text; always normalised rather than classified at start-up.
    ranges.append("\\U00010000-\\U0010ffff")
    unstable = "".join(ranges)
    # One stable starter before a run of unstable characters: composition may join them.
    return re.compile(f"[^{unstable}]?[{unstable}]+")


def _nfkc(match: re.Match[str]) -> str:
    return unicodedata.normalize("NFKC", match.group())


def normalize(text: str) -> str:
    """Return ``text`` in the form that is fingerprinted: NFKC, then case folding.

    NFKC is applied to every run of characters where it can change the tokens
    (compatibility letters and digits, ligatures, combining sequences, Hangul jamo, and
    anything outside the Basic Multilingual Plane), each run with the stable character
    before it, as UAX #15 allows; characters that are separators before and after NFKC
    (full-width punctuation, no-break space, ellipsis) are left alone, since they split
    tokens either way. The tokens are exactly those of whole-text NFKC, at a fraction of
    its cost on Chinese text with full-width punctuation (whole-text NFKC: ~17 MB/s).

    This is the readable reference; :func:`dedup.normalize` uses the compiled twin in
    ``_simhash.pyx`` when it is built (same result, faster scan).

    Args:
        text: any Python string (lone surrogates are kept; they separate tokens).

    Returns:
        The normalised string.
    """
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        text = _unstable_run().sub(_nfkc, text)
    return text.casefold()


def iter_tokens(text: str, drop_numbers: bool = False) -> Iterator[str]:
    """Yield the tokens of an already normalised text (reference implementation).

    Args:
        text: output of :func:`normalize`.
        drop_numbers: leave out tokens made only of decimal digits.

    Yields:
        Words (letters and digits, combining marks removed) and single CJK characters.
    """
    table = bmp_class_table()
    word: list[str] = []
    all_digits = True
    for ch in text:
        cp = ord(ch)
        cls = table[cp] if cp < 0x10000 else char_class(ch)
        if cls == WORD or cls == DIGIT:
            if not word:
                all_digits = True
            word.append(ch)
            if cls == WORD:
                all_digits = False
        elif cls == MARK:
            continue
        else:
            if word:
                if not (drop_numbers and all_digits):
                    yield "".join(word)
                word = []
            if cls == CJK:
                yield ch
    if word and not (drop_numbers and all_digits):
        yield "".join(word)


# --------------------------------------------------------------------------- extraction

#: Elements whose text a reader never sees.
_INVISIBLE = ("script", "style", "noscript", "template", "head", "svg", "iframe", "object")


@dataclass(frozen=True)
class ExtractedText:
    """The text of a page and how it was obtained.

    Attributes:
        text: the main text (may be empty).
        method: ``"trafilatura"`` (main text found by trafilatura), ``"body"`` (trafilatura
            found nothing useful, so the visible text of the body was used) or ``"empty"``
            (the document has no visible text, or could not be parsed).
        reason: why the fallback was taken, when it was.
        parents: where the items of a listing holding this text can be, as simcrawl's
            reading found them (:class:`dedup.maintext.MainText`); ``None``: not known
            (:func:`dedup.listing.item_groups` then looks in the whole body).
        whole: the checksum of the page's whole visible text, as simcrawl's reading
            walked it (:class:`dedup.maintext.MainText`); ``""``: not read.
    """

    text: str
    method: str
    reason: str = ""
    parents: Any = field(default=None, repr=False, compare=False)
    whole: str = ""


def _deep_tree(html: str | bytes) -> Any:
    """The page parsed with lxml's ``huge_tree`` option: libxml2 otherwise gives up below
    256 levels of nesting (254 unclosed ``<font>`` tags are enough) and the text is lost."""
    import lxml.html  # trafilatura depends on lxml

    parser = lxml.html.HTMLParser(huge_tree=True, remove_comments=True, remove_pis=True)
    return lxml.html.document_fromstring(html, parser=parser)


def _visible_body_text(doc: Any) -> str:
    from lxml import etree

    for el in list(doc.iter(*_INVISIBLE, etree.Comment, etree.ProcessingInstruction)):
        el.drop_tree()
    body = doc.find("body")
    root = body if body is not None else doc
    # Pieces joined by a space: block elements ("<div>Menu</div><p>Hi") stay apart.
    return " ".join(" ".join(root.itertext()).split())


class _TextCollector(HTMLParser):
    """Visible text from a stream of tags: no tree, so no nesting limit (the last resort
    for pages nested deeper than any tree parser goes)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _INVISIBLE:
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _INVISIBLE and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def _streamed_text(html: str | bytes) -> str:
    if isinstance(html, bytes):
        from w3lib.encoding import html_body_declared_encoding

        raw: bytes = html
        encoding = html_body_declared_encoding(raw) or "utf-8"
        try:
            html = raw.decode(encoding, errors="replace")
        except LookupError:
            html = raw.decode("utf-8", errors="replace")
    collector = _TextCollector()
    collector.feed(str(html))
    collector.close()
    return " ".join(" ".join(collector.parts).split())


def parse_html(html: str | bytes) -> Any | None:
    """Parse a page the way :func:`extract_text` does (trafilatura's decoding and lxml
    parser), so that other readers of the page (a crawler's link extraction) share the one
    parse: pass the tree to :func:`extract_text` as ``tree``.

    Returns:
        An lxml ``HtmlElement``, or ``None`` when trafilatura does not take the input for
        HTML (then :func:`extract_text` parses it again through its fallbacks).
    """
    import trafilatura

    try:
        return trafilatura.load_html(html)
    except Exception:  # noqa: BLE001  (hostile input; extract_text reports the reason)
        return None


def extract_text(html: str | bytes, url: str | None = None, min_chars: int = 1,
                 fast: bool = True, tree: Any = None) -> ExtractedText:
    """Extract the main text of an HTML page.

    trafilatura finds the main text (article body without menus, ads and comments). When it
    yields nothing useful (no text, or fewer than ``min_chars`` characters), the visible
    text of the body is used instead, and :attr:`ExtractedText.method` says so.

    Args:
        html: the page, as text or as bytes (bytes are decoded by trafilatura's and lxml's
            encoding detection, which honour ``<meta charset>``; GBK pages included).
        url: the page's URL, used by trafilatura for context only.
        min_chars: the shortest trafilatura result that counts as useful.
        fast: skip trafilatura's fallback extractors (readability, jusText). About a third
            faster, and on the near-dup-dev pages as good for near-duplicate detection
            (``bench/quality_neardup.py --slow-extraction`` compares).
        tree: ``html`` already parsed by :func:`parse_html` (not parsed again; trafilatura
            works on a copy, so the tree is left as it was).

    Returns:
        An :class:`ExtractedText`. Never raises on bad HTML: unparseable input gives
        ``method="empty"`` with the reason.
    """
    import trafilatura

    if not html or (isinstance(html, (bytes, str)) and not html.strip()):
        return ExtractedText("", "empty", "empty document")
    reason = ""
    try:
        main = trafilatura.extract(html if tree is None else tree, url=url,
                                   include_comments=False, include_tables=True,
                                   deduplicate=False, with_metadata=False, fast=fast)
    except Exception as exc:  # noqa: BLE001  (trafilatura raises assorted errors on hostile input)
        main = None
        reason = f"trafilatura failed: {type(exc).__name__}: {exc}"
    if main and len(main.strip()) >= min_chars:
        return ExtractedText(main.strip(), "trafilatura")
    reason = reason or "trafilatura found no main text"
    try:
        doc = _deep_tree(html)  # deeply nested pages: trafilatura again, on a deep tree
        main = trafilatura.extract(doc, url=url, include_comments=False, include_tables=True,
                                   deduplicate=False, with_metadata=False, fast=fast)
        if main and len(main.strip()) >= min_chars:
            return ExtractedText(main.strip(), "trafilatura")
        body = _visible_body_text(_deep_tree(html))
    except Exception as exc:  # noqa: BLE001  (lxml: empty or undecodable documents)
        body, reason = "", f"{reason}; body text failed: {type(exc).__name__}: {exc}"
    if not body:  # nested deeper than lxml goes: the text of the tag stream
        body = _streamed_text(html)
    if not body:
        return ExtractedText("", "empty", f"{reason}; no visible body text")
    return ExtractedText(body, "body", reason)
