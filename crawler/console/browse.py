"""The console's pages over the store (a blueprint): the dashboard and its figures,
search, a copy beside its original, a page and its copies, the registered sources."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flask import Blueprint, abort, render_template, request, send_file
from markupsafe import Markup

from crawler.console.diff import side_by_side
from crawler.console.report_file import TOP
from crawler.console.context import console
from dedup.store.reads import Where
from dedup.store.reads import search as search_of

bp = Blueprint("browse", __name__)

#: Results per page of a list.
PAGE_SIZE = 50

#: Seconds after which a running crawl that has not rewritten its record is shown as
#: "not reporting" (a few missed updates: killed, or MongoDB unreachable).
STALE_SECONDS = 30.0


def crawl_state(record: dict[str, Any], now: dt.datetime) -> str:
    """``running``, ``not reporting`` (a running record not rewritten lately),
    ``interrupted`` (its process was found gone without a summary) or ``finished``."""
    if record.get("state") == "interrupted":
        return "interrupted"
    if record.get("state") != "running":
        return "finished"
    updated = record.get("updated_at")
    if isinstance(updated, dt.datetime):
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=dt.timezone.utc)
        if (now - updated).total_seconds() > STALE_SECONDS:
            return "not reporting"
    return "running"


@bp.get("/")
def dashboard() -> Any:
    state = console()
    reads, cache = state.reads, state.figures
    now = dt.datetime.now(dt.timezone.utc)
    crawls = reads.recent_crawls(20)
    for c in crawls:
        c["shown_state"] = crawl_state(c, now)
        counters = c.get("counters") or {}
        elapsed = counters.get("elapsed") or 0
        c["rate"] = counters.get("fetched", 0) / elapsed if elapsed else 0.0
    drawn, found = cache.current()
    recent, _ = reads.newest("matches", Where(), 20, by="detected_at")
    return render_template(
        "dashboard.html", crawls=crawls, drawn=drawn, found=found,
        drawing=cache.busy, read=cache.read, made_at=cache.made_at, error=cache.error,
        live=any(c["shown_state"] == "running" for c in crawls), recent=recent, top=TOP)


@bp.get("/figures/<name>.png")
def figure(name: str) -> Any:
    path = console().figures.path(name)
    if path is None or not path.exists():
        abort(404)
    return send_file(path, mimetype="image/png", max_age=0)


@bp.get("/search")
def search() -> Any:
    reads = console().reads
    q = request.args.get("q", "").strip()
    what = request.args.get("what", "")
    before = request.args.get("before") or None
    results: dict[str, tuple[list[dict[str, Any]], str | None]] = {}
    described = ""
    if q:
        where, described = search_of(q)
        start = before if before and what else None
        for kind in ("matches", "pages"):
            if what in ("", kind):
                results[kind] = reads.newest(kind, where, PAGE_SIZE, start)
    return render_template("search.html", q=q, what=what, results=results,
                           described=described)


@bp.get("/match/<match_id>")
def match(match_id: str) -> Any:
    reads = console().reads
    record = reads.match(match_id)
    if record is None:
        abort(404)
    original = reads.page(str(record.get("original_id")))
    compared = None
    if original is not None and original.get("text") and record.get("text"):
        compared = side_by_side(original["text"], record["text"])
    return render_template("match.html", m=record, original=original, compared=compared,
                           original_html=Markup(compared.original) if compared else "",
                           copy_html=Markup(compared.copy) if compared else "")


@bp.get("/page/<page_id>")
def page(page_id: str) -> Any:
    reads = console().reads
    doc = reads.page(page_id, text=False)
    if doc is None:
        abort(404)
    copies, total = reads.copies_of(doc["_id"], 100)
    cluster = reads.cluster(str(doc["cluster"])) if doc.get("cluster") is not None else None
    members = reads.pages_of(cluster["members"][:100]) if cluster else []
    batch = reads.batch_record(doc["url"])
    return render_template("page.html", p=doc, copies=copies, total=total,
                           cluster=cluster, members=members, batch=batch)


@bp.get("/sources")
def sources() -> Any:
    state = console()
    reads, cache = state.reads, state.figures
    originals = reads.source_counts()
    _, found = cache.current()
    copies = {s: sum(days.values()) for s, days in
              (found.copies_per_source_day if found else {}).items()}
    rows = [{"name": n, "originals": originals[n], "copies": copies.get(n)}
            for n in sorted(originals)]
    return render_template("sources.html", rows=rows, made_at=cache.made_at)


@bp.get("/sources/<path:name>")
def source(name: str) -> Any:
    reads = console().reads
    after = request.args.get("after") or None
    originals, next_after = reads.originals(name, after, PAGE_SIZE)
    if not originals and not after:
        abort(404)
    counts = reads.copy_counts(o["_id"] for o in originals)
    for o in originals:
        o["copies"] = counts.get(o["_id"], 0)
    latest, _ = reads.newest("matches", Where(source=name), PAGE_SIZE, by="detected_at")
    # pages kept because they only quote the source's originals (excerpt records)
    quoted, _ = reads.newest("excerpts", Where(source=name), PAGE_SIZE, by="detected_at")
    return render_template("source.html", name=name, originals=originals,
                           next_after=next_after, after=after, latest=latest,
                           quoted=quoted)
