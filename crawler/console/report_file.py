"""``simcrawl report``: what a crawl found, as one self-contained HTML file and PNG figures.

It reads the store once (pages, match records and the crawls' summaries, projections
only, with a progress bar on a terminal), counts in memory what the figures need, and
draws them with matplotlib:

* the Hamming distances of near matches (log scale, k marked);
* the duplicate share of the hosts with the most copies;
* the originals with the most copies (a table with links too: the largest copy groups);
* copies of registered originals per source and day;
* pages admitted, dropped and skipped over the crawl's time (by the second, 10 seconds or
  minute, as long as the crawl lasted);
* why pages were skipped.

``report.html`` embeds every figure (PNG as ``data:`` URIs), so it opens offline and can
be mailed; the PNG files sit beside it, and ``report.json`` holds the numbers behind the
figures (for other tools, and for checking them against the store).

    simcrawl report -o report/ [--database DB] [--crawl-id ID] [--since T] [--until T]
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dedup.progress_line import counted
from dedup.store.reads import Span, StoreReads

#: Rows of the "top" figures and tables.
TOP = 20

#: The report's style sheet (inline: the file stands alone).
STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
         "img{max-width:100%}table{border-collapse:collapse}"
         "td,th{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left}"
         "td.n{text-align:right}")


@dataclass
class Findings:
    """The numbers behind the report's figures (all JSON-serialisable)."""

    #: pages the crawls stored (registered originals apart: :attr:`registered`)
    pages: int = 0
    registered: int = 0
    matches: int = 0
    distances: dict[int, int] = field(default_factory=dict)
    kinds: dict[str, int] = field(default_factory=dict)
    pages_per_host: dict[str, int] = field(default_factory=dict)
    copies_per_host: dict[str, int] = field(default_factory=dict)
    copies_per_original: list[dict[str, Any]] = field(default_factory=list)
    copies_per_source_day: dict[str, dict[str, int]] = field(default_factory=dict)
    admitted_per_minute: dict[str, int] = field(default_factory=dict)
    dropped_per_minute: dict[str, int] = field(default_factory=dict)
    #: the same by the second (``YYYY-MM-DDTHH:MM:SS``), kept for crawls of a few minutes,
    #: whose chart is then drawn in seconds (:data:`FINE_SPAN`)
    admitted_per_second: dict[str, int] = field(default_factory=dict)
    dropped_per_second: dict[str, int] = field(default_factory=dict)
    skipped_per_minute: dict[str, int] = field(default_factory=dict)
    skip_reasons: dict[str, int] = field(default_factory=dict)
    crawls: list[str] = field(default_factory=list)
    #: what ``simcrawl clusters`` wrote: copies the crawl admitted (``batch`` match
    #: records, not counted as dropped), clusters of two or more and their pages
    batch_copies: int = 0
    clusters: int = 0
    pages_in_clusters: int = 0
    largest_clusters: list[dict[str, Any]] = field(default_factory=list)
    #: requests not sent: the URL rules' ``url_rule`` records, by rule (``host: kind arg``)
    url_rules: dict[str, int] = field(default_factory=dict)


