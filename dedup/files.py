"""Reading documents from files: the ``scan``, ``fingerprint``, ``register`` and
``pinyin-reference`` commands share it.

Only text and HTML files are documents. A file is refused with a reason
(:class:`SkipFile`), never fingerprinted, when its content is binary (a NUL byte or a
known binary signature in its first 8 kB), when it is larger than the size cap (checked
before it is read, so memory stays bounded whatever the folder holds), or when its
name says it is data rather than a document (``.json``, ``.csv``, ``.pdf``, ...).
Text that is not UTF-8 is decoded with charset-normalizer's detection (GBK and GB18030,
Latin-1 and the Windows code pages, ...).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

HTML_SUFFIXES = {".html", ".htm", ".xhtml", ".shtml"}

#: Suffixes of text documents; a file without a suffix is sniffed.
TEXT_SUFFIXES = {".txt", ".text", ".md", ".rst", ""}

#: Default cap on one file's size, in bytes (``--max-size`` in megabytes).
MAX_BYTES = 16 * 1024 * 1024

#: Bytes sniffed for binary content.
SNIFF = 8192

_BINARY_MAGIC = (b"%PDF", b"\x89PNG", b"GIF8", b"\xff\xd8\xff", b"PK\x03\x04", b"\x7fELF",
                 b"\x1f\x8b", b"BZh", b"\xfd7zXZ", b"7z\xbc\xaf", b"Rar!", b"ID3", b"OggS",
                 b"RIFF", b"\x00\x00\x01\x00", b"MZ", b"SQLite format 3")


class SkipFile(ValueError):
    """A file that is not a document to read (the message says why)."""


def iter_files(paths: list[Path]) -> Iterator[Path]:
    """The files named, and every file under the folders named (sorted, recursively).

    Raises:
        FileNotFoundError: a path that does not exist (the message names it).
    """
    for path in paths:
        if path.is_dir():
            yield from sorted(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            yield path
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")


def read_document(path: Path, max_bytes: int = MAX_BYTES, extraction: str = "simcrawl"
                  ) -> tuple[str, str]:
    """``(text, method)`` of a text or HTML file. HTML files are read as the crawl reads
    a page (:func:`dedup.reading.extract_main`, ``extraction`` one of
    :data:`dedup.reading.EXTRACTIONS`; their ``<meta charset>`` is honoured; ``method`` is
    the extraction's), so that a registered original and its crawled copy are read
    alike; text files are read
    as UTF-8, else in the encoding charset-normalizer detects (``text/<encoding>``), else
    as UTF-8 with replacement characters (``text/damaged``).

    Raises:
        SkipFile: not a document (binary, too big, or data by its name), with the reason.
        OSError: it cannot be read.
    """
    size = path.stat().st_size
    suffix = path.suffix.lower()
    with path.open("rb") as fh:
        head = fh.read(SNIFF)
        if b"\x00" in head or head.startswith(_BINARY_MAGIC):
            raise SkipFile("binary content")
        if size > max_bytes:
            raise SkipFile(f"too big ({size / 1e6:.0f} MB; the limit is "
                           f"{max_bytes / 1e6:.0f} MB)")
        looks_html = suffix in HTML_SUFFIXES or head[:512].lstrip().lower().startswith(
            (b"<!doctype html", b"<html"))
        if not looks_html and suffix not in TEXT_SUFFIXES:
            raise SkipFile(f"not a text or HTML document ({suffix} file)")
        data = head + fh.read()
    if looks_html:
        from w3lib.encoding import html_to_unicode

        from dedup.reading import extract_main, parse_page

        html = html_to_unicode(None, data)[1]
        extracted = extract_main(html, path.resolve().as_uri(), extraction,
                                 parse_page(html, extraction))
        return extracted.text, extracted.method
    try:
        return data.decode("utf-8"), "text"
    except UnicodeDecodeError:
        pass
    encoding = detect_encoding(data)
    if encoding is not None:
        return data.decode(encoding, "replace"), f"text/{encoding}"
    return data.decode("utf-8", "replace"), "text/damaged"


#: Encodings by how common they are, to break charset-normalizer's ties: a short
#: Western text decodes equally well (to its eyes) as cp1250, cp1252 or cp1257, but
#: only cp1252 gives French its è and ê.
_PREVALENCE = ("utf_8", "cp1252", "latin_1", "iso8859_15", "gb18030", "big5", "shift_jis",
               "euc_jp", "euc_kr", "cp1251", "koi8_r", "cp1250", "iso8859_2", "cp1253",
               "cp1254", "cp1255", "cp1256", "cp1257", "cp874", "cp1258")


def detect_encoding(data: bytes) -> str | None:
    """The encoding charset-normalizer finds for ``data`` (ties broken by prevalence;
    GBK and GB2312 read as their superset GB18030), or ``None``."""
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None or not best.encoding:
        return None
    tied = [m.encoding for m in matches
            if m.chaos == best.chaos and m.coherence == best.coherence]
    rank = {name: n for n, name in enumerate(_PREVALENCE)}
    encoding = min(tied, key=lambda e: rank.get(e, len(rank)))
    return "gb18030" if encoding in ("gbk", "gb2312") else encoding
