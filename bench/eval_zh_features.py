"""Simhash features for Chinese text: character bigrams (simcrawl's default) against words
from a segmenter with term-frequency weights (jieba; the approach of the Java simhash in
the project's seeds, which segments with IKAnalyzer and hashes with FNV-1).

Copies of the real essays of ``shared/data/zh-dev`` are generated with a fixed seed (words
replaced by other words of the same length at 2, 5, 10 and 20%; 10% homophones; ads and
navigation inserted; paragraphs shuffled; 30% of an essay inside another) and each is
compared with all 223 essays: recall is the share of copies within k of their source,
false matches are pairs of different essays within k. Both feature sets go through the
same kernel (XXH3-64, term-frequency weights): for jieba, each word becomes one token.
Reads the data from ``../shared``; development figures. jieba is installed into
``.bench-peers/`` on first use.

    python bench/eval_zh_features.py [--data PATH]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import numpy as np
import xxhash
from _peers import SHARED, essays_and_jieba  # bench/ is the script's folder
from eval_pinyin import insert_ads
from quality_chinese import HAN, excerpt, shuffled, substitute

from crawler.examples.demosite import homophone_groups, swap_homophones
from dedup import fingerprint, hamming
from dedup.all_pairs import find_all

DEFAULT_DATA = SHARED / "data" / "zh-dev"
SEED = 20072
KS = (3, 6)


def word_text(text: str, jieba: object) -> str:
    """The text as jieba's words, each one token for the simhash kernel (its hash, in
    hex letters): word features, weighted by term frequency."""
    words = [w for w in jieba.lcut(text) if w.strip() and (HAN.match(w) or w.isalnum())]  # type: ignore[attr-defined]
    return " ".join(f"w{xxhash.xxh64_intdigest(w.encode()):x}" for w in words)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    files, jieba = essays_and_jieba(args.data)
    started = time.perf_counter()
    essays = [f.read_text(encoding="utf-8") for f in files]
    rng = random.Random(SEED)
    vocabulary: dict[int, set[str]] = {}
    for text in essays:
        for w in jieba.lcut(text):
            if all(HAN.fullmatch(c) for c in w):
                vocabulary.setdefault(len(w), set()).add(w)
    vocab = {n: sorted(ws) for n, ws in vocabulary.items() if len(ws) > 20}
    groups = homophone_groups()
    kinds: dict[str, list[tuple[int, str]]] = {}
    for rate in (0.02, 0.05, 0.10, 0.20):
        kinds[f"words replaced {round(rate * 100)}%"] = [
            (i, substitute(t, rate, rng, jieba, vocab)) for i, t in enumerate(essays)]
    kinds["homophones 10%"] = [(i, swap_homophones(t, 0.10, rng, groups))
                               for i, t in enumerate(essays)]
    kinds["ads inserted"] = [(i, insert_ads(t, rng)) for i, t in enumerate(essays)]
    kinds["paragraphs shuffled"] = [(i, shuffled(t, rng)) for i, t in enumerate(essays)]
    kinds["30% in another essay"] = [(i, excerpt(t, essays[(i + 1) % len(essays)], rng))
                                     for i, t in enumerate(essays)]
    features = {"character bigrams (simcrawl)": lambda t: t,
                "jieba words, TF": lambda t: word_text(t, jieba)}
    rows = []
    for name, make in features.items():
        t0 = time.perf_counter()
        base = [fingerprint(make(t)).simhash for t in essays]
        seconds = time.perf_counter() - t0
        row = {"features": name, "seconds": seconds}
        pairs = find_all(np.array(base, dtype=np.uint64), max(KS))
        for k in KS:
            row[f"false {k}"] = int(sum(1 for _, _, d in pairs if d <= k))
        for kind, copies in kinds.items():
            dist = [hamming(fingerprint(make(text)).simhash, base[i]) for i, text in copies]
            for k in KS:
                row[f"{kind} {k}"] = sum(d <= k for d in dist) / len(dist)
        rows.append(row)
    print(f"{len(essays)} zh-dev essays, {sum(map(len, kinds.values())):,} generated copies; "
          f"{time.perf_counter() - started:.0f} s (development figures)\n")
    header = "| copies found within k (k = 3 / 6) | " + " | ".join(r["features"] for r in rows)
    print(header + " |\n|---|" + "---:|" * len(rows))
    for kind in kinds:
        print(f"| {kind} | " + " | ".join(f"{r[f'{kind} 3']:.2f} / {r[f'{kind} 6']:.2f}"
                                          for r in rows) + " |")
    print("| false matches among the essays' 24,753 pairs | "
          + " | ".join(f"{r['false 3']} / {r['false 6']}" for r in rows) + " |")
    print("| seconds to fingerprint the 223 essays | "
          + " | ".join(f"{r['seconds']:.2f}" for r in rows) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
