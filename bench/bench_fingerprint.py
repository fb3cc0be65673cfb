"""Fingerprint throughput: simcrawl's simhash against named peers, same corpus, same run.

Corpora: English news text (main text of the pages in ``shared/data/near-dup-dev``,
extracted once) and Chinese essays (``shared/data/zh-dev``). Each peer runs in its own
subprocess on one core, from a Python ``str`` to a fingerprint, for at least
``--seconds`` per corpus:

- simcrawl (Cython kernel) and simcrawl's pure-Python reference;
- the PyPI ``simhash`` package (``Simhash(text).value``);
- trafilatura's ``Simhash`` (``trafilatura.deduplication``);
- datasketch ``MinHash`` with 128 permutations (``update_batch`` of word tokens);
- ``simhash-pybind`` (the Moz C++ simhash) fed word tokens hashed with XXH3 in Python.

    python bench/bench_fingerprint.py [--seconds 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _peers

PEERS = [
    # name, pip requirement for its own folder (None: in the main environment), env
    ("simcrawl (Cython)", None, {}),
    ("simcrawl (pure Python)", None, {"SIMCRAWL_PURE_PYTHON": "1"}),
    ("simhash (PyPI)", "simhash==2.1.2", {}),
    ("trafilatura Simhash", None, {}),
    ("datasketch MinHash-128", None, {}),
    ("simhash-pybind + Python tokens", "simhash-pybind==0.0.3", {}),
]


def make_fingerprinter(name: str):  # type: ignore[no-untyped-def]
    import re
    word = re.compile(r"\w+")
    if name.startswith("simcrawl"):
        import dedup
        if name == "simcrawl (Cython)":
            assert dedup.KERNEL == "cython", "the compiled kernel did not load"
        return lambda text: dedup.fingerprint(text).simhash
    if name == "simhash (PyPI)":
        from simhash import Simhash
        return lambda text: Simhash(text).value
    if name == "trafilatura Simhash":
        from trafilatura.deduplication import Simhash as TSimhash
        return lambda text: TSimhash(text).hash
    if name == "datasketch MinHash-128":
        from datasketch import MinHash

        def minhash(text: str):  # type: ignore[no-untyped-def]
            m = MinHash(num_perm=128)
            m.update_batch([w.encode() for w in word.findall(text.lower())])
            return m.hashvalues
        return minhash
    if name == "simhash-pybind + Python tokens":
        import simhash
        import xxhash
        h = xxhash.xxh3_64_intdigest
        return lambda text: simhash.compute([h(w.encode()) for w in word.findall(text.lower())])
    raise ValueError(name)


def worker(name: str, corpus_file: str, seconds: float) -> None:
    corpora = json.loads(Path(corpus_file).read_text(encoding="utf-8"))
    fn = make_fingerprinter(name)
    result = {}
    for label, docs in corpora.items():
        sizes = [len(d.encode("utf-8")) for d in docs]
        fn(docs[0])  # warm-up: lazy tables, imports
        done_bytes = done_docs = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            for doc, size in zip(docs, sizes):
                fn(doc)
                done_bytes += size
                done_docs += 1
                if time.perf_counter() - started >= seconds:
                    break
        elapsed = time.perf_counter() - started
        result[label] = {"mb_s": done_bytes / elapsed / 1e6, "docs_s": done_docs / elapsed}
    print(json.dumps(result))


def load_corpora() -> dict[str, list[str]]:
    from dedup import extract_text
    data = _peers.SHARED / "data"
    pages = sorted((data / "near-dup-dev" / "pages").glob("*.html.gz"))
    english = [extract_text(gzip.decompress(p.read_bytes())).text for p in pages]
    chinese = [p.read_text(encoding="utf-8") for p in sorted((data / "zh-dev").glob("*.txt"))]
    if not english or not chinese:
        raise _peers.missing_data(data, "The development data (near-dup-dev/, zh-dev/)")
    return {"English news": [t for t in english if t], "Chinese essays": chinese}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="time per peer and corpus")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], args.worker[1], float(args.worker[2]))
        return 0
    corpora = load_corpora()
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, encoding="utf-8") as fh:
        json.dump(corpora, fh, ensure_ascii=False)
        corpus_file = fh.name
    sizes = {k: sum(len(d.encode()) for d in v) / len(v) for k, v in corpora.items()}
    print("Fingerprint throughput, one core, from a Python str "
          f"(mean document: English {sizes['English news'] / 1000:.1f} kB, "
          f"Chinese {sizes['Chinese essays'] / 1000:.1f} kB)\n")
    head = f"{'implementation':<32} {'English MB/s':>12} {'docs/s':>8} {'Chinese MB/s':>12} {'docs/s':>8}"
    print(head)
    print("-" * len(head))
    try:
        for name, requirement, env in PEERS:
            path = _peers.ensure(name.split()[0], requirement) if requirement else None
            if requirement and path is None:
                print(f"{name:<32} {'not installable here':>42}")
                continue
            seconds = args.seconds if "pure" not in name else min(args.seconds, 3.0)
            r = _peers.run_worker(Path(__file__), [name, corpus_file, str(seconds)], path,
                                  extra_env=env)
            if "error" in r:
                print(f"{name:<32} error: {r['error']}")
                continue
            e, c = r["English news"], r["Chinese essays"]
            print(f"{name:<32} {e['mb_s']:>12.2f} {e['docs_s']:>8.0f} "
                  f"{c['mb_s']:>12.2f} {c['docs_s']:>8.0f}", flush=True)
    finally:
        os.unlink(corpus_file)
    print("\nTargets: English >= 60 MB/s, Chinese >= 40 MB/s for simcrawl (Cython).\n")
    import c_loop
    print("The kernel against a plain C loop over the same normalised texts (bench/c_loop.py, "
          "median of interleaved rounds, this process):\n")
    c_loop.print_rows(c_loop.compare(corpora))
    return 0


if __name__ == "__main__":
    sys.exit(main())
