"""A copy beside its original with the differing passages marked, for the console's match
page.

The texts are compared word by word (each Han character is a word of its own, as
Chinese has no spaces) with :class:`difflib.SequenceMatcher`; passages of the original
that the copy lacks and passages of the copy that the original lacks are wrapped in
``<mark>``. Everything else is escaped, so a page's text can never inject markup.
"""

from __future__ import annotations

import difflib
import html
import re
from dataclasses import dataclass

#: A word, one Han character, a run of white space, or one other character.
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff]+|\s+|[^\w\s]",
                    re.UNICODE)

#: Texts longer than this many words are compared with difflib's junk heuristic (words
#: that fill more than 1% of the text are not used to anchor matches): much faster on
#: long texts, and only the placement of the marks can differ.
EXACT_LIMIT = 6000


@dataclass
class SideBySide:
    """Both texts as HTML with the differences marked.

    Attributes:
        original: the original's text, its passages missing from the copy marked.
        copy: the copy's text, its passages missing from the original marked.
        shared: the share of the copy's words that are the original's, in order (0-1).
        marked: how many passages are marked on either side.
    """

    original: str
    copy: str
    shared: float
    marked: int


def tokens(text: str) -> list[str]:
    """The text cut into words, single Han characters, white space and punctuation (joined
    again, they give the text back)."""
    return _TOKEN.findall(text)


def side_by_side(original: str, copy: str) -> SideBySide:
    """Compare ``original`` and ``copy``; see :class:`SideBySide`."""
    a, b = tokens(original), tokens(copy)
    matcher = difflib.SequenceMatcher(None, a, b,
                                      autojunk=max(len(a), len(b)) > EXACT_LIMIT)
    left: list[str] = []
    right: list[str] = []
    marked = 0
    same_words = 0
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = "".join(a[i1:i2]), "".join(b[j1:j2])
        if op == "equal":
            left.append(html.escape(old))
            right.append(html.escape(new))
            same_words += sum(1 for t in b[j1:j2] if not t.isspace())
            continue
        if old.strip():
            left.append(f"<mark class='gone'>{html.escape(old)}</mark>")
            marked += 1
        else:
            left.append(html.escape(old))
        if new.strip():
            right.append(f"<mark class='added'>{html.escape(new)}</mark>")
            marked += 1
        else:
            right.append(html.escape(new))
    words = sum(1 for t in b if not t.isspace())
    return SideBySide("".join(left), "".join(right), same_words / words if words else 0.0,
                      marked)
