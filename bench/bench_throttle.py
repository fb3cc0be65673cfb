"""A crawl of a site whose links are mostly missing pages, with AutoThrottle on: simcrawl's
throttle (crawler.extensions.throttle.Throttle: a fast 404 counts like a fast 200) against Scrapy's
rule (a response that is not a 200 may raise the delay, never lower it), in one run.

The site, served on 127.0.0.1: a home page linking to 25 × ``--missing`` moved pages
(404) and to the first article, and ``--pages`` article pages, each with links to 4
other articles and to ``--missing`` URLs that answer 404. Every row crawls it from scratch with
the same settings (robots.txt off, depth unlimited), the real crawler on the embedded
Redis and MongoDB; it prints requests per second (200s and 404s), the wall time and the
pages stored (the same pages both ways), and one JSON line.

    python bench/bench_throttle.py [--pages 60] [--missing 8] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from crawler.examples.pageserver import serve
from crawler.run import crawl
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

WORDS = ["harbour", "council", "budget", "school", "winter", "market", "bridge", "station", "library", "museum", "festival", "election", "doctor", "hospital", "teacher", "farmer", "engine", "railway", "storm", "garden", "village", "mayor", "report", "study", "price", "house", "road", "water", "energy", "forest"]


def site(port: int, pages: int, missing: int) -> dict[str, bytes]:
    rng = random.Random(5)
    base = f"http://127.0.0.1:{port}"
    out = {}
    for n in range(pages):
        text = " ".join(" ".join(rng.choice(WORDS) for _ in range(14)).capitalize() + "."
                        for _ in range(30))
        links = [f"/article/{rng.randrange(pages)}" for _ in range(4)]
        links += [f"/gone/{n}-{m}" for m in range(missing)]
        anchors = "".join(f'<li><a href="{u}">link {i}</a></li>' for i, u in enumerate(links))
        out[f"{base}/article/{n}"] = (
            f"<html><head><title>Article {n}</title></head><body><article><h1>Article {n}"
            f"</h1><p>{text}</p></article><ul>{anchors}</ul></body></html>").encode()
    # the home page: an index of moved pages (all 404), and one link to the articles
    out[f"{base}/"] = ("<html><body><h1>Archive</h1><p>" + " ".join(WORDS * 4) + "</p>" +
                       "".join(f'<a href="/moved/{m}">moved {m}</a>'
                               for m in range(25 * missing)) +
                       '<a href="/article/0">articles</a></body></html>').encode()
    return out


def measure(rule: str, pages: int, missing: int, workdir: Path) -> dict:
    port = free_port()
    served = site(port, pages, missing)
    server, asked = serve(served, port)
    database = f"throttle_{rule}_{int(time.time() * 1000) % 100000}"
    try:
        with EmbeddedServices(workdir / database) as services:
            started = time.monotonic()
            crawl([f"http://127.0.0.1:{port}/"], services.redis_url or "",
                  services.mongo_uri or "",
                  ["-s", f"DEDUP_DATABASE={database}", "-s", f"DEDUP_NAMESPACE={database}",
                   "-s", "ROBOTSTXT_OBEY=0", "-s", "DEPTH_LIMIT=0", "-s", "AUTOTHROTTLE_ENABLED=1",
                   "-s", f"SIMCRAWL_THROTTLE_SCRAPY_RULE={int(rule == 'scrapy')}",
                   "-s", "LOG_LEVEL=INFO"], workdir / f"{database}.log")
            seconds = time.monotonic() - started
            stored = connect_mongo(services.mongo_uri)[database].pages.count_documents({})
    finally:
        server.shutdown()
    missing_asked = sum(1 for u in asked if "/gone/" in u or "/moved/" in u)
    return {"rule": rule, "requests": len(asked), "missing_requested": missing_asked,
            "seconds": round(seconds, 1), "requests_per_s": round(len(asked) / seconds, 1),
            "stored": stored}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--missing", type=int, default=8, help="404 links per page")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; {args.pages} pages, each linking to 4 pages and "
          f"{args.missing} missing URLs (404); AutoThrottle on, start delay 0.5 s\n")
    print("| throttle | run | requests (404s) | seconds | requests/s | pages stored |")
    print("|---|---:|---:|---:|---:|---:|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="simcrawl-throttle-") as tmp:
        for run in range(1, args.repeat + 1):
            for rule in ("scrapy", "simcrawl"):
                r = measure(rule, args.pages, args.missing, Path(tmp))
                rows.append({**r, "run": run})
                name = "Scrapy's rule (404s never lower the delay)" if rule == "scrapy" \
                    else "simcrawl's (a fast 404 counts)"
                print(f"| {name} | {run} | {r['requests']:,} ({r['missing_requested']:,}) | "
                      f"{r['seconds']} | {r['requests_per_s']} | {r['stored']} |", flush=True)
    print(json.dumps({"results": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
