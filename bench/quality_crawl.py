"""The crawl's own decision on the development set, in crawl order and on the labelled pairs.

``quality_neardup.py`` models the decision; this runs the real one: the crawler's
extraction and fingerprints, and :class:`dedup.deduplicator.Deduplicator` on the embedded Redis
and MongoDB (the atomic check-and-add, the exact-copy registry, the second opinion on
every candidate), with the crawl's settings.

* **Crawl order**: the pages of ``shared/data/near-dup-dev`` are decided one by one in
  ``stream_order.txt``. A page *should be dropped* when a page before it is the same
  article: connected to it by labelled duplicate pairs (``pairs.jsonl``; a heavy rewrite
  or a page sharing only a template is not). A drop is *right* when the original it names
  is the same article, *wrong* otherwise. Precision = right / drops, recall = right /
  should-be-dropped. A *document lost* is an article none of whose pages is stored (each
  dropped as a copy of another article's page): the crawl no longer holds its text.
* **Pairs**: each labelled pair decided alone (the first page admitted into an empty
  index, then the second decided): precision and recall of "dropped as a copy of the
  first".

Per class of variant (the page name's suffix: ``P`` the original, ``A``/``B``... the
variants, ``E`` rewrites, ``X``/``Y`` other negatives) it also counts the misses and
wrong drops. Reads the data from ``../shared`` (never copied into the repository);
development figures.

    python bench/quality_crawl.py [--data PATH ...] [-k K] [--containment C] [--trust T]
                                  [--verify V] [--show] [--json]

Each option's default is the crawl's own setting (:class:`dedup.config.DedupConfig`).

With several ``--data`` sets it prints each, then the figures of all of them together.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _peers import missing_data  # bench/ is the script's folder: on sys.path

from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import RedisStore
from dedup.adapters.redis_templates import HostTemplates
from dedup.config import DedupConfig
from dedup.decide import NEW, Rules
from dedup.deduplicator import Deduplicator
from dedup.index import NearDuplicateIndex
from dedup.page import Page
from dedup.reading import EXTRACTIONS, fingerprint_params, read_html
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, connect_redis
from dedup.adapters.mongo import PageStore

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "near-dup-dev"


def variant(name: str) -> str:
    """The class of a page from its name (``1ee91d1fce-A1`` -> ``A``)."""
    return re.sub(r"\d+$", "", name.rsplit("-", 1)[-1])[:1] or "?"


def articles(pages: list[str], pairs: list[dict]) -> dict[str, int]:
    """Page -> its article: the connected components of the labelled duplicate pairs."""
    parent = {p: p for p in pages}

    def root(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for pair in pairs:
        if pair["duplicate"]:
            parent[root(pair["a"])] = root(pair["b"])
    roots: dict[str, int] = {}
    return {p: roots.setdefault(root(p), len(roots)) for p in pages}


def candidates(data: Path, extraction: str = "simcrawl"
               ) -> tuple[dict[str, dict], list[dict], list[str]]:
    """Each page read as the crawler reads it (:func:`dedup.reading.read_html`, the default
    settings; ``extraction``: one of :data:`dedup.reading.EXTRACTIONS`), the labelled pairs,
    and the stream order."""
    params = (extraction, *fingerprint_params(DedupConfig())[1:])
    rows = [json.loads(line) for line in (data / "pages.jsonl").open()]
    out = {}
    for row in rows:
        html = gzip.decompress((data / "pages" / f"{row['page']}.html.gz").read_bytes())
        page = read_html(html, row["url"], params)
        out[row["page"]] = {"url": row["url"], "checksum": page.checksum,
                            "simhash": page.simhash, "short": page.short,
                            "verify": page.verify, "text": page.text, "title": page.title,
                            "description": page.description, "listing": page.listing,
                            "items": page.items, "canonical": page.canonical,
                            "published": page.published}
    pairs = [json.loads(line) for line in (data / "pairs.jsonl").open()]
    order = [line.strip() for line in (data / "stream_order.txt").open() if line.strip()]
    return out, pairs, order


def deduplicator(redis_url: str, mongo_uri: str, namespace: str, k: int,
                 verify: int | None, containment: float | None, trust: int,
                 template_pages: int) -> Deduplicator:
    client = connect_redis(redis_url)
    store = RedisStore(client, namespace)
    store.clear()
    pages = PageStore(connect_mongo(mongo_uri), namespace)
    pages.db.client.drop_database(namespace)
    rules = Rules(trust_distance=min(trust, k), verify_distance=verify,
                  verify_containment=containment)
    return on_servers(NearDuplicateIndex(store, k=k, capacity=10_000), client, pages,
                      namespace, rules,
                      templates=HostTemplates(client, namespace, template_pages)
                      if template_pages else None)


def candidate(name: str, fp: dict, suffix: str = "") -> Page:
    url = fp["url"] + suffix
    return Page(url, url.split("/")[2], fp["checksum"], fp["simhash"], fp["short"],
                verify=fp["verify"], text=fp["text"], title=fp["title"],
                description=fp["description"], listing=fp["listing"], items=fp["items"],
                canonical=fp["canonical"], published=fp["published"])


def crawl_order(fps: dict[str, dict], order: list[str], article: dict[str, int],
                dedup: Deduplicator) -> dict[str, Any]:
    by_id: dict[str, str] = {}
    seen: set[int] = set()
    kept: set[int] = set()  # articles with a page stored (admitted, or kept by a turn)
    right = wrong = should = 0
    missed: Counter[str] = Counter()
    wrongs: Counter[str] = Counter()
    cases: list[str] = []  # each miss and wrong drop, by page name
    turns: list[str] = []  # each match turned round (the pages said which came first)
    for name in order:
        decision = dedup.decide([candidate(name, fps[name])])[0]
        turned = by_id.get(decision.page_id) if decision.turn is not None else None
        by_id[decision.page_id] = name
        expected = article[name] in seen
        should += expected
        seen.add(article[name])
        if decision.kind == NEW or turned is not None:
            kept.add(article[name])
        if turned is not None:  # kept as the original of the page it copies, stored first
            turns.append(f"turned {name} ({decision.turn.reason}): {turned} is its copy")
            if article[turned] == article[name]:
                right += 1
            else:
                wrong += 1
                wrongs[variant(turned)] += 1
                cases.append(f"wrong  {turned} turned into a copy of {name}")
            continue
        if decision.kind == NEW:
            if expected:
                missed[variant(name)] += 1
                cases.append(f"missed {name}")
            continue
        original = by_id.get(decision.original_id or "", "")
        if original and article[original] == article[name]:
            right += 1
        else:
            wrong += 1
            wrongs[variant(name)] += 1
            cases.append(f"wrong  {name} as a copy of {original or decision.original_id} "
                         f"(d={decision.distance}, containment {decision.containment})")
    drops = right + wrong
    lost = sorted({name for name in order if article[name] not in kept},
                  key=lambda name: article[name])
    return {"precision": right / drops if drops else 1.0, "recall": right / should,
            "right": right, "wrong": wrong, "should": should, "missed": missed,
            "lost": len(seen - kept), "documents": len(seen), "lost_pages": lost,
            "wrong_by_class": wrongs, "cases": cases, "turns": turns}


def on_pairs(fps: dict[str, dict], pairs: list[dict], make: Any) -> dict[str, Any]:
    tp = fp_ = fn = 0
    missed: Counter[str] = Counter()
    wrongs: Counter[str] = Counter()
    kinds: Counter[str] = Counter()  # pairs of each labelled kind
    dropped_kinds: Counter[str] = Counter()  # ... in which the second page was dropped
    for n, pair in enumerate(pairs):
        dedup = make(f"pairs{n}")
        dedup.decide([candidate(pair["a"], fps[pair["a"]])])
        got = dedup.decide([candidate(pair["b"], fps[pair["b"]], "#b")])[0]
        dropped = got.kind != NEW or got.turn is not None  # turned: the first is the copy
        if pair.get("kind"):
            kinds[pair["kind"]] += 1
            dropped_kinds[pair["kind"]] += dropped
        if pair["duplicate"] and dropped:
            tp += 1
        elif pair["duplicate"]:
            fn += 1
            missed[variant(pair["a"]) + variant(pair["b"])] += 1
        elif dropped:
            fp_ += 1
            wrongs[variant(pair["a"]) + variant(pair["b"])] += 1
    return {"precision": tp / (tp + fp_) if tp + fp_ else 1.0, "recall": tp / (tp + fn),
            "tp": tp, "fp": fp_, "fn": fn, "missed": missed, "wrong_by_class": wrongs,
            "kinds": {k: (dropped_kinds[k], kinds[k]) for k in sorted(kinds)}}


def summed(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Crawl-order or pair results of several sets, as one."""
    keys = ("right", "wrong", "should", "lost", "documents") if "right" in rows[0] else ("tp", "fp", "fn")
    total = {k: sum(r[k] for r in rows) for k in keys}
    if "right" in total:
        drops = total["right"] + total["wrong"]
        total["precision"] = total["right"] / drops if drops else 1.0
        total["recall"] = total["right"] / total["should"]
    else:
        found = total["tp"] + total["fp"]
        total["precision"] = total["tp"] / found if found else 1.0
        total["recall"] = total["tp"] / (total["tp"] + total["fn"])
    return total


