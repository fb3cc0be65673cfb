"""``simcrawl export matches|pages``: stream the store's match records or pages to CSV or
JSON lines, for spreadsheets and other tools.

The export reads the store (:meth:`dedup.store.reads.StoreReads.records`) with one cursor in
``_id`` order (the primary index: no sort, no
full materialisation) and writes each row as it arrives, so a store of millions of
records exports in constant memory. ``--crawl-id`` limits it to one crawl (a match record
belongs to every crawl that saw the copy: its ``crawl_ids``), ``--since`` / ``--until``
to a time range (``detected_at`` of matches, ``fetched_at`` of pages).

    simcrawl export matches --format csv -o matches.csv
    simcrawl export pages --format jsonl --crawl-id 3f2a... > pages.jsonl
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any, TextIO

from dedup.store.reads import EVERYTHING, Span, StoreReads

#: The columns of each export, in order: the fields users query (docs/queries.md).
FIELDS: dict[str, list[str]] = {
    "matches": ["url", "host", "original_url", "original_host", "original_id", "kind",
                "distance", "similarity", "pinyin_share", "pinyin_run", "source", "title",
                "outlinks_dropped", "times_seen", "crawl_ids", "first_detected_at",
                "detected_at"],
    "pages": ["page_id", "url", "host", "title", "language", "status", "depth", "referer",
              "fetched_at", "checksum", "text_length", "extraction", "encoding", "source",
              "crawl_id"],
}

def columns(kind: str, text: bool = False) -> list[str]:
    """An export's columns: :data:`FIELDS`, and a page's stored ``text`` with ``text``
    (``DEDUP_STORE_TEXT``: empty when the crawl did not keep it)."""
    return FIELDS[kind] + (["text"] if text and kind == "pages" else [])


def row(kind: str, doc: dict[str, Any], text: bool = False) -> dict[str, Any]:
    """One record as the export's columns (:func:`columns`)."""
    doc = dict(doc)
    if kind == "pages":
        doc["page_id"] = doc.pop("_id", None)
    else:
        pinyin = doc.get("pinyin") or {}
        doc["pinyin_share"], doc["pinyin_run"] = pinyin.get("share"), pinyin.get("run")
        doc.setdefault("crawl_ids", [doc["crawl_id"]] if doc.get("crawl_id") else [])
        doc.setdefault("first_detected_at", doc.get("detected_at"))
    return {name: _plain(doc.get(name)) for name in columns(kind, text)}


def _plain(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def rows(reads: StoreReads, kind: str, span: Span = EVERYTHING, text: bool = False
         ) -> Iterator[dict[str, Any]]:
    """Stream the records of ``kind`` in ``span`` as export rows (with the pages' texts:
    ``text``), in the order they were stored."""
    fields = [name for name in columns(kind, text) if name != "page_id"]
    if kind == "matches":
        fields += ["pinyin", "crawl_id"]
    for doc in reads.records(kind, span, fields):
        yield row(kind, doc, text)


def write(out: TextIO, kind: str, fmt: str, records: Iterator[dict[str, Any]],
          step: Any = None, text: bool = False) -> int:
    """Write ``records`` to ``out`` as ``csv`` (a header row; lists joined with ``;``;
    empty cells for missing values) or ``jsonl`` (one JSON object a line); ``step()`` is
    called after each. Returns how many were written."""
    n = 0
    if fmt == "csv":
        writer = csv.DictWriter(out, fieldnames=columns(kind, text), lineterminator="\n")
        writer.writeheader()
        for record in records:
            writer.writerow({k: ";".join(map(str, v)) if isinstance(v, list) else
                             ("" if v is None else v) for k, v in record.items()})
            n += 1
            if step:
                step()
    else:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
            n += 1
            if step:
                step()
    return n