def _minute(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M") if isinstance(value, dt.datetime) else None


def _second(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S") if isinstance(value, dt.datetime) else None


#: A crawl shorter than this is charted by the second (in bins of :func:`bin_seconds`),
#: a longer one by the minute: a crawl of a minute or two per minute is one or two dots.
FINE_SPAN = dt.timedelta(minutes=20)


def bin_seconds(span: dt.timedelta) -> int:
    """The width of a time bin for a crawl that lasted ``span``: 1 second up to two
    minutes, then 10 seconds (up to :data:`FINE_SPAN`), then 60."""
    if span <= dt.timedelta(minutes=2):
        return 1
    return 10 if span <= FINE_SPAN else 60


def collect(reads: StoreReads, crawl_id: str | None = None, since: dt.datetime | None = None,
            until: dt.datetime | None = None, progress: Any = None) -> Findings:
    """Read the store once and count what the figures need; ``progress(n)`` is called as
    records are read."""
    found = Findings()
    per_original: Counter[str] = Counter()
    names: dict[str, str] = {}
    hosts: dict[str, Counter[str]] = {}
    span = Span(crawl_id, since, until)
    for doc in reads.records("pages", span, ("host", "fetched_at", "source"), ordered=False):
        if doc.get("source"):  # registered originals are not crawled pages
            found.registered += 1
        else:
            found.pages += 1
            found.pages_per_host[doc.get("host", "")] = \
                found.pages_per_host.get(doc.get("host", ""), 0) + 1
            minute = _minute(doc.get("fetched_at"))
            if minute:
                found.admitted_per_minute[minute] = found.admitted_per_minute.get(minute, 0) + 1
                second = _second(doc["fetched_at"]) or ""
                found.admitted_per_second[second] = found.admitted_per_second.get(second, 0) + 1
        if progress:
            progress(1)
    fields = ("host", "distance", "kind", "original_id", "original_url", "original_host",
              "source", "detected_at", "fetched_at", "rules")
    for doc in reads.records("matches", span, fields, ordered=False):
        kind = doc.get("kind", "")
        if kind == "batch":  # a stored page the batch job found to be a copy: not dropped
            found.batch_copies += 1
            continue
        found.matches += 1
        found.kinds[kind] = found.kinds.get(kind, 0) + 1
        for rule in doc.get("rules") or () if kind == "url_rule" else ():
            found.url_rules[str(rule)] = found.url_rules.get(str(rule), 0) + 1
        if doc.get("distance") is not None and kind != "exact":
            d = int(doc["distance"])
            found.distances[d] = found.distances.get(d, 0) + 1
        host = doc.get("host", "")
        found.copies_per_host[host] = found.copies_per_host.get(host, 0) + 1
        original = str(doc.get("original_id"))
        per_original[original] += 1
        names[original] = doc.get("original_url") or original
        hosts.setdefault(original, Counter())[host] += 1
        when = doc.get("fetched_at") or doc.get("detected_at")
        minute = _minute(when)
        if minute:
            found.dropped_per_minute[minute] = found.dropped_per_minute.get(minute, 0) + 1
            second = _second(when) or ""
            found.dropped_per_second[second] = found.dropped_per_second.get(second, 0) + 1
        if doc.get("source") and isinstance(when, dt.datetime):
            day = when.strftime("%Y-%m-%d")
            days = found.copies_per_source_day.setdefault(doc["source"], {})
            days[day] = days.get(day, 0) + 1
        if progress:
            progress(1)
    seconds = sorted(set(found.admitted_per_second) | set(found.dropped_per_second))
    if seconds and dt.datetime.fromisoformat(seconds[-1]) \
            - dt.datetime.fromisoformat(seconds[0]) > FINE_SPAN:
        found.admitted_per_second, found.dropped_per_second = {}, {}  # by the minute
    found.copies_per_original = [
        {"original_id": oid, "original_url": names[oid], "copies": n,
         "hosts": len(hosts[oid])} for oid, n in per_original.most_common(TOP)]
    for doc in reads.clusters():
        found.clusters += 1
        found.pages_in_clusters += int(doc.get("size") or 0)
        found.largest_clusters.append({"original_id": str(doc["_id"]),
                                       "original_url": doc.get("original_url") or "",
                                       "size": int(doc.get("size") or 0)})
        found.largest_clusters = sorted(found.largest_clusters,
                                        key=lambda c: (-c["size"], c["original_id"]))[:TOP]
    for doc in reads.crawls(crawl_id):
        found.crawls.append(str(doc["_id"]))
        for key, value in (doc.get("stats") or {}).items():
            if key.startswith("dedup/skipped/") and isinstance(value, (int, float)):
                reason = key[len("dedup/skipped/"):]
                found.skip_reasons[reason] = found.skip_reasons.get(reason, 0) + int(value)
        for minute, n in (doc.get("skipped_per_minute") or {}).items():
            found.skipped_per_minute[minute] = found.skipped_per_minute.get(minute, 0) + n
    return found


# ------------------------------------------------------------------------------ figures
def figures(found: Findings, k: int, out: Path) -> list[tuple[str, Path, str]]:
    """Draw the figures as PNG files in ``out``; ``(title, path, caption)`` of each drawn
    (a figure with no data is left out)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn: list[tuple[str, Path, str]] = []

    def time_axis(ax: Any, times: list[Any], unit: dt.timedelta) -> None:
        """Scale a time axis to the data: one point, or points a minute apart, would
        otherwise span years (matplotlib's default for a degenerate range)."""
        import matplotlib.dates as mdates

        lo, hi = min(times), max(times)
        pad = max(unit, (hi - lo) * 0.05)
        ax.set_xlim(lo - pad, hi + pad)
        locator = mdates.AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))

    def save(fig: Any, name: str, title: str, caption: str) -> None:
        path = out / f"{name}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        drawn.append((title, path, caption))

    if found.distances:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        xs = sorted(found.distances)
        ax.bar(xs, [found.distances[x] for x in xs], color="#3b6ea8")
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.7)  # bars of 1 stay visible
        # counts as plain numbers (1, 3, 10), not matplotlib's "3×10^0"
        from matplotlib.ticker import FuncFormatter, NullFormatter

        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else ""))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.axvline(k + 0.5, color="#c0392b", linestyle="--", label=f"k = {k}")
        ax.set_xlabel("Hamming distance to the original")
        ax.set_ylabel("near copies (log)")
        ax.set_xticks(range(max(xs + [k]) + 2))
        ax.legend()
        save(fig, "distances", "Hamming distances of near matches",
             f"{counted(sum(found.distances.values()), 'near copy', 'near copies')} by the "
             f"distance of their fingerprints; those over k = {k} were found by their texts' "
             "anchors and overlap (exact copies, distance 0 by checksum, are not shown)")
    shares = sorted(((h, n / (n + found.pages_per_host.get(h, 0)), n)
                     for h, n in found.copies_per_host.items()),
                    key=lambda t: (-t[2], t[0]))[:TOP]
    if shares:
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.28 * len(shares)))
        ax.barh([h for h, _, _ in shares][::-1], [s for _, s, _ in shares][::-1],
                color="#e08e2b")
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the host's decided pages that were copies")
        save(fig, "hosts", "Duplicate share per host",
             "the host with copies" if len(shares) == 1 else
             f"the {len(shares)} hosts with the most copies")
    if found.copies_per_original:
        top = found.copies_per_original[:TOP]
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.28 * len(top)))
        labels = unique_labels([r["original_url"] for r in top])[::-1]
        ax.barh(range(len(top)), [r["copies"] for r in top][::-1], color="#5a9e5a")
        ax.set_yticks(range(len(top)), labels)  # one bar a row, whatever the labels
        ax.set_xlabel("copies dropped")
        save(fig, "originals", "Copies per original",
             f"the {len(top)} originals with the most copies (table below)")
    if found.copies_per_source_day:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for source, days in sorted(found.copies_per_source_day.items()):
            keys = sorted(days)
            ax.plot([dt.date.fromisoformat(d) for d in keys],  # type: ignore[arg-type]
                    [days[d] for d in keys], marker="o", label=source)
        time_axis(ax, [dt.date.fromisoformat(d) for days in found.copies_per_source_day.values()
                       for d in days], dt.timedelta(days=1))
        ax.set_ylabel("copies found")
        ax.set_ylim(bottom=0)
        ax.legend()
        fig.autofmt_xdate()
        save(fig, "sources", "Copies of registered originals per source and day",
             "pages dropped as copies of a registered source's originals")
    seconds = sorted(set(found.admitted_per_second) | set(found.dropped_per_second))
    if seconds:  # a short crawl: its time axis in seconds, binned by its length
        first = dt.datetime.fromisoformat(seconds[0])
        width = bin_seconds(dt.datetime.fromisoformat(seconds[-1]) - first)
        bins = int((dt.datetime.fromisoformat(seconds[-1]) - first).total_seconds()) \
            // width + 1
        times = [first + dt.timedelta(seconds=width * i) for i in range(bins)]
        fig, ax = plt.subplots(figsize=(7, 3.6))
        for label, series, color in (("admitted", found.admitted_per_second, "#3b6ea8"),
                                     ("dropped", found.dropped_per_second, "#e08e2b")):
            counts = [0] * bins
            for when, n in series.items():
                at = int((dt.datetime.fromisoformat(when) - first).total_seconds()) // width
                counts[at] += n
            ax.plot(times, counts, marker=".", label=label, color=color)  # type: ignore[arg-type]
        time_axis(ax, times, dt.timedelta(seconds=width))
        unit = "second" if width == 1 else f"{width} seconds"
        ax.set_ylabel(f"pages per {unit}")
        ax.legend()
        fig.autofmt_xdate()
        save(fig, "minutes", f"Pages per {unit} of the crawl",
             f"admitted and dropped, from the records (UTC); a crawl of "
             f"{bins * width} seconds, drawn by the {unit} (skips: the chart below)")
    minutes = sorted(set(found.admitted_per_minute) | set(found.dropped_per_minute)
                     | set(found.skipped_per_minute))
    if minutes and not seconds:
        fig, ax = plt.subplots(figsize=(7, 3.6))
        times = [dt.datetime.fromisoformat(m) for m in minutes]
        for label, series, color in (("admitted", found.admitted_per_minute, "#3b6ea8"),
                                     ("dropped", found.dropped_per_minute, "#e08e2b"),
                                     ("skipped", found.skipped_per_minute, "#888888")):
            ax.plot(times, [series.get(m, 0) for m in minutes],  # type: ignore[arg-type]
                    marker=".", label=label, color=color)
        time_axis(ax, times, dt.timedelta(minutes=1))
        ax.set_ylabel("pages per minute")
        ax.legend()
        fig.autofmt_xdate()
        save(fig, "minutes", "Pages per minute of the crawl",
             "admitted and dropped from the records, skipped from the crawls' summaries (UTC)")
    if found.skip_reasons:
        reasons = sorted(found.skip_reasons.items(), key=lambda t: (-t[1], t[0]))
        fig, ax = plt.subplots(figsize=(7, 0.6 + 0.28 * len(reasons)))
        ax.barh([r for r, _ in reasons][::-1], [n for _, n in reasons][::-1], color="#888888")
        ax.set_xlabel("pages skipped")
        save(fig, "skips", "Why pages were skipped",
             "counted by the crawl processes (not stored: binary, not HTML, too big, ...)")
    return drawn


