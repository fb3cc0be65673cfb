"""The reading on every kind of page: how much of each page's own text it keeps, how much
of what it keeps is furniture, and whether different pages read as one text.

Sites built by real generators from sources kept in this repository
(``bench/sites/docsites.py``: Sphinx with alabaster, MkDocs with two of its themes,
Pelican with notmyidea: articles, API pages, pages of code, indexes, search pages, tag,
category, author and archive listings of one, two, three and many items, notes of one
sentence, question-and-answer threads). Each page is read as the crawl reads it
(:func:`dedup.reading.read_html`: the text the fingerprints are computed from) by both
readers, side by side: simcrawl's own (``DEDUP_EXTRACTOR=simcrawl``) and trafilatura's
(``DEDUP_EXTRACTOR=trafilatura``). Per page:

* **own text kept**: the share of the page's own text (its truth from the sources,
  token by token) that is in the reading; goal: median at least 0.95, every page 0.8;
* **furniture**: the share of the reading's tokens that are not in any unit of the
  documents the page shows (the theme's sidebar, navigation, footer, the generator's
  labels); goal: at most 0.1;
* **read as one**: pairs of pages with different own texts whose readings are the same
  text; goal: 0.

Pages without own text in their sources (a search page, an archive of titles) count
only in the last figure.

    python bench/quality_reading.py [--sites sphinx mkdocs ...] [--keep DIR] [--show N]
                                    [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "sites"))

from docsites import BUILDERS, Built, ensure_generators, joined

from dedup.config import DedupConfig
from dedup.reading import fingerprint_params, read_html

READERS = ("simcrawl", "trafilatura")
#: The goals (issue 54): own text kept, median and every page; furniture, every page.
OWN_MEDIAN, OWN_EACH, FURNITURE_EACH = 0.95, 0.8, 0.1
GRAM = 4  # tokens: a run this long found elsewhere is the same text


@dataclass
class Score:
    """One page read by one reader."""

    own: float | None  # None: the page has no own text in its sources
    furniture: float
    reading: str       # the reading's tokens, joined


def visible_text(html: str) -> str:
    """All the text of a page's body a browser can show: the visible text that is the
    crawl's last resort (:mod:`dedup.text`)."""
    from dedup.text import _deep_tree, _visible_body_text

    return _visible_body_text(_deep_tree(html))


def shown_part(unit: str, page: str) -> str:
    """What the page shows of a unit: all of it, or, for a unit cut short (a listing's
    summary ending in "..."), its longest beginning of at least eight tokens; ``""``."""
    if f" {unit} " in page:
        return unit
    words = unit.split()
    lo, hi = 8, len(words) - 1  # the longest beginning shown: a binary search
    if hi < lo or f" {' '.join(words[:lo])} " not in page:
        return ""
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if f" {' '.join(words[:mid])} " in page:
            lo = mid
        else:
            hi = mid - 1
    return " ".join(words[:lo])


def truth(site: Built, rel: str, html: str) -> tuple[list[str], list[str]]:
    """A page's own text as units (required) and the units it may also hold (allowed):
    the docstring of ``docsites``."""
    page = f" {joined(visible_text(html))} "
    if rel in site.names:
        names = sorted({j for n in site.names[rel] if (j := joined(n)) and f" {j} " in page})
        if not names:
            return [], []
        return names, names + [j for n in site.labels.get(rel, ()) if (j := joined(n))]
    required: dict[str, None] = {}
    allowed: dict[str, None] = {}
    for source in site.sources:
        shown = [(unit, cut) for unit in source.units if (cut := shown_part(unit.tokens, page))]
        if not any(unit.required and cut.count(" ") + 1 >= GRAM for unit, cut in shown):
            continue
        for unit, cut in shown:
            allowed[cut] = None
            if unit.required and cut.count(" ") + 1 >= GRAM:
                required[cut] = None
    return list(required), list(allowed)


def _grams(toks: list[str]) -> list[str]:
    return [" ".join(toks[i:i + GRAM]) for i in range(len(toks) - GRAM + 1)]


