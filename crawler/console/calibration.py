"""``simcrawl calibrate``: choose k for your own sites, with evidence from your own crawl.

For each Hamming distance 0-12 it gathers pairs of pages at that distance from the store:

* *stored pairs*: every pair of stored pages (and registered originals) whose simhashes
  are within ``--up-to`` bits, found with :func:`dedup.all_pairs.find_all` over the
  stored fingerprints (the pages k let through: mostly at distances above k);
* *dropped copies*: each simhash match record with its original (the pairs k dropped, at
  distances up to k), compared through the copy's text kept in the record.

It samples up to ``--sample`` pairs per distance, compares their texts, and counts a pair
as a copy by the crawl's own text check (:func:`dedup.decide.shares_pass`) on the two whole
texts: at least ``--containment`` (default the crawl's 0.8) of one page's three-word
shingles are in the other's, and at least half of the other's are its (a dropped copy
against its original; two stored pages either way). Pairs without both texts are judged by the second opinion
instead (the two-word-shingle simhashes within ``--verify`` bits, default 10). Per distance
it prints the pairs found, those judged, the share that are copies and its 95% interval
(Wilson), and suggests the largest k up to which the share stays at least
``--target`` (default 0.9). With ``-o DIR`` it also writes ``calibrate.html`` (the table, the
figure and a few pairs per distance side by side, differences marked; one file, opens
offline), ``calibrate.png`` and ``calibrate.json``.

    simcrawl calibrate [-o DIR] [--sample 30] [--examples 2] [--database DB]
"""

from __future__ import annotations

import base64
import html
import math
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crawler.console.diff import side_by_side
from dedup.simhash import hamming
from dedup.store.reads import StoreReads

#: Distances examined by default (the issue's 0-12: k = 3 and well beyond).
MAX_DISTANCE = 12


@dataclass
class Pair:
    """Two texts at a Hamming distance, and whether they were judged a copy."""

    distance: int
    left_url: str
    right_url: str
    kind: str  # "stored" (both stored) or "dropped" (a match record and its original)
    overlap: float | None = None
    copy: bool | None = None
    left_text: str = ""
    right_text: str = ""


@dataclass
class Calibration:
    """Per distance: pairs found, judged, judged copies; the examples; the suggestion."""

    found: dict[int, int] = field(default_factory=dict)
    judged: dict[int, int] = field(default_factory=dict)
    copies: dict[int, int] = field(default_factory=dict)
    examples: dict[int, list[Pair]] = field(default_factory=dict)
    suggested_k: int | None = None
    fingerprints: int = 0

    def share(self, d: int) -> float | None:
        """The share of judged pairs at distance ``d`` that are copies."""
        n = self.judged.get(d, 0)
        return self.copies.get(d, 0) / n if n else None


def judge_texts(copy: str, original: str, rules: Any = None, both_ways: bool = False
                ) -> float | None:
    """Whether ``copy`` copies ``original`` by the crawl's text check on the two whole
    texts (:func:`dedup.decide.shares_pass`; ``rules``: its thresholds, the crawl's when
    not given): the share of the copy's three-word shingles found in the original's when
    it is a copy, else ``None``. ``both_ways``: two stored pages, either may be the copy."""
    from dedup.decide import Rules, shares_pass

    rules = rules or Rules()
    shared, a, b = _shared(copy, original)
    if not a or not b:
        return None
    found = shares_pass(shared / a, shared / b, a, b, rules)
    if found is None and both_ways:
        found = shares_pass(shared / b, shared / a, b, a, rules)
    return found


def _shared(one: str, other: str) -> tuple[int, int, int]:
    """The three-word shingles two texts share, and how many each has."""
    from dedup.sketch import shingle_values

    a, b = shingle_values(one), shingle_values(other)
    return len(np.intersect1d(a, b, assume_unique=True)), len(a), len(b)


def shown_share(pair: Pair) -> float:
    """The share shown with a pair: the copying page's shingles found in the other's
    (for two stored pages, the larger of the two ways)."""
    shared, a, b = _shared(pair.left_text, pair.right_text)
    if not a or not b:
        return 0.0
    return shared / a if pair.kind == "dropped" else shared / min(a, b)


