"""Main-text extraction, the crawl's largest cost per page: time and the decision's figures
for each candidate extractor, on the development pages, in one run.

Candidates (all read the same parsed page; each page's title and canonical are read as
the crawl reads them):

- simcrawl's own one-pass reading (:mod:`dedup.maintext`): the crawl's
  (``DEDUP_EXTRACTOR = "simcrawl"``);
- trafilatura, fast (no fallback extractors) on the marked main part, and full again when
  the fast text is thin (fewer than ``THIN_TOKENS`` words): the crawl's before
  (``DEDUP_EXTRACTOR = "trafilatura"``, :func:`dedup.reading.extract_main`);
- trafilatura, fast alone;
- trafilatura, full (with its readability and jusText fallbacks);
- jusText alone (its non-boilerplate paragraphs; a trafilatura dependency);
- the page's visible body text (no extraction: the floor, and the naive peer).

For each: CPU milliseconds per page (median and 90th percentile, extraction only), and
the decision on its texts — the crawl's own :class:`~dedup.deduplicator.Deduplicator` on
memory stores with the crawl's defaults — in crawl order (``stream_order.txt``: precision
and recall of the drops, wrong drops) on each development set. Reads the data from
``../shared`` (never copied into the repository); development figures.

    python bench/bench_extraction.py [--data PATH ...]
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _peers import missing_data  # bench/ is the script's folder: on sys.path
from quality_crawl import articles

from dedup.config import DedupConfig
from dedup.decide import NEW, TEMPLATE_ONLY
from dedup.deduplicator import in_memory
from dedup.reading import (
    declared_canonical,
    extract_main,
    fingerprint_params,
    fingerprint_text,
    page_title,
)
from dedup.text import ExtractedText, extract_text, parse_html

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_DATA = [SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"]


def trafilatura_fast(html: str, url: str, tree: Any) -> str:
    return extract_text(html, url, fast=True, tree=tree).text


def trafilatura_full(html: str, url: str, tree: Any) -> str:
    return extract_text(html, url, fast=False, tree=tree).text


def trafilatura_fast_then_full(html: str, url: str, tree: Any) -> str:
    return extract_main(html, url, "trafilatura", tree).text


def simcrawl_reading(html: str, url: str, tree: Any) -> str:
    return extract_main(html, url, "simcrawl", tree).text


def justext_only(html: str, url: str, tree: Any) -> str:
    import justext

    paragraphs = justext.justext(html.encode("utf-8"), justext.get_stoplist("English"))
    return "\n".join(p.text for p in paragraphs if not p.is_boilerplate)


def body_text(html: str, url: str, tree: Any) -> str:
    body = tree.find(".//body") if tree is not None else None
    if body is None:
        return ""
    lines = (" ".join(t.split()) for t in body.itertext())
    return "\n".join(line for line in lines if line)


EXTRACTORS: dict[str, Callable[[str, str, Any], str]] = {
    "simcrawl's own reading (the crawl's)": simcrawl_reading,
    "trafilatura fast, full when thin (the crawl's before)": trafilatura_fast_then_full,
    "trafilatura fast": trafilatura_fast,
    "trafilatura full": trafilatura_full,
    "jusText": justext_only,
    "visible body text": body_text,
}


def read(data: Path) -> tuple[list[dict], list[dict], list[str]]:
    rows = [json.loads(line) for line in (data / "pages.jsonl").open()]
    for row in rows:
        raw = gzip.decompress((data / "pages" / f"{row['page']}.html.gz").read_bytes())
        row["html"] = raw.decode("utf-8", "replace")
    pairs = [json.loads(line) for line in (data / "pairs.jsonl").open()]
    order = [line.strip() for line in (data / "stream_order.txt").open() if line.strip()]
    return rows, pairs, order


def evaluate(rows: list[dict], pairs: list[dict], order: list[str],
             extract: Callable[[str, str, Any], str]) -> dict[str, float]:
    params = fingerprint_params(DedupConfig())
    pages, times = {}, []
    for row in rows:
        tree = parse_html(row["html"])
        started = time.process_time()
        text = extract(row["html"], row["url"], tree)
        times.append(time.process_time() - started)
        pages[row["page"]] = fingerprint_text(
            ExtractedText(text, "text"), params, row["url"], title=page_title(tree),
            canonical=declared_canonical(tree, row["url"], row["html"]))
    article = articles(list(pages), pairs)
    decider, facts = in_memory()
    by_id: dict[str, str] = {}
    seen: set[int] = set()
    right = wrong = should = 0
    wrong_pages = []
    for name in order:
        page = pages[name]
        decision = decider.decide([page])[0]
        turned = by_id.get(decision.page_id) if decision.turn is not None else None
        by_id[decision.page_id] = name
        should += article[name] in seen
        seen.add(article[name])
        if turned is not None:  # kept as the original of the page stored first: a pair
            right += article[turned] == article[name]
            wrong += article[turned] != article[name]
        if decision.kind in (NEW, TEMPLATE_ONLY):
            if decision.kind == NEW:
                page.page_id = decision.page_id
                facts.add_page(page)
            continue
        original = by_id.get(decision.original_id or "")
        if original is not None and article[original] == article[name]:
            right += 1
        else:
            wrong += 1
            wrong_pages.append(f"{name} -> {original}")
    ms = sorted(t * 1000 for t in times)
    return {"median_ms": statistics.median(ms), "p90_ms": ms[int(len(ms) * 0.9)],
            "precision": right / (right + wrong) if right + wrong else 1.0,
            "recall": right / should if should else 1.0, "wrong": wrong,
            "wrong_pages": wrong_pages}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    args = parser.parse_args()
    for data in args.data:
        if not (data / "pages.jsonl").is_file():
            raise missing_data(data, "A near-duplicate development set (pages.jsonl)")
    results = []
    for data in args.data:
        rows, pairs, order = read(data)
        print(f"\n{data.name}: {len(rows)} pages, crawl order (development figures)\n")
        print("| extractor | CPU ms/page median | p90 | crawl order precision | recall | "
              "wrong drops |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, extract in EXTRACTORS.items():
            r = evaluate(rows, pairs, order, extract)
            results.append({"data": data.name, "extractor": name, **r})
            print(f"| {name} | {r['median_ms']:.1f} | {r['p90_ms']:.1f} | "
                  f"{r['precision']:.3f} | {r['recall']:.3f} | {r['wrong']} |", flush=True)
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
