"""Batch search on 1M fingerprints: simcrawl's ``find_all`` and ``query`` against
``simhash-pybind`` (the Moz C++ library's ``find_all``), same fingerprints, same run.

The set: ``--n`` random 64-bit fingerprints plus ``--planted`` copies of some of them at
distances 0 to k + 1. Correctness is checked two ways: the pairs of every planted
fingerprint are recomputed by a brute-force scan over the whole set, and the distinct
value pairs must equal simhash-pybind's.

    python bench/bench_find_all.py [--n 1000000] [--planted 2000] [-k 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _peers


def make_set(n: int, planted: int, k: int, seed: int = 20070508) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 2 ** 64, size=n, dtype=np.uint64)
    sources = rng.choice(n, planted, replace=False)
    copies = base[sources].copy()
    for i in range(planted):
        for bit in rng.choice(64, int(rng.integers(0, k + 2)), replace=False):
            copies[i] ^= np.uint64(1) << np.uint64(int(bit))
    values = np.concatenate([base, copies])
    planted_positions = np.concatenate([sources, np.arange(n, n + planted)])
    return values, planted_positions


def popcount(x: np.ndarray) -> np.ndarray:
    return np.bitwise_count(x) if hasattr(np, "bitwise_count") else np.array(
        [int(v).bit_count() for v in x])


def brute_pairs_of(values: np.ndarray, positions: np.ndarray, k: int) -> set[tuple[int, int]]:
    out = set()
    for p in np.unique(positions):
        dist = popcount(values ^ values[p])
        for q in np.flatnonzero(dist <= k):
            if q != p:
                out.add((min(int(p), int(q)), max(int(p), int(q))))
    return out


def worker_pybind(path: str, k: int, blocks: int) -> None:
    import simhash
    values = np.load(path)
    hashes = {int(v) for v in values}
    started = time.perf_counter()
    matches = simhash.find_all(hashes, blocks, k)
    elapsed = time.perf_counter() - started
    pairs = sorted(tuple(sorted((int(a), int(b)))) for a, b in matches)
    print(json.dumps({"seconds": elapsed, "pairs": [[f"{a:016x}", f"{b:016x}"] for a, b in pairs]}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--planted", type=int, default=2000)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_pybind(args.worker[0], int(args.worker[1]), int(args.worker[2]))
        return 0

    from dedup.batch import MemoryIndex, batch_design, find_all
    values, planted = make_set(args.n, args.planted, args.k)
    k = args.k
    print(f"Batch search: {len(values):,} fingerprints ({args.n:,} random + {args.planted:,} "
          f"planted copies at distance 0..{k + 1}), k = {k}\n")
    rows = []

    design = batch_design(len(np.unique(values)), k)
    times = []
    for _ in range(3):
        started = time.perf_counter()
        pairs = find_all(values, k)
        times.append(time.perf_counter() - started)
    rows.append((f"simcrawl find_all ({design.name})", min(times), len(pairs)))

    ours_planted = {(int(i), int(j)) for i, j, _ in pairs}
    expected = brute_pairs_of(values, planted, k)
    outside = {(i, j) for i, j in ours_planted if (i, j) not in expected}
    exact_planted = expected <= ours_planted
    ours_values = sorted({tuple(sorted((f"{int(values[i]):016x}", f"{int(values[j]):016x}")))
                          for i, j, d in pairs if d > 0})

    with tempfile.NamedTemporaryFile(suffix=".npy", delete=False) as fh:
        np.save(fh, values)
        path = fh.name
    peer = _peers.ensure("simhash-pybind", "simhash-pybind==0.0.3")
    agree = None
    for blocks in (4, 5, 6):
        if peer is None:
            rows.append(("simhash-pybind find_all", None, "not installable here"))
            break
        r = _peers.run_worker(Path(__file__), [path, str(k), str(blocks)], peer)
        if "error" in r:
            rows.append((f"simhash-pybind find_all ({blocks} blocks)", None, r["error"]))
            continue
        theirs = sorted(tuple(p) for p in r["pairs"])
        agree = (agree if agree is not None else True) and theirs == ours_values
        rows.append((f"simhash-pybind find_all ({blocks} blocks)", r["seconds"],
                     f"{len(theirs)} distinct-value pairs"))
    Path(path).unlink()

    started = time.perf_counter()
    index = MemoryIndex(values, k)
    build = time.perf_counter() - started
    rng = np.random.default_rng(1)
    queries = [int(v) for v in values[rng.choice(len(values), 5000, replace=False)]]
    lat = []
    for q in queries:
        t0 = time.perf_counter()
        index.query(q)
        lat.append(time.perf_counter() - t0)
    lat_us = np.array(lat) * 1e6

    print(f"{'run':<44} {'seconds':>8}  result")
    print("-" * 80)
    for name, secs, result in rows:
        s = f"{secs:8.3f}" if secs is not None else f"{'-':>8}"
        print(f"{name:<44} {s}  {result}")
    print(f"{'simcrawl MemoryIndex build (' + index.design.name + ')':<44} {build:8.3f}")
    print(f"\nquery on the {len(values):,}-fingerprint index: median {np.median(lat_us):.1f} us, "
          f"p99 {np.percentile(lat_us, 99):.1f} us ({len(queries)} queries)")
    print(f"brute-force check of the planted fingerprints: {len(expected)} pairs expected, "
          f"{'all found' if exact_planted else 'MISSING PAIRS'}; "
          f"{len(outside)} other pairs (random pairs within k)")
    if agree is not None:
        print(f"distinct-value pairs equal to simhash-pybind's: {'yes' if agree else 'NO'} "
              f"(it takes a set, so identical fingerprints are not pairs there; "
              f"simcrawl reports {int((pairs[:, 2] == 0).sum())} such pairs)")
    print("\nTargets (issue 2): find_all under 1.5 s with exactly the brute-force answer; "
          "query median under 50 us.")
    return 0 if exact_planted and agree is not False else 1


if __name__ == "__main__":
    sys.exit(main())
