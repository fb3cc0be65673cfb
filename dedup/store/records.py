"""The records a crawl keeps, built once from a decided page or match: a page, its
fingerprint, and a match record (a copy's, or an excerpt's).

They are plain data (ids as 24 hex digits, fingerprints as unsigned 64-bit integers,
times as aware datetimes), the one shape every store takes (:class:`dedup.store.PageRecords`)
and the WARC writer describes (:func:`dedup.warc_writer.match_fields`). How a store encodes them
is its own affair: :mod:`dedup.store.mongo` keeps ids as ``ObjectId`` and fingerprints as
signed ``Int64``, in that module alone.

Fields (the MongoDB collections of the same names hold them; docs/queries.md):

``pages``
    ``_id``, ``url``, ``url_key`` (the URL in canonical form), ``host``, ``checksum``
    (32 hex digits of the normalised text's XXH3-128), ``title``, ``language``,
    ``text_length``, ``extraction``, ``fetched_at`` (not for a registered original),
    ``text`` (unless the crawl keeps no text), ``canonical``, ``description``,
    ``published`` (when the page says when it was first published), and what
    the crawl adds (``status``, ``depth``, ``referer``, ``crawl_id``, ``encoding``,
    ``source`` for a registered original, ``warc`` when the crawl archived it as WARC).
``fingerprints``
    ``_id`` (the page's), ``simhash``, ``simhash_hex``, ``checksum``, ``tokens``,
    ``short``, ``algorithm``, ``created_at``; ``simhash2`` (the second opinion),
    ``sketch`` (the text sketch), ``pinyin`` (window codes, their parameters, Han count).
``matches`` and ``excerpts``
    ``url``, ``host``, ``original_id``, ``original_url``, ``original_host``,
    ``distance``, ``kind``, ``similarity``, ``outlinks_dropped``, ``detected_at``,
    ``crawl_id``, and the evidence the decision had (``title``, ``fetched_at``,
    ``source``, ``pinyin``, ``containment``, ``canonical_link``, ``checksum``, ``rules``
    and ``claimant``, an excerpt's ``characters``, ``span`` and ``page_id``, the copy's
    ``text``); ``turned`` (``canonical`` or ``published``) for a page stored first and
    recorded as a copy once the page that came after it was found to be the original
    (:func:`turned_record`). A store adds ``first_detected_at``, ``times_seen`` and ``crawl_ids``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from dedup.ids import url_key
from dedup.page import Page

#: The fingerprint algorithm stored with each fingerprint (simhash, 64 bits, XXH3 features).
ALGORITHM = "simhash64-xxh3"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def page_record(page: Page, *, store_text: bool = True, **fields_: Any) -> dict[str, Any]:
    """The page record of an admitted :class:`~dedup.page.Page` (the one place that makes
    one): its id, URL and canonical URL (``url_key``), host, checksum, fetch time, title,
    description, language, text length, extraction method, declared canonical, its whole
    text (unless ``store_text`` is off), and the crawl's ``fields_`` (status, depth, ...)."""
    doc: dict[str, Any] = {
        "_id": page.page_id, "url": page.url, "url_key": url_key(page.url),
        "host": page.host, "checksum": page.checksum, "title": page.title,
        "language": page.language, "text_length": len(page.text), "extraction": page.method}
    if page.fetched_at is not None:  # a registered original was never fetched
        doc["fetched_at"] = page.fetched_at
    if store_text:
        doc["text"] = page.text
    if page.canonical:
        doc["canonical"] = page.canonical
    if page.description:
        doc["description"] = page.description
    if page.published is not None:
        doc["published"] = page.published
    doc.update(fields_)
    return doc


def fingerprint_row(page_id: str, simhash: int, *, checksum: str, tokens: int, short: bool,
                    algorithm: str = ALGORITHM, created_at: dt.datetime | None = None,
                    **extra: Any) -> dict[str, Any]:
    """A fingerprint record from its values (:func:`fingerprint_record` makes one of a
    page). ``simhash`` is an unsigned 64-bit integer.

    Raises:
        ValueError: ``simhash`` outside ``[0, 2**64)``.
    """
    simhash = int(simhash)
    if not 0 <= simhash < 1 << 64:
        raise ValueError(f"a fingerprint must be in [0, 2**64), got {simhash}")
    return {"_id": str(page_id), "simhash": simhash, "simhash_hex": f"{simhash:016x}",
            "checksum": checksum, "tokens": tokens, "short": short, "algorithm": algorithm,
            "created_at": created_at or _now(), **extra}


