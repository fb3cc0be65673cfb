"""Simhash: known answers, kernel/reference parity, near-duplicate behaviour, bad input."""

import os
from pathlib import Path

import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

import dedup
from dedup import _simhash_py, fingerprint, hamming, normalize, simhash
from dedup.simhash import KERNEL

compiled = pytest.importorskip("dedup._simhash") if KERNEL == "cython" else None

ARTICLE = (
    "The city council voted on Tuesday to approve a long-debated plan to rebuild the old "
    "harbour wall, ending nearly three years of argument over how to protect the waterfront "
    "from winter storms. Under the plan, engineers will replace the crumbling stone barrier "
    "with a higher concrete wall faced in the original granite, and will add two flood gates "
    "at the mouth of the fishing basin. Supporters said the work was overdue. During the "
    "storm in February, waves broke over the wall at high tide and flooded the market "
    "square, damaging shops and the lifeboat station. Opponents had argued that a taller "
    "wall would spoil the view from the promenade and harm the small beach that forms on the "
    "eastern side of the harbour each summer. Work is expected to begin in the spring and to "
    "last about eighteen months, and the fishing fleet will move to temporary moorings."
)
UNRELATED = (
    "The public library will extend its opening hours from next week, staying open until "
    "eight in the evening on weekdays after a trial that drew more visitors than expected. "
    "Librarians said the evening sessions were especially popular with students preparing "
    "for exams and with parents who work during the day and could not visit before. The "
    "trial also added a quiet study room on the first floor, which was booked almost every "
    "evening, and a small cafe run by volunteers from the local history society. The longer "
    "hours will be paid for by moving part of the budget for printed newspapers to staff."
)


def test_compiled_kernel_is_in_use():
    """CI builds the Cython kernel; a silent fall-back to Python would be 100x slower."""
    if os.environ.get("SIMCRAWL_PURE_PYTHON", "") not in ("", "0"):
        assert dedup.KERNEL == "python"
    else:
        assert dedup.KERNEL == "cython"


@pytest.mark.parametrize("text, simhash_hex, checksum_hex, tokens", [
    ("The quick brown fox jumps over the lazy dog", "8212868318d29267",
     "cc6e22a835db4453dc405a3aa2aabc1c", 9),
    ("中文文本的指纹", "ef1603aa80101190", "6f412b860b3e7cde31ba099e10e5d5fa", 7),
    ("Ελληνικά, русский текст и عربي", "760277e06e26b4fc", "e26063df0f4a6009c9abac027a804efe", 5),
    ("", "0000000000000000", "99aa06d3014798d86001c324468d497f", 0),
])
def test_known_answers(text, simhash_hex, checksum_hex, tokens):
    fp = fingerprint(text)
    assert (fp.hex, fp.checksum_hex, fp.tokens) == (simhash_hex, checksum_hex, tokens)


def test_definition_by_hand():
    """One word per feature, XXH3-64 of its UTF-8, majority vote per bit."""
    words = ["alpha", "beta", "gamma", "alpha", "delta"]
    hashes = [xxhash.xxh3_64_intdigest(w.encode()) for w in words]
    expected = sum(1 << j for j in range(64) if 2 * sum((h >> j) & 1 for h in hashes) > 5)
    assert simhash("Alpha, BETA; gamma alpha... delta!", shingle=1) == expected


def test_result_is_unsigned_64_bit():
    value = simhash(ARTICLE)
    assert isinstance(value, int) and 0 <= value < 1 << 64


def test_near_duplicate_close_unrelated_far():
    edited = ARTICLE.replace("Tuesday", "Wednesday").replace("eighteen", "twenty")
    mirrored = "Home | News | Sport\n" + ARTICLE + "\nShare this story. 3 comments."
    assert hamming(simhash(ARTICLE), simhash(edited)) <= 3
    assert hamming(simhash(ARTICLE), simhash(mirrored)) <= 3
    assert hamming(simhash(ARTICLE), simhash(UNRELATED)) > 10


