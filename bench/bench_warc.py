"""WARC files read as a crawl (``simcrawl warc``): how many HTML records a second it
decides, against the goal of 200 a second per core, on the development pages written as
WARC (near-dup-dev and near-dup-dev-2, 990 pages, every one a response record, by
dedup/warc.py), on the embedded services.

    python bench/bench_warc.py [--repeat 3] [--spark [--master local[*]]]

Prints a table (records a second of wall time, and per CPU second of the run's crawl
process and its extraction workers) and one JSON line. With ``--spark``, the same pages
as 16 files, decided by one process reading them itself and by ``--engine spark`` (the
pages read on Spark a task a file, then decided in one process: dedup/spark/warc.py),
taking turns, each run's wall time from its start to its last decision, per core of the
machine.
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


def write_archive(folder: Path, max_bytes: int | None = None) -> int:
    """The development pages as one WARC file (or files of ``max_bytes``); returns how many
    records hold a page."""
    from dedup.warc import FILE_BYTES, Fetch, WarcWriter

    writer = WarcWriter(folder, "dev", {"software": "bench_warc"}, max_bytes or FILE_BYTES)
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


def timed_run(services: object, database: str, log: Path, spider: list[str]
              ) -> tuple[int, float, float]:
    """One ``simcrawl warc`` run: (pages decided, wall seconds, CPU seconds of its
    processes)."""
    from crawler.run import crawl

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    stats = crawl([], services.redis_url or "", services.mongo_uri or "",  # type: ignore[attr-defined]
                  ["-s", f"DEDUP_DATABASE={database}", "-s", "LOG_LEVEL=WARNING"], log, 1,
                  spider=spider)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    decided = sum(int(stats.get(k, 0)) for k in (
        "dedup/unique", "dedup/near_duplicate", "dedup/exact_duplicate", "dedup/pinyin_copy"))
    return decided, wall, cpu


def spark_rows(tmp: Path, repeat: int, master: str) -> int:
    """``--spark``: one process and Spark on the pages as 16 files, taking turns; prints
    the table and a JSON line."""
    from crawler.cli.warc import reading_params
    from crawler.extraction import read_fetched
    from dedup.servers.services import EmbeddedServices
    from dedup.spark import session
    from dedup.spark.warc import read_archives

    whole = tmp / "whole"
    write_archive(whole)
    size = sum(p.stat().st_size for p in whole.glob("*.warc.gz"))
    folder = tmp / "parts"
    records = write_archive(folder, max_bytes=size // 16)
    paths = sorted(folder.glob("*.warc.gz"))
    files = ",".join(str(p) for p in paths)
    params = reading_params([])
    rows: dict[str, list[tuple[int, float, float]]] = {"one process": [], "spark": []}
    with EmbeddedServices(tmp / "data") as services:
        for run in range(repeat):
            for engine in rows:
                started = time.perf_counter()
                spider = ["warc", "-a", f"files={files}"]
                executors = 0.0
                if engine == "spark":
                    spark = session.start(master, app="bench-warc")
                    stage = tmp / f"stage-{run}"
                    reads = read_archives(spark, paths, params, stage, read_fetched)
                    spark.stop()
                    executors = sum(r.seconds for r in reads)
                    spider += ["-a", f"read={stage}"]
                decided, _, cpu = timed_run(services, f"bench_warc_{engine[:3].strip()}_{run}",
                                            tmp / f"run-{engine[:3].strip()}-{run}.log", spider)
                wall = time.perf_counter() - started  # the Spark reading included
                rows[engine].append((decided, wall, cpu + executors))
                print(f"[bench] {engine} run {run + 1}: {decided} decided in {wall:.1f} s",
                      file=sys.stderr)
    cores = os.cpu_count() or 1
    print(f"\n{records} development pages as {len(paths)} WARC files; {cores} cores; "
          f"median of {repeat} runs each, taking turns (start-up included: Spark's JVM)\n")
    print("| simcrawl warc | records decided / s | a core of the machine | per CPU second "
          "(crawl, workers, executors' Python) |")
    print("|---|---:|---:|---:|")
    out = {}
    for engine, done in rows.items():
        per_wall = statistics.median(d / w for d, w, _ in done)
        per_cpu = statistics.median(d / c for d, _, c in done if c)
        out[engine] = per_wall
        name = "one process" if engine == "one process" else f"--engine spark ({master})"
        print(f"| {name} | {per_wall:.1f} | {per_wall / cores:.1f} | {per_cpu:.1f} |")
    print(json.dumps({"bench": "bench_warc_spark", "records": records, "files": len(paths),
                      "cores": cores, "one_process_per_s": round(out["one process"], 1),
                      "spark_per_s": round(out["spark"], 1),
                      "spark_over_one_process": round(out["spark"] / out["one process"], 2)}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true",
                        help="one process against --engine spark on the pages as 16 files")
    parser.add_argument("--master", default="local[*]", help="the Spark master (--spark)")
    args = parser.parse_args()
    if args.spark:
        with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
            return spark_rows(Path(tmp), args.repeat, args.master)
    if not (SHARED / "near-dup-dev" / "pages.jsonl").exists():
        raise SystemExit(f"the development data is not in {SHARED}")
    from dedup.servers.services import EmbeddedServices

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        folder = Path(tmp) / "in"
        records = write_archive(folder)
        files = ",".join(str(p) for p in sorted(folder.glob("*.warc.gz")))
        with EmbeddedServices(Path(tmp) / "data") as services:
            for run in range(args.repeat):
                decided, wall, cpu = timed_run(services, f"bench_warc_{run}",
                                               Path(tmp) / f"run-{run}.log",
                                               ["warc", "-a", f"files={files}"])
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
