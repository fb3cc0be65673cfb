"""The Redis index under concurrency, restarts and outages (real servers)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dedup.adapters.index import RedisStore
from dedup.errors import ServiceUnavailable
from dedup.ids import new_page_id
from dedup.index import Match, NearDuplicateIndex
from dedup.adapters.servers.services import (
    EmbeddedServer,
    EmbeddedServices,
    connect_mongo,
    connect_redis,
    free_port,
)
from dedup.adapters.mongo import PageStore
from dedup.store.records import fingerprint_row

pytestmark = pytest.mark.integration

WORKER = textwrap.dedent("""
    import json, random, sys, time
    from dedup.index import NearDuplicateIndex
    from dedup.adapters.index import RedisStore
    from dedup.adapters.servers.services import connect_redis
    url, ns, seed, start = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    items = json.loads(sys.stdin.read())
    rng = random.Random(seed)
    rng.shuffle(items)
    index = NearDuplicateIndex(RedisStore(connect_redis(url), ns), capacity=10000)
    while time.time() < start:
        time.sleep(0.001)
    admitted, at = [], 0
    while at < len(items):
        n = rng.randint(1, 40)
        chunk = [(fp, f"w{seed}-{i}-{at + j}") for j, (fp, i) in enumerate(items[at:at + n])]
        index.batch_size = rng.randint(1, 16)
        for (fp, _), result in zip(chunk, index.check_and_add_many(chunk)):
            if result is None:
                admitted.append(fp)
        at += n
    print(json.dumps(admitted))