def wilson(copies: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a share ``copies / n``."""
    if n == 0:
        return 0.0, 1.0
    p = copies / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def calibrate(reads: StoreReads, up_to: int = MAX_DISTANCE, sample: int = 30,
              examples: int = 2, containment: float | None = None, verify: int = 10,
              target: float = 0.9, seed: int = 1, progress: Any = None) -> Calibration:
    """Gather, sample and judge the pairs (see the module docstring; ``containment``: the
    text check's threshold, the crawl's when not given)."""
    from dedup.all_pairs import find_all
    from dedup.decide import Rules

    rules = Rules() if containment is None else Rules(verify_containment=containment)

    rng = random.Random(seed)
    result = Calibration()
    ids: list[str] = []
    simhashes: list[int] = []
    verifiers: dict[str, int] = {}
    for page_id, simhash, second in reads.fingerprints():
        ids.append(page_id)
        simhashes.append(simhash)
        if second is not None:
            verifiers[page_id] = second
        if progress:
            progress(1)
    result.fingerprints = len(ids)
    by_distance: dict[int, list[tuple[str, Any, Any]]] = {}
    if len(ids) > 1:
        for i, j, d in find_all(np.array(simhashes, dtype=np.uint64), up_to):
            by_distance.setdefault(int(d), []).append(("stored", ids[int(i)], ids[int(j)]))
    for match_id, distance, original_id in reads.near_matches(up_to):
        by_distance.setdefault(distance, []).append(("dropped", match_id, original_id))
    for d in range(up_to + 1):
        candidates = by_distance.get(d, [])
        result.found[d] = len(candidates)
        chosen = rng.sample(candidates, min(sample, len(candidates)))
        judged = [_judge(reads, d, kind, a, b, rules, verify, verifiers)
                  for kind, a, b in chosen]
        judged = [p for p in judged if p.copy is not None]
        result.judged[d] = len(judged)
        result.copies[d] = sum(1 for p in judged if p.copy)
        result.examples[d] = judged[:examples]
    k = None
    for d in range(up_to + 1):
        share = result.share(d)
        if share is None:
            continue
        if share < target:
            break
        k = d
    result.suggested_k = k
    return result


def _judge(reads: StoreReads, d: int, kind: str, a: str, b: str, rules: Any, verify: int,
           verifiers: dict[str, int]) -> Pair:
    left_url, left_text = reads.url_and_text("matches" if kind == "dropped" else "pages", a)
    right_url, right_text = reads.url_and_text("pages", b)
    pair = Pair(d, left_url, right_url, kind, left_text=left_text, right_text=right_text)
    if pair.left_text and pair.right_text:
        pair.overlap = judge_texts(pair.left_text, pair.right_text, rules,
                                   both_ways=kind == "stored")
        pair.copy = pair.overlap is not None
    elif kind == "stored" and a in verifiers and b in verifiers:
        pair.copy = hamming(verifiers[a], verifiers[b]) <= verify
    return pair


# ------------------------------------------------------------------------------ output
def table(result: Calibration, k: int) -> str:
    """The per-distance table as text."""
    lines = [(f"{'distance':>8}  {'pairs':>9}  {'judged':>6}  {'copies':>6}  "
             f"{'share':>5}  95% interval")]
    for d in sorted(result.found):
        n, c = result.judged[d], result.copies[d]
        share = f"{c / n:5.2f}" if n else "    -"
        low, high = wilson(c, n)
        interval = f"{low:.2f}-{high:.2f}" if n else ""
        mark = "  <- k" if d == k else ""
        lines.append(f"{d:>8}  {result.found[d]:>9,}  {n:>6}  {c:>6}  {share}  "
                     f"{interval}{mark}")
    return "\n".join(lines)


def figure(result: Calibration, k: int, path: Path) -> None:
    """The share of copies per distance with its interval, and the pairs found."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ds = [d for d in sorted(result.found) if result.judged[d]]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5.2), sharex=True,
                                      height_ratios=[2, 1])
    if ds:
        shares = [result.copies[d] / result.judged[d] for d in ds]
        bounds = [wilson(result.copies[d], result.judged[d]) for d in ds]
        top.errorbar(ds, shares, yerr=[[max(0.0, s - lo) for s, (lo, _) in zip(shares, bounds)],
                                       [max(0.0, hi - s) for s, (_, hi) in zip(shares, bounds)]],
                     fmt="o-", color="#3b6ea8", capsize=3)
    top.axvline(k + 0.5, color="#c0392b", linestyle="--", label=f"k = {k}")
    top.set_ylim(-0.02, 1.02)
    top.set_ylabel("share that are copies")
    top.legend()
    xs = sorted(result.found)
    bottom.bar(xs, [result.found[d] for d in xs], color="#888888")
    bottom.set_yscale("log")
    bottom.set_ylim(bottom=0.7)  # bars of 1 stay visible
    bottom.set_ylabel("pairs (log)")
    bottom.set_xlabel("Hamming distance")
    bottom.set_xticks(xs)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def page(result: Calibration, k: int, png: Path, containment: float) -> str:
    """``calibrate.html``: one self-contained file."""
    esc = html.escape
    data = base64.b64encode(png.read_bytes()).decode()
    parts = [("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
             "<title>simcrawl calibrate</title><style>"
             "body{font-family:sans-serif;max-width:72em;margin:2em auto;color:#222}"
             "table{border-collapse:collapse}td,th{padding:.2em .6em;border-bottom:1px "
             "solid #ddd;text-align:right}.side{display:grid;grid-template-columns:1fr 1fr;"
             "gap:1em}.text{white-space:pre-wrap;font-size:.85em;max-height:20em;"
             "overflow:auto;border:1px solid #ddd;padding:.5em}mark.gone{background:#f8c9c9}"
             "mark.added{background:#c9ecc9}</style></head><body>"),
             "<h1>Choosing k: which distances are copies on these sites</h1>",
             (f"<p>{result.fingerprints:,} stored fingerprints. A pair counts as a copy by "
             f"the crawl's own text check: at least {containment:.0%} of one page's "
             "three-word shingles are in the other's, and at least half of the other's are "
             "its. Suggested k: <strong>"
             f"{result.suggested_k if result.suggested_k is not None else 'none'}"
             f"</strong> (the crawl's k: {k}).</p>"),
             f"<img alt='share of copies per distance' src='data:image/png;base64,{data}'>",
             ("<table><tr><th>distance</th><th>pairs</th><th>judged</th><th>copies</th>"
             "<th>share</th><th>95% interval</th></tr>")]
    for d in sorted(result.found):
        n, c = result.judged[d], result.copies[d]
        low, high = wilson(c, n)
        parts.append(f"<tr><td>{d}</td><td>{result.found[d]:,}</td><td>{n}</td><td>{c}</td>"
                     f"<td>{c / n:.2f}</td><td>{low:.2f}–{high:.2f}</td></tr>" if n else
                     f"<tr><td>{d}</td><td>{result.found[d]:,}</td><td>0</td><td></td>"
                     "<td></td><td></td></tr>")
    parts.append("</table>")
    for d in sorted(result.examples):
        for p in result.examples[d]:
            if not (p.left_text and p.right_text):
                continue
            shown = side_by_side(p.right_text, p.left_text)
            verdict = "copy" if p.copy else "not a copy"
            share = p.overlap if p.overlap is not None else shown_share(p)
            parts.append(f"<h3>distance {d}: {verdict} (containment {share:.2f}, "
                         f"{'dropped copy' if p.kind == 'dropped' else 'both stored'})</h3>"
                         f"<div class='side'><div><p>{esc(p.right_url)}</p><div class='text'>"
                         f"{shown.original}</div></div><div><p>{esc(p.left_url)}</p>"
                         f"<div class='text'>{shown.copy}</div></div></div>")
    parts.append("</body></html>")
    return "\n".join(parts)
