"""The text sketch's error against exact containment, on the development pairs.

The crawl's text check reads a candidate's sketch (:mod:`dedup.sketch`), not its text.
For every labelled pair of each development set, both ways round (one page at hand in
full, the other as a sketch), this compares the sketch's containment with the exact one
(:func:`dedup.overlap.containment`) for several sketch sizes: mean and 99th-percentile
absolute error, and how many pair decisions flip at the text check's threshold. Prints a
table per set; reads the data from ``../shared`` (never copied into the repository);
development figures.

    python bench/quality_sketch.py [--data PATH ...] [--sizes 32 64 120 128 256]
                                   [--threshold 0.8]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import numpy as np
from _peers import missing_data  # bench/ is the script's folder: on sys.path

from dedup import extract_text
from dedup.overlap import containment, shingles
from dedup.sketch import TextSketch, values_of

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_DATA = [SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"]


def texts_of(data: Path) -> tuple[dict[str, str], list[dict]]:
    """Each page's text as the crawl extracts it, and the labelled pairs."""
    texts = {}
    for line in (data / "pages.jsonl").open():
        row = json.loads(line)
        html = gzip.decompress((data / "pages" / f"{row['page']}.html.gz").read_bytes())
        texts[row["page"]] = extract_text(html, url=row["url"]).text
    return texts, [json.loads(line) for line in (data / "pairs.jsonl").open()]


def measure(texts: dict[str, str], pairs: list[dict], size: int, threshold: float
            ) -> dict[str, float]:
    hashes = {name: shingles(t) for name, t in texts.items()}
    values = {name: values_of(h) for name, h in hashes.items()}
    sketches = {name: TextSketch.of_values(v, size) for name, v in values.items()}
    errors, flips, samples = [], 0, []
    for pair in pairs:
        exact = containment(hashes[pair["a"]], hashes[pair["b"]])
        for here, there in ((pair["a"], pair["b"]), (pair["b"], pair["a"])):
            est, n = sketches[there].containment(values[here])
            errors.append(abs(est - exact))
            samples.append(n)
            flips += (est >= threshold) != (exact >= threshold)
    nbytes = np.mean([len(s.to_bytes()) for s in sketches.values()])
    return {"size": size, "bytes": float(nbytes), "mean": float(np.mean(errors)),
            "p99": float(np.percentile(errors, 99)), "max": float(np.max(errors)),
            "flips": flips, "decisions": len(errors), "sample": float(np.median(samples))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 120, 128, 256])
    parser.add_argument("--threshold", type=float, default=0.8,
                        help="the text check's containment threshold (default 0.8)")
    args = parser.parse_args()
    for data in args.data:
        if not (data / "pages.jsonl").is_file():
            raise missing_data(data, "A near-duplicate development set (pages.jsonl)")
    for data in args.data:
        started = time.perf_counter()
        texts, pairs = texts_of(data)
        print(f"\n{data.name}: {len(texts)} pages, {len(pairs)} labelled pairs, each "
              f"decided both ways; threshold {args.threshold} (development figures)\n")
        print("| values kept | bytes/page (mean) | median sample | mean abs error | "
              "p99 abs error | max abs error | decisions flipped |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for size in args.sizes:
            r = measure(texts, pairs, size, args.threshold)
            print(f"| {size} | {r['bytes']:.0f} | {r['sample']:.0f} | {r['mean']:.4f} | "
                  f"{r['p99']:.4f} | {r['max']:.4f} | {r['flips']} / {r['decisions']} |")
        print(f"\n({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
