"""The text check's measure: shingle containment."""

from __future__ import annotations

import numpy as np

from dedup.overlap import containment, shingles

STORY = ("The council approved the new budget on Tuesday after a long debate about school "
         "funding, road repairs and the future of the central library.")


def test_a_story_inside_other_boilerplate_is_contained() -> None:
    page = "Share this story! " + STORY + " 12 Replies. Great article, thanks! Well written."
    assert containment(shingles(STORY), shingles(page)) == 1.0
    assert containment(shingles(page), shingles(STORY)) == 1.0  # the shorter one counts


def test_the_same_words_in_another_order_are_not() -> None:
    shuffled = " ".join(reversed(STORY.split()))
    assert containment(shingles(STORY), shingles(shuffled)) < 0.1


def test_case_punctuation_and_width_do_not_matter() -> None:
    assert np.array_equal(shingles(STORY.upper().replace(",", " ;")), shingles(STORY))
    assert np.array_equal(shingles("ＡＢＣ ｄｅｆ ghi"), shingles("abc def ghi"))


def test_chinese_is_compared_by_character_trigrams() -> None:
    text = "今天天气很好，我们去公园散步。"
    assert len(shingles(text)) == 13 - 2  # 13 Han characters
    assert containment(shingles(text), shingles("新闻：" + text + "（完）")) == 1.0


def test_empty_and_tiny_texts() -> None:
    assert len(shingles("")) == 0 and containment(shingles(""), shingles(STORY)) == 0.0
    assert len(shingles("two words")) == 1


def test_shared_text_finds_the_quoted_passage_and_where_it_is() -> None:
    from dedup.overlap import shared_text

    essay = "这是一篇完全不同的文章，讲的是别的事情，和小说没有关系。" * 4
    quote = "今天天气很好，我们去公园散步"
    page = essay + f"他说：“{quote}。”" + essay
    share, chars, (start, end) = shared_text(page, shingles(quote + "。然后回家吃饭。"))
    assert chars == len(quote) - 1  # every Han character of it (the comma is no token)
    assert page[start:end] == quote and share < 0.5  # the page is mostly its own text
    assert shared_text(essay, shingles(quote)) == (0.0, 0, (0, 0))


def test_each_long_lines_values_are_its_own_shingle_values() -> None:
    import random

    import pytest

    from dedup.overlap import line_shingles
    from dedup.sketch import line_values, shingle_values

    rnd = random.Random(7)
    words = ["river", "town", "Bridge", "ﬁsh", "Ⅻ", "春天", "来了", "ß", "42", "—", ",", " "]
    for _ in range(300):
        text = "\n".join(" ".join(rnd.choice(words) for _ in range(rnd.randint(0, 14)))
                         for _ in range(rnd.randint(0, 6)))
        for tokens in (0, 1, 2, 3, 5, 8):  # below the shingle size too
            want = [shingle_values(line) for line in text.split("\n")
                    if len(_tokens(line)) >= tokens]
            got = line_values(text, tokens)
            assert len(got) == len(want)
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
    with pytest.raises(ValueError):  # the vectorised part takes whole shingles only
        line_shingles("a b c", 2)


def _tokens(line: str) -> list[str]:
    from dedup.simhash import normalize
    from dedup.text import token_pattern

    return token_pattern().findall(normalize(line))
