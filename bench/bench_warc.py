"""WARC files read as a crawl (``simcrawl warc``): how many HTML records a second it
decides, against the goal of 200 a second per core, on the development pages written as
WARC (near-dup-dev and near-dup-dev-2, 990 pages, every one a response record, by
dedup/warc.py), on the embedded services.

    python bench/bench_warc.py [--repeat 3]

Prints a table (records a second of wall time, and per CPU second of the run's crawl
process and its extraction workers) and one JSON line.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
GOAL = 200.0


def write_archive(folder: Path) -> int:
    """The development pages as one WARC file; returns how many records hold a page."""
    from dedup.warc import Fetch, WarcWriter

    writer = WarcWriter(folder, "dev", {"software": "bench_warc"})
    n = 0
    for name in ("near-dup-dev", "near-dup-dev-2"):
        data = SHARED / name
        for line in (data / "pages.jsonl").read_text().splitlines():
            page = json.loads(line)
            body = gzip.decompress((data / "pages" / f"{page['page']}.html.gz").read_bytes())
            writer.original(Fetch(f"http://dev.test/{name}/{page['page']}.html", 200,
                                  [("Content-Type", "text/html")], body,
                                  dt.datetime.now(dt.timezone.utc), "OK"), page["page"])
            n += 1
    writer.close()
    return n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not (SHARED / "near-dup-dev" / "pages.jsonl").exists():
        raise SystemExit(f"the development data is not in {SHARED}")
    from crawler.run import crawl
    from dedup.servers.services import EmbeddedServices

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        folder = Path(tmp) / "in"
        records = write_archive(folder)
        files = ",".join(str(p) for p in sorted(folder.glob("*.warc.gz")))
        with EmbeddedServices(Path(tmp) / "data") as services:
            for run in range(args.repeat):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                started = time.perf_counter()
                stats = crawl([], services.redis_url or "", services.mongo_uri or "",
                              ["-s", f"DEDUP_DATABASE=bench_warc_{run}",
                               "-s", "LOG_LEVEL=WARNING"],
                              Path(tmp) / f"run-{run}.log", 1,
                              spider=["warc", "-a", f"files={files}"])
                wall = time.perf_counter() - started
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
                decided = sum(int(stats.get(k, 0)) for k in (
                    "dedup/unique", "dedup/near_duplicate", "dedup/exact_duplicate",
                    "dedup/pinyin_copy"))
                rows.append((decided, wall, cpu))
                print(f"[bench] run {run + 1}: {decided} decided in {wall:.1f} s",
                      file=sys.stderr)
    per_wall = statistics.median(d / w for d, w, _ in rows)
    per_cpu = statistics.median(d / c for d, _, c in rows if c)
    print(f"\n{records} development pages as one WARC file; {os.cpu_count()} cores; median of "
          f"{args.repeat} runs (start-up included)\n")
    print("| simcrawl warc | records decided / s | against the goal (200 a core) |")
    print("|---|---:|---:|")
    print(f"| wall time ({os.cpu_count()} cores) | {per_wall:.1f} | "
          f"{per_wall / (GOAL * (os.cpu_count() or 1)):.2f} |")
    print(f"| CPU second of the crawl process and its workers | {per_cpu:.1f} | "
          f"{per_cpu / GOAL:.2f} |")
    print(json.dumps({"bench": "bench_warc", "records": records,
                      "decided_per_s": round(per_wall, 1), "per_cpu_s": round(per_cpu, 1),
                      "goal_per_core": GOAL, "goal_met": per_cpu >= GOAL}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