def table(stream: dict[str, Any], labelled: dict[str, Any]) -> None:
    print("| | precision | recall | F1 | right / should | wrong | documents lost |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| crawl order | {stream['precision']:.3f} | {stream['recall']:.3f} | "
          f"{f1(stream):.3f} | {stream['right']} / {stream['should']} | {stream['wrong']} | "
          f"{stream['lost']} of {stream['documents']} |")
    print(f"| pairs | {labelled['precision']:.3f} | {labelled['recall']:.3f} | "
          f"{f1(labelled):.3f} | {labelled['tp']} / {labelled['tp'] + labelled['fn']} | "
          f"{labelled['fp']} | |")


def f1(r: dict) -> float:
    p, q = float(r["precision"]), float(r["recall"])
    return 2 * p * q / (p + q) if p + q else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=[DEFAULT_DATA],
                        help="development sets (several: each, then together)")
    crawl = DedupConfig()  # the crawl's own settings (dedup/config.py): the defaults here
    parser.add_argument("-k", type=int, default=crawl.max_distance,
                        help=f"the index's k (default {crawl.max_distance}, the crawl's)")
    parser.add_argument("--containment", type=float, default=crawl.verify_containment,
                        help="the text check's threshold (-1: off; default "
                        f"{crawl.verify_containment}, the crawl's)")
    parser.add_argument("--template-pages", type=int, default=crawl.template_pages,
                        help="admitted pages of a host that make a line its template text "
                        f"(0: off; default {crawl.template_pages}, the crawl's)")
    parser.add_argument("--trust", type=int, default=crawl.trust_distance,
                        help="distance trusted without the text check (default "
                        f"{crawl.trust_distance}, the crawl's)")
    parser.add_argument("--verify", type=int, default=crawl.verify_distance,
                        help="second-opinion distance (-1: off; default "
                        f"{crawl.verify_distance}, the crawl's)")
    parser.add_argument("--extraction", choices=EXTRACTIONS, default="simcrawl",
                        help="simcrawl's own reading (the crawl's default, DEDUP_EXTRACTOR), "
                        "trafilatura fast (DEDUP_EXTRACTOR=trafilatura) or trafilatura "
                        "with its fallbacks (and DEDUP_EXTRACT_FAST=False)")
    parser.add_argument("--show", action="store_true",
                        help="list the crawl order's misses and wrong drops by page")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON line of each set's figures last")
    args = parser.parse_args()
    started = time.perf_counter()
    verify = None if args.verify < 0 else args.verify
    containment = None if args.containment < 0 else args.containment
    results = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(tmp) as services:
        redis_url, mongo_uri = services.redis_url or "", services.mongo_uri or ""

        def make(namespace: str) -> Deduplicator:
            return deduplicator(redis_url, mongo_uri, namespace, args.k, verify, containment,
                                args.trust, args.template_pages)

        for data in args.data:
            if not (data / "pages.jsonl").is_file():
                raise missing_data(data, "The near-duplicate development set (pages.jsonl)")
            fps, pairs, order = candidates(data, args.extraction)
            article = articles(list(fps), pairs)
            stream = crawl_order(fps, order, article, make(f"stream{len(results)}"))
            labelled = on_pairs(fps, pairs, make)
            results.append((data, fps, pairs, stream, labelled))
    print(f"k = {args.k}, text check "
          f"{'off' if containment is None else containment}, trusted within {args.trust}, "
          f"template text after {args.template_pages or 'never'} pages, "
          f"second opinion {'off' if verify is None else verify}, "
          f"{args.extraction} extraction; "
          f"{time.perf_counter() - started:.0f} s (development figures)")
    for data, fps, pairs, stream, labelled in results:
        print(f"\n{data.name}: {len(fps)} pages, {len(pairs)} labelled pairs\n")
        table(stream, labelled)
        print(f"\ncrawl order, missed by class: {dict(sorted(stream['missed'].items()))}; "
              f"wrong drops by class: {dict(sorted(stream['wrong_by_class'].items()))}")
        print(f"pairs, missed by classes: {dict(sorted(labelled['missed'].items()))}; "
              f"wrong drops by classes: {dict(sorted(labelled['wrong_by_class'].items()))}")
        dated = sum(1 for fp in fps.values() if fp["published"] is not None)
        print(f"matches turned round in crawl order (the pages said which came first): "
              f"{len(stream['turns'])}; pages that say when they were published: "
              f"{dated} of {len(fps)}")
        if args.show:
            print("\n".join(stream["turns"]))
            print("\n".join(["\ncrawl order, page by page:"] + stream["cases"]))
            print("documents lost (no page of theirs stored): "
                  + ", ".join(stream["lost_pages"]))
        if labelled["kinds"]:
            print("\npairs by labelled kind: the second page dropped as a copy of the first")
            print("| kind | duplicate | dropped | pairs | share |")
            print("|---|---|---:|---:|---:|")
            dup = {p["kind"]: p["duplicate"] for p in pairs if p.get("kind")}
            for kind, (dropped, total) in labelled["kinds"].items():
                print(f"| {kind} | {'yes' if dup[kind] else 'no'} | {dropped} | {total} | "
                      f"{dropped / total:.1%} |")
    if len(results) > 1:
        print(f"\ntogether ({', '.join(r[0].name for r in results)}):\n")
        table(*(summed([r[i] for r in results]) for i in (3, 4)))
    if args.json:
        print(json.dumps({"bench": "quality_crawl", "sets": {
            data.name: {"crawl order": {k: stream[k] for k in
                                        ("precision", "recall", "wrong", "lost", "documents")},
                        "pairs": {k: labelled[k] for k in ("precision", "recall", "fp", "fn")},
                        "kinds": {kind: round(dropped / total, 4) for kind, (dropped, total)
                                  in labelled["kinds"].items()}}
            for data, _fps, _pairs, stream, labelled in results}}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