def test_case_whitespace_punctuation_and_unicode_form_do_not_matter():
    variant = ARTICLE.upper().replace(" ", "  \n").replace(",", " ,")
    assert fingerprint(variant).checksum == fingerprint(ARTICLE).checksum
    assert simhash("ﬁnance café") == simhash("finance cafe\u0301")  # ligature, combining mark


def test_chinese_uses_character_tokens_and_bigram_features():
    fp = fingerprint("我们的春天，来了。")
    assert fp.tokens == 7  # punctuation separates, each Han character is a token
    assert fp.features == 6  # one bigram ends at every character but the first
    # One bigram: the simhash is that feature's hash.
    assert simhash("中文") == xxhash.xxh3_64_intdigest("中 文".encode())
    assert simhash("中文", cjk_ngram=1) != simhash("文中", cjk_ngram=2)


def test_unrelated_chinese_texts_are_far_apart():
    a = (Path(__file__).resolve().parents[2] / "crawler" / "examples" / "spring-town.zh.txt").read_text()
    b = "图书馆从下周起延长开放时间，工作日晚上八点才闭馆。试行期间来的读者比预想的多，学生尤其喜欢。" * 3
    assert hamming(simhash(a), simhash(b)) > 10
    assert hamming(simhash(a), simhash(a.replace("二十多年", "二十几年"))) <= 3


def test_numbers_can_be_dropped():
    a = fingerprint("updated 10:32 on 2026-11-14 by staff", drop_numbers=True)
    b = fingerprint("updated 18:05 on 2026-11-15 by staff", drop_numbers=True)
    assert a.checksum == b.checksum and a.tokens == 4
    assert fingerprint("version 2 of 3").tokens == 4


def test_short_text_is_marked():
    assert fingerprint("Page not found").short
    assert not fingerprint(ARTICLE).short


# ------------------------------------------------------------------------ bad input

def test_bytes_that_are_not_utf8_are_replaced_not_fatal():
    fp = fingerprint(b"caf\xe9 au lait \xff\xfe")
    assert fp.tokens == 3  # "caf", "au", "lait": U+FFFD separates
    assert fp == fingerprint("caf\ufffd au lait \ufffd\ufffd")


def test_nul_bytes_separate_tokens():
    assert fingerprint("a\x00b\x00c").tokens == 3


def test_empty_and_whitespace_only():
    for text in ("", "   \n\t", "!!! ... ???", b""):
        fp = fingerprint(text)
        assert fp.simhash == 0 and fp.tokens == 0 and fp.short


def test_ten_megabyte_text():
    big = (ARTICLE + " ") * (10_000_000 // len(ARTICLE))
    assert len(big) >= 9_900_000
    fp = fingerprint(big)
    assert fp.tokens > 1_500_000
    assert hamming(fp.simhash, simhash(ARTICLE)) <= 3
    one_word = "x" * 10_000_000  # one 10 MB token
    assert fingerprint(one_word).tokens == 1


def test_lone_surrogates_do_not_crash():
    assert fingerprint("abc\ud800def").tokens == 2


def test_wrong_types_and_values():
    with pytest.raises(TypeError):
        fingerprint(12345)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        fingerprint("abc", shingle=0)
    with pytest.raises(ValueError):
        fingerprint("abc", shingle=9)
    with pytest.raises(ValueError):
        hamming(-1, 0)
    with pytest.raises(ValueError):
        hamming(0, 1 << 64)


def test_hamming():
    assert hamming(0, (1 << 64) - 1) == 64
    assert hamming(0b1011, 0b0001) == 2


# --------------------------------------------------------------------------- parity

TEXT = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from(list("abc xyz 0123 中文汉字。，ｶﾞＡ１가각ﬁé\u0301\u0651ß İ\x00\u3000😀𠀀")),
    ),
    max_size=300,
)


