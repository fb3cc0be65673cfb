"""The reading judged on real labelled pages: WCXB's own metric, per page type, simcrawl's
reading beside trafilatura's in the same run.

The Web Content eXtraction Benchmark (Murrough-Foley/web-content-extraction-benchmark)
gives each real page a ground truth (``main_content``, ``with`` and ``without``
snippets) and scores an extractor with its ``evaluate.py``: token precision, recall and F1
of the text against ``main_content`` (bags of lower-cased ``\\w+`` words), averaged over
the pages of each type. This benchmark loads that script from the checkout given with
``--wcxb`` and calls its own ``word_f1``, ``snippet_check`` and ``get_page_type``: the
figures are the benchmark's, not a copy of its rules.

Pages read: WCXB's pages of its six types that are not articles (service, product,
collection, forum, listing, documentation), both splits; **never its article pages**,
which are the sources of a set kept back. Beside them, the articles of near-dup-dev-2
(its real pages, ``P``, whose truth is the WCXB page each was made from) and the real
pages of near-dup-dev-3 (``P``, with the set's own ``truth.jsonl``).

Readers, each on the same page in the same process:

- ``simcrawl``: the text the crawl decides on (:func:`dedup.reading.read_html`, the
  default settings: simcrawl's own reading, a thin text with its description);
- ``trafilatura``: ``trafilatura.extract`` with its defaults, as a user calls it (the
  figure WCXB publishes for trafilatura);
- ``trafilatura (crawl)``: the crawl's text under ``DEDUP_EXTRACTOR=trafilatura``.

The time is CPU milliseconds a page of one core (median), each reader from the HTML
string. One process a core reads a share of the pages. Development figures.

    python bench/quality_wcxb.py --wcxb PATH [--split dev test] [--processes N]
                                 [--show N] [--json]

Prints a table per set and one JSON line (``--json``: the per-page scores too).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import statistics
import sys
import time
import types
from collections import defaultdict
from pathlib import Path
from typing import Any

from _peers import SHARED

TYPES = ("service", "product", "collection", "forum", "listing", "documentation")
READERS = ("simcrawl", "trafilatura", "trafilatura (crawl)")
DEV2 = SHARED / "data" / "near-dup-dev-2"
DEV3 = SHARED / "data" / "near-dup-dev-3"

_EVAL: Any = None


def load_evaluate(repo: Path) -> types.ModuleType:
    """WCXB's ``evaluate.py`` from the checkout at ``repo``, as a module."""
    path = repo / "evaluate.py"
    if not path.is_file():
        raise SystemExit(f"--wcxb {repo}: no evaluate.py there (a checkout of "
                         "Murrough-Foley/web-content-extraction-benchmark is needed)")
    module = types.ModuleType("wcxb_evaluate")
    module.__file__ = str(path)
    exec(compile(path.read_text(), str(path), "exec"), module.__dict__)  # noqa: S102
    return module


def wcxb_pages(repo: Path, splits: list[str], evaluate: Any) -> list[dict[str, Any]]:
    """WCXB's pages of the six types that are not articles (article pages never read)."""
    pages = []
    for split in splits:
        for truth_file in sorted((repo / split / "ground-truth").glob("*.json")):
            doc = json.loads(truth_file.read_text())
            kind = evaluate.get_page_type(doc)
            truth = doc.get("ground_truth")
            if kind == "article" or not isinstance(truth, dict):
                continue
            html = repo / split / "html" / f"{truth_file.stem}.html.gz"
            if not html.is_file():
                continue
            pages.append({"set": f"wcxb {split}", "id": truth_file.stem, "type": kind,
                          "url": doc.get("url") or f"https://wcxb.example/{truth_file.stem}",
                          "path": str(html), "truth": truth.get("main_content") or "",
                          "with": truth.get("with") or [],
                          "without": truth.get("without") or []})
    return pages


