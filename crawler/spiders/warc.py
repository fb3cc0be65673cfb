"""WARC files read as a crawl (``simcrawl warc FILE...``; ``scrapy crawl warc -a
files=A,B``): every HTML response record, in file order, is decided by the crawl's own
decision and written as a crawl writes it (pages, fingerprints, match records, the
summary), under the run's crawl id.

- :class:`WarcSpider` (the site spider, whose pages come from the files): a request per
  response record, none for the links of a page (the archive is the crawl).
- :class:`FromArchive` (a downloader middleware, first of all): a request is answered with
  its record, read again from its file at its offset (the files are not held in memory;
  Scrapy's HTTP cache answers the same way).

A ``revisit`` record that repeats an HTML response's payload (profile
*identical-payload-digest*, as Heritrix, browsertrix-crawler and simcrawl write them for a
payload seen before) is decided as a page of its own URL with that response's payload:
under another URL it is an exact copy, under the same URL a revisit of the page
(``unchanged``). It is found by its ``WARC-Payload-Digest`` among the HTML responses read
before it, in these files (counted in ``dedup/warc/revisits``); one whose response is not
in them (an earlier crawl's files not given) is counted in
``dedup/warc/revisits_unresolved``, logged, and not decided.

A record that cannot be read (a truncated or corrupt file) gets one line naming the file
and the offset, is counted in ``dedup/warc/bad_records``, and the run goes on with the next
file. Records that are not HTML responses (requests, metadata, images, redirects, ``dns:``
records...) are counted in ``dedup/warc/other_records`` and not decided.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import scrapy
import xxhash
from scrapy.http import Response
from scrapy.responsetypes import responsetypes

from crawler.spiders.site import SiteSpider

log = logging.getLogger(__name__)

#: Where a request's record is: the meta key (file, offset).
RECORD = "simcrawl_warc_record"

#: Headers of the wire, not of the body as it is read (decoded).
_WIRE = {b"content-encoding", b"transfer-encoding", b"content-length"}


def warc_files(paths: list[str]) -> list[Path]:
    """The WARC files named, a folder's in name order (``.warc``, ``.warc.gz``).

    Raises:
        ValueError: a path that is not there, or no WARC file at all.
    """
    out: list[Path] = []
    for name in paths:
        path = Path(name)
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.name.endswith((".warc", ".warc.gz")))
        elif path.is_file():
            out.append(path)
        else:
            raise ValueError(f"no such WARC file or folder: {name}")
    if not out:
        raise ValueError(f"no WARC file (.warc, .warc.gz) in {', '.join(paths)}")
    return out


#: The revisit profile whose record repeats another record's payload (WARC 1.0 and 1.1
#: name it alike but for the version).
IDENTICAL_PAYLOAD = "/revisit/identical-payload-digest"


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


def repeated(record: Any) -> int | None:
    """The payload a revisit record repeats (:func:`digest_key` of its digest), when its
    profile says it repeats one; else ``None``."""
    if record.rec_type != "revisit" or not (
            record.rec_headers.get_header("WARC-Profile") or "").endswith(IDENTICAL_PAYLOAD):
        return None
    return digest_key(record.rec_headers.get_header("WARC-Payload-Digest"))


def _is_html(record: Any) -> bool:
    headers = record.http_headers
    if record.rec_type != "response" or headers is None:
        return False
    kind = (headers.get_header("Content-Type") or "").lower()
    return "html" in kind or kind.startswith("application/xhtml")


class WarcSpider(SiteSpider):
    """The pages of WARC files, decided as a crawl decides them (see the module
    docstring)."""

    name = "warc"
    custom_settings: ClassVar[dict[str, Any]] = {
        "ROBOTSTXT_OBEY": False,  # the pages were fetched already
        "AUTOTHROTTLE_ENABLED": False,
        "DEPTH_LIMIT": 0,
        "DEDUP_URL_RULES": False,  # no request to save: every page is in the files
        "DOWNLOADER_MIDDLEWARES": {"crawler.spiders.warc.FromArchive": 1},
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "DOWNLOAD_DELAY": 0,
        # in file order: one queue for every host (Scrapy's default takes turns among
        # the hosts' download slots), first in first out (the start requests' queue)
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
    }
    #: the dedup middleware decides the pages in the order they come, one batch at a time
    #: (:class:`crawler.middlewares.InOrder`): the originals are the files' first pages,
    #: however long each page takes to read
    decide_in_order = True

    def __init__(self, files: str = "", **kwargs: Any) -> None:
        scrapy.Spider.__init__(self, **kwargs)  # no start URLs: the files are the crawl
        self.files = warc_files([f for f in files.split(",") if f])
        self.start_urls, self.allowed_domains = [], []  # every page of the files
        self._start_state()

    async def start(self) -> AsyncIterator[Any]:
        from warcio.archiveiterator import ArchiveIterator

        done = 0  # bytes of the files read before this one: the progress line's share
        self._set("dedup/warc/bytes_total", sum(p.stat().st_size for p in self.files))
        # where each HTML payload read so far is, by its digest: a revisit record's page
        # (a key and a small tuple a response: about 180 MB a million responses, measured)
        payloads: dict[int, tuple[int, int]] = {}
        for n, path in enumerate(self.files):
            with open(path, "rb") as fh:  # noqa: ASYNC230  (a local file, read a record at a time)
                # digests checked as the records are read: a record cut short is caught
                records = ArchiveIterator(fh, check_digests="raise")
                offset = 0
                try:
                    for record in records:
                        offset = records.get_record_offset()
                        records.read_to_end(record)  # its digests checked, its length too
                        self._set("dedup/warc/bytes_read", done + records.offset)
                        if getattr(record.raw_stream, "limit", 0) > 0:
                            raise ValueError("the record is cut short")
                        url = record.rec_headers.get_header("WARC-Target-URI")
                        where: tuple[int, int] | None = (n, offset)
                        if record.rec_type == "revisit":
                            where = self._revisited(record, payloads, path, offset)
                        elif _is_html(record):
                            key = digest_key(record.rec_headers.get_header(
                                "WARC-Payload-Digest"))
                            if key is not None:
                                payloads.setdefault(key, (n, offset))
                        else:
                            self._count("dedup/warc/other_records")
                            where = None
                        if where is None:
                            continue
                        yield scrapy.Request(url, callback=self.parse, errback=self.failed,
                                             dont_filter=True,
                                             meta={RECORD: (str(self.files[where[0]]),
                                                            where[1]),
                                                   "dont_redirect": True, "dont_retry": True})
                    if records.offset < path.stat().st_size:  # a record cut short: no end
                        offset = records.offset
                        raise ValueError(f"{path.stat().st_size - offset} bytes after the "
                                         "last whole record are not one")
                except Exception as exc:  # noqa: BLE001  (a bad file: said, and the next one read)
                    self._count("dedup/warc/bad_records")
                    log.error("%s: the record at offset %d or after it cannot be read (%s); "
                              "the rest of this file is skipped", path, offset, exc)
            done += path.stat().st_size
            self._set("dedup/warc/bytes_read", done)

    def _revisited(self, record: Any, payloads: dict[int, tuple[int, int]], path: Path,
                   offset: int) -> tuple[int, int] | None:
        """Where the HTML response a revisit record repeats is (file number, offset), or
        ``None``: it repeats none, or one these files do not hold before it (counted,
        and said)."""
        key = repeated(record)
        where = payloads.get(key) if key is not None else None
        if where is not None:
            self._count("dedup/warc/revisits")
            return where
        headers = record.http_headers
        kind = (headers.get_header("Content-Type") or "").lower() if headers else ""
        if key is not None and "html" in kind:
            self._count("dedup/warc/revisits_unresolved")
            log.warning("%s: the revisit record at offset %d (%s) repeats a response not "
                        "in the files before it; not decided", path, offset,
                        record.rec_headers.get_header("WARC-Target-URI"))
        else:
            self._count("dedup/warc/other_records")
        return None

    def _count(self, key: str) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value(key)

    def _set(self, key: str, value: int) -> None:
        if self.crawler.stats is not None:
            self.crawler.stats.set_value(key, value)

    def follow(self, urls: list[str], source: str, depth: int = 0) -> list[scrapy.Request]:
        return []  # the archive is the crawl: its pages' links are not requested


class FromArchive:
    """Answer a :class:`WarcSpider` request with its record (see the module docstring)."""

    def process_request(self, request: scrapy.Request, spider: Any = None) -> Response | None:
        where = request.meta.get(RECORD)
        if where is None:
            return None
        from warcio.archiveiterator import ArchiveIterator

        path, offset = where
        with open(path, "rb") as fh:
            fh.seek(offset)
            record = next(iter(ArchiveIterator(fh, check_digests="raise")))
            body = record.content_stream().read()  # transfer and content encodings undone
            http = record.http_headers
            headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in http.headers
                       if k.lower().encode("latin-1") not in _WIRE]
            status = int(http.get_statuscode() or 200)
        cls = responsetypes.from_args(headers=dict(headers), url=request.url, body=body)
        return cls(url=request.url, status=status, headers=headers, body=body,
                   request=request, flags=["warc"])
