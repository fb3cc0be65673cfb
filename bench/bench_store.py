"""What durable writes cost on the embedded servers.

The embedded SecantusDB runs with ``--sync-on-commit`` and the embedded Redis with
``appendfsync always``: every write either acknowledges is on disk, so a killed server
loses nothing it acknowledged. This measures the price against the same servers without
it, in the same run:

- MongoDB: the crawl's write pattern (batches of ``--batch`` pages, each with a
  fingerprint document, then the batch's match records as upserts), pages with a few kB
  of text;
- Redis: the crawl's decisions (``check_and_add_many`` in batches of ``--batch``, with
  the journal and checksum writes around them) on an append-only Redis.

    python bench/bench_store.py [--pages 5000] [--batch 64] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dedup.ids import new_page_id
from dedup.adapters.servers.services import connect_mongo, free_port
from dedup.adapters.mongo import PageStore
from dedup.store.records import MatchRecord, fingerprint_row

TEXT = ("The harbour wall repairs will go ahead after months of delay, the council said. "
        * 40)


def server(folder: Path, sync: bool) -> tuple[subprocess.Popen, str]:
    port = free_port()
    cmd = [sys.executable, "-m", "secantus", "--host", "127.0.0.1", "--port", str(port),
           "--storage-path", str(folder), "--standalone", "--log-level", "WARNING",
           "--cache-size", "256M", "--oplog-max-entries", "10000"]
    if sync:
        cmd.append("--sync-on-commit")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
    deadline = time.monotonic() + 60
    while True:
        try:
            connect_mongo(uri, timeout=1).close()
            return proc, uri
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run(uri: str, pages: int, batch: int) -> float:
    store = PageStore(connect_mongo(uri), f"bench_{os.getpid()}_{time.time_ns()}")
    store.ensure_indexes()
    started = time.perf_counter()
    for at in range(0, pages, batch):
        docs, fps, matches = [], [], []
        for n in range(at, min(at + batch, pages)):
            pid = new_page_id()
            docs.append({"_id": pid, "url": f"https://a.example/{n}", "host": "a.example",
                         "text": TEXT, "checksum": f"{n:032x}"})
            fps.append(fingerprint_row(pid, n * 7919, checksum=f"{n:032x}", tokens=600,
                                       short=False, algorithm="bench"))
            matches.append(MatchRecord(url=f"https://b.example/{n}", host="b.example",
                                       original_id=pid, original_url=f"https://a.example/{n}",
                                       original_host="a.example", distance=1,
                                       kind="simhash").row(crawl_id=None))
        store.save_pages(docs, fps)
        store.save_matches(matches)
    took = time.perf_counter() - started
    store.client.drop_database(store.db.name)
    store.client.close()
    return took


def redis_run(appendfsync: str, pages: int, batch: int, folder: Path) -> float:
    import random

    from dedup.adapters.on_servers import on_servers
    from dedup.adapters.index import RedisStore
    from dedup.adapters.journal import AdmissionJournal
    from dedup.index import NearDuplicateIndex
    from dedup.page import Page
    from dedup.adapters.servers.services import EmbeddedServer, connect_redis

    server = EmbeddedServer("redis", folder)
    server.start()
    mongo = EmbeddedServer("mongo", folder)
    mongo.start()
    try:
        client = connect_redis(server.url)
        client.config_set("appendfsync", appendfsync)
        store = PageStore(connect_mongo(mongo.url), "bench")
        ns = f"bench{appendfsync}"
        index = NearDuplicateIndex(RedisStore(client, ns), capacity=max(pages, 1000))
        journal = AdmissionJournal(client, ns).open()
        decide = on_servers(index, client, store, ns, journal=journal)
        rng = random.Random(1)
        rows = [Page(f"https://a.example/{n}", "a.example", f"{n:032x}",
                          rng.getrandbits(64), False) for n in range(pages)]
        started = time.perf_counter()
        for at in range(0, pages, batch):
            decided = decide.decide(rows[at:at + batch])
            journal.confirm([d.page_id for d in decided])
        took = time.perf_counter() - started
        journal.close()
        return took
    finally:
        server.stop()
        mongo.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"cores: {os.cpu_count()}; {args.pages:,} pages (+ fingerprints and match records)"
          f" in batches of {args.batch}, median of {args.repeat} runs")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sync in (False, True):
            proc, uri = server(Path(tmp) / ("sync" if sync else "nosync"), sync)
            try:
                times = sorted(run(uri, args.pages, args.batch) for _ in range(args.repeat))
            finally:
                proc.terminate()
                proc.wait()
            rows.append((sync, times[len(times) // 2]))
        redis_rows = []
        for mode in ("everysec", "always"):
            times = sorted(redis_run(mode, args.pages, args.batch, Path(tmp) / f"r{mode}{n}")
                           for n in range(args.repeat))
            redis_rows.append((mode, times[len(times) // 2]))
    base = rows[0][1]
    print(f"\n{'MongoDB writes (SecantusDB)':<36} {'seconds':>8} {'pages/s':>9} {'cost':>7}")
    for sync, took in rows:
        name = "--sync-on-commit (simcrawl)" if sync else "no sync on commit (peer)"
        print(f"{name:<36} {took:>8.2f} {args.pages / took:>9,.0f} {took / base:>6.2f}x")
    base = redis_rows[0][1]
    print(f"\n{'Redis decisions (append-only)':<36} {'seconds':>8} {'pages/s':>9} {'cost':>7}")
    for mode, took in redis_rows:
        name = f"appendfsync {mode}" + (" (simcrawl)" if mode == "always" else " (peer)")
        print(f"{name:<36} {took:>8.2f} {args.pages / took:>9,.0f} {took / base:>6.2f}x")


if __name__ == "__main__":
    main()