def dev_pages(repo: Path) -> list[dict[str, Any]]:
    """The real pages (``P``) of near-dup-dev-2 (articles; the truth of the WCXB page each
    was made from) and near-dup-dev-3 (the set's ``truth.jsonl``), where present."""
    pages = []
    if (DEV2 / "pages.jsonl").is_file():
        for row in map(json.loads, (DEV2 / "pages.jsonl").open()):
            cluster = row["cluster"]
            if not row["page"].endswith("-P") or "-wcxb-" not in cluster:
                continue
            page_id = cluster.rsplit("-", 1)[1]
            for split in ("dev", "test"):
                truth_file = repo / split / "ground-truth" / f"{page_id}.json"
                if truth_file.is_file():
                    truth = json.loads(truth_file.read_text()).get("ground_truth") or {}
                    pages.append({"set": "near-dup-dev-2", "id": row["page"],
                                  "type": "article", "url": row["url"],
                                  "path": str(DEV2 / "pages" / f"{row['page']}.html.gz"),
                                  "truth": truth.get("main_content") or "",
                                  "with": truth.get("with") or [],
                                  "without": truth.get("without") or []})
                    break
    if (DEV3 / "truth.jsonl").is_file():
        truths = {t["cluster"]: t for t in map(json.loads, (DEV3 / "truth.jsonl").open())}
        for row in map(json.loads, (DEV3 / "pages.jsonl").open()):
            truth = truths.get(row["cluster"])
            if truth is None or not row["page"].endswith("-P"):
                continue
            pages.append({"set": "near-dup-dev-3", "id": row["page"],
                          "type": truth["page_type"], "url": row["url"],
                          "path": str(DEV3 / "pages" / f"{row['page']}.html.gz"),
                          "truth": truth.get("main_content") or "",
                          "with": truth.get("with") or [], "without": truth.get("without") or []})
    return pages


# ----------------------------------------------------------------------------- worker
def _init(repo: str) -> None:
    global _EVAL
    _EVAL = load_evaluate(Path(repo))


def read_one(page: dict[str, Any]) -> dict[str, Any]:
    """Each reader's text of one page, scored with WCXB's metric, and its CPU time."""
    import trafilatura
    from w3lib.encoding import html_to_unicode

    from dedup.config import DedupConfig
    from dedup.reading import fingerprint_params, read_html

    html = html_to_unicode(None, gzip.decompress(Path(page["path"]).read_bytes()))[1]
    params = fingerprint_params(DedupConfig())
    readers = {
        "simcrawl": lambda: read_html(html, page["url"], params).text,
        "trafilatura": lambda: trafilatura.extract(html) or "",
        "trafilatura (crawl)": lambda: read_html(
            html, page["url"], ("trafilatura", *params[1:])).text,
    }
    out: dict[str, Any] = {k: page[k] for k in ("set", "id", "type")}
    for name, read in readers.items():
        started = time.process_time()
        try:
            text = read()
        except Exception as exc:  # noqa: BLE001 - a reader's failure is its score of 0
            text = ""
            out.setdefault("errors", []).append(f"{name}: {exc!r}")
        spent = time.process_time() - started
        precision, recall, f1 = _EVAL.word_f1(text, page["truth"])
        out[name] = {"p": precision, "r": recall, "f1": f1, "ms": spent * 1000,
                     "with": _EVAL.snippet_check(text, page["with"]),
                     "without": _EVAL.snippet_check(text, page["without"]) if page["without"]
                     else 0.0, "chars": len(text)}
    return out


