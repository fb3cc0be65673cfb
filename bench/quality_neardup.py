"""Near-duplicate quality on the development set ``shared/data/near-dup-dev``.

For each feature setting (shingle size, number tokens kept or dropped) and each k, the
labelled pairs give precision and recall of "Hamming distance <= k"; the stream (pages fed
in ``stream_order.txt``) gives how many pages are dropped correctly (their match belongs
to their own cluster) and wrongly. Short texts are matched by checksum only, as in the
crawler. Reads the data from ``../shared`` (never copied into the repository).

    python bench/quality_neardup.py [--data PATH]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

from _peers import missing_data  # bench/ is the script's folder: on sys.path

from dedup import extract_text, fingerprint, hamming

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "near-dup-dev"


def load(data: Path, fast: bool = True
         ) -> tuple[dict[str, str], dict[str, str], list[dict], list[str]]:
    pages = [json.loads(line) for line in (data / "pages.jsonl").open()]
    cluster = {p["page"]: p["cluster"] for p in pages}
    texts = {}
    for p in pages:
        html = gzip.decompress((data / "pages" / f"{p['page']}.html.gz").read_bytes())
        texts[p["page"]] = extract_text(html, url=p["url"], fast=fast).text
    pairs = [json.loads(line) for line in (data / "pairs.jsonl").open()]
    order = [line.strip() for line in (data / "stream_order.txt").open() if line.strip()]
    return texts, cluster, pairs, order


def evaluate(texts, cluster, pairs, order, shingle: int, drop_numbers: bool, k: int,
             min_tokens: int, verify: int | None = None) -> dict[str, float]:
    """Precision and recall of the pairs, and the stream, for one setting; ``verify``: a
    near match also needs the second-opinion simhash (two-word shingles) within this."""
    fps = {name: fingerprint(t, shingle=shingle, drop_numbers=drop_numbers,
                             min_tokens=min_tokens) for name, t in texts.items()}
    second = {name: fingerprint(t, shingle=2, drop_numbers=drop_numbers,
                                min_tokens=min_tokens).simhash for name, t in texts.items()}

    def same(a: str, b: str) -> bool:
        fa, fb = fps[a], fps[b]
        if fa.checksum == fb.checksum:
            return True
        if fa.short or fb.short:
            return False
        if verify is not None and hamming(second[a], second[b]) > verify:
            return False
        return hamming(fa.simhash, fb.simhash) <= k

    tp = sum(1 for p in pairs if p["duplicate"] and same(p["a"], p["b"]))
    fp = sum(1 for p in pairs if not p["duplicate"] and same(p["a"], p["b"]))
    positives = sum(1 for p in pairs if p["duplicate"])
    # Stream: drop a page when it matches any page admitted before it.
    admitted: list[str] = []
    right = wrong = missed = 0
    for name in order:
        match = next((a for a in admitted if same(name, a)), None)
        has_original = any(cluster[a] == cluster[name] for a in admitted)
        if match is None:
            admitted.append(name)
            missed += has_original
        elif cluster[match] == cluster[name]:
            right += 1
        else:
            wrong += 1
            admitted.append(name)
    return {"precision": tp / (tp + fp) if tp + fp else 1.0, "recall": tp / positives,
            "stream_right": right, "stream_wrong": wrong, "stream_missed": missed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--min-tokens", type=int, default=30)
    parser.add_argument("--slow-extraction", action="store_true",
                        help="trafilatura with its fallback extractors (fast=False)")
    args = parser.parse_args()
    if not (args.data / "pages.jsonl").is_file():
        raise missing_data(args.data, "The near-duplicate development set (pages.jsonl)")
    started = time.perf_counter()
    texts, cluster, pairs, order = load(args.data, fast=not args.slow_extraction)
    print(f"{len(texts)} pages, {len(pairs)} labelled pairs "
          f"(extraction {time.perf_counter() - started:.1f} s)\n")
    print(f"{'shingle':>7} {'numbers':>8} {'k':>2} {'precision':>9} {'recall':>7} "
          f"{'F1':>5} {'stream ok':>9} {'wrong':>5} {'missed':>6}")
    for shingle in (1, 2, 3, 4):
        for drop in (False, True):
            for k in (3, 6):
                r = evaluate(texts, cluster, pairs, order, shingle, drop, k, args.min_tokens)
                f1 = 2 * r["precision"] * r["recall"] / max(r["precision"] + r["recall"], 1e-9)
                print(f"{shingle:>7} {'dropped' if drop else 'kept':>8} {k:>2} "
                      f"{r['precision']:>9.3f} {r['recall']:>7.3f} {f1:>5.3f} "
                      f"{r['stream_right']:>9} {r['stream_wrong']:>5} {r['stream_missed']:>6}")
    print("\nshingle 1, numbers kept, k = 3, with the crawler's second opinion (a near "
          "match also needs the simhash on two-word shingles within T):")
    print(f"{'T':>7} {'precision':>9} {'recall':>7} {'F1':>5} {'stream ok':>9} {'wrong':>5} "
          f"{'missed':>6}")
    for verify in (6, 8, 10, 12, 16, None):
        r = evaluate(texts, cluster, pairs, order, 1, False, 3, args.min_tokens, verify)
        f1 = 2 * r["precision"] * r["recall"] / max(r["precision"] + r["recall"], 1e-9)
        print(f"{'off' if verify is None else verify:>7} {r['precision']:>9.3f} "
              f"{r['recall']:>7.3f} {f1:>5.3f} {r['stream_right']:>9} {r['stream_wrong']:>5} "
              f"{r['stream_missed']:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
