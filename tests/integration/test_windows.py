"""The pinyin window index (in memory and on a real Redis server), registration and its
rebuild."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import _zh_article, homophone_groups, swap_homophones
from dedup.adapters.index import RedisStore
from dedup.adapters.redis_windows import RedisWindowStore, bucket_bits_for
from dedup.adapters.registered_originals import register
from dedup.config import DedupConfig
from dedup.index import IndexMismatchError, NearDuplicateIndex
from dedup.index.windows import MemoryWindowStore, WindowIndex
from dedup.pinyin import PinyinFingerprinter, score

ROOT = Path(__file__).resolve().parents[2]
FPER = PinyinFingerprinter()


def chapters(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["\n".join(_zh_article(rng, 20, invented=True)) for _ in range(n)]


@pytest.fixture(params=["memory", "redis"])
def windows(request, redis_client, namespace):  # type: ignore[no-untyped-def]
    store = MemoryWindowStore() if request.param == "memory" else \
        RedisWindowStore(redis_client, namespace)
    return WindowIndex(store, FPER.describe())


def test_copies_find_their_original_and_others_find_nothing(windows) -> None:
    texts = chapters(6)
    for i, t in enumerate(texts[:5]):
        assert windows.add(f"orig{i}", FPER.fingerprint(t))
    assert not windows.add("orig0", FPER.fingerprint(texts[0]))  # idempotent
    assert len(windows) == 5
    rng = random.Random(1)
    pirated = swap_homophones(texts[2], 0.2, rng, homophone_groups())
    found = windows.query(FPER.fingerprint(pirated))
    assert [p for p, _ in found] == ["orig2"] and found[0][1].share == 1.0
    embedded = texts[5][:300] + texts[3][200:500] + texts[5][300:]
    found = windows.query(FPER.fingerprint(embedded))
    assert [p for p, _ in found] == ["orig3"]
    assert found[0][1].share < 0.5 and found[0][1].run >= 4
    assert windows.query(FPER.fingerprint(texts[5])) == []
    assert windows.query(FPER.fingerprint("no Chinese at all")) == []
    # the index's scores are the definition's
    page = FPER.fingerprint(embedded)
    assert found[0][1] == score(page, set(FPER.fingerprint(texts[3]).codes))
    many = windows.query_many([FPER.fingerprint(pirated), FPER.fingerprint(texts[5])])
    assert [[p for p, _ in r] for r in many] == [["orig2"], []]
    assert windows.remove("orig2") and not windows.remove("orig2")
    assert windows.query(FPER.fingerprint(pirated)) == []


def test_pages_sharing_windows_are_removed_one_at_a_time(windows) -> None:
    text = chapters(1, seed=5)[0]
    hex_id = "65f1a2b3c4d5e6f708192a3b"
    assert windows.add(hex_id, FPER.fingerprint(text))
    assert windows.add("another-id", FPER.fingerprint(text))
    found = windows.query(FPER.fingerprint(text))
    assert sorted(p for p, _ in found) == [hex_id, "another-id"]
    assert windows.remove(hex_id)
    assert [p for p, _ in windows.query(FPER.fingerprint(text))] == ["another-id"]


def test_bucket_bits_grow_with_capacity() -> None:
    assert bucket_bits_for(1) == 1 and bucket_bits_for(0) == 1
    assert bucket_bits_for(100_000) == 18  # 12.8M postings / 2^18 buckets = 49 each
    assert bucket_bits_for(10**9) == 31


def test_other_parameters_are_refused(redis_client, namespace) -> None:
    WindowIndex(RedisWindowStore(redis_client, namespace), FPER.describe())
    other = PinyinFingerprinter(size=60).describe()
    with pytest.raises(IndexMismatchError, match="DEDUP_PINYIN"):
        WindowIndex(RedisWindowStore(redis_client, namespace), other)


def test_register_is_idempotent_and_rebuild_index_restores_the_windows(
        tmp_path, redis_client, pages, namespace, services) -> None:  # type: ignore[no-untyped-def]
    texts = chapters(3, seed=11)
    folder = tmp_path / "novels"
    folder.mkdir()
    for i, t in enumerate(texts):
        (folder / f"{i}.txt").write_bytes(t.encode("gb18030"))  # not UTF-8: decoded as GBK
    (folder / "empty.txt").write_text("   \n")
    (folder / "report.json").write_text(json.dumps({"copies": texts[0][:200]}))  # data
    (folder / "cover.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(range(256)) * 8)
    config = DedupConfig(namespace=namespace, database=pages.db.name)
    index = NearDuplicateIndex(RedisStore(redis_client, namespace), capacity=1000)
    windows = WindowIndex(RedisWindowStore(redis_client, namespace), FPER.describe())
    files = sorted(folder.iterdir())
    done = register(files, "novels", pages, index, windows, redis_client, config)
    assert (done.added, done.unchanged) == (3, 0)
    assert sorted((Path(f).name, why) for f, why in done.skipped) == [
        ("cover.jpg", "binary content"), ("empty.txt", "no text"),
        ("report.json", "not a text or HTML document (.json file)")]
    again = register(files, "novels", pages, index, windows, redis_client, config)
    assert (again.added, again.unchanged) == (0, 3)
    assert len(index) == 3 and len(windows) == 3
    stored = pages.db.pages.find_one({"url": (folder / "1.txt").resolve().as_uri()})
    assert stored["source"] == "novels" and stored["text"] == texts[1]
    assert stored["extraction"] == "text/gb18030"
    pirated = swap_homophones(texts[1], 0.1, random.Random(3), homophone_groups())
    assert windows.query(FPER.fingerprint(pirated))[0][0] == str(stored["_id"])

    RedisStore(redis_client, namespace).clear()  # Redis loses everything
    proc = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "rebuild-index", "--redis-url", services.redis_url,
         "--mongo-uri", services.mongo_uri, "--database", pages.db.name,
         "--namespace", namespace], cwd=ROOT, capture_output=True, text=True, timeout=300,
        check=False)
    assert proc.returncode == 0, proc.stderr
    assert "pinyin windows of 3 registered originals" in proc.stdout
    windows = WindowIndex(RedisWindowStore(redis_client, namespace), FPER.describe())
    assert windows.query(FPER.fingerprint(pirated))[0][0] == str(stored["_id"])

