"""The decision's rules without any server: the cases of tests/decision_cases.py on memory
stores (the same cases run through Redis and MongoDB in
tests/integration/test_decide_servers.py), and the pure rules of dedup/decide.py."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from decision_cases import *  # the shared cases, collected here
from decision_cases import A, article, order_case, page

from dedup.config import DedupConfig
from dedup.decide import (
    EXACT,
    NEAR,
    NEW,
    PINYIN,
    TEMPLATE_ONLY,
    Decision,
    Rules,
    choose_original,
    follow,
    registered,
)
from dedup.deduplicator import Deduplicator, in_memory
from dedup.facts import CopyVerdict, MemoryFacts
from dedup.index import Match, MemoryStore, NearDuplicateIndex
from dedup.overlap import shingles
from dedup.pinyin import PinyinScore
from dedup.registry import MemoryRegistry
from dedup.sketch import ANCHORS, SKETCH_SIZE, WORD_CODES, TextSketch, shingle_values
from dedup.templates import MemoryTemplates, block_keys, line_weights

CONFIG = DedupConfig()


class MemoryWorld:
    """The stores of tests/decision_cases.py in memory, shared by every deduplicator."""

    def __init__(self) -> None:
        self.facts = MemoryFacts()
        self.registry = MemoryRegistry()
        self.tables = MemoryStore()
        self.templates: MemoryTemplates | None = None

    def deduplicator(self, rules: Rules | None = None, *, template_pages: int = 0
                     ) -> Deduplicator:
        if template_pages and self.templates is None:
            self.templates = MemoryTemplates(template_pages)
        index = NearDuplicateIndex(self.tables, k=CONFIG.max_distance, capacity=1000)
        return Deduplicator(index, self.registry, self.facts,
                            rules or Rules.from_config(CONFIG),
                            templates=self.templates if template_pages else None)

    def store(self, p, decision=None) -> None:  # type: ignore[no-untyped-def]
        if decision is not None:
            p.page_id = decision.page_id
        self.facts.add_page(p)

    def record_copy(self, p, d) -> None:  # type: ignore[no-untyped-def]
        self.facts.add_copy(p.url, CopyVerdict(d.original_id, p.checksum, d.kind, d.distance,
                                               d.containment))

    def indexed(self) -> int:
        return self.tables.count()


@pytest.fixture
def world() -> MemoryWorld:
    return MemoryWorld()


def test_in_memory_is_set_up_as_the_crawl() -> None:
    dedup_, facts = in_memory()
    assert dedup_.index.k == CONFIG.max_distance == dedup_.index.layout.k
    assert dedup_.rules == Rules.from_config(CONFIG)
    assert isinstance(dedup_.templates, MemoryTemplates)
    assert dedup_.templates.min_pages == CONFIG.template_pages
    original = page("http://a.example/1", A, article(1))
    assert dedup_.decide([original])[0].kind == NEW
    facts.add_page(original)
    assert facts.stored_urls(["http://a.example/1"]) == {
        "http://a.example/1": (original.page_id, original.checksum)}


def test_rules_follow_the_config() -> None:
    rules = Rules.from_config(DedupConfig(max_distance=2, verify_distance=-1,
                                          verify_containment=-1, shingle=2))
    assert (rules.trust_distance, rules.verify_distance, rules.verify_containment) == (
        2, None, None)  # the trust distance is at most k
    assert rules.fingerprint_options["shingle"] == 2


def test_candidates_are_asked_in_order_and_the_first_that_passes_is_the_original() -> None:
    p = page("http://c.example/1", A, article(1) + "\nmore", verify=0)
    rules = Rules()
    unlike = Match(A ^ 1, "x", 1)  # close, but its text is another article's
    alike = Match(A ^ 0b111111, "y", 6)
    theirs = {"x": TextSketch.of_text(article(2)), "y": TextSketch.of_text(article(1))}
    got = choose_original(p, [unlike, alike], {}, theirs, rules)
    assert got is not None and got[0] is alike and got[1] == 1.0
    # a candidate with no text evidence at all is judged by its fingerprints: a trusted
    # one (within the trust distance, second opinion agreeing) is the original
    assert choose_original(p, [alike], {}, {}, rules) is None
    trusted_one = Match(A ^ 1, "z", 1)
    assert choose_original(p, [trusted_one], {"z": 0b11}, {}, rules) == (trusted_one, None)
    assert choose_original(p, [trusted_one], {"z": (1 << 11) - 1}, {}, rules) is None


def test_a_thin_text_is_a_copy_only_of_a_nearly_equal_text() -> None:
    """Two stubs of one template, a line of their own each (thin: under 100 tokens): the
    shorter is mostly in the other (containment over 0.8), but they are not nearly one
    text, so neither copies the other; the same stub with one word changed still does; a
    long text is judged by containment as before."""
    template = article(5, 60)
    stubs = [template + "\n" + article(s, 10) for s in (11, 12)]
    p = page("http://s.example/b", A, stubs[1], verify=0)
    first = Match(A ^ 1, "a", 1)
    rules = Rules()
    theirs = {"a": TextSketch.of_text(stubs[0])}
    assert theirs["a"].containment(shingle_values(stubs[1]))[0] >= 0.8
    assert choose_original(p, [first], {}, theirs, rules) is None
    edited = stubs[0].replace(stubs[0].split()[-1], "changed")
    mirror = page("http://s.example/c", A, edited, verify=0)
    assert choose_original(mirror, [first], {}, theirs, rules) is not None
    long_ones = [article(5, 600) + "\n" + article(s, 10) for s in (11, 12)]
    long_page = page("http://s.example/d", A, long_ones[1], verify=0)
    assert choose_original(long_page, [first], {},
                           {"a": TextSketch.of_text(long_ones[0])}, rules) is not None


def test_stubs_of_one_site_that_nothing_tells_apart_are_told_apart_by_own_passages() -> None:
    """Two stubs of one site under one title and without descriptions: the site's long
    furniture with a sentence of their own each (the shorter is over 0.9 in the other, and
    not thin). Each holds a passage the other lacks altogether, so neither copies the
    other; described alike by their site, they would be one document. A copy on the same
    site with a line added is still a copy, and so is one with a line added and words
    edited here and there."""
    furniture = article(5, 360).split("\n")
    stubs = ["\n".join(furniture[:1] + [article(s, 12)] + furniture[1:]) for s in (11, 12)]
    rules, first = Rules(), Match(A ^ 1, "a", 1)

    def judged(text: str, of: str, described: str | None = None) -> bool:
        p = page("http://s.example/b", A, text, verify=0)
        p.title, p.description = "Site", described
        theirs = {"a": TextSketch.of_text(of, host="s.example", title="Site",
                                          description=described)}
        return choose_original(p, [first], {}, theirs, rules) is not None

    assert TextSketch.of_text(stubs[0]).containment(shingle_values(stubs[1]))[0] > 0.9
    assert not judged(stubs[1], stubs[0])
    assert judged(stubs[1], stubs[0], described="what the site says of both")
    original = article(1, 600)
    assert judged(original + "\n" + article(9, 12), original)
    edited = "\n".join(" ".join("changed" if i % 3 == 0 and j == 7 else w
                                 for j, w in enumerate(line.split()))
                        for i, line in enumerate(original.split("\n")))  # a word in 36
    assert judged(edited + "\n" + article(9, 12), original)


def test_the_sketch_counts_a_texts_values_as_a_set_comparison_does() -> None:
    # sample_found and missing_from by binary search, against the plain definition: the
    # values up to the sketch's largest, by their low 16 bits, found among the kept ones
    rng = np.random.default_rng(7)
    for n in (0, 3, 200, 2000):
        sketched = TextSketch.of_text(article(n % 11, n))
        kept = sketched.low.tolist()
        for other in (article(n % 11, n // 2), article(5, 900), article(n % 11, n) + " x y"):
            values = shingle_values(other)
            sample = [v & 0xFFFF for v in values.tolist() if v <= sketched.top]
            found, told = sketched.sample_found(values)
            assert found == sum(v in set(kept) for v in sample)
            assert told == (len(values) if sketched.complete else len(sample))
            assert sketched.missing_from(values) == sum(v not in set(sample) for v in kept)
        low = rng.integers(0, 1 << 16, 50).astype(np.uint64)
        assert sketched.sample_found(np.sort(low))[0] == sum(
            v in set(kept) for v in low.tolist() if v <= sketched.top)


def test_the_text_sketch_measures_containment_both_ways() -> None:
    long_text = article(1, 2400)
    copy = TextSketch.of_text(long_text)
    assert len(copy.to_bytes()) < 256 and not copy.complete
    back = TextSketch.from_bytes(copy.to_bytes())
    assert (back.count, back.top, back.low.tolist()) == (copy.count, copy.top, copy.low.tolist())
    # its smallest values travel whole: the anchors the index files the page under
    assert back.anchors == shingle_values(long_text)[:ANCHORS].tolist() == copy.anchors
    # a page at hand that is half of the sketched text: all of it is in there
    half = shingle_values(article(1, 1200))
    share, sample = copy.containment(half)
    assert share > 0.95 and sample >= 30
    # the sketched text is the shorter: how much of it the page at hand contains
    short = TextSketch.of_text(article(1, 600))
    share, sample = short.containment(shingle_values(long_text))
    assert share > 0.95 and sample == SKETCH_SIZE
    assert short.containment(shingle_values(article(7, 2400)))[0] < 0.05
    # a short text is kept whole: exact
    stub = TextSketch.of_text("a few words of a stub page here")
    assert stub.complete and stub.containment(shingle_values("a few words of a stub"))[0] == 1.0
    # the page's site and title travel with it
    titled = TextSketch.of_text(long_text, host="www.Eufic.org",
                                title="Debunking 10 common nutrition myths for 2025 | Eufic")
    back = TextSketch.from_bytes(titled.to_bytes())
    assert (back.host, back.title) == (titled.host, titled.title) and back.title
    assert back.other_document("www.eufic.org", "How To Take Care of Your Oral Health | Eufic")
    assert not back.other_document("www.eufic.org", "Debunking 10 common nutrition myths")
    assert not back.other_document("lithub.com", "Literary Hub » Oral Health")
    assert not back.other_document("www.eufic.org", None)
    assert not copy.other_document("www.eufic.org", "Anything")  # no title known
    # titles are compared word by word: numbered pages are other documents, each of them
    # (a 64-bit set of words, as before version 4, made one title of 1 pair in 64)
    numbered = [TextSketch.of_text(long_text, host="a.test", title=f"Article {n}")
                for n in range(2000)]
    assert not any(s.other_document("a.test", s_title) for s, s_title in
                   zip(numbered, (f"Article {n}" for n in range(2000)), strict=True))
    assert all(s.other_document("a.test", f"Article {n + 1}")
               for n, s in enumerate(numbered))
    # the share of words that makes one title is the rules' (Rules.title_overlap): one
    # word of three shared is one title at a third
    assert not numbered[12].other_document("a.test", "Article 345", overlap=0.3)
    # a long title is sampled: its smallest word codes, compared on what they can tell
    long_title = " ".join(f"w{i}" for i in range(40))
    sampled = TextSketch.from_bytes(TextSketch.of_text(long_text, host="a.test",
                                                       title=long_title).to_bytes())
    assert len(sampled.title) == WORD_CODES
    assert not sampled.other_document("a.test", long_title.upper())
    assert sampled.other_document("a.test", " ".join(f"v{i}" for i in range(40)))
    # under one title, the site's descriptions of the two pages tell documents apart
    about = "Ten myths about sugar, salt and fat, and what the evidence says about each."
    described = TextSketch.of_text(long_text, host="www.eufic.org", title="Nutrition myths",
                                   description=about)
    back = TextSketch.from_bytes(described.to_bytes())
    assert len(described.to_bytes()) <= 292 and back.about == described.about != ()
    assert not back.other_document("www.eufic.org", "Nutrition myths", about.upper())
    assert back.described_alike("www.eufic.org", about.upper())
    assert back.other_document("www.eufic.org", "Nutrition myths",
                               "Why your dentist asks about flossing, and how often to do it.")
    assert not back.other_document("www.eufic.org", "Nutrition myths", None)  # unknown
    assert not back.other_document("lithub.com", "Nutrition myths", "Another summary.")
    # a version-4 sketch (no count of a listing's items) is still read, as of no count
    v5 = described.to_bytes()
    words = 2 * (len(described.title) + len(described.about))
    v4 = bytes([4]) + v5[1:18] + v5[20:]
    older = TextSketch.from_bytes(v4)
    assert (older.title, older.about, older.anchors, older.low.tolist(), older.items) == (
        described.title, described.about, described.anchors, described.low.tolist(), 0)
    # a version-3 sketch (words as 64-bit sets) is still read, without its words
    v3 = struct.pack("<BHQIQQB", 3, described.count, described.top, described.host, 5, 9,
                     len(described.high)) + v5[20 + words:]
    older = TextSketch.from_bytes(v3)
    assert (older.title, older.about, older.anchors, older.low.tolist()) == (
        (), (), described.anchors, described.low.tolist())
    assert not older.other_document("www.eufic.org", "Another title")  # words unknown
    # a version-2 sketch (no description) is still read
    v2 = bytes([2]) + v3[1:23] + v3[31:]
    older = TextSketch.from_bytes(v2)
    assert (older.about, older.anchors, older.low.tolist()) == ((), described.anchors,
                                                                described.low.tolist())
    with pytest.raises(ValueError, match="not a text sketch"):
        TextSketch.from_bytes(b"\x07junk")
    # a version-1 sketch (no anchors) stored by an earlier release is still read
    top32 = np.unique(shingle_values(long_text) >> np.uint64(32))[:108]  # its values then
    v1 = struct.pack("<BHIIQ", 1, copy.count, int(top32[-1]), 0, 0) \
        + (top32 & 0xFFFF).astype("<u2").tobytes()
    old = TextSketch.from_bytes(v1)
    assert old.anchors == [] and old.containment(half)[0] > 0.95
    assert old.containment(shingle_values(article(7, 2400)))[0] < 0.05


def test_a_follower_shares_its_leaders_fate() -> None:
    leader, other = page("http://a.example/1", A, "x"), page("http://b.example/1", A, "x")
    assert follow(other, leader, Decision(NEW, leader.page_id)).kind == EXACT
    copy = follow(other, leader, Decision(NEAR, leader.page_id, "orig", 4))
    assert (copy.kind, copy.original_id, copy.distance) == (NEAR, "orig", 4)
    assert follow(other, leader, Decision(TEMPLATE_ONLY, leader.page_id)).kind == TEMPLATE_ONLY


def test_a_chinese_page_copies_a_registered_original_only_when_it_is_most_of_its_text() -> None:
    essay = "春天来了，田野里的花都开了。" * 20
    rules = Rules()
    score = PinyinScore(0.3, 6, (0, 40), 6)
    copy = page("http://a.example/zh", A, essay + "转载自某网站。")
    got, excerpt = registered(copy, [("orig", score)], {"orig": shingles(essay)}, rules)
    assert got is not None and (got.kind, got.original_id) == (PINYIN, "orig")
    quoting = page("http://b.example/zh", A, "我们今天讨论一下这篇文章。" * 40 + essay[:60])
    got, excerpt = registered(quoting, [("orig", score)], {"orig": shingles(essay)}, rules)
    assert got is None and excerpt is not None and excerpt.characters >= 30
    # without the original's text: the share of windows decides, a run makes an excerpt
    no_text = page("http://c.example/zh", A, "")
    got, excerpt = registered(no_text, [("orig", PinyinScore(0.6, 2, (0, 9), 6))], {}, rules)
    assert got is not None and got.kind == PINYIN
    got, excerpt = registered(no_text, [("orig", score)], {}, rules)
    assert got is None and excerpt is not None and excerpt.span == (0, 40)


def test_template_text_is_on_a_share_of_a_hosts_pages() -> None:
    def lesson(host: str, keys: list[int]) -> tuple[str, list[int], list[int]]:
        return host, keys, [3, 60] + [3] * (len(keys) - 2)  # 60 characters of its own

    templates = MemoryTemplates(min_pages=5)
    for n in range(40):
        templates.learn([lesson("a.example", [1, 100 + n] + ([2] if n % 8 == 0 else []))])
    assert templates.known(["a.example"])["a.example"] == {1}  # not 2: on 5 pages of 40
    small = MemoryTemplates(min_pages=5)
    for n in range(6):
        small.learn([lesson("b.example", [1, 100 + n] + ([2] if n else []))])
    assert small.known(["b.example"])["b.example"] == {1, 2}  # 2: on 5 pages of 6


def test_copies_of_one_page_teach_its_host_nothing() -> None:
    # A host's page and five copies of it the decision missed (a boilerplate variant
    # drops a line, a small edit changes one), then pages with texts of their own: the
    # copied page's lines are not its host's template; the footer on the others is.
    page = ["Glossier You Duo 88 114", "Mini Cloud Paint Trio 26", "Hand Cream 20",
            "Body Spritz 35", "Balm Dotcom 16", "View more on Glossier.com"]
    footer = ["Limited Edition", "Search products"]
    copies = [page, page[1:], page[:3] + ["Hand Cream 200"] + page[4:], page, page[:-1],
              page]
    others = [[f"product {n} " + " ".join(f"word{n}x{i}" for i in range(30))]
              for n in range(6)]
    templates = MemoryTemplates(min_pages=5)
    for lines in copies + others:
        text = "\n".join(lines + footer)
        templates.learn([("shop.example", block_keys(text), line_weights(text))])
    assert templates.pages["shop.example"] == 7  # the page once, and the six others
    assert templates.known(["shop.example"])["shop.example"] == set(block_keys(
        "\n".join(footer)))


def test_a_batch_not_in_order_may_admit_a_later_page_first(world: MemoryWorld) -> None:
    """Why ``simcrawl warc`` decides in order: in a crawl's batch, Y (no candidate at its
    probe) is admitted at its probe while X (before it) waits for its text check, so X
    meets Y as a page admitted since and is judged its copy."""
    holder, x, y = order_case(1, A)
    crawl = world.deduplicator()
    assert crawl.decide([holder])[0].kind == NEW
    world.store(holder)
    assert [(d.kind, d.original_id) for d in crawl.decide([x, y])] == [
        (NEAR, y.page_id), (NEW, None)]

