"""Block permutations, table designs and the planner (Manku et al. §3)."""

import random

import numpy as np
import pytest

from dedup.tables import (
    MAX_CANDIDATES,
    NODE_BYTES,
    REDIS_ENTRY_BYTES,
    Table,
    block_design,
    candidate_designs,
    crawl_extra_bytes,
    crawl_plan,
    format_plans,
    plan,
    sketches_leave_redis,
    two_level_design,
)


@pytest.mark.parametrize("design, tables, prefix", [
    (block_design(4, 3), 4, (16, 16)),
    (block_design(5, 3), 10, (25, 26)),
    (block_design(6, 3), 20, (31, 33)),
    (two_level_design(4, 4, 3), 16, (28, 28)),   # the paper's 16-table design
])
def test_paper_designs(design, tables, prefix):
    assert len(design.tables) == tables
    assert design.prefix_bits == prefix


@pytest.mark.parametrize("design", [block_design(4, 3), block_design(7, 3),
                                    two_level_design(4, 4, 3), two_level_design(5, 4, 3),
                                    block_design(3, 2), two_level_design(3, 3, 2)])
def test_permute_roundtrip_int_and_array(design):
    rng = random.Random(7)
    values = [0, (1 << 64) - 1, 1, 1 << 63] + [rng.getrandbits(64) for _ in range(200)]
    array = np.array(values, dtype=np.uint64)
    for table in design.tables:
        permuted = [table.permute(v) for v in values]
        assert [table.unpermute(p) for p in permuted] == values
        assert table.permute_array(array).tolist() == permuted
        assert table.unpermute_array(table.permute_array(array)).tolist() == values
        # a bit permutation keeps the number of set bits
        assert all(p.bit_count() == v.bit_count() for p, v in zip(permuted, values))


@pytest.mark.parametrize("design", [block_design(4, 3), block_design(5, 3), block_design(6, 3),
                                    two_level_design(4, 4, 3), block_design(5, 4)])
def test_every_pair_within_k_shares_a_prefix_in_some_table(design):
    rng = random.Random(3)
    for _ in range(3000):
        diff = 0
        for bit in rng.sample(range(64), rng.randint(0, design.k)):
            diff |= 1 << bit
        assert any(diff & t.lead_mask == 0 for t in design.tables)


def test_simhash_cpp_example_blocks():
    """The worked example of the simhash-cpp README: three differing bits, six blocks."""
    a = int("0100101110111011001000101111101110111100001010011101100110110101", 2)
    b = int("0100101110111011011000101111101110011100001010011100100110110101", 2)
    assert (a ^ b).bit_count() == 3
    design = block_design(6, 3)
    matching = [t for t in design.tables
                if t.permute(a) >> (64 - t.prefix_bits) == t.permute(b) >> (64 - t.prefix_bits)]
    assert matching


def test_bad_designs_rejected():
    with pytest.raises(ValueError):
        block_design(3, 3)
    with pytest.raises(ValueError):
        Table(tuple(range(63)) + (0,), 16)


def test_planner_follows_the_paper():
    # 2^34 fingerprints, k = 3, no memory limit: the paper's 20-table design wins.
    chosen, _ = plan(2 ** 34, 3)
    assert len(chosen.design.tables) == 20
    # With 8 bytes per entry and a 2 TB budget, 20 tables (2.7 TB) no longer fit.
    chosen, plans = plan(2 ** 34, 3, memory_budget=2 * 10 ** 12)
    assert chosen.fits and chosen.memory <= 2 * 10 ** 12 and len(chosen.design.tables) < 20
    # A budget nothing fits: the smallest design, marked as not fitting.
    chosen, _ = plan(2 ** 34, 3, memory_budget=1)
    assert not chosen.fits and len(chosen.design.tables) == 4
    text = format_plans(chosen, plans, 2 ** 34)
    assert "4x4 blocks (two-level)" in text and "candidates/query" in text


def test_the_crawls_plan_counts_every_byte_a_page_costs_in_redis():
    """The crawl's index is its tables in Redis and, per page, a text sketch, text anchors
    and a checksum: the plan counts them all. While it fits one node it is planned for
    speed; past one node its sketches leave Redis once stored and it is planned for
    memory, under the bound of candidates a probe."""
    small = crawl_plan(1_000_000, 3)
    assert small.tables == 10 and small.bytes_per_fp == 10 * REDIS_ENTRY_BYTES + \
        crawl_extra_bytes() and small.memory == 1_000_000 * small.bytes_per_fp
    assert not sketches_leave_redis(1_000_000) and not sketches_leave_redis(50_000_000)
    assert small.memory * 100 > NODE_BYTES  # 100M pages would not fit one node: released
    assert sketches_leave_redis(100_000_000) and sketches_leave_redis(1_000_000_000)
    big = crawl_plan(1_000_000_000, 3)
    assert big.bytes_per_fp == big.tables * REDIS_ENTRY_BYTES + crawl_extra_bytes(True)
    assert big.candidates <= MAX_CANDIDATES and big.memory <= 450 * 10**9
    # the fewest tables under the bound: none with fewer tables stays under it
    assert all(p.candidates > MAX_CANDIDATES for p in plan(1_000_000_000, 3)[1]
               if p.tables < big.tables)
    huge = crawl_plan(8_000_000_000, 3)
    assert huge.candidates <= MAX_CANDIDATES and huge.tables > big.tables


def test_planner_rejects_bad_input():
    with pytest.raises(ValueError):
        plan(0, 3)
    with pytest.raises(ValueError):
        plan(100, 40)


def test_candidate_designs_all_find_k():
    for design in candidate_designs(2, max_tables=30):
        assert design.k == 2 and 1 <= len(design.tables) <= 30
