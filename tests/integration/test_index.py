"""The near-duplicate index on both stores (memory, real Redis), against a brute-force
Hamming scan."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from dedup.adapters.index import RedisStore
from dedup.index import IndexMismatchError, Match, MemoryStore, NearDuplicateIndex
from dedup.tables import block_design, two_level_design

pytestmark = pytest.mark.integration

M64 = (1 << 64) - 1


def flip(fp: int, n: int, rng: random.Random) -> int:
    """``fp`` with ``n`` distinct bits flipped."""
    for bit in rng.sample(range(64), n):
        fp ^= 1 << bit
    return fp


def brute(stored: dict[int, str], q: int, k: int) -> list[Match]:
    found = [Match(fp, pid, (fp ^ q).bit_count()) for fp, pid in stored.items()]
    return sorted((m for m in found if m.distance <= k), key=lambda m: (m.distance, m.fingerprint))


@pytest.mark.parametrize("dist,admitted", [(0, False), (2, False), (3, False), (4, True)])
def test_distance_k_minus_one_k_and_k_plus_one(store, dist: int, admitted: bool) -> None:
    index = NearDuplicateIndex(store, k=3, capacity=10_000)
    rng = random.Random(dist)
    original = rng.getrandbits(64)
    assert index.check_and_add(original, "original") is None
    copy = flip(original, dist, rng)
    result = index.check_and_add(copy, "copy")
    if admitted:
        assert result is None
        assert len(index) == 2
    else:
        assert result == Match(original, "original", dist)
        assert len(index) == 1


def test_identical_fingerprint_is_a_match_at_distance_zero(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000)
    assert index.check_and_add(M64, "a") is None
    assert index.check_and_add(M64, "b") == Match(M64, "a", 0)
    assert index.page_id(M64) == "a"
    assert len(index) == 1


def test_offering_the_same_page_again_is_idempotent(store) -> None:
    """A retry after a lost reply offers a page that is already in: it stays admitted."""
    index = NearDuplicateIndex(store, capacity=1000)
    assert index.check_and_add_many([(M64, "a"), (M64 ^ 1, "b")]) == [None, Match(M64, "a", 1)]
    assert index.check_and_add_many([(M64, "a"), (M64 ^ 1, "b")]) == [None, Match(M64, "a", 1)]
    assert index.check_and_add(M64 ^ 1, "a") == Match(M64, "a", 1)  # same id, another page
    assert len(index) == 1


def test_extreme_fingerprints(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000)
    stored = {0: "zero", M64: "ones", 0x5555555555555555: "fives", (1 << 63) | 0xFF: "top"}
    assert index.check_and_add_many(stored.items()) == [None] * 4
    for q in [1, M64 ^ 0b111, (1 << 63) | 1, 1 << 63, (1 << 63) - 1, 0x5555555555555554]:
        assert index.query(q) == brute(stored, q, 3)
    assert index.query(1 << 63) == [Match(0, "zero", 1)]


def test_closest_match_wins_and_ties_go_to_the_smaller_fingerprint(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000)
    q = 0xF0F0F0F0F0F0F0F0
    far, near_a, near_b = q ^ 0b111, q ^ (1 << 40), q ^ (1 << 50)
    index.add_many([(far, "far"), (near_b, "b"), (near_a, "a")])
    assert index.check_and_add(q, "q") == Match(min(near_a, near_b), "a" if near_a < near_b
                                                else "b", 1)
    assert [m.distance for m in index.query(q)] == [1, 1, 3]


def test_later_items_in_a_batch_see_earlier_admissions(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000, batch_size=8)
    rng = random.Random(7)
    base = [rng.getrandbits(64) for _ in range(10)]
    items = [(fp, f"p{i}") for i, fp in enumerate(base)]
    items += [(flip(fp, 2, rng), f"c{i}") for i, fp in enumerate(base)]
    results = index.check_and_add_many(items)
    assert results[:10] == [None] * 10
    assert [r.page_id for r in results[10:] if r] == [f"p{i}" for i in range(10)]


def test_query_agrees_with_brute_force(store) -> None:
    rng = random.Random(11)
    index = NearDuplicateIndex(store, k=3, capacity=5000)
    stored: dict[int, str] = {}
    seeds = [rng.getrandbits(64) for _ in range(300)]
    for i in range(2000):
        fp = flip(rng.choice(seeds), rng.randint(0, 5), rng) if i % 2 else rng.getrandbits(64)
        stored.setdefault(fp, f"p{i}")
    assert index.add_many(((fp, pid) for fp, pid in stored.items())) == len(stored)
    queries = [flip(rng.choice(seeds), rng.randint(0, 4), rng) for _ in range(300)]
    assert index.query_many(queries) == [brute(stored, q, 3) for q in queries]
    assert index.query_many(queries, k=1) == [brute(stored, q, 1) for q in queries]


@pytest.mark.parametrize("design", [block_design(4, 3), two_level_design(4, 4, 3),
                                    block_design(3, 2), block_design(4, 0)],
                         ids=lambda d: f"{d.name} k={d.k}")
def test_other_designs(store, design) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(3)
    index = NearDuplicateIndex(store, design=design, capacity=3000)
    stored = {rng.getrandbits(64): f"p{i}" for i in range(500)}
    assert index.add_many(stored.items()) == 500
    assert index.add_many((fp, "again") for fp in list(stored)[:50]) == 0
    for fp in list(stored)[:100]:
        q = flip(fp, rng.randint(0, design.k + 1), rng)
        assert index.query(q) == brute(stored, q, design.k)


def test_remove(store) -> None:
    index = NearDuplicateIndex(store, k=3, capacity=1000)
    index.add_many([(10, "a"), (1 << 60, "b")])
    assert not index.remove(10, "someone-else")
    assert index.query(11) == [Match(10, "a", 1)]
    assert index.remove(10)
    assert not index.remove(10)
    assert index.query(11) == [] and len(index) == 1
    assert index.check_and_add(11, "c") is None  # the slot is free again
    assert sorted(index.entries()) == [(11, "c"), (1 << 60, "b")]


def test_text_anchors_find_pages_at_any_distance(store) -> None:
    """A page is filed under its text's anchors when it is admitted: a page sharing its
    text is a candidate however far the fingerprints are; it is admitted only when every
    page its anchors find was judged; removing a page takes it from under its anchors."""
    from dedup.sketch import TextSketch

    text = " ".join(f"word{i}" for i in range(300))
    sketch = TextSketch.of_text(text).to_bytes()
    other = TextSketch.of_text(" ".join(f"other{i}" for i in range(300))).to_bytes()
    index = NearDuplicateIndex(store, k=3, capacity=1000)
    assert index.check_and_add_all([(0, "first", sketch)]) == [[]]
    far = M64  # 64 bits away
    found = index.check_and_add_all([(far, "second", sketch)])[0]
    assert [(m.fingerprint, m.page_id, m.distance, m.sketch) for m in found] \
        == [(0, "first", 64, sketch)]
    assert len(index) == 1  # not admitted: a candidate to judge
    assert index.admit_unless_new([(far, "second", sketch)], [{}]) != [[]]
    assert index.admit_unless_new([(far, "second", sketch)], [{0: 1}]) == [[]]
    assert len(index) == 2
    assert index.check_and_add_all([(0x5555_5555_5555_5555, "third", other)]) == [[]]
    assert [m.page_id for m in index.check_and_add_all([(12345, "x", sketch)])[0]] \
        == ["first", "second"]  # both filed under the anchors, smaller fingerprint first
    assert index.remove(0) and index.remove(far)
    assert index.check_and_add_all([(12345, "x", sketch)]) == [[]]  # nothing filed now


def test_a_page_admitted_under_a_judged_fingerprint_is_judged_before_admission(store) -> None:  # type: ignore[no-untyped-def]
    """One fingerprint may stand for several pages (a rewrite keeps its article's): a page
    judged against the first is not admitted while a second page admitted under that
    fingerprint meanwhile (by another process) is unjudged; it meets it, then is admitted
    once it has judged it."""
    from dedup.sketch import TextSketch

    first = TextSketch.of_text(" ".join(f"word{i}" for i in range(300))).to_bytes()
    twin = TextSketch.of_text(" ".join(f"twin{i}" for i in range(300))).to_bytes()
    copy = TextSketch.of_text(" ".join(f"copy{i}" for i in range(300))).to_bytes()
    index = NearDuplicateIndex(store, k=3, capacity=1000)
    assert index.check_and_add_all([(0, "first", first)]) == [[]]
    found = index.check_and_add_all([(1, "copy", copy)])[0]
    assert [m.page_id for m in found] == ["first"]
    # meanwhile another process admits a page under the very same fingerprint
    assert index.admit_unless_new([(0, "twin", twin)], [{0: 1}]) == [[]]
    again = index.admit_unless_new([(1, "copy", copy)], [{0: 1}])[0]
    assert sorted(m.page_id for m in again) == ["first", "twin"]
    assert [m.sketch for m in again if m.page_id == "twin"] == [twin]
    assert len(index) == 1 and index.query(1)[0].fingerprint == 0
    assert index.admit_unless_new([(1, "copy", copy)], [{0: 2}]) == [[]]
    assert len(index) == 2


def test_an_anchor_shared_by_many_pages_is_passed_over(store) -> None:
    """Pages sharing two anchors are candidates, until more pages than ANCHOR_READ share
    them: then the anchors are a common phrase, and find nothing."""
    from dedup.index.core import ANCHOR_READ
    from dedup.sketch import ANCHORS, TextSketch

    common = np.arange(1, ANCHORS + 1, dtype=np.uint64)  # the smallest values of every text

    def sketch(seed: int) -> bytes:
        own = np.random.default_rng(seed).integers(1 << 40, 1 << 63, 200, dtype=np.uint64)
        return TextSketch.of_values(np.unique(np.concatenate([common, own]))).to_bytes()

    index = NearDuplicateIndex(store, k=3, capacity=1000)
    fps = [(i * 0x0101_0101_0101_0101) % (1 << 64) for i in range(1, ANCHOR_READ + 3)]
    index.add_many([(fps[0], "p0", sketch(0))])
    assert [m.page_id for m in index.check_and_add_all([(M64, "q", sketch(99))])[0]] == ["p0"]
    index.add_many([(fp, f"p{i}", sketch(i)) for i, fp in enumerate(fps[1:ANCHOR_READ], 1)])
    assert len(index.check_and_add_all([(M64, "q", sketch(99))])[0]) == ANCHOR_READ
    index.add_many([(fps[ANCHOR_READ], "one-more", sketch(ANCHOR_READ))])
    assert index.check_and_add_all([(M64, "q", sketch(99))]) == [[]]  # admitted


def test_a_page_with_one_anchor_that_is_evidence_is_found_by_that_one(store) -> None:  # type: ignore[no-untyped-def]
    """A text written in a site's stock phrases: five of its six anchors are phrases more
    than ANCHOR_READ pages share (passed over), and the sixth is its own. A page sharing
    that one is its candidate; a page sharing only the phrases is not."""
    from dedup.index.core import ANCHOR_READ
    from dedup.sketch import ANCHORS, TextSketch

    common = np.arange(1, ANCHORS, dtype=np.uint64)  # five stock phrases

    def sketch(seed: int, rare: int) -> bytes:
        own = np.random.default_rng(seed).integers(1 << 40, 1 << 63, 200, dtype=np.uint64)
        values = np.concatenate([common, np.array([rare], np.uint64), own])
        return TextSketch.of_values(np.unique(values)).to_bytes()

    index = NearDuplicateIndex(store, k=3, capacity=1000)
    index.add_many([((i * 0x0101_0101_0101_0101) % (1 << 64), f"p{i}", sketch(i, 5000 + i))
                    for i in range(1, ANCHOR_READ + 2)])
    index.add_many([(0, "original", sketch(0, 1000))])
    found = index.check_and_add_all([(M64, "copy", sketch(99, 1000))])[0]
    assert [m.page_id for m in found] == ["original"]  # 64 bits away: by its own anchor
    assert index.check_and_add_all([(M64, "other", sketch(98, 2000))]) == [[]]


def test_copies_evidence_is_kept_with_its_original_within_a_bound(store) -> None:
    from dedup.index.core import EVIDENCE_BYTES
    from dedup.sketch import TextSketch

    def sketch(seed: int) -> bytes:
        return TextSketch.of_text(" ".join(f"w{seed}x{i}" for i in range(300))).to_bytes()

    index = NearDuplicateIndex(store, k=3, capacity=1000)
    index.add_many([(0, "original", sketch(0))])
    assert index.attach_copies([(1 << 63, "gone", sketch(1))]) == 0  # not indexed
    assert index.attach_copies([(0, "original", sketch(n)) for n in range(1, 20)]) \
        == EVIDENCE_BYTES // (len(sketch(0)) + 16) - 1  # records of 256 bytes, own first
    pages = index.store.evidence([0])[0]
    assert pages[0] == ("original", sketch(0)) and {p for p, _ in pages} == {"original"}
    # a copy's text finds the original through the copy's anchors, 64 bits away
    found = index.check_and_add_all([((1 << 64) - 1, "new", sketch(2))])[0]
    assert [(m.page_id, m.sketch) for m in found] == [("original", s) for _, s in pages]


def check_released_sketches(store, kind=NearDuplicateIndex) -> None:  # type: ignore[no-untyped-def]
    """An index too large to keep text sketches in Redis (its layout releases them): a
    stored page's sketch leaves Redis, its anchors stay, and every candidate still comes
    with its sketch, read from the store; the admission's count of a candidate's records
    is the same before and after; removal finds the anchors in the store; a rebuild
    writes stored pages released. An index that keeps sketches releases nothing."""
    from dedup.index import IndexLayout
    from dedup.index.core import RELEASED
    from dedup.sketch import TextSketch

    def sketch(word: str) -> bytes:
        return TextSketch.of_text(" ".join(f"{word}{i}" for i in range(300))).to_bytes()

    stored = {"first": sketch("word"), "rebuilt": sketch("other")}
    reads: list[set[str]] = []
    layout = IndexLayout.plan(1000, 3, release_sketches=True)
    if getattr(store, "earlier_layout", False):  # as an earlier version laid it out
        layout = dataclasses.replace(layout, packed_anchors=False)
    index = kind(store, layout=layout)
    index.sketch_source = lambda ids: (reads.append(set(ids)), {  # type: ignore[func-returns-value]
        p: stored[p] for p in ids if p in stored})[1]

    def offer(fp: int, pid: str, text: bytes) -> list[Match]:
        found = index.check_and_add_all([(fp, pid, text)])[0]
        index.withdraw([(fp, pid)] if found else [])  # judged a copy (a sharded index)
        return found

    assert index.check_and_add_all([(0, "first", stored["first"])]) == [[]]
    found = offer(1, "copy", sketch("word"))
    assert [(m.page_id, m.sketch) for m in found] == [("first", stored["first"])] and not reads
    assert index.release([(0, "first"), (1 << 40, "not-indexed")]) == 1
    assert index.release([(0, "first")]) == 0  # once
    assert index.store.evidence([0])[0] == [("first", RELEASED)]
    # the same candidate, through its fingerprint and 64 bits away through its anchors
    for fp in (1, M64):
        found = offer(fp, "copy", sketch("word"))
        assert [(m.page_id, m.sketch) for m in found] == [("first", stored["first"])]
    # judged with one record then, one now: admitted
    assert index.admit_unless_new([(M64, "kept", sketch("word"))], [{0: 1}]) == [[]]
    assert len(index) == 2
    # a rebuild of a stored page: its record released, its anchors filed
    index.add_many([(1 << 50, "rebuilt", stored["rebuilt"])], stored=True)
    assert index.store.evidence([1 << 50])[0] == [("rebuilt", RELEASED)]
    found = offer(12345, "x", sketch("other"))
    assert [(m.page_id, m.sketch) for m in found] == [("rebuilt", stored["rebuilt"])]
    # removal takes the page from under its anchors (read from the store)
    assert index.remove(1 << 50)
    assert index.check_and_add_all([(12345, "x", sketch("other"))]) == [[]]
    assert reads == [{"first"}, {"rebuilt"}]  # each once: a stored sketch never changes
    # without a source (or the page not stored) the mark stays, and says no evidence
    index = kind(store)
    assert [m.sketch for m in offer(1, "c2", sketch("word"))] == [RELEASED, stored["first"]]
    index.store.clear()
    kept = kind(store, layout=dataclasses.replace(layout, release_sketches=False))
    kept.add_many([(0, "first", stored["first"])])
    assert kept.release([(0, "first")]) == 0
    assert kept.store.evidence([0])[0] == [("first", stored["first"])]


def test_released_sketches_are_read_from_the_store(store) -> None:  # type: ignore[no-untyped-def]
    check_released_sketches(store)


def test_add_many_keeps_the_first_page_id(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000)
    progress: list[int] = []
    assert index.add_many([(5, "first"), (5, "second"), (6, "x")], progress=progress.append) == 2
    assert index.page_id(5) == "first" and sum(progress) == 3
    assert len(index) == 2


def test_layout_is_stored_and_a_different_design_is_refused(store) -> None:
    NearDuplicateIndex(store, design=block_design(5, 3), capacity=1000).add_many([(1, "a")])
    again = NearDuplicateIndex(store)  # adopts the stored design
    assert again.layout.design.name == "5 blocks" and again.page_id(1) == "a"
    with pytest.raises(IndexMismatchError, match="5 blocks"):
        NearDuplicateIndex(store, design=two_level_design(4, 4, 3))
    with pytest.raises(ValueError, match="k must be"):
        NearDuplicateIndex(store, k=4)


def test_bad_input_is_refused_before_anything_is_stored(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000)
    for fp, pid, exc in [(-1, "a", ValueError), (1 << 64, "a", ValueError),
                         ("12", "a", TypeError), (1, "", ValueError), (1, "a\x00b", ValueError),
                         (1, "x" * 300, ValueError), (1, 7, TypeError)]:
        with pytest.raises(exc):
            index.check_and_add_many([(2, "fine"), (fp, pid)])
    assert len(index) == 0


def test_page_ids_round_trip(store) -> None:
    index = NearDuplicateIndex(store, capacity=1000)
    ids = ["65f1a2b3c4d5e6f708192a3b", "ABCDEF", "https://example.org/a?b=c", "页面-7", "0f",
           "\xff" * 127, "y" * 255]
    index.add_many((i << 20, pid) for i, pid in enumerate(ids))
    assert [index.page_id(i << 20) for i in range(len(ids))] == ids


# ------------------------------------------------------------ state machine
class IndexMachine(RuleBasedStateMachine):
    """Random add / check_and_add / remove / query against a dict and a brute-force scan.

    Fingerprints are drawn near a few seeds so that matches are common."""

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[int, str] = {}
        self.counter = 0

    @initialize(kind=st.sampled_from(["memory", "redis"]), seeds=st.lists(
        st.integers(0, M64), min_size=1, max_size=4))
    def setup(self, kind: str, seeds: list[int]) -> None:
        if kind == "memory":
            self.store = MemoryStore()
        else:
            self.store = RedisStore(MACHINE_CLIENT[0], f"machine-{id(self)}-{self.counter}")
            self.store.clear()
        self.index = NearDuplicateIndex(self.store, k=3, capacity=500, batch_size=3)
        self.seeds = seeds

    def teardown(self) -> None:
        if hasattr(self, "store"):
            self.store.clear()

    fps = st.tuples(st.integers(0, 3), st.lists(st.integers(0, 63), max_size=6))

    def _fp(self, pick: tuple[int, list[int]]) -> int:
        seed, bits = pick
        fp = self.seeds[seed % len(self.seeds)]
        for b in bits:
            fp ^= 1 << b
        return fp

    def _pid(self) -> str:
        self.counter += 1
        return f"p{self.counter}"

    @rule(picks=st.lists(fps, min_size=1, max_size=5))
    def check_and_add(self, picks: list[tuple[int, list[int]]]) -> None:
        items = [(self._fp(p), self._pid()) for p in picks]
        results = self.index.check_and_add_many(items)
        for (fp, pid), result in zip(items, results):
            expected = brute(self.model, fp, 3)
            if expected:
                assert result == expected[0]
            else:
                assert result is None
                self.model[fp] = pid

    @rule(picks=st.lists(fps, min_size=1, max_size=5))
    def add(self, picks: list[tuple[int, list[int]]]) -> None:
        items = [(self._fp(p), self._pid()) for p in picks]
        new = 0
        for fp, pid in items:
            if fp not in self.model:
                self.model[fp] = pid
                new += 1
        assert self.index.add_many(items) == new

    @rule(pick=fps, by_page=st.booleans())
    def remove(self, pick: tuple[int, list[int]], by_page: bool) -> None:
        fp = self._fp(pick)
        pid = self.model.get(fp, "nobody") if by_page else None
        assert self.index.remove(fp, pid) == (fp in self.model)
        self.model.pop(fp, None)

    @rule(pick=fps, k=st.integers(0, 3))
    def query(self, pick: tuple[int, list[int]], k: int) -> None:
        fp = self._fp(pick)
        assert self.index.query(fp, k) == brute(self.model, fp, k)

    @invariant()
    def same_size(self) -> None:
        if hasattr(self, "index"):
            assert len(self.index) == len(self.model)


MACHINE_CLIENT: list = []


def test_state_machine_against_brute_force(redis_client) -> None:  # type: ignore[no-untyped-def]
    MACHINE_CLIENT[:] = [redis_client]
    runner = IndexMachine.TestCase
    runner.settings = settings(max_examples=60, stateful_step_count=25, deadline=None,
                               suppress_health_check=list(HealthCheck))
    runner("runTest").runTest()


def test_redis_keys_are_the_documented_layout(redis_client, namespace) -> None:
    store = RedisStore(redis_client, namespace)
    index = NearDuplicateIndex(store, k=3, capacity=1_000_000)
    layout = index.layout
    fp = 0x0123456789ABCDEF
    index.check_and_add(fp, "65f1a2b3c4d5e6f708192a3b")
    keys = sorted(k.decode() for k in redis_client.scan_iter(match=f"{namespace}:*"))
    assert len(layout.tables) == 10 and layout.member_bytes == 7
    assert keys == sorted([f"{namespace}:layout", f"{namespace}:count"] + [
        f"{namespace}:t{t}:{table.permute(fp) >> 49:04x}"
        for t, table in enumerate(layout.tables)])
    for t, table in enumerate(layout.tables):
        key = f"{namespace}:t{t}:{table.permute(fp) >> 49:04x}"
        member = (table.permute(fp) & ((1 << 49) - 1)).to_bytes(7, "big")
        if t == 0:  # the page id follows, packed
            member += b"\x00" + bytes.fromhex("65f1a2b3c4d5e6f708192a3b")
        assert redis_client.zrange(key, 0, -1, withscores=True) == [(member, 0.0)]
        assert redis_client.object("encoding", key) in (b"listpack", b"ziplist")
    assert redis_client.get(f"{namespace}:count") == b"1"
    with pytest.raises(ValueError, match="namespace"):
        RedisStore(redis_client, "bad:name")
    with pytest.raises(ValueError, match="namespace"):
        RedisStore(redis_client, "glob*")


def test_a_script_of_one_call_gives_its_connection_back(redis_client, namespace) -> None:
    """A script called once (a copy's evidence kept, a page removed) hands its connection
    back to the pool for the next decision instead of closing it: a crawl deciding a page
    at a time (``simcrawl warc``) had opened a connection to Redis for nearly every page."""
    from dedup.sketch import TextSketch

    store = RedisStore(redis_client, namespace)
    index = NearDuplicateIndex(store, k=3, capacity=1000)
    sketch = TextSketch.of_text(" ".join(f"w{i}" for i in range(300))).to_bytes()
    index.add_many([(0, "original", sketch)])
    opened = redis_client.info("stats")["total_connections_received"]
    for n in range(5):
        index.attach_copies([(0, "original", sketch)])
        index.check_and_add_all([(n + 1, f"page{n}", sketch)])
    assert redis_client.info("stats")["total_connections_received"] == opened
    store.clear()
