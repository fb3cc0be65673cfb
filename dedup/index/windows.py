"""The window-code index of the pinyin fingerprint: code → pages.

Registered originals are added with their window codes; a page's windows then find the
originals that share them, and each candidate gets a :class:`~dedup.pinyin.PinyinScore`
(share of the page's windows it has, longest run of consecutive ones) straight from the
postings, without reading the original back.

The postings live in memory here (:class:`MemoryWindowStore`) or in Redis
(:class:`dedup.adapters.redis_windows.RedisWindowStore`, whose module lists the keys).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from dedup.index.core import check_page_id
from dedup.index.layout import IndexMismatchError
from dedup.pinyin import PinyinFingerprint, PinyinScore, is_copy, score_windows


class WindowStore(Protocol):
    """Where window postings live."""

    def params(self, wanted: dict[str, Any]) -> dict[str, Any]: ...
    def add(self, page_id: str, codes: Sequence[int]) -> bool: ...
    def postings(self, codes: Sequence[int]) -> dict[int, set[str]]: ...
    def remove(self, page_id: str) -> bool: ...
    def count(self) -> int: ...


class MemoryWindowStore:
    """Postings in process memory (tests, batch jobs)."""

    def __init__(self) -> None:
        self._postings: dict[int, set[str]] = {}
        self._codes: dict[str, frozenset[int]] = {}
        self._params: dict[str, Any] | None = None

    def params(self, wanted: dict[str, Any]) -> dict[str, Any]:
        if self._params is None:
            self._params = dict(wanted)
        return self._params

    def add(self, page_id: str, codes: Sequence[int]) -> bool:
        if page_id in self._codes:
            return False
        self._codes[page_id] = frozenset(codes)
        for c in self._codes[page_id]:
            self._postings.setdefault(c, set()).add(page_id)
        return True

    def postings(self, codes: Sequence[int]) -> dict[int, set[str]]:
        return {c: set(self._postings[c]) for c in set(codes) if c in self._postings}

    def remove(self, page_id: str) -> bool:
        codes = self._codes.pop(page_id, None)
        if codes is None:
            return False
        for c in codes:
            pages = self._postings.get(c)
            if pages is not None:
                pages.discard(page_id)
                if not pages:
                    del self._postings[c]
        return True

    def count(self) -> int:
        return len(self._codes)


class WindowIndex:
    """Originals' window codes, and the originals a page copies.

    Args:
        store: :class:`MemoryWindowStore` or :class:`RedisWindowStore`.
        params: the fingerprinter's :meth:`~dedup.pinyin.PinyinFingerprinter.describe`;
            a store built with other parameters raises :class:`IndexMismatchError`.
        min_share, min_run: the copy rule (:func:`dedup.pinyin.is_copy`).
    """

    def __init__(self, store: WindowStore, params: dict[str, Any], min_share: float = 0.5,
                 min_run: int = 4) -> None:
        self.store, self.min_share, self.min_run = store, min_share, min_run
        stored = store.params(params)
        if stored != json.loads(json.dumps(params, sort_keys=True)):
            raise IndexMismatchError(
                f"the pinyin window index was built with {stored}, not {params}: use the "
                "same DEDUP_PINYIN_* settings, or another namespace")
        self.params = params

    def add(self, page_id: str, fp: PinyinFingerprint) -> bool:
        """Index an original's windows; ``False`` if the page was indexed already (or has
        no windows)."""
        check_page_id(page_id)
        return bool(fp.codes) and self.store.add(page_id, fp.codes)

    def remove(self, page_id: str) -> bool:
        """Forget a page's windows; ``False`` if it had none indexed."""
        return self.store.remove(page_id)

    def __len__(self) -> int:
        return self.store.count()

    def query(self, fp: PinyinFingerprint) -> list[tuple[str, PinyinScore]]:
        """The originals ``fp``'s page copies under the copy rule, best first (highest
        share, then longest run)."""
        if not fp.codes:
            return []
        postings = self.store.postings(fp.codes)
        return self.score_all(fp, postings)

    def score_all(self, fp: PinyinFingerprint, postings: dict[int, set[str]]
                  ) -> list[tuple[str, PinyinScore]]:
        """Score every page in ``postings`` against ``fp`` and keep the copies."""
        matched: dict[str, list[int]] = {}
        for i, code in enumerate(fp.codes):
            for p in postings.get(code, ()):
                matched.setdefault(p, []).append(i)
        scores = ((p, score_windows(fp, windows)) for p, windows in matched.items())
        out = [(p, s) for p, s in scores if is_copy(s, self.min_share, self.min_run)]
        out.sort(key=lambda ps: (-ps[1].share, -ps[1].run, ps[0]))
        return out

    def scored_many(self, fps: Iterable[PinyinFingerprint], limit: int = 3
                    ) -> list[list[tuple[str, PinyinScore]]]:
        """For each page, up to ``limit`` originals that share windows with it, scored,
        most matching windows first (copies or not: the caller decides), with one round
        of postings lookups."""
        fps = list(fps)
        codes = [c for fp in fps for c in fp.codes]
        postings = self.store.postings(codes) if codes else {}
        out = []
        for fp in fps:
            matched: dict[str, list[int]] = {}
            for i, code in enumerate(fp.codes):
                for p in postings.get(code, ()):
                    matched.setdefault(p, []).append(i)
            best = sorted(matched.items(), key=lambda pw: (-len(pw[1]), pw[0]))[:limit]
            out.append([(p, score_windows(fp, windows)) for p, windows in best])
        return out

    def query_many(self, fps: Iterable[PinyinFingerprint]) -> list[list[tuple[str, PinyinScore]]]:
        """:meth:`query` for several pages with one round of postings lookups."""
        fps = list(fps)
        codes = [c for fp in fps for c in fp.codes]
        postings = self.store.postings(codes) if codes else {}
        return [self.score_all(fp, postings) if fp.codes else [] for fp in fps]
