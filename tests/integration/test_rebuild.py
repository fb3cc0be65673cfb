"""`simcrawl rebuild-index` and `remove` against real servers."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from dedup.adapters.index import RedisStore
from dedup.ids import new_page_id
from dedup.index import NearDuplicateIndex
from dedup.sketch import TextSketch
from dedup.adapters.mongo import fingerprint_document
from dedup.store.records import fingerprint_row

pytestmark = pytest.mark.integration


def cli(services, pages, namespace, *args):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", *args, "--redis-url", services.redis_url,
         "--mongo-uri", services.mongo_uri, "--database", pages.db.name,
         "--namespace", namespace], capture_output=True, text=True, timeout=300, check=False)


def test_rebuild_index_reproduces_the_index(services, redis_client, big_pages, namespace) -> None:
    pages = big_pages
    rng = random.Random(9)
    store = RedisStore(redis_client, namespace)
    index = NearDuplicateIndex(store, capacity=5000)
    docs, fps = [], []
    for i in range(3000):
        pid, fp = new_page_id(), rng.getrandbits(64)
        if index.check_and_add(fp, pid) is None:
            docs.append({"_id": pid, "url": f"https://h.example/{i}", "host": "h.example",
                         "checksum": f"{i:032x}"})
            sketch = {"sketch": TextSketch.of_text(" ".join(f"w{i}x{j}" for j in range(40)))
                      .to_bytes()} \
                if i < 10 else {}
            fps.append(fingerprint_row(pid, fp, checksum="0" * 32, tokens=40, short=False,
                                       algorithm="t", **sketch))
    pages.save_pages(docs, fps)
    before, layout = sorted(index.entries()), store.read_layout()
    pages.save_layout(namespace, layout)  # as the crawler does when it opens the index
    store.clear()  # Redis lost everything
    done = cli(services, pages, namespace, "rebuild-index")
    assert done.returncode == 0, done.stderr
    assert f"rebuilt: {len(before):,} fingerprints, {len(docs):,} text checksums and the " \
        "pinyin windows of 0 registered originals" in done.stdout
    assert f"rebuild-index: about {len(before):,} fingerprints" in done.stderr
    after = NearDuplicateIndex(RedisStore(redis_client, namespace))
    assert sorted(after.entries()) == before
    assert store.read_layout() == layout
    from dedup.adapters.redis_registry import checksum_key
    key, field = checksum_key(namespace, docs[5]["checksum"])
    assert redis_client.hget(key, field).decode() == docs[5]["_id"]
    probe = before[17][0] ^ 0b101
    assert after.query(probe) == index.query(probe) and after.query(probe)
    # the text sketches the store keeps come back with their fingerprints
    sketched = {str(d["_id"]): d for d in fps if "sketch" in d}
    assert len(sketched) == 10
    restored = [(fp, pid) for fp, pid in before if pid in sketched]
    assert len(restored) == 10
    for fp, pid in restored:
        assert after.store.evidence([fp]) == [[(pid, sketched[pid]["sketch"])]]
    # ... and so do their text anchors: a page with the same text, 32 bits away
    fp, pid = restored[0]
    found = after.check_and_add_all([(fp ^ 0xFFFF_FFFF, "new", sketched[pid]["sketch"])])[0]
    assert [(m.page_id, m.distance) for m in found] == [(pid, 32)]


def test_rebuild_with_a_new_capacity_replans(services, redis_client, pages, namespace) -> None:
    NearDuplicateIndex(RedisStore(redis_client, namespace), capacity=100)
    done = cli(services, pages, namespace, "rebuild-index", "--capacity", "50000000")
    assert done.returncode == 0, done.stderr
    layout = RedisStore(redis_client, namespace).read_layout()
    assert layout["capacity"] == 50_000_000 and layout["bucket_bits"] > 4


def test_remove_by_page_id_and_fingerprint(services, redis_client, pages, namespace) -> None:
    index = NearDuplicateIndex(RedisStore(redis_client, namespace), capacity=1000)
    pid = new_page_id()
    index.check_and_add(0xABCDEF, pid)
    index.check_and_add(0xF000000000000000, "other")
    pages.save_pages([{"_id": pid, "url": "https://h.example/x", "host": "h.example"}],
                     [fingerprint_row(pid, 0xABCDEF, checksum="0" * 32, tokens=40, short=False,
                                      algorithm="t")])
    done = cli(services, pages, namespace, "remove", pid, "--fingerprint", "f000000000000000")
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(index) == 0 and pages.page(pid) is None
    missing = cli(services, pages, namespace, "remove", pid)
    assert missing.returncode == 1 and "not in the index" in missing.stdout


def test_a_fingerprint_removed_from_the_index_stays_out_of_its_rebuilds(
        services, redis_client, pages, namespace) -> None:  # type: ignore[no-untyped-def]
    """`remove --fingerprint` takes a fingerprint out of the index only: a rebuild put it
    back and reported it "lost by Redis", its progress stopping at 5 of 6."""
    index = NearDuplicateIndex(RedisStore(redis_client, namespace), capacity=1000)
    fps = {new_page_id(): 0x1111 * (i + 1) << 40 for i in range(6)}
    pages.save_pages([{"_id": pid, "url": f"https://h.example/{i}", "host": "h.example"}
                      for i, pid in enumerate(fps)],
                     [fingerprint_row(pid, fp, checksum=f"{i:032x}", tokens=40, short=False,
                                      algorithm="t") for i, (pid, fp) in enumerate(fps.items())])
    for pid, fp in fps.items():
        index.check_and_add(fp, pid)
    gone = next(iter(fps.values()))
    done = cli(services, pages, namespace, "remove", "--fingerprint", f"{gone:016x}")
    assert done.returncode == 0 and "kept out of rebuilds (1 stored page)" in done.stdout
    done = cli(services, pages, namespace, "rebuild-index")
    assert done.returncode == 0, done.stderr
    assert "lost by Redis" not in done.stderr and "the store and the index agreed" in done.stdout
    assert "1 removed from the index (simcrawl remove --fingerprint)" in done.stdout
    rebuilt = NearDuplicateIndex(RedisStore(redis_client, namespace))
    assert len(rebuilt) == 5 and gone not in {fp for fp, _ in rebuilt.entries()}


def test_an_index_that_releases_sketches_is_rebuilt_and_removed_from_released(
        services, redis_client, pages, namespace) -> None:  # type: ignore[no-untyped-def]
    """An index too large to keep sketches in Redis (DEDUP_SKETCHES=until-stored): the
    rebuild writes every stored page's record without its sketch (only its anchors), the
    candidates' sketches come from the store, and `simcrawl remove` takes a page from
    under its anchors, read from its stored sketch before the page goes."""
    from dedup.index import IndexLayout
    from dedup.index.core import RELEASED

    layout = IndexLayout.plan(1000, 3, release_sketches=True)
    text = {new_page_id(): " ".join(f"w{i}x{j}" for j in range(60)) for i in range(3)}
    sketches = {pid: TextSketch.of_text(t).to_bytes() for pid, t in text.items()}
    fps = {pid: random.Random(i).getrandbits(64) for i, pid in enumerate(text)}
    pages.save_pages([{"_id": pid, "url": f"https://h.example/{pid}", "host": "h.example",
                       "checksum": f"{i:032x}"} for i, pid in enumerate(text)],
                     [fingerprint_row(pid, fps[pid], checksum=f"{i:032x}", tokens=60,
                                      short=False, algorithm="t", sketch=sketches[pid])
                      for i, pid in enumerate(text)])
    pages.save_layout(namespace, layout.describe())
    done = cli(services, pages, namespace, "rebuild-index")
    assert done.returncode == 0, done.stderr
    index = NearDuplicateIndex(RedisStore(redis_client, namespace))
    assert index.layout.release_sketches
    assert all(index.store.evidence([fp]) == [[(pid, RELEASED)]] for pid, fp in fps.items())
    index.sketch_source = pages.sketches_of
    pid = next(iter(text))
    same_text = TextSketch.of_text(text[pid]).to_bytes()
    found = index.check_and_add_all([(fps[pid] ^ (2**64 - 1), "probe", same_text)])[0]
    assert [(m.page_id, m.sketch) for m in found] == [(pid, sketches[pid])]  # by anchors
    done = cli(services, pages, namespace, "remove", pid)
    assert done.returncode == 0, done.stderr + done.stdout
    # nothing is filed under its anchors any more: the same text is admitted
    assert index.check_and_add_all([(fps[pid] ^ (2**64 - 1), "probe", same_text)]) == [[]]


def test_unreachable_redis_is_a_clear_error(pages, namespace) -> None:
    from dedup.adapters.servers.services import free_port

    done = subprocess.run([sys.executable, "-m", "crawler.cli", "rebuild-index", "--redis-url",
                           f"redis://127.0.0.1:{free_port()}/0", "--mongo-uri", "mongodb://x",
                           "--namespace", namespace], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 3
    assert "error: Redis at redis://127.0.0.1:" in done.stderr
    assert "Traceback" not in done.stderr


def test_rebuild_index_reports_where_store_and_index_disagree(services, redis_client, pages,
                                                             namespace) -> None:  # type: ignore[no-untyped-def]
    store = RedisStore(redis_client, namespace)
    index = NearDuplicateIndex(store, capacity=5000)
    pages.save_layout(namespace, store.read_layout())
    ok, no_fp, ghost, orphan, lost = (new_page_id() for _ in range(5))
    index.add_many([(1 << 40, ok), (2 << 40, ghost)])  # ghost: admitted, never stored
    pages.save_pages([{"_id": ok, "url": "https://h/1", "host": "h"},
                      {"_id": no_fp, "url": "https://h/2", "host": "h"},
                      {"_id": lost, "url": "https://h/3", "host": "h"}],
                     [fingerprint_row(ok, 1 << 40, checksum="1" * 32, tokens=40, short=False,
                                      algorithm="t"),
                      fingerprint_row(lost, 3 << 40, checksum="3" * 32, tokens=40, short=False,
                                      algorithm="t")])  # lost: stored, not in the index
    pages.fingerprints.insert_one(fingerprint_document(fingerprint_row(orphan, 4 << 40, checksum="4" * 32,
                                                  tokens=40, short=False, algorithm="t")))
    done = cli(services, pages, namespace, "rebuild-index")
    assert done.returncode == 0, done.stderr
    for text in ("1 pages have no fingerprint", "1 fingerprints have no page",
                 "the index held 1 fingerprints of pages that are not stored",
                 "the index lacked 1 stored fingerprints"):
        assert text in done.stderr, done.stderr
    assert "disagreed in 4 ways" in done.stdout
    after = NearDuplicateIndex(RedisStore(redis_client, namespace))
    assert sorted(pid for _, pid in after.entries()) == sorted([ok, lost])
    again = cli(services, pages, namespace, "rebuild-index")
    assert "disagreed in 2 ways" in again.stdout  # the store's own two remain


def test_a_healthy_store_agrees_with_its_index_and_says_what_is_not_indexed(
        services, redis_client, pages, namespace) -> None:  # type: ignore[no-untyped-def]
    """Two stored pages with one simhash (the index names the first), and a short text
    (matched by checksum only): nothing is lost, and the rebuild says why it indexed 1 of
    the 3 stored fingerprints, on the first rebuild and on the next."""
    first, second, short = new_page_id(), new_page_id(), new_page_id()
    fp = 0x0123456789ABCDEF
    pages.save_pages(
        [{"_id": p, "url": f"https://h.example/{n}", "host": "h.example",
          "checksum": f"{n:032x}"} for n, p in enumerate((first, second, short))],
        [fingerprint_row(first, fp, checksum="0" * 32, tokens=40, short=False, algorithm="t"),
         fingerprint_row(second, fp, checksum="1" * 32, tokens=40, short=False, algorithm="t"),
         fingerprint_row(short, 7, checksum="2" * 32, tokens=4, short=True, algorithm="t")])
    index = NearDuplicateIndex(RedisStore(redis_client, namespace), capacity=1000)
    index.add_many([(fp, first), (fp, second)])  # as the crawl admits them: one entry
    pages.save_layout(namespace, RedisStore(redis_client, namespace).read_layout())
    for _ in range(2):
        done = cli(services, pages, namespace, "rebuild-index")
        assert done.returncode == 0, done.stderr
        assert "lacked" not in done.stderr and "warning" not in done.stderr, done.stderr
        assert "the store and the index agreed" in done.stdout
        assert "rebuilt: 1 fingerprints" in done.stdout
        assert ("fingerprints stored but not indexed, as it should be: 1 of short texts "
                "(matched by their checksum only); 1 equal to another page's (indexed "
                "once, for the first)") in done.stdout
    assert dict(index.entries()) == {fp: first}
