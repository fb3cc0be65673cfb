"""Web archives others wrote, read a record at a time: WARC 0.17 to 1.1 and ARC files
(Internet Archive's and Heritrix's ``.arc``, which warcio reads as WARC), gzip a record or
not, with warcio. The reading ``simcrawl warc`` (crawler/spiders/warc.py) and any batch
reader share.

- :func:`records` goes through one file and says what each record is (:class:`Entry`: a
  page to decide, a revisit of one, a request, something else) with its offset, date and
  the problems of its digests; a record that cannot be read at all ends the file with
  :class:`BadRecord`, naming the offset where that record starts.
- :func:`page_at` reads one record again at its offset, its payload decoded
  (``Content-Encoding`` gzip, deflate or br, chunked transfer).

warcio decodes brotli through the ``brotli`` package's ``Decompressor``, written for the
older brotlipy: brotli 1.x has ``process`` where warcio calls ``decompress``, and no
``unused_data``, so every brotli response failed with an ``AttributeError``.
:func:`_brotli_for_warcio` gives warcio a decompressor it can drive with either.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
import io
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import xxhash

log = logging.getLogger(__name__)

#: The endings of archive files a folder is searched for.
SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")

#: What a record whose digest does not match its bytes gets (``DEDUP_WARC_DIGESTS``):
#: decided as any other (counted and named), skipped (counted and named), or the run
#: stopped at it.
DIGEST_CHOICES = ("decide", "skip", "raise")

#: The revisit profiles whose record repeats another record's payload: the same URL's
#: (WARC 1.0 and 1.1 name it alike but for the version) or any URL's (webrecorder's
#: ``uri-agnostic-identical-payload-digest``); both end so.
IDENTICAL_PAYLOAD = "identical-payload-digest"

#: HTTP headers that describe the bytes on the wire, not the body as it is read (decoded):
#: left out of a page read from an archive, and set again when a page is written.
WIRE_HEADERS = {"content-encoding", "transfer-encoding", "content-length"}

#: What warcio says of a gzip file that is one stream, not a member a record.
_WHOLE_GZIP = "non-chunked gzip"


class BadRecord(Exception):
    """A record of a file that cannot be read (cut short, corrupt, not an archive): the
    rest of the file cannot be found from it.

    Attributes:
        offset: where the record starts in the file.
        reason: why, in a line.
    """

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"the record at offset {offset} cannot be read ({reason})")
        self.offset, self.reason = offset, reason


@dataclass(frozen=True)
class Entry:
    """One record of an archive file.

    Attributes:
        offset: where it starts in the file (:func:`page_at` reads it there again).
        kind: ``page`` (an HTML ``response`` of status 2xx, or ``resource``),
            ``revisit`` (a revisit
            record repeating a payload, ``payload`` its digest), ``request``, or
            ``other`` (``warcinfo``, ``metadata``, ``dns:``, images, scripts...).
        url: ``WARC-Target-URI`` (``None`` for a record of no URL).
        date: ``WARC-Date`` as written, the capture's time.
        record_id: ``WARC-Record-ID``.
        concurrent_to: the records ``WARC-Concurrent-To`` names (a request's response).
        payload: the payload digest as :func:`digest_key` reads it (a page's own, the one
            a revisit repeats), ``None`` when there is none.
        html: an HTML payload (a revisit says so by its HTTP headers).
        problems: what warcio found wrong with its digests (empty: nothing).
        record_type: ``WARC-Type`` (``warcinfo``, ``response``, ``request``...).
    """

    offset: int
    kind: str
    url: str | None
    date: str | None
    record_id: str | None = None
    concurrent_to: tuple[str, ...] = ()
    payload: int | None = None
    html: bool = False
    problems: tuple[str, ...] = ()
    record_type: str = ""


def archive_files(paths: list[str]) -> list[Path]:
    """The archive files named, and a folder's (those ending in :data:`SUFFIXES`) in name
    order.

    Raises:
        ValueError: a path that is not there, or no archive file at all.
    """
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file() and
                          p.name.lower().endswith(SUFFIXES))
        elif path.is_file():
            out.append(path)
        else:
            raise ValueError(f"no such WARC file or folder: {name}")
    if not out:
        raise ValueError(f"no WARC or ARC file ({', '.join(SUFFIXES)}) in {', '.join(paths)}")
    return out


def check_archive(path: Path) -> None:
    """Refuse a file that is not a web archive in a form that can be read a record at a
    time, from its first records.

    Raises:
        ValueError: naming the file and why in one line (a whole-file gzip stream with the
            command that makes it one member a record).
    """
    try:
        with open(path, "rb") as fh:
            for n, _ in enumerate(records(fh)):
                if n == 1:  # a second record was found where the first ends
                    break
    except BadRecord as exc:
        if exc.offset == 0 or _WHOLE_GZIP in exc.reason:
            raise ValueError(f"{path}: {exc.reason}") from None
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None


def digest_key(digest: str | None) -> int | None:
    """A ``WARC-Payload-Digest`` as a number to look the payload up by: the algorithm and
    the digest's bytes, however they are written (base 32 as Heritrix and warcio write
    them, or base 16), hashed to 64 bits. ``None``: no digest, or not one."""
    algorithm, _, value = (digest or "").strip().partition(":")
    value = value.strip()
    try:
        raw = bytes.fromhex(value) if len(value) in (32, 40, 64, 128) and all(
            c in "0123456789abcdefABCDEF" for c in value) else base64.b32decode(value.upper())
    except (binascii.Error, ValueError):
        return None
    return xxhash.xxh3_64_intdigest(algorithm.lower().encode() + b":" + raw) if raw else None


def _content_type(record: Any) -> str:
    """The payload's type: its HTTP ``Content-Type``, or for a record without HTTP headers
    (a ``resource``), the record's own."""
    if record.http_headers is not None:
        return (record.http_headers.get_header("Content-Type") or "").lower()
    return (record.rec_headers.get_header("Content-Type") or "").lower()


