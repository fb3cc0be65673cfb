"""Chinese copies and quotations of registered originals, decided by the crawl's own code.

Half of the real essays of ``shared/data/zh-dev`` are registered as originals (as
``simcrawl register`` does: stored, fingerprinted, simhash-indexed, pinyin windows); the
other half are unrelated essays that pages are made of. Generated pages, with a fixed
seed, are decided one by one by :class:`dedup.deduplicator.Deduplicator` on the embedded Redis
and MongoDB, with the crawl's settings (the text as the crawler's extraction gives it to
the decision):

* **quotation N**: an unrelated essay quoting N characters of an original (one passage,
  in quotation marks, as a paragraph of its own). It must be kept, never dropped; an
  ``excerpt`` record naming the original is counted.
* **substitution R%**: the original with R% of its words (jieba's segmentation) replaced
  by other words of the same length (a synonym is, to a fingerprint, another word). It
  must be dropped as a copy of that original.
* **shuffled**: the original with its paragraphs in another order: a copy.
* **excerpt 30%**: 30% of the original inside an unrelated essay (most of the page is
  not the original): kept, with an excerpt record.
* **unrelated**: the unrelated essays themselves: kept, no record.

Each kind gets its own namespace with the originals registered afresh, so one generated
page never meets another. Reads the data from ``../shared`` (never copied into the
repository); development figures. jieba (for the segmentation of the substitutions only)
is installed into ``.bench-peers/`` on first use.

    python bench/quality_chinese.py [--data PATH] [--originals 100] [--quotes 50,100]
        [--only-quotes]
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from _peers import SHARED, essays_and_jieba  # bench/ is the script's folder

from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import RedisStore
from dedup.adapters.redis_windows import open_window_index
from dedup.adapters.registered_originals import register
from dedup.config import DedupConfig
from dedup.decide import Rules, second_opinion
from dedup.index import NearDuplicateIndex
from dedup.page import Page
from dedup.pinyin import PinyinFingerprinter
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, connect_redis
from dedup.simhash import fingerprint
from dedup.adapters.mongo import PageStore

DEFAULT_DATA = SHARED / "data" / "zh-dev"
SEED = 20071
QUOTES = (50, 100, 150, 220, 400)
RATES = (0.02, 0.05, 0.10, 0.20)
HAN = re.compile(r"[\u4e00-\u9fff]")


def han_positions(text: str) -> list[int]:
    return [m.start() for m in HAN.finditer(text)]


def quotation(original: str, host: str, length: int, rng: random.Random) -> str:
    """``host`` with a passage of ``length`` Han characters of ``original`` quoted in it."""
    han = han_positions(original)
    start = rng.randrange(0, max(1, len(han) - length))
    passage = original[han[start]:han[min(start + length, len(han)) - 1] + 1]
    paragraphs = host.split("\n")
    at = rng.randrange(1, max(2, len(paragraphs)))
    return "\n".join(paragraphs[:at] + [f"正如作者所写：“{passage}”"] + paragraphs[at:])


def substitute(original: str, rate: float, rng: random.Random, jieba: Any,
               vocabulary: dict[int, list[str]]) -> str:
    """``original`` with ``rate`` of its Han words replaced by other words of their length."""
    words = jieba.lcut(original)
    han = [i for i, w in enumerate(words) if HAN.fullmatch(w[0]) and len(w) in vocabulary]
    for i in rng.sample(han, round(rate * len(han))):
        choices = vocabulary[len(words[i])]
        new = rng.choice(choices)
        while new == words[i] and len(choices) > 1:
            new = rng.choice(choices)
        words[i] = new
    return "".join(words)


def shuffled(original: str, rng: random.Random) -> str:
    paragraphs = [p for p in original.split("\n") if p.strip()]
    if len(paragraphs) < 4:  # few paragraphs: shuffle the sentences
        paragraphs = [s for s in re.split(r"(?<=[。！？])", original) if s.strip()]
    rng.shuffle(paragraphs)
    return "\n".join(paragraphs)


def excerpt(original: str, host: str, rng: random.Random) -> str:
    n = len(original)
    start = rng.randrange(0, max(1, n - int(0.3 * n)))
    cut = len(host) // 2
    return host[:cut] + "\n" + original[start:start + int(0.3 * n)] + "\n" + host[cut:]


def pages_to_decide(originals: list[str], hosts: list[str], jieba: Any,
                    quotes: tuple[int, ...] = QUOTES, only_quotes: bool = False
                    ) -> dict[str, list[tuple[int | None, str]]]:
    """Kind -> [(the original it uses or None, page text)]."""
    rng = random.Random(SEED)
    vocabulary: dict[int, set[str]] = defaultdict(set)
    for text in hosts:
        for w in jieba.lcut(text):
            if HAN.fullmatch(w[0]) and all(HAN.fullmatch(c) for c in w):
                vocabulary[len(w)].add(w)
    vocab = {n: sorted(ws) for n, ws in vocabulary.items() if len(ws) > 20}
    kinds: dict[str, list[tuple[int | None, str]]] = {}
    for length in quotes:
        kinds[f"quotation {length}"] = [
            (i, quotation(o, hosts[(i + length) % len(hosts)], length, rng))
            for i, o in enumerate(originals)]
    if only_quotes:
        return kinds
    for rate in RATES:
        kinds[f"substitution {round(rate * 100)}%"] = [
            (i, substitute(o, rate, rng, jieba, vocab)) for i, o in enumerate(originals)]
    kinds["shuffled"] = [(i, shuffled(o, rng)) for i, o in enumerate(originals)]
    kinds["excerpt 30%"] = [(i, excerpt(o, hosts[(i + 7) % len(hosts)], rng))
                            for i, o in enumerate(originals)]
    kinds["unrelated"] = [(None, h) for h in hosts]
    return kinds


def candidate(text: str, n: int, config: DedupConfig, fingerprinter: PinyinFingerprinter
              ) -> Page:
    fp = fingerprint(text, min_tokens=config.min_tokens, cjk_ngram=config.cjk_ngram)
    url = f"https://pages{n % 50}.example/{n}"
    return Page(url, url.split("/")[2], fp.checksum_hex, fp.simhash, fp.short,
                     fingerprinter.fingerprint(text),
                     None if fp.short else second_opinion(text, False, config.min_tokens,
                                                          config.cjk_ngram), text=text)


def run_kind(pages: list[tuple[int | None, str]], files: list[Path], redis_url: str,
             mongo_uri: str, namespace: str, config: DedupConfig) -> Counter[str]:
    """Register the originals in a fresh namespace, then decide each page; count outcomes."""
    config = DedupConfig(namespace=namespace, database=namespace, redis_url=redis_url,
                         mongo_uri=mongo_uri)
    client = connect_redis(redis_url)
    store = PageStore(connect_mongo(mongo_uri), namespace)
    store.ensure_indexes()
    index = NearDuplicateIndex(RedisStore(client, namespace), k=config.max_distance,
                               capacity=10_000)
    windows, _ = open_window_index(config, client, capacity=10_000)
    register(files, "zh-dev", store, index, windows, client, config)
    ids = {d["url"]: str(d["_id"]) for d in store.pages.find({}, {"url": 1})}
    original_id = {n: ids[f.resolve().as_uri()] for n, f in enumerate(files)}
    dedup = on_servers(index, client, store, namespace, Rules.from_config(config),
                       windows=windows)
    fingerprinter = PinyinFingerprinter.from_config(config)
    out: Counter[str] = Counter()
    for n, (source, text) in enumerate(pages):
        d = dedup.decide([candidate(text, n, config, fingerprinter)])[0]
        right = source is not None and d.original_id == original_id[source]
        if d.dropped:
            out["dropped, right original" if right else "dropped, wrong original"] += 1
        else:
            out["kept"] += 1
            noted = d.excerpt
            if noted is not None:
                right = source is not None and noted.original_id == original_id[source]
                out["excerpt, right original" if right else "excerpt, wrong original"] += 1
        out["pages"] += 1
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--originals", type=int, default=100,
                        help="essays registered as originals (the rest host quotations)")
    parser.add_argument("--quotes", default=",".join(map(str, QUOTES)),
                        help="quotation lengths in characters, comma-separated")
    parser.add_argument("--only-quotes", action="store_true",
                        help="decide the quotations only (no substitutions, shuffles ...)")
    args = parser.parse_args()
    files, jieba = essays_and_jieba(args.data)
    started = time.perf_counter()
    originals_files = files[:args.originals]
    originals = [f.read_text(encoding="utf-8") for f in originals_files]
    hosts = [f.read_text(encoding="utf-8") for f in files[args.originals:]]
    quotes = tuple(int(q) for q in args.quotes.split(",") if q.strip())
    kinds = pages_to_decide(originals, hosts, jieba, quotes, args.only_quotes)
    config = DedupConfig()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(tmp) as services:
        for n, (kind, pages) in enumerate(kinds.items()):
            rows[kind] = run_kind(pages, originals_files, services.redis_url or "",
                                  services.mongo_uri or "", f"zh{n}", config)
            print(f"[bench] {kind}: {dict(rows[kind])}", file=sys.stderr, flush=True)
    print(f"{len(originals)} registered essays, {len(hosts)} unrelated ones; the crawl's "
          f"settings; {time.perf_counter() - started:.0f} s (development figures)\n")
    print("| page | pages | dropped (right original) | dropped (other) | kept | "
          "excerpt record (right original) |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, c in rows.items():
        total = c["pages"]
        print(f"| {kind} | {total} | {c['dropped, right original'] / total:.0%} | "
              f"{c['dropped, wrong original'] / total:.0%} | {c['kept'] / total:.0%} | "
              f"{c['excerpt, right original'] / total:.0%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