""")


def test_concurrent_processes_never_admit_both_of_a_near_duplicate_pair(redis_client, services,
                                                                       namespace) -> None:
    rng = random.Random(2024)
    groups = []
    for _ in range(400):  # an original and 1-3 copies within 3 bits of it
        base = rng.getrandbits(64)
        members = [base]
        for _ in range(rng.randint(1, 3)):
            copy = base
            for bit in rng.sample(range(64), rng.randint(0, 1)):
                copy ^= 1 << bit
            members.append(copy)
        groups.append(members)
    items = [[fp, i] for i, g in enumerate(groups) for fp in g]
    NearDuplicateIndex(RedisStore(redis_client, namespace), capacity=10000)  # one layout
    start = time.time() + 3
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, services.redis_url, namespace,
                               str(seed), str(start)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for seed in range(4)]
    outs = [p.communicate(json.dumps(items), timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    admitted = [fp for out in outs for fp in json.loads(out)]
    # Copies are within 1 bit of their original, so any two members of a group are within
    # 2 bits: exactly one member of each group may be admitted, once, by one process.
    group_of = {fp: i for i, g in enumerate(groups) for fp in g}
    assert sorted(group_of[fp] for fp in admitted) == list(range(len(groups)))
    index = NearDuplicateIndex(RedisStore(redis_client, namespace))
    assert len(index) == len(groups)
    for fp in admitted:  # nothing else within k of an admitted fingerprint
        assert [m.fingerprint for m in index.query(fp)] == [fp]
    RedisStore(redis_client, namespace).clear()


def test_index_survives_a_redis_restart(tmp_path: Path) -> None:
    rng = random.Random(5)
    fps = {rng.getrandbits(64): f"p{i}" for i in range(500)}
    with EmbeddedServices(tmp_path, mongo=False) as svc:
        index = NearDuplicateIndex(RedisStore(connect_redis(svc.redis_url), "persist"),
                                   capacity=1000)
        assert index.check_and_add_many(fps.items()) == [None] * len(fps)
    with EmbeddedServices(tmp_path, mongo=False) as svc:  # a clean shutdown and a new start
        index = NearDuplicateIndex(RedisStore(connect_redis(svc.redis_url), "persist"))
        assert len(index) == len(fps)
        assert sorted(index.entries()) == sorted(fps.items())
        fp = next(iter(fps))
        assert index.check_and_add(fp ^ 0b11, "late") == Match(fp, fps[fp], 2)
        svc.servers["redis"].kill()  # a crash: SIGKILL
    with EmbeddedServices(tmp_path, mongo=False) as svc:
        index = NearDuplicateIndex(RedisStore(connect_redis(svc.redis_url), "persist"))
        assert len(index) == len(fps)


def test_redis_down_at_start_names_the_url() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(ServiceUnavailable, match=f"Redis at {url} is unreachable"):
        connect_redis(url, timeout=1)


def test_redis_down_during_a_crawl_raises_and_never_admits(tmp_path: Path) -> None:
    server = EmbeddedServer("redis", tmp_path)
    server.start()
    try:
        client = connect_redis(server.url, timeout=1)
        # with the default (fsync every second) a write may still be in Redis's buffer
        # when it is killed; this test is about the outage, not about that second
        client.config_set("appendfsync", "always")
        index = NearDuplicateIndex(RedisStore(client, "down", url=server.url), capacity=1000)
        assert index.check_and_add(1, "a") is None
        port = server.port
        server.kill()
        with pytest.raises(ServiceUnavailable, match=f"127.0.0.1:{port}"):
            index.check_and_add(0xFFFF0000FFFF0000, "b")
        with pytest.raises(ServiceUnavailable):
            index.query(1)
        server.port = port
        server.start()  # back on the same port: the same client recovers
        assert index.check_and_add(0xFFFF0000FFFF0000, "b") is None
        assert index.check_and_add(3, "c") == Match(1, "a", 1)
    finally:
        server.stop()


def test_mongo_down_names_the_uri() -> None:
    uri = f"mongodb://127.0.0.1:{free_port()}/?directConnection=true"
    started = time.monotonic()
    with pytest.raises(ServiceUnavailable, match="MongoDB at mongodb://127.0.0.1"):
        connect_mongo(uri, timeout=0.5)
    assert time.monotonic() - started < 10


def test_page_store_reports_an_outage(tmp_path: Path) -> None:
    server = EmbeddedServer("mongo", tmp_path)
    server.start()
    try:
        store = PageStore(connect_mongo(server.url, timeout=1), "outage", url=server.url)
        store.ensure_indexes()
        server.kill()
        with pytest.raises(ServiceUnavailable, match="MongoDB at mongodb://127.0.0.1"):
            store.count_fingerprints()
    finally:
        server.stop()


def test_a_second_process_shares_running_embedded_services(tmp_path: Path) -> None:
    with EmbeddedServices(tmp_path) as first:
        code = ("import sys; from dedup.adapters.servers.services import EmbeddedServices as E; "
                "s = E(sys.argv[1]).start(); print(s.redis_url, s.mongo_uri); s.stop()")
        out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                             text=True, timeout=60, check=True, env=dict(os.environ)).stdout
        assert out.split() == [first.redis_url, first.mongo_uri]
        connect_redis(first.redis_url).ping()  # the second process did not stop them


def test_the_embedded_mongodb_keeps_every_acknowledged_write_across_a_kill(tmp_path: Path
                                                                         ) -> None:
    server = EmbeddedServer("mongo", tmp_path)
    server.start()
    port = server.port
    try:
        store = PageStore(connect_mongo(server.url), "durable")
        ids = [new_page_id() for _ in range(300)]
        for at in range(0, 300, 30):  # the crawl's pattern: batches, acknowledged
            store.save_pages([{"_id": pid, "url": f"https://d.example/{at + n}", "host": "d"}
                              for n, pid in enumerate(ids[at:at + 30])],
                             [fingerprint_row(pid, at + n, checksum="0" * 32, tokens=50,
                                              short=False, algorithm="t")
                              for n, pid in enumerate(ids[at:at + 30])])
        server.kill()  # SIGKILL right after the last acknowledgement
        server.port = port
        server.start()
        store = PageStore(connect_mongo(server.url), "durable")
        assert store.pages.count_documents({}) == 300
        assert store.fingerprints.count_documents({}) == 300
    finally:
        server.stop()


def test_a_refused_mongodb_login_is_said_as_such(tmp_path: Path) -> None:
    port = free_port()
    base = [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port", str(port),
            "--storage-path", str(tmp_path), "--standalone", "--log-level", "WARNING"]
    uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"

    def serve(*extra: str) -> subprocess.Popen:
        proc = subprocess.Popen([*base, *extra])
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                connect_mongo(uri, timeout=0.5).close()
                return proc
            except ServiceUnavailable as exc:
                if "refused the login" in str(exc):
                    return proc
                time.sleep(0.2)
        raise AssertionError("SecantusDB did not start")

    proc = serve()
    connect_mongo(uri).admin.command("createUser", "alice", pwd="right", roles=["root"])
    proc.terminate()
    proc.wait()
    proc = serve("--auth")
    try:
        with pytest.raises(ServiceUnavailable, match="refused the login .*Fix the user name"):
            connect_mongo(f"mongodb://alice:wrong@127.0.0.1:{port}/?directConnection=true")
        connect_mongo(f"mongodb://alice:right@127.0.0.1:{port}/?directConnection=true").close()
    finally:
        proc.terminate()
        proc.wait()
