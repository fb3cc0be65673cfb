"""The same crawl of a generated site of over 5,000 pages with dedup on and off, in one run:
pages per second both ways and the ratio (extraction and storage are included in both).

With dedup off every page is fetched, extracted, fingerprinted and stored, and the copies'
links are followed too (so it also fetches the trap pages); with dedup on, copies are
dropped with their links. Pages per second is the fair comparison; the table also gives
the wall times.

    python bench/bench_crawl.py [--articles 1800]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crawler.demosite import DemoSite, build
from dedup.services import EmbeddedServices

ROOT = Path(__file__).resolve().parents[1]


def run(site: DemoSite, services: EmbeddedServices, tmp: Path, name: str, enabled: bool
        ) -> dict:
    summary = tmp / f"{name}.json"
    env = dict(os.environ, REDIS_URL=services.redis_url or "",
               MONGO_URI=services.mongo_uri or "")
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
         f"start_urls={site.start_urls()[0]}", "-s", f"DEDUP_ENABLED={enabled}",
         "-s", f"DEDUP_DATABASE=bench_{name}", "-s", f"DEDUP_NAMESPACE=bench-{name}",
         "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "CONCURRENT_REQUESTS=32",
         "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32", "-s", "DEDUP_CAPACITY=100000",
         "-s", f"DEDUP_SUMMARY_FILE={summary}", "-s", f"LOG_FILE={tmp / (name + '.log')}"],
        cwd=ROOT, env=env, check=False)
    took = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"crawl {name} failed; see {tmp / (name + '.log')}")
    stats = json.loads(summary.read_text())
    stats["seconds"] = took
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1800,
                        help="original articles (each with a mirror, and some with wire and "
                        "print copies)")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="simcrawl-crawl-bench-"))
    content = build(articles=args.articles, zh_articles=60)
    rows = []
    with EmbeddedServices(tmp / "data") as services, DemoSite(content) as site:
        for name, enabled in (("off", False), ("on", True)):
            site.requests.clear()
            print(f"[bench] crawling with dedup {name} ...", file=sys.stderr, flush=True)
            stats = run(site, services, tmp, name, enabled)
            fetched = stats.get("downloader/response_count", 0)
            rows.append((name, fetched, stats.get("dedup/stored/pages", 0),
                         stats.get("dedup/near_duplicate", 0)
                         + stats.get("dedup/exact_duplicate", 0), stats["seconds"],
                         sum(1 for r in site.requests if "/trap/" in r)))
    print(f"\nGenerated site: {args.articles:,} articles; {os.cpu_count()} cores; embedded "
          "Redis and SecantusDB; scrapy crawl as a subprocess (start-up included)\n")
    head = (f"{'dedup':6} {'fetched':>8} {'stored':>7} {'dropped':>8} {'traps':>6} "
            f"{'seconds':>8} {'fetched/s':>9} {'handled/s':>9}")
    print(head + "\n" + "-" * len(head))
    for name, fetched, stored, dropped, seconds, traps in rows:
        print(f"{name:6} {fetched:>8,} {stored:>7,} {dropped:>8,} {traps:>6,} {seconds:>8.1f} "
              f"{fetched / seconds:>9.1f} {(stored + dropped) / seconds:>9.1f}")
    off, on = rows[0], rows[1]
    print("handled = pages extracted, fingerprinted and stored or dropped; the trap pages "
          "that dedup off also fetches are 404s, cheap to fetch")
    print(f"handled/s with dedup on / off: "
          f"{(on[2] + on[3]) / on[4] / ((off[2] + off[3]) / off[4]):.2f}; "
          f"fetched/s: {on[1] / on[4] / (off[1] / off[4]):.2f}")


if __name__ == "__main__":
    main()
