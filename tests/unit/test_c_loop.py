"""The fingerprint benchmark's peer (bench/c_loop.py: the kernel's features in a plain C
loop) computes what the kernel computes, or its figure compares nothing. Its source was
once left out of the repository (``*.c`` is ignored for Cython's output), and the
benchmark failed from a fresh clone."""

from __future__ import annotations

import ctypes
import shutil
import sys
from pathlib import Path

import pytest

import dedup
from dedup import _simhash
from dedup.text import normalize

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "The harbour bridge reopened on Tuesday after 14 months of repairs 🙂 and a 2.5 km detour.",
    "北京大学的研究人员发现了一种新的方法，可以在 2024 年之前完成。",
    "ＦＵＬＬ-width letters, café, naïve, Ǆ and 𝟙𝟚 digits; 𠀀𠀁 astral ideographs.",
    "one",
    "",
    " ".join(f"word{n % 37}" for n in range(20_000)),  # a text past the kernel's 64 KiB
]


@pytest.mark.skipif(dedup.KERNEL != "cython" or shutil.which("cc") is None,
                    reason="the compiled kernel or a C compiler is missing")
@pytest.mark.parametrize(("shingle", "cjk_ngram", "drop_numbers"),
                         [(1, 2, False), (3, 2, True), (8, 1, False)])
def test_the_c_loop_computes_the_kernels_fingerprint(tmp_path: Path, shingle: int,
                                                      cjk_ngram: int,
                                                      drop_numbers: bool) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import c_loop
    finally:
        sys.path.remove(str(ROOT / "bench"))
    loop = c_loop.compile_loop(tmp_path)
    table = c_loop.class_table()
    out = (ctypes.c_uint64 * 5)()
    for text in map(normalize, TEXTS):
        want = _simhash.fingerprint_text(text, shingle, drop_numbers, cjk_ngram)
        raw = text.encode("utf-8")
        for lanes in (0, 1):
            assert loop(raw, len(raw), table, shingle, cjk_ngram, int(drop_numbers), lanes,
                        out) == 0
            assert (out[0], out[1] | out[2] << 64, out[3], out[4]) == tuple(want), text[:40]
