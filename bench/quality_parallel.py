"""The decision at 1, 2 and 3 crawl processes: the development pages crawled over HTTP by
the real crawler, the same pages for every row, the figures side by side.

Each development set's pages are served on 127.0.0.1 (each site on a loopback address of
its own, so each keeps its host and template), every page with one extra link of its own,
``/out/NAME``. The crawl starts from every page (``scrapy crawl site`` through
:func:`crawler.run.crawl`, the processes sharing the frontier in Redis for 2 and 3) on the
embedded Redis and SecantusDB, then the store is read:

* **copies admitted**: stored pages beyond the first of their article (an article: the
  pages connected by labelled duplicate pairs; a rewrite or a stub is its own);
* **wrong drops**: match records whose original is another article's page;
* **outlinks of copies requested**: ``/out/NAME`` fetched for a page recorded as a copy
  (a dropped copy's outlinks must never be requested); in brackets, those of pages
  stored first and then turned round into copies (their links were followed while they
  were the original: docs/fingerprints.md, "The right original"); and the matches
  turned round.

The decision must not depend on the number of processes: copies admitted and wrong drops
should stay within ±2 of one process, and no outlink of a copy may be requested. Reads the
data from ``../shared`` (never copied into the repository); development figures.

    python bench/quality_parallel.py [--data PATH ...] [--processes 1 2 3] [--repeat 2]
                                     [--clusters | --redis-cluster]
                                     [--sketches until-stored]

``--redis-cluster``: the same crawls on a real Redis Cluster of three primaries, the
index spread over its nodes (numbered pending entries, docs/scaling.md).
``--sketches until-stored``: the index keeps stored pages' text sketches out of Redis (as
the crawl's index does past one node), so candidates' sketches are read from MongoDB.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlsplit

from _peers import missing_data  # bench/ is the script's folder: on sys.path
from quality_crawl import articles

from crawler.examples.pageserver import serve
from crawler.run import crawl
from dedup.adapters.servers.services import EmbeddedServices, LocalRedisCluster, connect_mongo, free_port

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_DATA = [SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"]


def site(data: Path, port: int) -> tuple[dict[str, bytes], dict[str, str]]:
    """The set's pages by local URL, each with its ``/out/NAME`` link, and page name by
    URL."""
    hosts: dict[str, str] = {}
    pages: dict[str, bytes] = {}
    names: dict[str, str] = {}
    for row in map(json.loads, (data / "pages.jsonl").open()):
        parts = urlsplit(row["url"])
        address = hosts.setdefault(parts.netloc, f"127.0.0.{len(hosts) + 2}")
        url = f"http://{address}:{port}{parts.path or '/'}"
        body = gzip.decompress((data / "pages" / f"{row['page']}.html.gz").read_bytes())
        link = f'<a href="/out/{row["page"]}">more</a>'.encode()
        at = body.lower().rfind(b"</body>")
        pages[url] = body[:at] + link + body[at:] if at >= 0 else body + link
        names[url] = row["page"]
    return pages, names


def outlink(path: str) -> bytes | None:
    """The page behind every ``/out/`` link."""
    return b"<html><body><p>an outlink</p></body></html>" if path.startswith("/out/") else None


def reconcile(services: EmbeddedServices, database: str, names: dict[str, str],
              article: dict[str, str]) -> dict:
    """Run ``simcrawl clusters`` on the crawl's store and read what it wrote: batch
    records right and wrong (by the labels), pages without a cluster, crawl match records
    whose cluster is not their original's."""
    import contextlib
    import io

    from crawler.cli.clusters import main as clusters_main

    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        status = clusters_main(["--mongo-uri", services.mongo_uri or "", "--redis-url",
                                services.redis_url or "", "--database", database,
                                "--namespace", database])
    db = connect_mongo(services.mongo_uri)[database]
    cluster_of = {d["_id"]: d.get("cluster") for d in db.pages.find({}, {"cluster": 1})}
    records = [(names.get(d["url"], "?"), names.get(d.get("original_url") or "", "?"))
               for d in db.matches.find({"kind": "batch"}, {"url": 1, "original_url": 1})]
    # a record between two pages outside the set (the /out/NAME pages) says nothing of it
    batch = {n: o for n, o in records if (n, o) != ("?", "?")}
    crawl_records = list(db.matches.find({"kind": {"$ne": "batch"}},
                                         {"original_id": 1, "cluster": 1}))
    return {"status": status,
            "batch_right": sum(1 for n, o in batch.items() if article.get(n) == article.get(o)),
            "batch_wrong": sorted(f"{n} -> {o}" for n, o in batch.items()
                                  if article.get(n) != article.get(o)),
            "pages_without_cluster": sum(1 for c in cluster_of.values() if c is None),
            "records_disagreeing": sum(1 for d in crawl_records
                                       if d.get("cluster") != cluster_of.get(d["original_id"])),
            "batch_names": sorted(batch), "batch_outside": len(records) - len(batch),
            "said": said.getvalue().splitlines()}