def _short(url: str, width: int = 60) -> str:
    return url if len(url) <= width else url[: width - 1] + "…"


def unique_labels(urls: list[str], width: int = 48) -> list[str]:
    """Axis labels for ``urls``, at most ``width`` characters, one per URL and never two
    alike: a long URL keeps its start (the site) and its end (the page's own name), cut in
    the middle, and labels still alike get their rank. (Cut at the end, three
    ``file:///…/chapter-N.txt`` originals were one label, and their bars one bar.)"""
    out: list[str] = []
    seen: dict[str, int] = {}
    for url in urls:
        label = url
        if len(url) > width:
            head = (width - 1) // 2
            label = url[:head] + "…" + url[len(url) - (width - 1 - head):]
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            label = f"{label} ({seen[label]})"
        out.append(label)
    return out


# --------------------------------------------------------------------------------- HTML
def page(found: Findings, drawn: list[tuple[str, Path, str]], title: str) -> str:
    """The self-contained HTML report."""
    esc = html.escape
    head = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>")
    parts = [head, f"<h1>{esc(title)}</h1>",
             f"<p>{counted(found.pages, 'page')} stored"
             + (f" (and {counted(found.registered, 'registered original')})"
                if found.registered else "") + ", "
             f"{counted(found.matches, 'copy', 'copies')} dropped (" +
             ", ".join(f"{esc(k)} {n:,}" for k, n in sorted(found.kinds.items())) +
             f"), {counted(sum(found.skip_reasons.values()), 'page')} skipped; "
             f"{counted(len(found.crawls), 'crawl process', 'crawl processes')}.</p>"]
    for caption_title, path, caption in drawn:
        data = base64.b64encode(path.read_bytes()).decode()
        parts.append(f"<h2>{esc(caption_title)}</h2><img alt='{esc(caption_title)}' "
                     f"src='data:image/png;base64,{data}'><p>{esc(caption)}</p>")
    if found.copies_per_original:
        parts.append("<h2>Largest copy groups</h2><table><tr><th>original</th>"
                     "<th>copies</th><th>hosts</th></tr>")
        for r in found.copies_per_original:
            url = r["original_url"]
            link = (f"<a href='{esc(url)}'>{esc(_short(url, 90))}</a>"
                    if url.startswith(("http://", "https://")) else esc(url))
            parts.append(f"<tr><td>{link}</td><td class='n'>{r['copies']:,}</td>"
                         f"<td class='n'>{r['hosts']:,}</td></tr>")
        parts.append("</table>")
    if found.clusters or found.batch_copies:
        parts.append(f"<h2>Clusters</h2><p>{counted(found.clusters, 'cluster')} of two or "
                     f"more pages ({counted(found.pages_in_clusters, 'page')}); "
                     f"{counted(found.batch_copies, 'copy', 'copies')} the crawl admitted, "
                     "found by <code>simcrawl clusters</code> (match records of kind "
                     "batch, pages kept).</p>")
        if found.largest_clusters:
            parts.append("<table><tr><th>original (crawled first)</th><th>pages</th></tr>")
            for c in found.largest_clusters:
                url = c["original_url"]
                link = (f"<a href='{esc(url)}'>{esc(_short(url, 90))}</a>"
                        if url.startswith(("http://", "https://")) else esc(url))
                parts.append(f"<tr><td>{link}</td><td class='n'>{c['size']:,}</td></tr>")
            parts.append("</table>")
    if found.url_rules:
        saved = found.kinds.get("url_rule", 0)
        parts.append(f"<h2>Requests not sent (URL rules)</h2><p>{counted(saved, 'copy', 'copies')}"
                     " recorded without a request: the URL rules the crawls learned from "
                     "their match records predicted each to be a stored page (match records "
                     "of kind url_rule; <code>simcrawl rules</code> lists the rules, "
                     "docs/url-rules.md says how they are learned and checked).</p>"
                     "<table><tr><th>host: rule</th><th>requests not sent</th></tr>" + "".join(
                         f"<tr><td>{esc(r)}</td><td class='n'>{n:,}</td></tr>"
                         for r, n in sorted(found.url_rules.items(),
                                            key=lambda t: (-t[1], t[0]))[:TOP]) + "</table>")
    if found.skip_reasons:
        parts.append("<h2>Skip reasons</h2><table>" + "".join(
            f"<tr><td>{esc(r)}</td><td class='n'>{n:,}</td></tr>"
            for r, n in sorted(found.skip_reasons.items(), key=lambda t: -t[1])) + "</table>")
    made = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
    parts.append(f"<p><small>simcrawl report, {made} UTC</small></p></body></html>")
    return "\n".join(parts)


def write_report(reads: StoreReads, out: Path, k: int | None = None, crawl_id: str | None = None,
                 since: dt.datetime | None = None, until: dt.datetime | None = None,
                 progress: Any = None, title: str = "simcrawl report") -> Findings:
    """Collect, draw and write ``report.html``, the PNG files and ``report.json`` to
    ``out`` (created if missing); ``k`` (marked on the distance histogram) defaults to the
    k the crawl's index was built with (:meth:`dedup.store.reads.StoreReads.index_k`)."""
    out.mkdir(parents=True, exist_ok=True)
    k = reads.index_k() if k is None else k
    found = collect(reads, crawl_id, since, until, progress)
    drawn = figures(found, k, out)
    (out / "report.html").write_text(page(found, drawn, title), encoding="utf-8")
    (out / "report.json").write_text(json.dumps({"k": k, **found.__dict__}, indent=1,
                                                default=str), encoding="utf-8")
    return found