def _covered(toks: list[str], grams: set[str]) -> bytearray:
    """Which of ``toks`` lie in a run of :data:`GRAM` tokens that is in ``grams``."""
    mask = bytearray(len(toks))
    for i, gram in enumerate(_grams(toks)):
        if gram in grams:
            mask[i:i + GRAM] = b"\x01" * GRAM
    return mask


def score(reading: str, required: list[str], allowed: list[str]) -> Score:
    """A reading's own text kept and furniture, token by token: a token of a unit is kept
    when a run of :data:`GRAM` tokens around it is in the reading (a unit split or cut
    short still counts for what is there); a token of the reading is the page's own when
    such a run is in a unit the page shows, or when it is a short unit found whole."""
    toks = reading.split()
    own = None
    if required:
        have = set(_grams(toks))
        total = kept = 0
        padded = f" {reading} "
        for unit in required:
            words = unit.split()
            total += len(words)
            if len(words) < GRAM:  # a name on an index page: found whole
                kept += len(words) if f" {unit} " in padded else 0
            else:
                kept += sum(_covered(words, have))
        own = kept / total
    if not toks:
        return Score(own, 0.0, reading)
    grams = {g for unit in allowed for g in _grams(unit.split())}
    covered = _covered(toks, grams)
    padded = f" {reading} "
    starts, offset = {}, 1
    for i, tok in enumerate(toks):
        starts[offset] = i
        offset += len(tok) + 1
    for unit in allowed:  # the short ones, found whole
        n = unit.count(" ") + 1
        if n >= GRAM:
            continue
        needle = f" {unit} "
        at = padded.find(needle)
        while at >= 0:
            first = starts[at + 1]
            covered[first:first + n] = b"\x01" * n
            at = padded.find(needle, at + 1)
    return Score(own, 1 - sum(covered) / len(toks), reading)


def read_all(site: Built, reader: str) -> tuple[dict[str, str], float]:
    params = fingerprint_params(DedupConfig(extractor=reader))
    out, start = {}, time.perf_counter()
    for rel, html in site.pages.items():
        out[rel] = joined(read_html(html, f"http://{site.name.split()[0]}.test/{rel}",
                                    params).text)
    return out, time.perf_counter() - start


def same_text_pairs(scores: dict[str, Score], required: dict[str, list[str]]
                    ) -> list[tuple[str, str]]:
    """Pairs of pages with different own texts whose readings are the same text."""
    by_text: dict[str, list[str]] = defaultdict(list)
    for rel, s in scores.items():
        if s.reading:
            by_text[s.reading].append(rel)
    pairs = []
    for rels in by_text.values():
        for i, a in enumerate(rels):
            for b in rels[i + 1:]:
                if set(required[a]) != set(required[b]):
                    pairs.append((a, b))
    return pairs