def measure(data: Path, processes: int, run: int, workdir: Path, clusters: bool = False,
            cluster_url: str | None = None, sketches: str = "auto",
            shuffle: int | None = None, settings: list[str] | None = None) -> dict:
    port = free_port()
    pages, names = site(data, port)
    starts = list(pages)
    if shuffle is not None:  # another crawl order: the start URLs shuffled
        random.Random(shuffle * 1000 + run).shuffle(starts)
    pairs = [json.loads(line) for line in (data / "pairs.jsonl").open()]
    article = articles(list(names.values()), pairs)
    server, asked = serve(pages, port, outlink)
    database = f"par{processes}x{run}"
    started = time.monotonic()
    try:
        with EmbeddedServices(workdir / database) as services:
            # on a Redis Cluster: a hash-tag namespace; the index spreads over the nodes
            namespace = f"{{{database}}}" if cluster_url else database
            summary = crawl(starts, cluster_url or services.redis_url or "",
                            services.mongo_uri or "",
                            ["-s", f"DEDUP_DATABASE={database}", "-s",
                             f"DEDUP_NAMESPACE={namespace}", "-s", "AUTOTHROTTLE_ENABLED=0",
                             "-s", "ROBOTSTXT_OBEY=0", "-s", "DEPTH_LIMIT=1",
                             "-s", "LOG_LEVEL=INFO", "-s", f"DEDUP_SKETCHES={sketches}",
                             *[x for kv in settings or [] for x in ("-s", kv)]],
                            workdir / f"{database}.log", processes)
            db = connect_mongo(services.mongo_uri)[database]
            stored = [names[d["url"]] for d in db.pages.find({}, {"url": 1})
                      if d["url"] in names]
            records = [d for d in db.matches.find({}, {"url": 1, "original_url": 1,
                                                       "turned": 1}) if d["url"] in names]
            copies = {names[d["url"]]: names.get(d.get("original_url") or "", "?")
                      for d in records}
            # stored first, then turned round: its links were followed as an original's
            turned = {names[d["url"]] for d in records if d.get("turned")}
            batch = reconcile(services, database, names, article) if clusters else None
    finally:
        server.shutdown()
    per_article = Counter(article[n] for n in stored)
    wrong = sum(1 for n, o in copies.items() if o not in article or article[o] != article[n])
    out = {urlsplit(u).path[5:] for u in asked if urlsplit(u).path.startswith("/out/")}
    return {"processes": processes, "run": run, "decided": len(stored) + len(copies),
            "pages": len(pages), "stored": len(stored), "drops": len(copies),
            "copies_admitted": sum(c - 1 for c in per_article.values()),
            "wrong_drops": wrong, "copy_outlinks": len(out & copies.keys()),
            "turned": len(turned), "turned_outlinks": len(out & turned),
            "lost": len(summary.get("lost_urls", [])),
            "wrong": sorted(f"{n} -> {o}" for n, o in copies.items()
                            if o not in article or article[o] != article[n]),
            "admitted_twice": sorted(sorted(n for n in stored if article[n] == a)
                                     for a, c in per_article.items() if c > 1),
            "seconds": time.monotonic() - started, **({"batch": batch} if batch else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--repeat", type=int, default=2, help="runs per process count")
    parser.add_argument("--clusters", action="store_true",
                        help="after each crawl, run simcrawl clusters on its store and "
                        "report what it recorded (the copies admitted it finds, wrong "
                        "batch records, pages without a cluster, crawl records whose "
                        "cluster is not their original's)")
    parser.add_argument("--redis-cluster", action="store_true",
                        help="crawl on a real Redis Cluster of three primaries (started "
                        "here), the index spread over its nodes (dedup.adapters.redis_cluster.ClusterStore)")
    parser.add_argument("--sketches", choices=("auto", "redis", "until-stored"),
                        default="auto",
                        help="where the index keeps stored pages' text sketches "
                        "(DEDUP_SKETCHES; until-stored: as past one Redis node)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the crawls (repeatable)")
    parser.add_argument("--shuffle", type=int, metavar="SEED",
                        help="start from the pages in a shuffled order (seeded by SEED and "
                        "the run), not in the set's: how much the figures owe to the crawl "
                        "order rather than to the number of processes")
    args = parser.parse_args()
    if args.redis_cluster and args.clusters:
        parser.error("--clusters reads the index of the embedded Redis: not with "
                     "--redis-cluster")
    for data in args.data:
        if not (data / "pages.jsonl").is_file():
            raise missing_data(data, "A near-duplicate development set (pages.jsonl)")
    print(f"{os.cpu_count()} cores; every row crawls the same pages from scratch "
          "(development figures)" + ("; on a Redis Cluster of three nodes, the index "
                                     "sharded" if args.redis_cluster else "")
          + ("; text sketches out of Redis once stored" if args.sketches == "until-stored"
             else "") + (f"; start URLs shuffled (seed {args.shuffle})"
                         if args.shuffle is not None else ""))
    results = []
    with tempfile.TemporaryDirectory(prefix="simcrawl-parallel-") as tmp, \
            contextlib.ExitStack() as stack:
        cluster_url = None
        if args.redis_cluster:
            cluster = LocalRedisCluster(Path(tmp) / "cluster").start()
            stack.callback(cluster.stop)
            cluster_url = cluster.url
        for data in args.data:
            print(f"\n{data.name}\n")
            print("| processes | run | pages decided | stored | drops | copies admitted | "
                  "wrong drops | outlinks of copies requested (of turned ones) | "
                  "matches turned round | seconds |")
            print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for processes in args.processes:
                for run in range(1, args.repeat + 1):
                    r = measure(data, processes, run, Path(tmp), args.clusters, cluster_url,
                                args.sketches, args.shuffle, args.set)
                    results.append({"data": data.name, **r})
                    print(f"| {processes} | {run} | {r['decided']} / {r['pages']} | "
                          f"{r['stored']} | {r['drops']} | {r['copies_admitted']} | "
                          f"{r['wrong_drops']} | {r['copy_outlinks']} "
                          f"({r['turned_outlinks']}) | {r['turned']} | "
                          f"{r['seconds']:.0f} |", flush=True)
                    if "batch" in r:
                        b, twice = r["batch"], r["admitted_twice"]
                        extra = sum(len(group) - 1 for group in twice)
                        print(f"|   | clusters | exit {b['status']}: batch records "
                              f"{b['batch_right']} right of {extra} copies admitted, "
                              f"{len(b['batch_wrong'])} wrong; pages without a cluster "
                              f"{b['pages_without_cluster']}; crawl records off their "
                              f"original's cluster {b['records_disagreeing']} ||||||||",
                              flush=True)
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