# ----------------------------------------------------------------------------- report
def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def table(title: str, rows: list[dict[str, Any]], order: tuple[str, ...]) -> dict[str, Any]:
    """Per page type: each reader's mean F1 (P / R), then all pages; the figures as a dict."""
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_type[row["type"]].append(row)
    kinds = [k for k in order if k in by_type] + sorted(set(by_type) - set(order))
    print(f"\n{title}: {len(rows)} pages\n")
    print("| page type | pages | " + " | ".join(f"{r} F1 (P / R)" for r in READERS) + " |")
    print("|---|---:|" + "---:|" * len(READERS))
    figures: dict[str, Any] = {}
    for kind, group in [*((k, by_type[k]) for k in kinds), ("all", rows)]:
        cells = []
        figures[kind] = {"pages": len(group)}
        for reader in READERS:
            f1, p, r = (mean([g[reader][m] for g in group]) for m in ("f1", "p", "r"))
            figures[kind][reader] = round(f1, 4)
            cells.append(f"{f1:.3f} ({p:.3f} / {r:.3f})")
        best = max(READERS, key=lambda reader: figures[kind][reader])
        cells = [f"**{c}**" if reader == best else c for c, reader in zip(cells, READERS)]
        label = f"**{kind}**" if kind == "all" else kind
        print(f"| {label} | {len(group)} | " + " | ".join(cells) + " |")
    snippets = " · ".join(
        f"{reader}: with {mean([g[reader]['with'] for g in rows]):.1%}, without "
        f"{mean([g[reader]['without'] for g in rows]):.1%}" for reader in READERS)
    print(f"\nsnippets found (WCXB's 'with', higher is better; 'without', lower): {snippets}")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wcxb", type=Path, required=True,
                        help="a checkout of Murrough-Foley/web-content-extraction-benchmark")
    parser.add_argument("--split", nargs="+", choices=("dev", "test"), default=["dev", "test"])
    parser.add_argument("--processes", type=int, default=multiprocessing.cpu_count())
    parser.add_argument("--show", type=int, default=0,
                        help="list the N pages of each type simcrawl reads worst beside "
                        "trafilatura")
    parser.add_argument("--no-dev", action="store_true",
                        help="WCXB's pages only, not the development sets' real pages")
    parser.add_argument("--json", type=Path, default=None,
                        help="write every page's scores to this file")
    args = parser.parse_args()
    evaluate = load_evaluate(args.wcxb)
    pages = wcxb_pages(args.wcxb, args.split, evaluate)
    if not args.no_dev:
        pages += dev_pages(args.wcxb)
    if not pages:
        raise SystemExit(f"--wcxb {args.wcxb}: no pages found under "
                         f"{', '.join(args.split)}/ground-truth")
    started = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(
            args.processes, initializer=_init, initargs=(str(args.wcxb),)) as pool:
        rows = pool.map(read_one, pages, chunksize=4)
    import trafilatura

    print(f"WCXB's metric (its evaluate.py's word_f1) on {len(rows)} pages, "
          f"{args.processes} processes, {time.perf_counter() - started:.0f} s; "
          f"trafilatura {trafilatura.__version__} (development figures)")
    errors = [e for row in rows for e in row.get("errors", [])]
    if errors:
        print(f"readers that failed on a page (scored 0): {len(errors)}; first: {errors[0]}")
    sets: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        sets[row["set"]].append(row)
    figures = {}
    wcxb = [r for r in rows if r["set"].startswith("wcxb")]
    if wcxb:
        figures["wcxb"] = table(f"WCXB, pages that are not articles ({', '.join(args.split)})",
                                wcxb, TYPES)
        for split in args.split:
            split_rows = sets.get(f"wcxb {split}", [])
            if split_rows and len(args.split) > 1:
                figures[f"wcxb {split}"] = table(f"WCXB {split}", split_rows, TYPES)
    for name in ("near-dup-dev-2", "near-dup-dev-3"):
        if sets.get(name):
            figures[name] = table(f"{name}, its real pages", sets[name], ("article", *TYPES))
    print("\nCPU ms a page of one core, median (mean): " + " · ".join(
        f"{reader} {statistics.median(r[reader]['ms'] for r in rows):.1f} "
        f"({mean([r[reader]['ms'] for r in rows]):.1f})" for reader in READERS))
    if args.show:
        for kind in ("article", *TYPES):
            group = sorted((r for r in wcxb or rows if r["type"] == kind),
                           key=lambda r: r["simcrawl"]["f1"] - r["trafilatura"]["f1"])
            print(f"\n{kind}: simcrawl's worst beside trafilatura")
            for r in group[:args.show]:
                s, t = r["simcrawl"], r["trafilatura"]
                print(f"  {r['set']} {r['id']}: simcrawl {s['f1']:.3f} (P {s['p']:.2f} "
                      f"R {s['r']:.2f}, {s['chars']} chars) trafilatura {t['f1']:.3f} "
                      f"(P {t['p']:.2f} R {t['r']:.2f}, {t['chars']} chars)")
    figures["ms"] = {reader: round(statistics.median(r[reader]["ms"] for r in rows), 2)
                     for reader in READERS}
    print(json.dumps({"bench": "quality_wcxb", **figures}))
    if args.json:
        args.json.write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