def fingerprint_record(page: Page, pinyin_params: dict[str, Any] | None = None,
                       **extra: Any) -> dict[str, Any]:
    """The fingerprint record of an admitted :class:`~dedup.page.Page`: its simhash (the
    one the index holds), checksum, tokens, second opinion (``simhash2``) and pinyin
    windows (with the parameters they were computed with), and the text sketch the index
    keeps with the simhash (``sketch``), from which ``rebuild-index`` restores it."""
    if page.sketch:
        extra["sketch"] = page.sketch
    if page.verify is not None:
        extra["simhash2"] = int(page.verify)
    if page.pinyin is not None and page.pinyin.codes and pinyin_params is not None:
        extra["pinyin"] = {"codes": [int(c) for c in page.pinyin.codes],
                           "params": pinyin_params, "han_characters": page.pinyin.letters}
    return fingerprint_row(page.page_id, page.simhash, checksum=page.checksum,
                           tokens=page.tokens, short=page.short, **extra)


def match_record(*, url: str, host: str, original_id: str, original_url: str | None,
                 original_host: str | None, distance: int | None, kind: str,
                 outlinks_dropped: int = 0, crawl_id: str | None = None,
                 detected_at: dt.datetime | None = None, similarity: float | None = None,
                 **extra: Any) -> dict[str, Any]:
    """A match record. ``distance`` is the Hamming distance of a simhash or exact match
    (``None`` for a pinyin match, whose measure is its ``pinyin`` share and run);
    ``similarity`` defaults to ``1 - distance / 64`` (for pinyin: the share of windows)."""
    if similarity is None:
        share = (extra.get("pinyin") or {}).get("share")
        similarity = float(share) if distance is None and share is not None else \
            1 - int(distance or 0) / 64
    return {"url": url, "host": host, "original_id": str(original_id),
            "original_url": original_url, "original_host": original_host,
            "distance": None if distance is None else int(distance), "kind": kind,
            "similarity": round(similarity, 4),
            "outlinks_dropped": int(outlinks_dropped),
            "detected_at": detected_at or _now(), "crawl_id": crawl_id, **extra}


def match_record_of(match: Any, *, crawl_id: str | None, text_cap: int = 0) -> dict[str, Any]:
    """The match record of a decided copy or excerpt (the crawl's ``MatchItem``, or any
    object with its fields): what the decision found and the evidence it had, and up to
    ``text_cap`` characters of the copy's text (to show it beside its original)."""
    evidence: dict[str, Any] = {"title": match.title, "fetched_at": match.fetched_at}
    if match.source:
        evidence["source"] = match.source
    if match.pinyin:
        evidence["pinyin"] = match.pinyin
    if match.containment is not None:
        evidence["containment"] = match.containment
    if match.canonical_link:
        evidence["canonical_link"] = match.canonical_link
    if match.checksum:
        evidence["checksum"] = match.checksum
    if match.rules:
        evidence["rules"], evidence["claimant"] = match.rules, match.claimant
    if match.kind == "excerpt":
        evidence["characters"] = match.characters
        evidence["span"] = list(match.span or (0, 0))
        evidence["page_id"] = str(match.page_id or "")
    elif text_cap and match.text:
        evidence["text"] = match.text[:text_cap]
        if len(match.text) > text_cap:
            evidence["text_truncated"] = True
    return match_record(url=match.url, host=match.host, original_id=match.original_id,
                        original_url=match.original_url, original_host=match.original_host,
                        distance=match.distance, kind=match.kind,
                        outlinks_dropped=match.outlinks_dropped, crawl_id=crawl_id,
                        **evidence)


#: What a store keeps of a page turned into a copy, for its match record
#: (:meth:`dedup.store.PageRecords.turn_round`).
TURNED_PAGE_FIELDS = ("checksum", "title", "fetched_at")


def with_stored(copy: dict[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """A turned page's match record (``copy``, :func:`turned_record`) with what the store
    kept of the page (``stored``: its :data:`TURNED_PAGE_FIELDS`)."""
    return {**{k: stored[k] for k in TURNED_PAGE_FIELDS if stored.get(k)}, **copy}


def turned_record(page: Page, turned: Any, *, crawl_id: str | None) -> dict[str, Any]:
    """The match record of the page a match turned round moved out of the pages
    (``turned``: a :class:`dedup.decide.Turn`): a copy of ``page``, which holds its id
    now, saying why (``turned``: ``canonical`` or ``published``). Its links were followed
    when it was stored (``outlinks_dropped`` 0); the store adds its checksum, title and
    fetch time (:meth:`dedup.store.PageRecords.turn_round`)."""
    extra: dict[str, Any] = {"turned": turned.reason}
    if turned.containment is not None:
        extra["containment"] = turned.containment
    return match_record(url=turned.url, host=turned.host, original_id=page.page_id,
                        original_url=page.url, original_host=page.host,
                        distance=turned.distance, kind=turned.kind, outlinks_dropped=0,
                        crawl_id=crawl_id, **extra)