def _is_html(kind: str) -> bool:
    return "html" in kind and not kind.startswith("application/http")


def _entry(record: Any, offset: int) -> Entry:
    header = record.rec_headers.get_header
    rec_type = record.rec_type
    html = _is_html(_content_type(record))
    digest = header("WARC-Payload-Digest")
    if rec_type == "revisit" and (header("WARC-Profile") or "").endswith(IDENTICAL_PAYLOAD):
        kind = "revisit"
    elif rec_type in ("response", "resource") and html and _succeeded(record):
        kind = "page"
    elif rec_type == "request":
        kind = "request"
    else:
        kind = "other"
    concurrent = tuple(v for k, v in record.rec_headers.headers
                       if k.lower() == "warc-concurrent-to")
    problems = tuple(getattr(getattr(record, "digest_checker", None), "problems", ()) or ())
    return Entry(offset=offset, kind=kind, url=header("WARC-Target-URI"),
                 date=header("WARC-Date"), record_id=header("WARC-Record-ID"),
                 concurrent_to=concurrent,
                 payload=digest_key(digest) if kind in ("page", "revisit") else None,
                 html=html, problems=problems, record_type=rec_type)


def _succeeded(record: Any) -> bool:
    """A response that gave its page (2xx: a redirect or an error page is archived as it
    is, not decided), or a resource record (no status: the page itself)."""
    if record.http_headers is None or record.rec_type == "resource":
        return True
    status = record.http_headers.get_statuscode() or ""
    return status.isdigit() and 200 <= int(status) < 300


def records(fh: BinaryIO) -> Iterator[Entry]:
    """Every record of an archive file (WARC or ARC, gzip a record or not), in order, as
    :class:`Entry`; the digests of each checked as it is read (problems said on the
    entry, not raised).

    Raises:
        BadRecord: a record that cannot be read, at its own offset (the records before it
            were yielded); bytes after the last record that are not one.
    """
    from warcio.archiveiterator import ArchiveIterator

    reader = ArchiveIterator(fh, arc2warc=True, check_digests=True)
    walk = iter(reader)
    name = getattr(fh, "name", "the archive")
    while True:
        start = reader.offset  # where the next record starts: the previous one's end
        said = io.StringIO()  # what warcio writes to stderr itself, said in the log
        try:
            with contextlib.redirect_stderr(said):
                record = next(walk)
                reader.read_to_end(record)  # its digests checked, its length too
        except StopIteration:
            break
        except Exception as exc:  # noqa: BLE001  (whatever warcio or zlib make of bad bytes)
            raise BadRecord(max(start, 0), _reason(exc)) from None
        finally:
            if said.getvalue().strip():
                log.warning("%s, the record at offset %d: %s", name, max(start, 0),
                            " ".join(said.getvalue().split()))
        if getattr(record.raw_stream, "limit", 0) > 0:
            raise BadRecord(start, "it is cut short: the file ends inside it")
        yield _entry(record, reader.get_record_offset())
    size = _size(fh)
    if size is not None and reader.offset < size:
        raise BadRecord(reader.offset, f"cut short or not a record: the file ends "
                        f"{size - reader.offset} bytes after the last whole record")


def _size(fh: BinaryIO) -> int | None:
    try:
        return os.fstat(fh.fileno()).st_size
    except (AttributeError, OSError, ValueError):
        return None


def _reason(exc: BaseException) -> str:
    """warcio's message in one line (its gzip message is a paragraph)."""
    text = " ".join(str(exc).split())
    if _WHOLE_GZIP in text:
        return ("non-chunked gzip: the whole file is one gzip stream, not a gzip member a "
                "record; `warcio recompress FILE NEW` writes it record by record")
    if text.startswith("Unknown archive format"):
        return "not a WARC or ARC file (" + text.removeprefix("Unknown archive format, ") + ")"
    return text or type(exc).__name__


