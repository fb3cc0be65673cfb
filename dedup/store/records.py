"""The records a crawl keeps, built once from a decided page or match: a page, its
fingerprint, and a match record (a copy's, an excerpt's, a link's not requested, a page's
turned round, or the batch job's).

They are plain data (ids as 24 hex digits, fingerprints as unsigned 64-bit integers,
times as aware datetimes), the one shape every store takes (:class:`dedup.store.PageRecords`)
and the WARC writer describes (:func:`dedup.warc_writer.match_fields`). How a store encodes them
is its own affair: :mod:`dedup.adapters.mongo` keeps ids as ``ObjectId`` and fingerprints as
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
    (:meth:`MatchRecord.of_turn`); a batch record's ``page_id``, ``cluster`` and ``held``.
    A store adds ``first_detected_at``, ``times_seen`` and ``crawl_ids``.

A match has one shape from the decision to the stores, :class:`MatchRecord`; its
:meth:`MatchRecord.row` is the record above.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from dedup.decide import EXACT, NEAR, PINYIN, Decision, Excerpt, Turn
from dedup.ids import url_key
from dedup.page import Page
from dedup.pinyin import PinyinScore

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


#: Kinds of match record beside the decision's copies (:data:`dedup.decide.EXACT`,
#: :data:`~dedup.decide.NEAR`, :data:`~dedup.decide.PINYIN`): a kept page's passage of a
#: registered original, a link not requested because URL rules predicted it a copy, and a
#: stored page the batch job found to be a copy (``simcrawl find-all``).
EXCERPT, URL_RULE, BATCH = "excerpt", "url_rule", "batch"

#: The kinds of a dropped copy's record (an excerpt's page is kept; a batch record's page
#: was stored).
COPY_KINDS = (EXACT, NEAR, PINYIN, URL_RULE)


class Fetched(Protocol):
    """What a match record takes of a decided page (the crawl's ``PageItem``)."""

    url: str
    host: str
    title: str | None
    text: str
    fetched_at: dt.datetime | None
    checksum: str
    page_id: str | None


def pinyin_fields(score: PinyinScore | None) -> dict[str, Any] | None:
    """A pinyin score as a match record holds it (the one place that converts one)."""
    if score is None:
        return None
    return {"share": round(score.share, 4), "run": score.run, "span": list(score.span),
            "windows_matched": score.matched}


@dataclass(repr=False)
class MatchRecord:
    """A match: a copy dropped, an excerpt of a registered original in a kept page, a link
    not requested, a page turned into a copy, or a stored page the batch job found a copy.
    The one shape from the decision (:meth:`of_copy` and the others build it) to every
    store and the WARC writer, which encode its :meth:`row`.

    Attributes:
        url, host: the copy's (an excerpt's: the kept page's).
        original_id, original_url, original_host: the page it copies.
        distance: Hamming distance (``None`` where there is none: pinyin, a link
            not requested, an excerpt).
        kind: :data:`~dedup.decide.EXACT`, :data:`~dedup.decide.NEAR`,
            :data:`~dedup.decide.PINYIN`, :data:`URL_RULE`, :data:`EXCERPT` or :data:`BATCH`.
        outlinks_dropped: links of the copy never requested.
        title, fetched_at, checksum, text: the copy's (``fetched_at`` ``None``: a record
            whose page the store describes, :func:`with_stored`).
        source: the registered original's source name.
        pinyin: a pinyin score (:func:`pinyin_fields`).
        containment: the share of the copy's text found in the original, when compared.
        canonical_link: ``declared``: the copy names its original canonical.
        characters, span, page_id: an excerpt's longest passage, where it is, the kept
            page's id (a batch record's: the stored copy's id).
        rules, claimant: a link not requested: the URL rules that predicted it, and the
            URL they took it to.
        turned: a page turned into a copy: why (``canonical`` or ``published``).
        cluster, held: a batch record's cluster, and whether the original copies the
            copy's text (crawled first, the copy stays).
    """

    url: str
    host: str
    original_id: str
    original_url: str | None
    original_host: str | None
    distance: int | None
    kind: str
    outlinks_dropped: int = 0
    title: str | None = None
    fetched_at: dt.datetime | None = None
    source: str | None = None
    pinyin: dict[str, Any] | None = None
    text: str = ""
    containment: float | None = None
    characters: int | None = None
    span: tuple[int, int] | None = None
    page_id: str | None = None
    canonical_link: str | None = None
    rules: list[str] | None = None
    claimant: str | None = None
    checksum: str | None = None
    turned: str | None = None
    cluster: str | None = None
    held: bool = False

    @classmethod
    def of_copy(cls, decision: Decision, page: Fetched, outlinks_dropped: int) -> MatchRecord:
        """The record of a page the decision dropped as a copy."""
        return cls(url=page.url, host=page.host, original_id=decision.original_id or "",
                   original_url=decision.original_url, original_host=decision.original_host,
                   kind=decision.kind,
                   distance=None if decision.pinyin is not None else decision.distance,
                   outlinks_dropped=outlinks_dropped, title=page.title, text=page.text,
                   fetched_at=page.fetched_at, source=decision.source,
                   containment=decision.containment, canonical_link=decision.canonical_link,
                   checksum=page.checksum or None, pinyin=pinyin_fields(decision.pinyin))

    @classmethod
    def of_excerpt(cls, excerpt: Excerpt, page: Fetched) -> MatchRecord:
        """The record of a kept page that quotes a registered original."""
        return cls(url=page.url, host=page.host, original_id=excerpt.original_id,
                   original_url=excerpt.original_url, original_host=excerpt.original_host,
                   distance=None, kind=EXCERPT, title=page.title, fetched_at=page.fetched_at,
                   source=excerpt.source, containment=excerpt.share,
                   characters=excerpt.characters, span=excerpt.span,
                   page_id=str(page.page_id or ""), pinyin=pinyin_fields(excerpt.pinyin))

    @classmethod
    def of_link(cls, url: str, host: str, *, claimant: str, rules: list[str],
                original_url: str, original_host: str, original_id: str) -> MatchRecord:
        """The record of a link not requested: a copy of ``original_url``, as ``rules``
        predict (through ``claimant``, the URL they take it to)."""
        return cls(url=url, host=host, original_id=original_id, original_url=original_url,
                   original_host=original_host, distance=None, kind=URL_RULE,
                   fetched_at=_now(),
                   rules=rules, claimant=claimant)

    @classmethod
    def of_turn(cls, page: Page, turned: Turn) -> MatchRecord:
        """The record of the page a match turned round moved out of the pages: a copy of
        ``page``, which holds its id now, saying why (``turned``: ``canonical`` or
        ``published``). Its links were followed when it was stored (``outlinks_dropped``
        0); the store adds its checksum, title and fetch time
        (:meth:`dedup.store.PageRecords.turn_round`)."""
        return cls(url=turned.url, host=turned.host, original_id=page.page_id,
                   original_url=page.url, original_host=page.host, kind=turned.kind,
                   distance=turned.distance, containment=turned.containment,
                   turned=turned.reason)

    @property
    def similarity(self) -> float:
        """``1 - distance / 64``; for a pinyin measure without a distance, its share of
        windows."""
        share = (self.pinyin or {}).get("share")
        if self.distance is None and share is not None:
            return float(share)
        return 1 - int(self.distance or 0) / 64

    def row(self, *, crawl_id: str | None, text_cap: int = 0,
            detected_at: dt.datetime | None = None) -> dict[str, Any]:
        """The record as every store takes it (the fields of the module docstring): what
        the decision found, the evidence it had, and up to ``text_cap`` characters of the
        copy's text (to show it beside its original)."""
        out: dict[str, Any] = {
            "url": self.url, "host": self.host, "original_id": str(self.original_id),
            "original_url": self.original_url, "original_host": self.original_host,
            "distance": None if self.distance is None else int(self.distance),
            "kind": self.kind, "similarity": round(self.similarity, 4),
            "outlinks_dropped": int(self.outlinks_dropped),
            "detected_at": detected_at or _now(), "crawl_id": crawl_id}
        if self.fetched_at is not None:
            out["title"], out["fetched_at"] = self.title, self.fetched_at
        for name in ("source", "pinyin", "canonical_link", "checksum", "turned"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.containment is not None:
            out["containment"] = self.containment
        if self.rules:
            out["rules"], out["claimant"] = self.rules, self.claimant
        if self.characters is not None:
            out["characters"] = self.characters
        if self.span is not None:
            out["span"] = list(self.span)
        if self.page_id is not None:
            out["page_id"] = str(self.page_id)
        if self.cluster is not None:
            out["cluster"] = self.cluster
        if self.held:
            out["held"] = True
        if text_cap and self.text and self.kind != EXCERPT:
            out["text"] = self.text[:text_cap]
            if len(self.text) > text_cap:
                out["text_truncated"] = True
        return out

    def measure(self) -> str:
        """How close the copy is: ``distance 2``, or for pinyin ``share 0.85, run 12``."""
        if self.kind == EXCERPT:
            return f"a passage of {self.characters} characters"
        if self.kind == URL_RULE:
            return "not requested: " + "; ".join(self.rules or ())
        if self.pinyin:
            return f"share {self.pinyin['share']:.2f}, run {self.pinyin['run']} windows"
        if self.containment is not None:
            return f"distance {self.distance}, containment {self.containment:.2f}"
        return f"distance {self.distance}"

    def __repr__(self) -> str:  # one short line in logs, never the copy's text
        return (f"MatchRecord({self.url} copies {self.original_url or self.original_id}, "
                f"{self.kind}, {self.measure()})")


#: What a store keeps of a page turned into a copy, for its match record
#: (:meth:`dedup.store.PageRecords.turn_round`).
TURNED_PAGE_FIELDS = ("checksum", "title", "fetched_at")


def with_stored(copy: dict[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """A turned page's match record (``copy``, :meth:`MatchRecord.of_turn`'s row) with what
    the store kept of the page (``stored``: its :data:`TURNED_PAGE_FIELDS`)."""
    return {**{k: stored[k] for k in TURNED_PAGE_FIELDS if stored.get(k)}, **copy}