def _fmt(values: list[float], how: str) -> str:
    if not values:
        return "–"
    if how == "median":
        return f"{statistics.median(values):.3f}"
    return f"{(min if how == 'min' else max)(values):.3f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sites", nargs="*", default=list(BUILDERS), choices=list(BUILDERS))
    ap.add_argument("--keep", type=Path, help="build the sites in DIR and keep them")
    ap.add_argument("--show", type=int, default=0, metavar="N",
                    help="print the N pages each reader keeps least of, and the pairs")
    ap.add_argument("--json", action="store_true", help="print a JSON line of the figures")
    args = ap.parse_args(argv)
    ensure_generators()
    work = args.keep or Path(tempfile.mkdtemp(prefix="simcrawl-reading-"))
    work.mkdir(parents=True, exist_ok=True)
    print("python bench/quality_reading.py " + " ".join(sys.argv[1:] if argv is None else argv))
    print("development figures: sites built from this repository's docs and modules\n")
    results: dict[str, dict[str, dict[str, Score]]] = {r: {} for r in READERS}
    pairs: dict[str, dict[str, list[tuple[str, str]]]] = {r: {} for r in READERS}
    kinds: dict[str, dict[str, str]] = {}
    timing = {r: 0.0 for r in READERS}
    npages = 0
    for name in args.sites:
        site = BUILDERS[name](work)
        kinds[name] = site.kind
        req, allow = {}, {}
        for rel, html in site.pages.items():
            req[rel], allow[rel] = truth(site, rel, html)
        for reader in READERS:
            readings, took = read_all(site, reader)
            timing[reader] += took
            scores = {rel: score(readings[rel], req[rel], allow[rel]) for rel in site.pages}
            results[reader][name] = scores
            pairs[reader][name] = same_text_pairs(scores, req)
        npages += len(site.pages)

    head = "| site | page kind | pages | " + " | ".join(
        f"{r}: own kept median / min / pages < {OWN_EACH} | furniture median / max / "
        f"pages > {FURNITURE_EACH}" for r in READERS) + " |"
    print(head)
    print("|" + "---|" * (3 + 2 * len(READERS)))
    summary: dict[str, dict[str, object]] = {}
    for name in args.sites:
        by_kind: dict[str, list[str]] = defaultdict(list)
        for rel, kind in kinds[name].items():
            by_kind[kind].append(rel)
        for kind in sorted(by_kind):
            rels = by_kind[kind]
            cells = []
            for reader in READERS:
                s = [results[reader][name][r] for r in rels]
                own = [x.own for x in s if x.own is not None]
                fur = [x.furniture for x in s if x.reading and x.own is not None]
                cells.append(f"{_fmt(own, 'median')} / {_fmt(own, 'min')} / "
                             f"{sum(o < OWN_EACH for o in own)} | {_fmt(fur, 'median')} / "
                             f"{_fmt(fur, 'max')} / {sum(f > FURNITURE_EACH for f in fur)}")
            print(f"| {name} | {kind} | {len(rels)} | " + " | ".join(cells) + " |")
    print()
    print("| reader | pages | own kept: median / min / pages < 0.8 | furniture: median / "
          "pages > 0.1 | pairs read as one | pages read as nothing | ms a page |")
    print("|---|---:|---|---|---:|---:|---:|")
    for reader in READERS:
        s = [x for name in args.sites for x in results[reader][name].values()]
        own = [x.own for x in s if x.own is not None]
        fur = [x.furniture for x in s if x.reading and x.own is not None]
        npairs = sum(len(p) for p in pairs[reader].values())
        empty = sum(1 for x in s if not x.reading)
        summary[reader] = {
            "pages": len(s), "own_median": round(statistics.median(own), 4),
            "own_min": round(min(own), 4), "own_below": sum(o < OWN_EACH for o in own),
            "furniture_median": round(statistics.median(fur), 4),
            "furniture_above": sum(f > FURNITURE_EACH for f in fur),
            "pairs": npairs, "empty": empty,
            "ms": round(1000 * timing[reader] / max(1, npages), 2)}
        print(f"| {reader} | {len(s)} | {statistics.median(own):.3f} / {min(own):.3f} / "
              f"{summary[reader]['own_below']} | {statistics.median(fur):.3f} / "
              f"{summary[reader]['furniture_above']} | {npairs} | {empty} | "
              f"{summary[reader]['ms']} |")
    mine = summary["simcrawl"]
    met = (mine["own_median"] >= OWN_MEDIAN and mine["own_below"] == 0
           and mine["furniture_above"] == 0 and mine["pairs"] == 0)
    print(f"\ngoal (median own >= {OWN_MEDIAN}, every page >= {OWN_EACH}, furniture <= "
          f"{FURNITURE_EACH}, 0 pairs read as one): simcrawl's reading "
          + ("meets it" if met else "does not meet it"))
    if args.show:
        for reader in READERS:
            print(f"\n{reader}: the pages it keeps least of")
            worst = sorted(((x.own, name, rel, x.furniture) for name in args.sites
                            for rel, x in results[reader][name].items() if x.own is not None))
            for own, name, rel, fur in worst[:args.show]:
                print(f"  {own:.3f} own, {fur:.3f} furniture  {name} {rel}")
            worst_f = sorted(((x.furniture, name, rel) for name in args.sites
                              for rel, x in results[reader][name].items()
                              if x.reading and x.own is not None),
                             reverse=True)
            print(f"{reader}: the pages with the most furniture")
            for fur, name, rel in worst_f[:args.show]:
                print(f"  {fur:.3f} furniture  {name} {rel}")
            for name in args.sites:
                for a, b in pairs[reader][name][:args.show]:
                    print(f"  read as one: {name} {a} = {b}")
    if args.json:
        print(json.dumps({"bench": "quality_reading", "readers": summary}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