@pytest.mark.skipif(compiled is None, reason="the compiled kernel is not built")
@given(TEXT, st.integers(1, 8), st.booleans(), st.integers(1, 8))
def test_kernel_matches_reference(text, shingle, drop_numbers, cjk_ngram):
    norm = _simhash_py.normalize(text)
    assert compiled.normalize(text) == norm
    assert compiled.fingerprint_text(norm, shingle, drop_numbers, cjk_ngram) == \
        _simhash_py.fingerprint_text(norm, shingle, drop_numbers, cjk_ngram)


@pytest.mark.skipif(compiled is None, reason="the compiled kernel is not built")
def test_kernel_matches_reference_on_long_tokens_and_buffer_growth():
    # Tokens and shingles longer than the kernel's 64 KiB starting buffer.
    text = " ".join(["w" * 40_000, "short", "中" * 5, "y" * 70_000, "end"] * 3)
    for shingle, cjk_ngram in ((1, 2), (2, 1), (3, 3), (8, 2), (1, 8)):
        assert compiled.fingerprint_text(text, shingle, False, cjk_ngram) == \
            _simhash_py.fingerprint_text(text, shingle, False, cjk_ngram)


@pytest.mark.skipif(compiled is None, reason="the compiled kernel is not built")
@given(st.lists(TEXT, max_size=4))
def test_token_kernels_match_the_regular_expression_they_replace(lines):
    # the shingles' token hashes and the template lines' keys: the same tokens as
    # dedup.text.token_pattern (a Han character alone, letters and digits without "_"),
    # the same hashes as xxhash's own, raw and normalised text alike
    import numpy as np

    from dedup.text import token_pattern

    text = "\n".join(lines)
    for t in (text, normalize(text)):
        tokens = token_pattern().findall(t)
        assert np.frombuffer(compiled.token_hashes(t), dtype=np.uint64).tolist() == \
            [xxhash.xxh3_64_intdigest(w.encode()) for w in tokens] == \
            np.frombuffer(_simhash_py.token_hashes(t), dtype=np.uint64).tolist()
        assert compiled.line_keys(t) == _simhash_py.line_keys(t) == [
            xxhash.xxh3_64_intdigest(" ".join(w).encode()) if (w := token_pattern()
                                                                .findall(line)) else None
            for line in t.split("\n")]


@pytest.mark.skipif(compiled is None, reason="the compiled kernel is not built")
def test_token_kernels_on_long_words_and_many_lines():
    text = "\n".join(["w" * 70_000 + " 中文 x_y", "", "  ", "ǅ١٢ 𠀀𠀁 end"] * 50)
    assert compiled.token_hashes(text) == _simhash_py.token_hashes(text)
    assert compiled.line_keys(text) == _simhash_py.line_keys(text)
    assert compiled.line_keys("") == [None]


@given(TEXT)
def test_normalize_gives_the_tokens_of_full_nfkc(text):
    import unicodedata

    from dedup.text import iter_tokens
    assert list(iter_tokens(normalize(text))) == \
        list(iter_tokens(unicodedata.normalize("NFKC", text).casefold()))


def test_one_switch_selects_the_pure_python_twins_of_both_kernels() -> None:
    import subprocess
    import sys

    code = "import dedup, dedup.pinyin as p; print(dedup.KERNEL, p.KERNEL)"
    forced = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=60, check=True,
                            env={**__import__("os").environ, "SIMCRAWL_PURE_PYTHON": "1"})
    assert forced.stdout.split() == ["python", "python"]


def test_a_kernel_that_does_not_load_is_said_on_the_console() -> None:
    import subprocess
    import sys

    code = ("import sys; sys.modules['dedup._simhash'] = None; sys.modules['dedup._pinyin'] "
            "= None; import dedup, dedup.pinyin as p; print(dedup.KERNEL, p.KERNEL)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True,
                          env={**__import__("os").environ, "SIMCRAWL_PURE_PYTHON": ""})
    assert done.stdout.split() == ["python", "python"]
    assert done.stderr.count("SlowKernelWarning") == 2
    assert "100 times slower" in done.stderr
