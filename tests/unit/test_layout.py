"""Index layout: bucketing, coordinates, descriptions (no servers)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dedup import _simhash_py
from dedup.adapters.redis_index import anchor_records
from dedup.errors import redact
from dedup.index import IndexLayout, IndexMismatchError
from dedup.index.core import pack_page_id, unpack_page_id
from dedup.index.layout import anchor_bits
from dedup.progress_line import Progress
from dedup.simhash import KERNEL, _kernel
from dedup.tables import block_design, two_level_design


def test_buckets_are_planned_for_the_compact_encoding() -> None:
    for capacity in (1_000, 1_000_000, 10_000_000, 100_000_000):
        layout = IndexLayout.plan(capacity)
        per_bucket = capacity / 2 ** layout.bucket_bits
        assert per_bucket <= 32, capacity  # a probe walks its bucket: kept short
        assert layout.bucket_bits <= min(t.prefix_bits for t in layout.tables)
    # 1M at k = 3: 15 bits leave 49 bits, 7 bytes per member, about 31 entries per bucket
    one_m = IndexLayout.plan(1_000_000, 3)
    assert (one_m.bucket_bits, one_m.member_bytes, one_m.design.name) == (15, 7, "5 blocks")
    # a server with a smaller compact limit gets more, smaller buckets; a bigger limit
    # does not make them longer to walk
    assert IndexLayout.plan(1_000_000, 3, table_limit=32).bucket_bits > one_m.bucket_bits
    assert IndexLayout.plan(1_000_000, 3, table_limit=512).bucket_bits == one_m.bucket_bits
    assert IndexLayout.plan(1_000_000).k == 3  # the crawl's k, by default


def test_text_anchor_strings_are_planned_for_the_capacity() -> None:
    """Six anchors a page: with a fixed 16 bits, 10M pages put 915 records in each key;
    packed strings are planned for at most 64 records on average (a probe reads a whole
    string), an earlier index's sorted sets for the compact encoding (at most 32)."""
    for capacity in (1_000, 1_000_000, 10_000_000, 1_000_000_000):
        layout = IndexLayout.plan(capacity)
        assert layout.packed_anchors
        assert 16 < capacity * 6 / 2 ** layout.anchor_bits <= 64 or capacity < 10_000, capacity
        assert capacity * 6 / 2 ** anchor_bits(capacity) <= 32, capacity
    assert IndexLayout.plan(10_000_000).anchor_bits == 20
    assert anchor_bits(10_000_000) == 21  # the sorted sets' plan


def test_an_index_planned_before_keeps_its_sorted_set_anchors() -> None:
    """A version-2 description (before packed anchors) reads as sorted-set anchors and is
    described as version 2 again; one without anchor bits keeps its 16."""
    new = IndexLayout.plan(1_000_000)
    assert new.describe()["version"] == 3 and new.describe()["anchors"] == "records"
    old = {k: v for k, v in new.describe().items() if k not in ("anchors", "anchor_bits")}
    old["version"] = 2
    layout = IndexLayout.from_description(old)
    assert not layout.packed_anchors and layout.anchor_bits == 16
    assert layout.describe()["version"] == 2
    assert IndexLayout.from_description(layout.describe()) == layout
    assert not layout.same_tables(new)
    # tags: the whole anchor in a sorted set, 16 bits above the slot in a packed record
    anchor = 0x0123_4567_89AB_CDEF
    assert layout.anchor_tag(anchor) == anchor.to_bytes(8, "big")
    assert new.anchor_slot(anchor) == anchor & (2 ** new.anchor_bits - 1)
    assert new.anchor_tag(anchor) == ((anchor >> new.anchor_bits) & 0xFFFF).to_bytes(2, "big")


def test_describe_round_trip_and_bad_descriptions() -> None:
    layout = IndexLayout.plan(50_000, design=two_level_design(4, 4, 3))
    again = IndexLayout.from_description(layout.describe())
    assert again == layout and again.same_tables(layout)
    with pytest.raises(IndexMismatchError, match="version"):
        IndexLayout.from_description({**layout.describe(), "version": 1})
    with pytest.raises(IndexMismatchError, match="malformed"):
        IndexLayout.from_description({"version": 2, "design": {}})
    with pytest.raises(IndexMismatchError, match="malformed"):
        IndexLayout.from_description({**layout.describe(), "anchors": "lists"})
    with pytest.raises(ValueError):
        IndexLayout(block_design(4, 3), bucket_bits=17, capacity=1)


@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=50),
       st.sampled_from([0, 5, 14, 16]))
def test_coordinates_invert_and_kernels_agree(fps: list[int], bits: int) -> None:
    layout = IndexLayout(block_design(5, 3), bits, 1000)
    arr = np.array(fps, dtype=np.uint64)
    buckets, rests = layout.coordinates(arr)
    ref = _simhash_py.coordinates(arr, layout._moves, len(layout.tables), bits)
    assert (buckets == ref[0]).all() and (rests == ref[1]).all()
    for i, fp in enumerate(fps):
        for t, table in enumerate(layout.tables):
            assert layout.fingerprint_of(t, int(buckets[i, t]), int(rests[i, t])) == fp
            assert (int(buckets[i, t]) << (64 - bits) if bits else 0) | int(rests[i, t]) \
                == table.permute(fp)


def test_compiled_coordinates_in_use() -> None:
    assert KERNEL == "cython" and _kernel.coordinates is not _simhash_py.coordinates


@given(st.text(min_size=1, max_size=40).filter(lambda s: "\x00" not in s))
def test_page_id_packing_round_trips(pid: str) -> None:
    assert unpack_page_id(pack_page_id(pid)) == pid


def test_hex_page_ids_are_packed_to_half() -> None:
    assert len(pack_page_id("65f1a2b3c4d5e6f708192a3b")) == 13
    assert pack_page_id("ABC") == b"ABC"  # upper-case or odd length: stored as text


def test_redact_hides_passwords_only() -> None:
    assert redact("redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"
    assert "hunter2" not in redact("mongodb://u:hunter2@h:1/db?authSource=admin")


def test_progress_lines() -> None:
    out = io.StringIO()
    progress = Progress("load", total=200, stream=out, every=0)
    progress(50)
    progress(150)
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("load: 50 / 200 [######") and "25.0%" in lines[0]
    assert lines[-1].startswith("load: 200 / 200 [" + "#" * 24 + "]")


def test_packed_anchor_records_are_found_on_record_boundaries_only() -> None:
    """A tag that also occurs inside another record's fingerprint is not a record of it."""
    tag = b"\x12\x34"
    inside = b"\x00\x00" + b"\x00\x12\x34\x00\x00\x00\x00\x07"  # the tag at offset 3
    mine = tag + (5).to_bytes(8, "big")
    other = b"\x56\x78" + (9).to_bytes(8, "big")
    assert anchor_records(inside + mine + other + tag + (6).to_bytes(8, "big"), tag) == [5, 6]
    assert anchor_records(None, tag) == [] and anchor_records(inside, tag) == []
    crowded = b"".join(tag + i.to_bytes(8, "big") for i in range(20))
    assert len(anchor_records(crowded, tag)) == 9  # ANCHOR_READ + 1: the rest is not read