@dataclass(frozen=True)
class Fetched:
    """A page as an archive holds it: what :func:`page_at` reads.

    Attributes:
        url: ``WARC-Target-URI``.
        status: the HTTP status (200 for a ``resource`` record, which has none).
        headers: the HTTP headers but the wire's (:data:`WIRE_HEADERS`), as the body is
            decoded.
        body: the payload, its transfer and content encodings undone.
        protocol: the HTTP version of the status line.
    """

    url: str
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    protocol: str = "HTTP/1.1"


@dataclass(frozen=True)
class Asked:
    """A request record as an archive holds it: its method, and its headers."""

    method: str
    headers: list[tuple[str, str]]


def _record_at(path: Path | str, offset: int) -> tuple[Any, Any]:
    from warcio.archiveiterator import ArchiveIterator

    fh = open(path, "rb")  # noqa: SIM115  (closed by the caller with the record read)
    fh.seek(offset)
    try:
        record = next(iter(ArchiveIterator(fh, arc2warc=True)), None)
        if record is None:
            raise ValueError(f"no record at offset {offset}: the file ends, or is cut, there")
        url = record.rec_headers.get_header("WARC-Target-URI") or ""
        if record.rec_type in ("response", "resource", "request") and ":" not in url:
            # an ARC header is any line of five words: text that is not a record reads
            # as one, its first word the "URL"
            raise ValueError(f"no record starts at offset {offset} (read as one of URL "
                             f"{url[:40]!r})")
    except BaseException:
        fh.close()
        raise
    return fh, record


def page_at(path: Path | str, offset: int) -> Fetched:
    """The page of the record at ``offset`` of ``path`` (a response or resource record).

    Raises:
        ValueError: it cannot be read or decoded (the reason in a line).
    """
    try:
        fh, record = _record_at(path, offset)
        with fh:
            body = record.content_stream().read()  # transfer and content encodings undone
            http = record.http_headers
            if http is not None and record.rec_type != "resource":
                headers = [(k, v) for k, v in http.headers if k.lower() not in WIRE_HEADERS]
                status = int(http.get_statuscode() or 200)
                protocol = http.protocol or "HTTP/1.1"
            else:
                headers = [("Content-Type", record.rec_headers.get_header("Content-Type")
                            or "text/html")]
                status, protocol = 200, "HTTP/1.1"
            url = record.rec_headers.get_header("WARC-Target-URI") or ""
    except Exception as exc:  # noqa: BLE001  (a decoder's error, whichever: said, not raised on)
        raise ValueError(_undecodable(exc)) from None
    return Fetched(url=url, status=status, headers=headers, body=body, protocol=protocol)


def request_at(path: Path | str, offset: int) -> Asked | None:
    """The method and headers of the request record at ``offset`` of ``path``; ``None``
    when it cannot be read as one."""
    try:
        fh, record = _record_at(path, offset)
        with fh:
            http = record.http_headers
            if record.rec_type != "request" or http is None:
                return None
            method = (http.protocol or "GET").split(" ")[0] or "GET"
            return Asked(method=method, headers=[(k, v) for k, v in http.headers])
    except Exception:  # noqa: BLE001  (the response is written with a request of its own)
        return None


def _undecodable(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if isinstance(exc, ValueError) and text.startswith("no record"):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def warc_time(value: str | None) -> dt.datetime | None:
    """A ``WARC-Date`` (or an ARC file's 14-digit date, which warcio turns into one) as an
    aware time; ``None`` when it is none."""
    if not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        try:
            when = dt.datetime.strptime(text[:14], "%Y%m%d%H%M%S")
        except ValueError:
            return None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


class _Brotli:
    """A brotli decompressor as warcio drives one (``decompress``, ``unused_data``,
    ``flush``), over the ``brotli`` package's, whichever of its forms is installed."""

    unused_data = None

    def __init__(self) -> None:
        import brotli

        self._inner = brotli.Decompressor()
        self._step = getattr(self._inner, "process", None) or self._inner.decompress

    def decompress(self, data: bytes) -> bytes:
        return self._step(data)

    def flush(self) -> bytes:
        return b""


def _brotli_for_warcio() -> None:
    """Give warcio's reader :class:`_Brotli` for ``Content-Encoding: br`` (see the module
    docstring); without the ``brotli`` package, warcio has no ``br`` and says so."""
    try:
        import brotli  # noqa: F401
        from warcio.bufferedreaders import BufferedReader
    except ImportError:
        return
    BufferedReader.DECOMPRESSORS["br"] = _Brotli


_brotli_for_warcio()
