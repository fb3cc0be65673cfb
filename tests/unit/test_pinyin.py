"""The pinyin-initial frequency fingerprint: known answers, copies that keep the pinyin,
and defined results for texts with little or no Chinese."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dedup import pinyin
from dedup.pinyin import PinyinFingerprint, PinyinFingerprinter, Reference, initials, is_copy, score

ROOT = Path(__file__).resolve().parents[2]
SPRING = (ROOT / "crawler" / "examples" / "spring-town.zh.txt").read_text(encoding="utf-8")


def test_initials_known_answers():
    assert initials("我们去北京。天安门！") == ("wmqbjtam", [0, 5])
    # Traditional characters and homophones keep the initials; Latin letters, digits and
    # commas are not initials and do not end a sentence.
    assert initials("中國銀行, ABC 123") == initials("中国银行")[0:1] + ([0],)
    assert initials("忠国") == initials("中国")  # zhōng / zhōng


def test_kernel_and_numpy_twin_agree():
    text = SPRING * 3 + "。English text. 混合 mixed 文本！？"
    assert initials(text) == pinyin._initials_py(text)
    letters, starts = initials(text)
    for anchors in ("sentences", "content", "both"):
        fper = PinyinFingerprinter(size=20, anchors=anchors)
        windows = fper.starts(starts, len(letters), letters)
        assert windows == fper._starts_py(starts, len(letters), letters)
        assert fper.fingerprint(text).codes == fper._codes_py(letters, windows)
    for short in ("", "中文", "中文。" * 10):
        short_letters, short_starts = initials(short)
        assert fper.starts(short_starts, len(short_letters), short_letters) == \
            fper._starts_py(short_starts, len(short_letters), short_letters)


def test_window_codes_are_digits_of_levels():
    fper = PinyinFingerprinter(size=8, overlap=0.5, q=2, letters=3,
                               reference=Reference({"a": 0.5, "b": 0.25, "c": 0.25}),
                               anchors="sentences")
    assert fper.alphabet == ["a", "b", "c"]
    # Han characters read a.., b.., c.. : 啊 (a), 八 (b), 擦 (c)
    fp = fper.fingerprint("八八八八八八八八")
    # a: 0 of 8 is below its mean 4 -> level 0; b: 8 of 8 -> level 1; c: 0 -> level 0
    assert fp.codes == [0 * 1 + 1 * 2 + 0 * 4]
    assert fp.spans == [(0, 7)] and fp.letters == 8
    fp = fper.fingerprint("啊啊啊啊擦擦擦擦")
    assert fp.codes == [1 * 1 + 0 * 2 + 1 * 4]


def test_windows_start_at_sentences_so_a_prefix_does_not_shift_them():
    fper = PinyinFingerprinter()
    original = fper.fingerprint(SPRING)
    prefixed = fper.fingerprint("首页新闻财经体育娱乐科技广告特价机票点击购买。" + SPRING)
    assert len(original) > 10
    assert set(original.codes) <= set(prefixed.codes)


def test_a_homophone_copy_matches_and_an_unrelated_text_does_not():
    fper = PinyinFingerprinter()
    original = fper.fingerprint(SPRING)
    swaps = str.maketrans({"春": "椿", "天": "添", "小": "晓", "的": "得", "镇": "振"})
    copy = SPRING.translate(swaps)
    assert copy != SPRING
    s = score(fper.fingerprint(copy), set(original.codes))
    assert s.share == 1.0 and is_copy(s)
    other = ("我的家乡在北方的一座城市，冬天很冷，常常下雪。小时候，我和哥哥喜欢在院子里堆雪人，"
             "母亲在厨房里包饺子，父亲坐在炉子旁边看报纸。后来我离开家乡去南方读书，很多年没有"
             "回去过。去年冬天，我终于回到了那座城市，街道变宽了，楼房变高了，可是我再也找不到"
             "小时候的那条胡同。") * 2
    s = score(fper.fingerprint(other), set(original.codes))
    assert not is_copy(s)


def test_a_copy_without_punctuation_matches_through_content_anchors():
    stripped = "".join(ch for ch in SPRING if ch not in "，。！？、；：“”")
    # windows 20 letters apart inside sentences lose their alignment with the sentences;
    # content-defined anchors keep it
    for anchors, matches in (("sentences", False), ("content", True), ("both", True)):
        fper = PinyinFingerprinter(anchors=anchors, overlap=0.5)
        s = score(fper.fingerprint(stripped), set(fper.fingerprint(SPRING).codes))
        assert is_copy(s) is matches, anchors
    fper = PinyinFingerprinter()
    assert fper.anchors == "both"
    starts = fper.starts(initials(SPRING)[1], len(initials(SPRING)[0]), initials(SPRING)[0])
    assert set(initials(SPRING)[1]) - set(starts) <= {s for s in initials(SPRING)[1]
                                                      if s > len(initials(SPRING)[0]) - 40}


def test_texts_with_little_or_no_chinese_have_an_empty_fingerprint():
    fper = PinyinFingerprinter()
    for text in ("", "An English page. Nothing else!", "短文本。", "中文" * 19):
        fp = fper.fingerprint(text)
        assert fp.codes == [] and fp.spans == []
    assert fper.fingerprint("中文" * 19).letters == 38
    mixed = "Chapter 1. " + "春天来了，小镇上的花都开了。" * 4 + " The end."
    assert len(fper.fingerprint(mixed)) >= 1
    empty = score(PinyinFingerprint([]), {1, 2})
    assert empty.share == 0.0 and not is_copy(empty)


def test_a_text_without_han_characters_is_read_without_the_dictionary():
    """A text with no character at or above FIRST_READ has an empty fingerprint without
    the dictionary being loaded (an English page costs nothing; the first one loaded it,
    a third of a second), which holds only while the dictionary reads nothing below it."""
    assert min(pinyin.initials_table().keys() - {ord(c) for c in pinyin.SENTENCE_ENDS}) \
        >= ord(pinyin.FIRST_READ)
    code = ("import sys; from dedup.pinyin import PinyinFingerprinter; "
            "fp = PinyinFingerprinter().fingerprint('An English page. Nothing else! ' * 50); "
            "print(fp.codes, fp.letters, 'pypinyin' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["[]", "0", "False"]


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="window size"):
        PinyinFingerprinter(size=2)
    with pytest.raises(ValueError, match="overlap"):
        PinyinFingerprinter(overlap=1.0)
    with pytest.raises(ValueError, match="q must be"):
        PinyinFingerprinter(q=11)
    with pytest.raises(ValueError, match="letters"):
        PinyinFingerprinter(letters=40)
    with pytest.raises(ValueError, match="anchors"):
        PinyinFingerprinter(anchors="words")


def test_reference_command_writes_a_loadable_distribution(tmp_path):
    (tmp_path / "a.txt").write_text(SPRING, encoding="utf-8")
    out = tmp_path / "ref.json"
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "pinyin-reference", str(tmp_path),
                           "-o", str(out), "--source", "spring"], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    ref = Reference.load(out)
    assert ref.source == "spring" and ref.characters == len(initials(SPRING)[0])
    assert abs(sum(ref.frequency.values()) - 1) < 1e-3
    (tmp_path / "ref.json").write_text(json.dumps({"frequency": {"A1": 2}}))
    with pytest.raises(ValueError, match="letters a-z"):
        Reference.load(out)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "en.txt").write_text("no Chinese here")
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "pinyin-reference",
                           str(tmp_path / "b"), "-o", str(out)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, check=False)
    assert done.returncode == 2 and "no Han characters" in done.stderr


def test_the_shipped_reference_covers_the_code_letters():
    ref = pinyin.default_reference()
    assert ref.characters > 100_000
    assert len(ref.letters(20)) == 20


def test_the_reference_command_never_overwrites_the_shipped_file_unasked(tmp_path):
    (tmp_path / "a.txt").write_text(SPRING, encoding="utf-8")
    shipped = pinyin.DEFAULT_REFERENCE.read_bytes()
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "pinyin-reference", str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          check=False)
    assert done.returncode == 2 and "-o/--output" in done.stderr
    assert pinyin.DEFAULT_REFERENCE.read_bytes() == shipped
