"""The window-code index of the pinyin fingerprint: code → pages, in memory or in Redis.

Registered originals are added with their window codes; a page's windows then find the
originals that share them, and each candidate gets a :class:`~dedup.pinyin.PinyinScore`
(share of the page's windows it has, longest run of consecutive ones) straight from the
postings, without reading the original back.

Redis keys (``ns`` is the namespace):

- ``ns:pw:params``: the fingerprint parameters as JSON (``SET NX``); a fingerprinter with
  other parameters is refused (:class:`~dedup.index.IndexMismatchError`).
- ``ns:pw:{code hex}``: a set of page ids.
- ``ns:pwc:{page id}``: the page's distinct codes, 8 bytes each, big-endian (for
  idempotent adds and removal).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import redis

from ..errors import ServiceUnavailable
from ..pinyin import PinyinFingerprint, PinyinScore, is_copy
from .core import check_namespace, check_page_id
from .layout import IndexMismatchError


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


class RedisWindowStore:
    """Postings in Redis sets (see the module's key list).

    Raises:
        ServiceUnavailable: from any call when Redis cannot be reached.
    """

    def __init__(self, client: redis.Redis, namespace: str, url: str = "redis") -> None:
        check_namespace(namespace)
        self.client, self.ns, self.url = client, namespace, url

    def _call(self, fn: Any) -> Any:
        try:
            return fn()
        except redis.RedisError as exc:
            raise ServiceUnavailable(f"Redis at {self.url} failed: {exc}") from exc

    def params(self, wanted: dict[str, Any]) -> dict[str, Any]:
        key = f"{self.ns}:pw:params"
        text = json.dumps(wanted, sort_keys=True)

        def run() -> Any:
            self.client.set(key, text, nx=True)
            return self.client.get(key)

        return json.loads(self._call(run))

    def add(self, page_id: str, codes: Sequence[int]) -> bool:
        distinct = sorted(set(codes))
        packed = b"".join(c.to_bytes(8, "big") for c in distinct)

        def run() -> bool:
            if not self.client.set(f"{self.ns}:pwc:{page_id}", packed, nx=True):
                return False
            pipe = self.client.pipeline(transaction=False)
            for c in distinct:
                pipe.sadd(f"{self.ns}:pw:{c:x}", page_id)
            pipe.execute()
            return True

        return bool(self._call(run))

    def postings(self, codes: Sequence[int]) -> dict[int, set[str]]:
        distinct = sorted(set(codes))

        def run() -> list[Any]:
            pipe = self.client.pipeline(transaction=False)
            for c in distinct:
                pipe.smembers(f"{self.ns}:pw:{c:x}")
            return pipe.execute()

        replies = self._call(run) if distinct else []
        return {c: {m.decode() for m in r} for c, r in zip(distinct, replies) if r}

    def remove(self, page_id: str) -> bool:
        def run() -> bool:
            packed: bytes | None = self.client.get(  # type: ignore[assignment]
                f"{self.ns}:pwc:{page_id}")
            if packed is None:
                return False
            pipe = self.client.pipeline(transaction=False)
            for i in range(0, len(packed), 8):
                code = int.from_bytes(packed[i:i + 8], "big")
                pipe.srem(f"{self.ns}:pw:{code:x}", page_id)
            pipe.delete(f"{self.ns}:pwc:{page_id}")
            pipe.execute()
            return True

        return bool(self._call(run))

    def count(self) -> int:
        def run() -> int:
            return sum(1 for _ in self.client.scan_iter(f"{self.ns}:pwc:*", count=1000))

        return int(self._call(run))


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
        matched: dict[str, int] = {}
        run: dict[str, int] = {}
        best: dict[str, tuple[int, int]] = {}  # page -> (run length, end window)
        for i, code in enumerate(fp.codes):
            pages = postings.get(code, ())
            for p in pages:
                matched[p] = matched.get(p, 0) + 1
                run[p] = run.get(p, 0) + 1
                if run[p] > best.get(p, (0, -1))[0]:
                    best[p] = (run[p], i)
            for p in [p for p in run if p not in pages]:
                del run[p]
        out = []
        total = len(fp.codes)
        for p, m in matched.items():
            length, end = best[p]
            span = (fp.spans[end - length + 1][0], fp.spans[end][1]) if fp.spans else (0, 0)
            s = PinyinScore(m / total, length, span, m)
            if is_copy(s, self.min_share, self.min_run):
                out.append((p, s))
        out.sort(key=lambda ps: (-ps[1].share, -ps[1].run, ps[0]))
        return out

    def query_many(self, fps: Iterable[PinyinFingerprint]) -> list[list[tuple[str, PinyinScore]]]:
        """:meth:`query` for several pages with one round of postings lookups."""
        fps = list(fps)
        codes = [c for fp in fps for c in fp.codes]
        postings = self.store.postings(codes) if codes else {}
        return [self.score_all(fp, postings) if fp.codes else [] for fp in fps]
