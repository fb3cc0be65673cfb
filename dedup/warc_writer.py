"""The crawl as a web archive: WARC/1.1 files (ISO 28500) written as pages are decided,
with warcio, for replay tools (pywb, ReplayWeb.page) and dataset pipelines.

Each file (``<prefix>-<serial>.warc.gz``, gzip a record, rolled past ``max_bytes``) opens
with a ``warcinfo`` record naming simcrawl, its version and the crawl's settings, and gets
a CDXJ index beside it (``.cdxj``, sorted) when it is closed: the lines cdxj-indexer
would write for it (pywb's format; ``test_the_index_is_the_one_cdxj_indexer_writes`` compares them), kept as the
records are written rather than read back from the file. What is written:

- an **original** (a page stored): its ``request`` and ``response`` records;
- a **copy** (a page dropped): a ``metadata`` record that names its original
  (``WARC-Refers-To-Target-URI``, ``WARC-Refers-To-Date``, and ``WARC-Refers-To``, the
  original's response record, when this archive holds it) and holds the match as JSON
  (kind, distance, containment, the original's page id); before it,
  - a ``revisit`` record (profile *identical-payload-digest*) when its payload is the
    original's, byte for byte;
  - else, with ``near="response"`` (the default), its own ``request`` and ``response``
    records, what was fetched; with ``near="metadata"``, nothing more (the space saved).

The original's record id and date are known for the originals this writer wrote (one
crawl process's); a copy of a page another process or an earlier crawl stored names its
original's URL only.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import logging
import re
import uuid
import zlib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from dedup.archive import WIRE_HEADERS
from dedup.setting_names import default

log = logging.getLogger(__name__)

#: Bytes a WARC file grows to before the next one is opened (1 GiB).
FILE_BYTES = default("DEDUP_WARC_FILE_BYTES")

#: What a near copy keeps: its response (``response``) or its metadata record alone.
NEAR_CHOICES = ("response", "metadata")

#: The fields of a copy's match record (:meth:`dedup.store.records.MatchRecord.row`) that its
#: metadata record holds, in this order (:func:`match_fields`).
WARC_FIELDS = ("kind", "original_url", "original_id", "distance", "similarity",
               "containment", "pinyin", "canonical_link")

#: Originals whose records a writer remembers, for the copies that refer to them.
REMEMBERED = 1_000_000


def remember(held: OrderedDict[str, Any], keys: Sequence[str], value: Any) -> None:
    """Remember an original written under its ``keys`` (page id, URL), the newest last,
    forgetting the oldest past :data:`REMEMBERED` originals."""
    for key in keys:
        if key:
            held[key] = value
            held.move_to_end(key)
    while len(held) > 2 * REMEMBERED:
        held.popitem(last=False)

try:  # ISA-L's deflate (python-isal): gzip members as zlib writes them, about 4.7 times faster
    from isal import isal_zlib as _deflate
except ImportError:  # a platform without its wheel: zlib, the same files a little slower
    _deflate = zlib  # type: ignore[no-redef]

#: The level of each record's gzip member. The crawl pays it for every page: with zlib, 1
#: wrote a page of the development sets (82 KB) in 0.40 ms at 22.1% of its size, 3 in
#: 0.46 ms at 20.8%, warcio's own 9 in 1.52 ms at 18.6%, and at 3 the archive cost a crawl
#: 15% of its pages a second. ISA-L's 1 writes the 990 pages in 0.11 s of CPU at 25.7%
#: of their size, zlib's 1 in 0.52 s at 26.2% (docs/benchmarks.md).
GZIP_LEVEL = 1



@dataclass
class Fetch:
    """One page as fetched: its request and response (the body as the crawl holds it,
    decoded), and when."""

    url: str
    status: int
    headers: Sequence[tuple[str, str]]
    body: bytes
    date: dt.datetime
    reason: str = ""
    protocol: str = "HTTP/1.1"
    method: str = "GET"
    request_headers: Sequence[tuple[str, str]] = field(default_factory=list)


@dataclass
class _Held:
    """An original this archive holds: its response record's id and date, its payload
    digest."""

    record_id: str
    date: str
    digest: str


#: The record types a CDXJ index lists (cdxj-indexer's default), but a metadata or
#: resource record of :data:`FIELDS_TYPE`, which describes another record: a replay of the
#: copy's URL is its response, not its match.
_INDEXED = ("response", "revisit", "resource", "metadata")

#: A metadata record's content type: ``name: value`` lines (WARC's own ``warc-fields``).
FIELDS_TYPE = "application/warc-fields"


def match_fields(match: Mapping[str, Any]) -> bytes:
    r"""A copy's match as a metadata record holds it: ``simcrawl-match: copy``, then a
    ``name: value`` line a field that is set (lists and mappings as JSON).

    >>> match_fields({"kind": "simhash", "distance": 2, "original_url": "http://a.test/x"})
    b'simcrawl-match: copy\r\nkind: simhash\r\ndistance: 2\r\noriginal_url: http://a.test/x\r\n'
    """
    lines = ["simcrawl-match: copy"]
    for name, value in match.items():
        if value is None:
            continue
        text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
        lines.append(f"{name}: {' '.join(text.split())}")
    return ("\r\n".join(lines) + "\r\n").encode("utf-8")


def parse_fields(body: bytes) -> dict[str, str]:
    """The ``name: value`` lines of a metadata record (:func:`match_fields`)."""
    out = {}
    for line in body.decode("utf-8").splitlines():
        name, sep, value = line.partition(": ")
        if sep:
            out[name] = value
    return out


def _cdxj_line(record: Any, offset: int, length: int, filename: str) -> str:
    """A record's CDXJ line: its SURT key, its 14-digit date, and its fields (URL, type,
    status, payload digest, where it is in the file)."""
    import surt
    from warcio.timeutils import iso_date_to_timestamp

    headers = record.rec_headers
    url = headers.get_header("WARC-Target-URI")
    if record.rec_type in ("metadata", "resource") and \
            (headers.get_header("Content-Type") or "") == FIELDS_TYPE:
        return ""  # described, not replayed (cdxj-indexer leaves them out too)
    if record.rec_type == "revisit":
        mime = "warc/revisit"
    elif record.rec_type == "response":
        mime = record.http_headers.get_header("Content-Type") if record.http_headers else None
    else:
        mime = headers.get_header("Content-Type")
    fields: dict[str, str] = {"url": url}
    if mime:
        fields["mime"] = re.split(r"[;\s]", mime, maxsplit=1)[0].strip()
    if record.http_headers is not None and record.rec_type in ("response", "revisit"):
        status = record.http_headers.get_statuscode()
        if status:
            fields["status"] = status
    digest = headers.get_header("WARC-Payload-Digest")
    if digest:
        fields["digest"] = digest
    fields.update(length=str(length), offset=str(offset), filename=filename)
    try:
        key = surt.surt(url)
    except Exception:  # noqa: BLE001  (a URL surt cannot take is its own key, as cdxj-indexer keeps it)
        key = url
    return f"{key} {iso_date_to_timestamp(headers.get_header('WARC-Date'))} {json.dumps(fields)}\n"


def payload_digest(body: bytes) -> str:
    """A payload's digest as WARC records carry it (``sha1:`` and base 32)."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def warc_date(when: dt.datetime) -> str:
    """A WARC/1.1 date (UTC, milliseconds: what the store keeps of a page's fetch time, so
    that a copy written by another process names its original's date as written).

    >>> warc_date(dt.datetime(2026, 11, 29, 12, 0, 1, 234567, tzinfo=dt.timezone.utc))
    '2026-11-29T12:00:01.234Z'
    """
    when = when.astimezone(dt.timezone.utc) if when.tzinfo else when
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


