"""Chinese copy detection on the real essays of ``shared/data/zh-dev``: the pinyin
fingerprint against simhash on character n-grams, and the two combined.

Copies of each essay are generated with a fixed seed: homophone substitution at 5%, 10%
and 20% of the Han characters (another character with the same toneless pinyin),
Traditional characters (OpenCC s2t), punctuation and white-space changes, every
punctuation mark removed, ads and
navigation text inserted, 30% of the essay embedded in an unrelated page, and the essay
served as an HTML page in GBK and in GB18030 (decoded and extracted as the crawler does).
Every copy is looked up against all 223 essays; a match with any essay but its source
(and, for an embedded copy, the page around it) is a false positive. The essays compared
with each other give the negatives row. Then throughput of the fingerprint against
calling pypinyin on each text. Reads the data from ``../shared``; nothing is copied.

    python bench/eval_pinyin.py [--size 40] [--q 4] [--letters 20] [--ngrams 1,2,3]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

from _peers import missing_data  # bench/ is the script's folder: on sys.path

from crawler.examples.demosite import homophone_groups, swap_homophones
from dedup import extract_text, fingerprint, hamming
from dedup.pinyin import PinyinFingerprinter, initials, is_copy, score

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "zh-dev"
SEED = 20071
KINDS = ["homophone 5%", "homophone 10%", "homophone 20%", "traditional", "punctuation",
         "no punctuation", "ads inserted", "embedded 30%", "GBK page", "GB18030 page"]
ADS = ["【广告】夏季特惠，全场五折起，点击立即抢购！", "首页 | 新闻 | 财经 | 体育 | 娱乐 | 科技",
       "相关阅读：本周热门文章排行榜", "扫码关注我们的公众号，获取更多精彩内容。",
       "版权所有，未经授权不得转载。客服电话：400-800-1234"]
FILLER = ("本站提供最新的天气预报、交通出行和生活服务信息。用户可以在这里查询航班、火车和长途汽车"
          "的时刻表，也可以订购景区门票和酒店房间。")


def punctuation(text: str, rng: random.Random) -> str:
    swap = str.maketrans({"，": ",", "。": ".", "！": "!", "？": "?", "：": ":", "；": ";",
                          "“": '"', "”": '"', "（": "(", "）": ")"})
    out = []
    for ch in text.translate(swap):
        out.append(ch)
        if rng.random() < 0.03:
            out.append(" ")
    return "".join(out)


def strip_punctuation(text: str) -> str:
    """Every punctuation mark removed (some pirate sites do, to defeat matching)."""
    return "".join(ch for ch in text if not unicodedata.category(ch).startswith("P"))


def insert_ads(text: str, rng: random.Random) -> str:
    paragraphs = text.split("\n")
    out = [ADS[1]]
    for p in paragraphs:
        out.append(p)
        if rng.random() < 0.3:
            out.append(rng.choice(ADS))
    out.append(ADS[4])
    return "\n".join(out)


def embed(text: str, host: str, rng: random.Random) -> str:
    n = len(text)
    start = rng.randrange(0, max(1, n - int(0.3 * n)))
    part = text[start:start + int(0.3 * n)]
    cut = len(host) // 2
    return host[:cut] + "\n" + part + "\n" + host[cut:] + "\n" + FILLER


def as_page(text: str, encoding: str) -> str:
    body = "".join(f"<p>{p}</p>" for p in text.split("\n") if p.strip())
    html = (f'<html><head><meta charset="{encoding}"><title>转载</title></head><body>'
            f'<div class="nav">{ADS[1]}</div><article>{body}</article></body></html>')
    data = html.encode(encoding, errors="xmlcharrefreplace")
    return extract_text(data).text


def make_copies(texts: list[str]) -> list[tuple[str, int, str, int | None]]:
    """(kind, source essay, copy text, host essay or None)."""
    import opencc

    rng = random.Random(SEED)
    groups = homophone_groups()
    s2t = opencc.OpenCC("s2t")
    out = []
    for i, text in enumerate(texts):
        for rate in (0.05, 0.10, 0.20):
            out.append((f"homophone {round(rate * 100)}%", i,
                        swap_homophones(text, rate, rng, groups), None))
        out.append(("traditional", i, s2t.convert(text), None))
        out.append(("punctuation", i, punctuation(text, rng), None))
        out.append(("no punctuation", i, strip_punctuation(text), None))
        out.append(("ads inserted", i, insert_ads(text, rng), None))
        host = rng.choice([j for j in range(len(texts)) if j != i])
        out.append(("embedded 30%", i, embed(text, texts[host], rng), host))
        out.append(("GBK page", i, as_page(text, "gbk"), None))
        out.append(("GB18030 page", i, as_page(text, "gb18030"), None))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--size", type=int, default=40, help="letters per window")
    parser.add_argument("--overlap", type=float, default=0.5)
    parser.add_argument("--q", type=int, default=4, help="quantisation levels")
    parser.add_argument("--letters", type=int, default=20)
    parser.add_argument("--anchors", default="both", choices=("sentences", "content",
                                                                   "both"))
    parser.add_argument("--ngrams", default="1,2,3", help="simhash character n-grams to try")
    parser.add_argument("-k", type=int, default=3, help="simhash Hamming distance")
    args = parser.parse_args()
    files = sorted(args.data.glob("*.txt"))
    if not files:
        raise missing_data(args.data, "The Chinese development essays (*.txt)")
    texts = [f.read_text(encoding="utf-8") for f in files]
    started = time.perf_counter()
    copies = make_copies(texts)
    print(f"{len(texts)} essays, {len(copies)} copies (generated in "
          f"{time.perf_counter() - started:.1f} s, seed {SEED})\n")

    fper = PinyinFingerprinter(args.size, args.overlap, args.q, args.letters,
                               anchors=args.anchors)
    originals = [set(fper.fingerprint(t).codes) for t in texts]
    postings: dict[int, set[int]] = defaultdict(set)
    for i, codes in enumerate(originals):
        for c in codes:
            postings[c].add(i)

    def pinyin_matches(text: str) -> set[int]:
        fp = fper.fingerprint(text)
        candidates = {i for c in fp.codes for i in postings.get(c, ())}
        return {i for i in candidates if is_copy(score(fp, originals[i]))}

    ngrams = [int(n) for n in args.ngrams.split(",")]
    sims = {n: [fingerprint(t, cjk_ngram=n).simhash for t in texts] for n in ngrams}

    def simhash_matches(text: str, n: int) -> set[int]:
        h = fingerprint(text, cjk_ngram=n).simhash
        return {i for i, o in enumerate(sims[n]) if hamming(h, o) <= args.k}

    methods = ["pinyin"] + [f"simhash {n}-gram" for n in ngrams] + \
        [f"pinyin + simhash {n}-gram" for n in ngrams]
    tally = {(m, kind): [0, 0, 0] for m in methods for kind in [*KINDS, "negatives"]}
    for kind, source, text, host in copies:
        found = {"pinyin": pinyin_matches(text)}
        for n in ngrams:
            found[f"simhash {n}-gram"] = simhash_matches(text, n)
            found[f"pinyin + simhash {n}-gram"] = found["pinyin"] | found[f"simhash {n}-gram"]
        for m in methods:
            t = tally[(m, kind)]
            t[0] += source in found[m]
            t[1] += len(found[m] - {source, host})
            t[2] += 1
    for i, text in enumerate(texts):  # essays against each other
        found = {"pinyin": pinyin_matches(text) - {i}}
        for n in ngrams:
            found[f"simhash {n}-gram"] = simhash_matches(text, n) - {i}
            found[f"pinyin + simhash {n}-gram"] = found["pinyin"] | found[f"simhash {n}-gram"]
        for m in methods:
            tally[(m, "negatives")][1] += len(found[m])
            tally[(m, "negatives")][2] += len(texts) - 1

    print(f"pinyin: windows of {args.size} letters, overlap {args.overlap}, q = {args.q}, "
          f"{args.letters} letters; copy = share >= 0.5 or a run of >= 4 windows. "
          f"simhash: k = {args.k}.")
    print("precision / recall per kind (negatives: false matches among "
          f"{len(texts) * (len(texts) - 1):,} ordered pairs of different essays)\n")
    print(f"{'kind':15}" + "".join(f" {m:>24}" for m in methods))
    for kind in [*KINDS, "negatives"]:
        cells = []
        for m in methods:
            tp, fp, n = tally[(m, kind)]
            if kind == "negatives":
                cells.append(f"{fp} false" if fp else "0 false")
            else:
                precision = tp / (tp + fp) if tp + fp else 1.0
                cells.append(f"{precision:.3f} / {tp / n:.3f}")
        print(f"{kind:15}" + "".join(f" {c:>24}" for c in cells))

    # Throughput on one core: our table-driven fingerprint against pypinyin per text.
    from pypinyin import Style, lazy_pinyin

    size = sum(len(t.encode()) for t in texts)
    started = time.perf_counter()
    for _ in range(3):
        for t in texts:
            fper.fingerprint(t)
    ours = 3 * size / (time.perf_counter() - started) / 1e6
    started = time.perf_counter()
    for t in texts:
        lazy_pinyin(t, style=Style.FIRST_LETTER)
    theirs = size / (time.perf_counter() - started) / 1e6
    started = time.perf_counter()
    for _ in range(3):
        for t in texts:
            initials(t)
    only_initials = 3 * size / (time.perf_counter() - started) / 1e6
    print(f"\nthroughput, one core, {size / 1e6:.2f} MB of UTF-8 text:")
    print(f"  simcrawl pinyin fingerprint (initials, windows, codes)  {ours:8.1f} MB/s")
    print(f"  simcrawl initials only (the character table)             {only_initials:8.1f} MB/s")
    print(f"  pypinyin lazy_pinyin(text, FIRST_LETTER) per text        {theirs:8.1f} MB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
