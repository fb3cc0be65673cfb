"""Batch search against a brute-force Hamming scan."""

import numpy as np
import pytest

from dedup import _simhash_py
from dedup.all_pairs import MemoryIndex, clusters, find_all
from dedup.simhash import KERNEL
from dedup.tables import block_design, two_level_design

K = 3


def brute_pairs(values: np.ndarray, k: int) -> np.ndarray:
    rows = []
    for i in range(len(values)):
        x = np.bitwise_xor(values[i + 1:], values[i])
        dist = np.array([int(v).bit_count() for v in x], dtype=np.int64)
        for j in np.flatnonzero(dist <= k):
            rows.append((i, i + 1 + j, dist[j]))
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


def flip(value: int, bits, rng) -> int:
    for bit in rng.choice(64, bits, replace=False):
        value ^= 1 << int(bit)
    return value


def planted(seed: int, n: int = 400) -> np.ndarray:
    """Random fingerprints plus copies at distances 0, k-1, k, k+1 of some of them."""
    rng = np.random.default_rng(seed)
    base = [int(v) for v in rng.integers(0, 2 ** 64, size=n, dtype=np.uint64)]
    extra = [flip(v, d, rng) for v in base[:80] for d in (0, K - 1, K, K + 1)]
    # a chain: each within k of the next, the ends far apart
    chain = [base[-1]]
    for _ in range(4):
        chain.append(flip(chain[-1], K, rng))
    values = base + extra + chain[1:]
    rng.shuffle(values)
    return np.array(values, dtype=np.uint64)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("design", [None, block_design(4, K), block_design(6, K),
                                    two_level_design(4, 4, K)])
def test_find_all_equals_brute_force(seed, design):
    values = planted(seed)
    expected = brute_pairs(values, K)
    got = find_all(values, K, design)
    assert np.array_equal(got, expected)
    assert set(got[:, 2]) >= {0, K - 1, K}  # the planted distances are all there
    assert (got[:, 2] <= K).all()


@pytest.mark.parametrize("k", [0, 1, 2, 4])
def test_find_all_other_k(k):
    values = planted(9)
    assert np.array_equal(find_all(values, k), brute_pairs(values, k))


def test_identical_fingerprints_are_pairs():
    values = [5, 5, 5, (1 << 64) - 1]
    assert find_all(values, 3).tolist() == [[0, 1, 0], [0, 2, 0], [1, 2, 0]]


def test_simhash_cpp_example_matches():
    a = int("0100101110111011001000101111101110111100001010011101100110110101", 2)
    b = int("0100101110111011011000101111101110011100001010011100100110110101", 2)
    assert find_all([a, b], 3).tolist() == [[0, 1, 3]]
    assert MemoryIndex([a], 3, block_design(6, 3)).query(b) == [(0, 3)]
    assert find_all([a, b], 2).tolist() == []


@pytest.mark.parametrize("design", [None, two_level_design(4, 4, K)])
def test_query_equals_brute_force(design):
    values = planted(5)
    index = MemoryIndex(values, K, design)
    rng = np.random.default_rng(11)
    queries = [int(v) for v in values[:60]] + [flip(int(v), d, rng)
                                               for v in values[60:120] for d in (K, K + 1)]
    for q in queries:
        dist = [(int(v) ^ q).bit_count() for v in values]
        expected = sorted(((i, d) for i, d in enumerate(dist) if d <= K),
                          key=lambda t: (t[1], t[0]))
        assert index.query(q) == expected


def test_clusters_are_connected_components():
    a = 0
    b = 0b111            # 3 from a
    c = 0b111111         # 3 from b, 6 from a: same cluster through b
    far = (1 << 64) - 1
    groups = clusters([far, a, b, c, far, 0x5555_5555_5555_5555], 3)
    assert groups == [[1, 2, 3], [0, 4]]


def test_empty_and_single_inputs():
    assert find_all([], 3).shape == (0, 3)
    assert find_all([42], 3).shape == (0, 3)
    assert clusters([], 3) == []
    assert MemoryIndex([], 3).query(7) == []


def test_bad_fingerprints_rejected():
    with pytest.raises(ValueError):
        find_all([1 << 64], 3)
    with pytest.raises(ValueError):
        find_all([-1], 3)
    with pytest.raises(ValueError):
        MemoryIndex([1, 2], 3).query(1, k=4)
    with pytest.raises(ValueError):
        find_all([1, 2], 4, block_design(4, 3))


@pytest.mark.skipif(KERNEL != "cython", reason="the compiled kernel is not built")
def test_batch_kernels_match_reference():
    from dedup import _simhash
    values = planted(2)
    design = two_level_design(4, 4, K)
    masks = []
    for table in design.tables:
        keys = np.sort(table.permute_array(values))
        earlier = np.array([table.permute(m) for m in masks], dtype=np.uint64)
        assert _simhash.scan_sorted(keys, table.prefix_bits, K, earlier) == \
            _simhash_py.scan_sorted(keys, table.prefix_bits, K, earlier)
        masks.append(table.lead_mask)
    index = MemoryIndex(values, K, design)
    for q in values[:50]:
        queries = np.array([t.permute(int(q)) for t in design.tables], dtype=np.uint64)
        assert _simhash.probe(index._keys, index._ids, index._prefix, queries, K) == \
            _simhash_py.probe(index._keys, index._ids, index._prefix, queries, K)