#: The namespace of the response records' ids of originals (:func:`record_id_of`).
_RECORDS = uuid.uuid5(uuid.NAMESPACE_URL, "https://simcrawl.invalid/warc/original")


def record_id_of(page_id: str, date: str) -> str:
    """The ``WARC-Record-ID`` of an original's response record, made from its page id and
    WARC date (a page fetched again is another record), so that a copy another crawl
    process writes can name it from what the store keeps of the original.

    >>> a = record_id_of("6b0b7111aa00000000000001", "2026-11-29T12:00:01.234Z")
    >>> a == record_id_of("6b0b7111aa00000000000001", "2026-11-29T12:00:01.234Z"), a[:10]
    (True, '<urn:uuid:')
    """
    return f"<urn:uuid:{uuid.uuid5(_RECORDS, f'{page_id} {date}')}>"


class WarcWriter:
    """Write a crawl's pages as WARC files (see the module docstring).

    Args:
        folder: where the files go (made if missing).
        prefix: the files' name before ``-<serial>.warc.gz`` (unique to a process).
        info: the ``warcinfo`` fields (software, settings).
        max_bytes: a file's size before the next is opened.
        near: what a near copy keeps (:data:`NEAR_CHOICES`).

    Raises:
        ValueError: ``near`` or ``max_bytes`` out of range.
        OSError: the folder cannot be written.
    """

    def __init__(self, folder: Path, prefix: str, info: Mapping[str, Any],
                 max_bytes: int = FILE_BYTES, near: str = "response") -> None:
        if near not in NEAR_CHOICES:
            raise ValueError(f"a near copy keeps one of {', '.join(NEAR_CHOICES)}, "
                             f"got {near!r}")
        if max_bytes < 1024:
            raise ValueError(f"a WARC file's size must be at least 1024 bytes, got {max_bytes}")
        from warcio.warcwriter import WARCWriter  # noqa: F401  (checked at start, not at the first page)

        self.folder, self.prefix, self.info = Path(folder), prefix, dict(info)
        self.max_bytes, self.near = max_bytes, near
        self.folder.mkdir(parents=True, exist_ok=True)
        self.files: list[Path] = []  # every file written, in order
        self.records = 0
        self._serial = 0
        self._fh: BinaryIO | None = None
        self._writer: Any = None
        self._buffer = BytesIO()  # one record, before its gzip member is written
        self._index: list[str] = []  # the CDXJ lines of the open file
        self._held: OrderedDict[str, _Held] = OrderedDict()  # page id / URL -> its records

    # ------------------------------------------------------------------ files
    def _open(self) -> None:
        from warcio.warcwriter import WARCWriter

        self._serial += 1
        path = self.folder / f"{self.prefix}-{self._serial:05d}.warc.gz"
        self._fh = open(path, "wb")  # noqa: SIM115  (closed by _close)
        self._writer = WARCWriter(self._buffer, gzip=False, warc_version="1.1")
        self.files.append(path)
        self._write(self._writer.create_warcinfo_record(path.name, self.info))

    def _close(self) -> None:
        if self._fh is None:
            return
        self._fh.close()
        self._fh = self._writer = None
        path = self.files[-1]
        path.with_suffix("").with_suffix(".cdxj").write_text(
            "".join(sorted(self._index)), encoding="utf-8")
        self._index = []

    def _write(self, record: Any) -> str:
        """One record, as a gzip member of its own (warcio writes it; zlib compresses it
        at :data:`GZIP_LEVEL`, with ISA-L's deflate where it is installed)."""
        self._buffer.seek(0)
        self._buffer.truncate()
        self._writer.write_record(record)
        member = _deflate.compressobj(GZIP_LEVEL, _deflate.DEFLATED, _deflate.MAX_WBITS + 16)
        fh = self._fh
        assert fh is not None
        offset = fh.tell()
        fh.write(member.compress(self._buffer.getbuffer()))
        fh.write(member.flush())
        self.records += 1
        line = _cdxj_line(record, offset, fh.tell() - offset, self.files[-1].name) \
            if record.rec_type in _INDEXED else ""
        if line:
            self._index.append(line)
        return record.rec_headers.get_header("WARC-Record-ID")

    def _ready(self) -> None:
        if self._fh is not None and self._fh.tell() >= self.max_bytes:
            self._close()
        if self._fh is None:
            self._open()

    def close(self) -> None:
        """Close the last file and write its index."""
        self._close()

    # ------------------------------------------------------------------ records
    def _fetched(self, fetch: Fetch, record_id: str | None = None) -> tuple[str, str, str]:
        """The request and response records of a fetch (``record_id``: the response's, else
        a new one); returns the response's record id, WARC date and payload digest."""
        from warcio.statusandheaders import StatusAndHeaders

        date = warc_date(fetch.date)
        parts = urlsplit(fetch.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        request_headers = [(k, v) for k, v in fetch.request_headers if k.lower() != "host"]
        request = self._writer.create_warc_record(
            fetch.url, "request", http_headers=StatusAndHeaders(
                f"{fetch.method} {target} {fetch.protocol}",
                [("Host", parts.netloc), *request_headers], is_http_request=True),
            warc_headers_dict={"WARC-Date": date})
        named = {"WARC-Record-ID": record_id} if record_id else {}
        response = self._writer.create_warc_record(
            fetch.url, "response", payload=BytesIO(fetch.body), length=len(fetch.body),
            http_headers=self._http_headers(fetch),
            warc_headers_dict={"WARC-Date": date, **named})
        response_id = self._write(response)
        request.rec_headers.add_header("WARC-Concurrent-To", response_id)
        self._write(request)
        return response_id, date, response.rec_headers.get_header("WARC-Payload-Digest")

    @staticmethod
    def _http_headers(fetch: Fetch) -> Any:
        from warcio.statusandheaders import StatusAndHeaders

        headers = [(k, v) for k, v in fetch.headers if k.lower() not in WIRE_HEADERS]
        headers.append(("Content-Length", str(len(fetch.body))))
        status = f"{fetch.status} {fetch.reason}".strip()
        return StatusAndHeaders(status, headers, protocol=fetch.protocol)

    def copied(self, path: str | Path, offset: int) -> None:
        """The record at ``offset`` of an archive file (WARC or ARC), written as it is: its
        headers, date, id and payload (an ARC record as warcio makes it a WARC one)."""
        from warcio.archiveiterator import ArchiveIterator

        self._ready()
        with open(path, "rb") as fh:
            fh.seek(offset)
            self._write(next(iter(ArchiveIterator(fh, arc2warc=True))))

    def holds(self, page_id: str, url: str = "") -> bool:
        """Whether this writer wrote the original (by its page id or URL) and remembers it."""
        return bool(page_id and page_id in self._held) or bool(url and url in self._held)

    def original(self, fetch: Fetch, page_id: str) -> None:
        """An original stored: its request and response records (the response's id made
        from ``page_id`` and the fetch's date: :func:`record_id_of`)."""
        self._ready()
        record_id, date, digest = self._fetched(
            fetch, record_id_of(page_id, warc_date(fetch.date)) if page_id else None)
        remember(self._held, (page_id, fetch.url), _Held(record_id, date, digest))

    def copy(self, fetch: Fetch, match: Mapping[str, Any],
             elsewhere: tuple[str, str] | None = None) -> str:
        """A copy dropped (``match``: its record: ``original_url``, ``original_id``,
        ``kind``, ``distance``...): a revisit, its response or nothing, then its metadata
        record (see the module docstring). ``elsewhere``: the response record id and WARC
        date of an original another writer (another crawl process) archived, named when
        this one does not hold it. Returns what was written of the page: ``revisit``,
        ``response`` or ``metadata``."""
        self._ready()
        original_url = match.get("original_url") or ""
        held = self._held.get(match.get("original_id") or "") or self._held.get(original_url)
        digest = payload_digest(fetch.body)
        refers = {"WARC-Refers-To-Target-URI": original_url} if original_url else {}
        if held is not None:
            refers["WARC-Refers-To-Date"] = held.date
            refers["WARC-Refers-To"] = held.record_id
        elif elsewhere is not None and original_url:
            refers["WARC-Refers-To"], refers["WARC-Refers-To-Date"] = elsewhere
        date = warc_date(fetch.date)
        concurrent = None
        if held is not None and held.digest == digest and original_url:
            revisit = self._writer.create_revisit_record(
                fetch.url, digest, original_url, held.date,
                http_headers=self._http_headers(fetch),
                warc_headers_dict={"WARC-Date": date, "WARC-Refers-To": held.record_id})
            concurrent, kept = self._write(revisit), "revisit"
        elif self.near == "response":
            concurrent, date, _ = self._fetched(fetch)
            kept = "response"
        else:
            kept = "metadata"
        body = match_fields(match)
        headers = {"WARC-Date": date, **refers}
        if concurrent is not None:
            headers["WARC-Concurrent-To"] = concurrent
        self._write(self._writer.create_warc_record(
            fetch.url, "metadata", payload=BytesIO(body), length=len(body),
            warc_content_type=FIELDS_TYPE, warc_headers_dict=headers))
        return kept
