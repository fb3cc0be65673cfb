"""The decision's rules without any server: the cases of tests/decision_cases.py on memory
stores (the same cases run through Redis and MongoDB in
tests/integration/test_decide_servers.py), and the pure rules of dedup/decide.py."""

from __future__ import annotations

import pytest
from decision_cases import *  # the shared cases, collected here
from decision_cases import A, article, page

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
from dedup.facts import MemoryFacts
from dedup.index import Match, MemoryStore, NearDuplicateIndex
from dedup.overlap import shingles
from dedup.pinyin import PinyinScore
from dedup.registry import MemoryRegistry
from dedup.templates import MemoryTemplates

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

    def store(self, p) -> None:  # type: ignore[no-untyped-def]
        self.facts.add_page(p)

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
    far_text = Match(A ^ 0b11111, "x", 5)  # beyond trust, text unlike
    close_text = Match(A ^ 0b111111, "y", 6)
    theirs = {"x": shingles(article(2)), "y": shingles(article(1))}
    got = choose_original(p, [far_text, close_text], {}, theirs, rules)
    assert got is not None and got[0] is close_text and got[1] == 1.0
    # without the texts nothing settles it: the page is new
    assert choose_original(p, [far_text, close_text], {}, {}, rules) is None
    # a trusted candidate needs no text; a disagreeing second opinion makes it unsure
    trusted_one = Match(A ^ 1, "z", 1)
    assert choose_original(p, [trusted_one], {"z": 0b11}, {}, rules) == (trusted_one, None)
    assert choose_original(p, [trusted_one], {"z": (1 << 11) - 1}, {}, rules) is None


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
