"""Reading documents from files: the ``scan``, ``fingerprint``, ``register`` and
``pinyin-reference`` commands share it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from .text import extract_text

HTML_SUFFIXES = {".html", ".htm", ".xhtml", ".shtml"}

#: Encodings tried, in order, for a text file that is not UTF-8.
TEXT_ENCODINGS = ("utf-8", "gb18030")


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


def read_document(path: Path) -> tuple[str, str]:
    """``(text, method)`` of a file. HTML files go through extraction (their
    ``<meta charset>`` is honoured; ``method`` is the extraction's); text files are read
    as UTF-8, else GB18030 (a superset of GBK and GB2312), else UTF-8 with replacement
    characters (``method`` says which: ``text``, ``text/gb18030``, ``text/damaged``)."""
    data = path.read_bytes()
    looks_html = path.suffix.lower() in HTML_SUFFIXES or data[:512].lstrip().lower().startswith(
        (b"<!doctype html", b"<html"))
    if looks_html:
        extracted = extract_text(data, url=path.resolve().as_uri())
        return extracted.text, extracted.method
    for encoding in TEXT_ENCODINGS:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        return text, "text" if encoding == "utf-8" else f"text/{encoding}"
    return data.decode("utf-8", "replace"), "text/damaged"
