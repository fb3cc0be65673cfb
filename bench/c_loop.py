"""The simhash kernel against a plain C loop over the same text, in the same process.

``bench/c_loop/simhash_loop.c`` computes the kernel's features (the same tokens,
shingles, character n-grams, hashes and checksum) the simplest way C allows, from the
normalised text already encoded as UTF-8. It is compiled here with the system's C
compiler and the kernel's flags (``-O3``, xxHash inlined), loaded with ``ctypes`` and
timed round by round against ``dedup._simhash.fingerprint_text`` on the same normalised
``str``. It runs twice: counting each feature's 64 bits one by one (the plain loop), and
in byte lanes as the kernel does. The ratio, against the faster of the two, says how close
the kernel, called from Python on a ``str``, comes to C on bytes. The last column is the
whole public call, ``dedup.fingerprint`` on the text before normalising (NFKC where needed,
and case folding, which the C loop is spared).

    python bench/c_loop.py [--rounds 15]        # also printed by bench/bench_fingerprint.py
"""

from __future__ import annotations

import argparse
import ctypes
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SOURCE = Path(__file__).resolve().parent / "c_loop" / "simhash_loop.c"
GOALS = {"English news": 0.8, "Chinese essays": 0.6}


def class_table() -> bytes:
    """The class of every code point as the kernel reads it (1,114,112 bytes):
    :func:`dedup.text.bmp_class_table` below U+10000, and past it the kernel's own rule
    (an alphanumeric of ``ASTRAL_CJK`` a CJK token, a decimal digit, another alphanumeric
    a word's, the rest, emoji among them, a separator)."""
    from dedup.text import ASTRAL_CJK, CJK, DIGIT, SEP, WORD, bmp_class_table

    def astral(cp: int) -> int:
        ch = chr(cp)
        if ASTRAL_CJK[0] <= cp <= ASTRAL_CJK[1] and ch.isalnum():
            return CJK
        if ch.isdecimal():
            return DIGIT
        return WORD if ch.isalnum() else SEP

    return bmp_class_table() + bytes(astral(cp) for cp in range(0x10000, 0x110000))


def compile_loop(folder: Path) -> Any:
    """Compile the C loop into ``folder`` and return its ``simhash_loop`` function."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("no C compiler (cc) on PATH: the plain C loop cannot be built")
    library = folder / "simhash_loop.so"
    subprocess.run([cc, "-O3", "-shared", "-fPIC", "-o", str(library), str(SOURCE)],
                   check=True)
    fn = ctypes.CDLL(str(library)).simhash_loop
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_int,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
    return fn


def compare(corpora: dict[str, list[str]], rounds: int = 15) -> list[dict[str, Any]]:
    """Time the kernel and the C loop over each corpus; one row per corpus."""
    import dedup
    from dedup import _simhash
    from dedup.simhash import DEFAULT_CJK_NGRAM, DEFAULT_DROP_NUMBERS, DEFAULT_SHINGLE
    from dedup.text import normalize

    if dedup.KERNEL != "cython":
        raise SystemExit("the compiled kernel did not load (dedup.KERNEL is "
                         f"{dedup.KERNEL!r}): build it with pip install -e . first")
    table = class_table()
    args = (DEFAULT_SHINGLE, DEFAULT_CJK_NGRAM, int(DEFAULT_DROP_NUMBERS))
    rows = []
    with tempfile.TemporaryDirectory(prefix="simcrawl-cloop-") as tmp:
        loop = compile_loop(Path(tmp))
        out = (ctypes.c_uint64 * 5)()
        for label, docs in corpora.items():
            texts = [normalize(d) for d in docs]
            encoded = [t.encode("utf-8") for t in texts]
            size = sum(len(b) for b in encoded)
            same = 0
            for text, raw in zip(texts, encoded):
                want = _simhash.fingerprint_text(text, DEFAULT_SHINGLE, DEFAULT_DROP_NUMBERS,
                                                 DEFAULT_CJK_NGRAM)
                agree = True
                for lanes in (0, 1):
                    loop(raw, len(raw), table, *args, lanes, out)
                    agree &= (out[0], out[1] | out[2] << 64, out[3], out[4]) == tuple(want)
                same += agree
            times: dict[str, list[float]] = {"kernel": [], "plain": [], "lanes": [],
                                             "public": []}
            for _ in range(rounds):
                started = time.perf_counter()
                for doc in docs:
                    dedup.fingerprint(doc)
                times["public"].append(time.perf_counter() - started)
                started = time.perf_counter()
                for text in texts:
                    _simhash.fingerprint_text(text, DEFAULT_SHINGLE, DEFAULT_DROP_NUMBERS,
                                              DEFAULT_CJK_NGRAM)
                times["kernel"].append(time.perf_counter() - started)
                for lanes, name in ((0, "plain"), (1, "lanes")):
                    started = time.perf_counter()
                    for raw in encoded:
                        loop(raw, len(raw), table, *args, lanes, out)
                    times[name].append(time.perf_counter() - started)
            seconds = {name: statistics.median(t) for name, t in times.items()}
            c = min(seconds["plain"], seconds["lanes"])
            rows.append({"corpus": label, "docs": len(texts), "same_result": same,
                         "kernel_mb_s": size / seconds["kernel"] / 1e6,
                         "c_plain_mb_s": size / seconds["plain"] / 1e6,
                         "c_lanes_mb_s": size / seconds["lanes"] / 1e6,
                         "public_mb_s": size / seconds["public"] / 1e6,
                         "ratio": c / seconds["kernel"], "goal": GOALS.get(label)})
    return rows


def print_rows(rows: list[dict[str, Any]]) -> None:
    head = (f"{'corpus':<16} {'same result':>11} {'kernel MB/s':>12} {'C plain MB/s':>13} "
            f"{'C lanes MB/s':>13} {'kernel / best C':>15} {'goal':>7} "
            f"{'fingerprint() MB/s':>18}")
    print(head)
    print("-" * len(head))
    for r in rows:
        goal = f">= {r['goal']}" if r["goal"] else ""
        print(f"{r['corpus']:<16} {r['same_result']:>5} / {r['docs']:<3} "
              f"{r['kernel_mb_s']:>12.1f} {r['c_plain_mb_s']:>13.1f} {r['c_lanes_mb_s']:>13.1f} "
              f"{r['ratio']:>15.2f} {goal:>7} {r['public_mb_s']:>18.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per corpus")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_fingerprint import load_corpora
    print("The simhash kernel against a plain C loop (median of "
          f"{args.rounds} interleaved rounds, one core, same normalised texts)\n")
    print_rows(compare(load_corpora(), args.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
