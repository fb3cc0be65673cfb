"""A match has one shape from the decision to the stores (dedup.store.records.MatchRecord):
built once from what the decision found, its row is what every store keeps and the WARC
writer describes."""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

from dedup.decide import EXACT, NEAR, PINYIN, Decision, Excerpt, Turn
from dedup.page import Page
from dedup.pinyin import PinyinScore
from dedup.store.records import EXCERPT, URL_RULE, MatchRecord, with_stored
from dedup.warc_writer import match_fields

ROOT = Path(__file__).resolve().parents[2]
WHEN = dt.datetime(2026, 3, 1, 12, tzinfo=dt.timezone.utc)


def copy_page(text: str = "the harbour pier reopened on monday after the storm") -> Page:
    return Page("https://m.example/copy", host="m.example", checksum="c" * 32, text=text,
                title="Pier reopened", fetched_at=WHEN)


def test_a_near_copys_record_says_what_the_decision_found_and_its_evidence() -> None:
    decision = Decision(NEAR, "p1", original_id="o1", distance=2,
                        original_url="https://a.example/pier", original_host="a.example",
                        containment=0.93, canonical_link="declared")
    record = MatchRecord.of_copy(decision, copy_page(), outlinks_dropped=4)
    row = record.row(crawl_id="c1", text_cap=10, detected_at=WHEN)
    assert {k: row[k] for k in ("url", "host", "original_id", "original_url", "original_host",
                                "kind", "distance", "outlinks_dropped", "crawl_id")} == {
        "url": "https://m.example/copy", "host": "m.example", "original_id": "o1",
        "original_url": "https://a.example/pier", "original_host": "a.example",
        "kind": "simhash", "distance": 2, "outlinks_dropped": 4, "crawl_id": "c1"}
    assert row["similarity"] == round(1 - 2 / 64, 4) and row["containment"] == 0.93
    assert row["title"] == "Pier reopened" and row["fetched_at"] == WHEN
    assert row["checksum"] == "c" * 32 and row["canonical_link"] == "declared"
    assert row["text"] == "the harbou" and row["text_truncated"] is True  # up to the cap
    assert "text" not in record.row(crawl_id="c1")  # no cap: no text kept
    assert record.measure() == "distance 2, containment 0.93"
    assert "the harbour" not in repr(record)  # a log line never carries the text


def test_a_pinyin_copy_is_measured_by_its_windows_not_a_distance() -> None:
    score = PinyinScore(share=0.876543, run=42, span=(3, 90), matched=50)
    decision = Decision(PINYIN, "p1", original_id="o1", distance=0, pinyin=score,
                        source="novels", original_url="file:///novels/1.txt")
    row = MatchRecord.of_copy(decision, copy_page(), outlinks_dropped=0).row(crawl_id=None)
    assert row["distance"] is None and row["similarity"] == 0.8765
    assert row["pinyin"] == {"share": 0.8765, "run": 42, "span": [3, 90],
                             "windows_matched": 50}
    assert row["source"] == "novels"


def test_an_excerpt_names_the_kept_page_and_its_passage_not_its_text() -> None:
    page = copy_page()
    excerpt = Excerpt("o1", characters=120, span=(10, 130), share=0.2,
                      original_url="file:///novels/1.txt", source="novels")
    record = MatchRecord.of_excerpt(excerpt, page)
    row = record.row(crawl_id="c1", text_cap=1000)
    assert row["kind"] == EXCERPT and row["page_id"] == page.page_id
    assert row["characters"] == 120 and row["span"] == [10, 130] and row["containment"] == 0.2
    assert "text" not in row
    assert record.measure() == "a passage of 120 characters"


def test_a_link_not_requested_names_the_rules_that_predicted_it() -> None:
    record = MatchRecord.of_link("https://a.example/print/1", "a.example",
                                 claimant="https://a.example/1", rules=["/print/ -> /"],
                                 original_url="https://a.example/1", original_host="a.example",
                                 original_id="o1")
    row = record.row(crawl_id=None)
    assert row["kind"] == URL_RULE and row["distance"] is None and row["similarity"] == 1.0
    assert row["rules"] == ["/print/ -> /"] and row["claimant"] == "https://a.example/1"
    assert record.measure() == "not requested: /print/ -> /"


def test_a_page_turned_into_a_copy_takes_its_title_and_date_from_the_store() -> None:
    later = Page("https://a.example/story", host="a.example", fetched_at=WHEN)
    turn = Turn("published", "https://b.example/first", "b.example", EXACT, 0)
    row = MatchRecord.of_turn(later, turn).row(crawl_id="c2")
    assert row["url"] == "https://b.example/first" and row["original_id"] == later.page_id
    assert row["turned"] == "published" and "title" not in row and "fetched_at" not in row
    stored = with_stored(row, {"title": "First", "fetched_at": WHEN, "checksum": "x"})
    assert stored["title"] == "First" and stored["fetched_at"] == WHEN


def test_the_warc_writer_describes_the_same_row() -> None:
    decision = Decision(EXACT, "p1", original_id="o1", original_url="https://a.example/pier")
    row = MatchRecord.of_copy(decision, copy_page(), outlinks_dropped=0).row(crawl_id=None)
    fields = match_fields(row).decode()
    assert "kind: exact" in fields and "original_url: https://a.example/pier" in fields
    assert "similarity: 1.0" in fields


def test_no_module_but_the_records_builds_a_match_record_of_its_own() -> None:
    """A dictionary literal with a match record's naming fields (url, host, original_id,
    kind) is built in dedup/store/records.py alone: every other module takes a
    MatchRecord's row."""
    builders = []
    for path in [*(ROOT / "dedup").rglob("*.py"), *(ROOT / "crawler").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = {k.value for k in node.keys if isinstance(k, ast.Constant)}
                if {"url", "host", "original_id", "kind"} <= keys:
                    builders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert [b.split(":")[0] for b in builders] == ["dedup/store/records.py"], builders
