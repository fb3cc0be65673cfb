"""WARC files read as a crawl (``simcrawl warc``) beside the crawl of the same pages over
HTTP, in one run: how many pages a second each decides, and the CPU each spends a page,
on the development pages (near-dup-dev and near-dup-dev-2, 990 real pages), on the
embedded services. The goal (issue 69): ``simcrawl warc`` decides at least twice the
pages a second that the crawl of the same pages handles.

    python bench/bench_warc.py [--repeat 3] [--spark [--master local[*]]]

The crawl is ``bench/bench_crawl.py --real --pages-only``'s (the pages served as they
were saved behind one listing, the listing's links only); ``simcrawl warc`` reads the same
pages written as one WARC file (a response record a page, by dedup/warc_writer.py). The two take
turns. Each is a ``scrapy crawl`` subprocess whose CPU is sampled with its extraction
workers (``bench_crawl.CpuMeter``: the workers are the fork server's children, which the
crawl process's own resource usage does not count) and the services'. Prints a table and
one JSON line.

With ``--spark``, the same pages as 16 files, decided by one process reading them itself
and by ``--engine spark`` (the pages read on Spark a task a file, then decided in one
process: dedup/spark/read_archives.py), taking turns, each run's wall time from its start to its
last decision, per core of the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "bench"))

#: ``simcrawl warc``'s pages a second over the crawl's, on the same pages (issue 69).
GOAL = 2.0


def write_archive(folder: Path, max_bytes: int | None = None) -> int:
    """The development pages as one WARC file (or files of ``max_bytes``); returns how many
    records hold a page."""
    from dedup.warc_writer import FILE_BYTES, Fetch, WarcWriter

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


def _decided(stats: dict[str, Any]) -> int:
    return sum(int(stats.get(k, 0)) for k in (
        "dedup/unique", "dedup/near_duplicate", "dedup/exact_duplicate", "dedup/pinyin_copy"))


def timed_run(services: Any, database: str, tmp: Path, spider: list[str]) -> dict[str, Any]:
    """One ``simcrawl warc`` run (``scrapy crawl warc``, as the verb runs it): pages
    decided, wall seconds, start-up (from the launch to the spider's opening) and CPU
    seconds by process (:class:`bench_crawl.CpuMeter`)."""
    from bench_crawl import CpuMeter

    summary = tmp / f"{database}.json"
    env = dict(os.environ, REDIS_URL=services.redis_url or "",
               MONGO_URI=services.mongo_uri or "")
    launched, started = time.time(), time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "crawl", *spider, "-s", f"DEDUP_DATABASE={database}",
         "-s", f"DEDUP_NAMESPACE={database}", "-s", "LOG_LEVEL=WARNING",
         "-s", f"DEDUP_SUMMARY_FILE={summary}", "-s", f"LOG_FILE={tmp / (database + '.log')}"],
        cwd=ROOT, env=env)
    meter = CpuMeter(proc.pid, services)
    if proc.wait() != 0:
        raise SystemExit(f"simcrawl warc failed; see {tmp / (database + '.log')}")
    wall = time.perf_counter() - started
    cpu = meter.result()
    cpu.pop("site", None)  # this process serves no site here
    stats = json.loads(summary.read_text())
    opened = dt.datetime.fromisoformat(stats["start_time"]).timestamp()
    return {"decided": _decided(stats), "seconds": wall, "start-up": opened - launched,
            "cpu": cpu}


def spark_rows(tmp: Path, repeat: int, master: str) -> int:
    """``--spark``: one process and Spark on the pages as 16 files, taking turns; prints
    the table and a JSON line."""
    from crawler.cli.warc import reading_params
    from crawler.extraction import read_fetched
    from dedup.adapters.servers.services import EmbeddedServices
    from dedup.spark import session
    from dedup.spark.read_archives import read_archives

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
                got = timed_run(services, f"bench_warc_{engine[:3].strip()}_{run}", tmp, spider)
                wall = time.perf_counter() - started  # the Spark reading included
                cpu = got["cpu"]["crawl"] + got["cpu"]["workers"]
                rows[engine].append((got["decided"], wall, cpu + executors))
                print(f"[bench] {engine} run {run + 1}: {got['decided']} decided in "
                      f"{wall:.1f} s", file=sys.stderr)
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


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run whose pages a second are the median (the lower of the middle two): a whole
    run, so that its figures agree with one another."""
    ordered = sorted(runs, key=lambda r: r["decided"] / r["seconds"])
    return ordered[(len(ordered) - 1) // 2]


def side_by_side(tmp: Path, repeat: int) -> int:
    """The crawl of the development pages over HTTP and ``simcrawl warc`` of the same
    pages as one WARC file, taking turns; prints the table and a JSON line."""
    from bench_crawl import real_content, run

    from crawler.examples.demosite import DemoSite
    from dedup.adapters.servers.services import EmbeddedServices

    folder = tmp / "in"
    records = write_archive(folder)
    files = ",".join(str(p) for p in sorted(folder.glob("*.warc.gz")))
    content, _ = real_content([SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"])
    runs: dict[str, list[dict[str, Any]]] = {"crawl": [], "warc": []}
    with EmbeddedServices(tmp / "data") as services, DemoSite(content) as site:
        for turn in range(repeat):
            site.forget_requests()
            stats = run(site, services, tmp, f"crawl-{turn + 1}", True, ["DEPTH_LIMIT=1"])
            cpu = dict(stats["cpu"])
            cpu.pop("site", None)  # serving the pages is the web's cost, not the crawl's
            runs["crawl"].append({
                "decided": _decided(stats), "seconds": stats["seconds"], "start-up": stats["start-up"], "cpu": cpu})
            runs["warc"].append(timed_run(services, f"bench_warc_{turn + 1}", tmp,
                                          ["warc", "-a", f"files={files}"]))
            for name in runs:
                r = runs[name][-1]
                print(f"[bench] {name} run {turn + 1}: {r['decided']} decided in "
                      f"{r['seconds']:.1f} s", file=sys.stderr, flush=True)
    cores = os.cpu_count() or 1
    rows = {name: _median(done) for name, done in runs.items()}
    print(f"\n{records} development pages: crawled over HTTP from 127.0.0.1 (the listing's "
          f"links only, as bench_crawl.py --real --pages-only), and read from one WARC file "
          f"by simcrawl warc; {cores} cores; embedded Redis and SecantusDB; each row the "
          f"median of {repeat} runs, the two taking turns (every run: "
          + "; ".join(f"{n} " + ", ".join(f"{r['decided'] / r['seconds']:.1f}" for r in rs)
                      for n, rs in runs.items()) + " pages a second)\n")
    roles = list(rows["crawl"]["cpu"])
    print("| | pages decided | seconds | start-up | pages / s | after start-up | "
          + " | ".join(f"CPU s, {r}" for r in roles) + " | CPU ms a page |")
    print("|---|---:|---:|---:|---:|---:|" + "---:|" * len(roles) + "---:|")
    rate = {}
    for name, r in rows.items():
        rate[name] = r["decided"] / r["seconds"]
        after = r["decided"] / max(r["seconds"] - r["start-up"], 1e-9)
        total = sum(r["cpu"].values())
        label = "the crawl over HTTP" if name == "crawl" else "simcrawl warc"
        print(f"| {label} | {r['decided']} | {r['seconds']:.1f} | {r['start-up']:.1f} | "
              f"{rate[name]:.1f} | {after:.1f} | "
              + " | ".join(f"{r['cpu'].get(role, 0.0):.1f}" for role in roles)
              + f" | {1000 * total / max(r['decided'], 1):.1f} |")
    ratio = rate["warc"] / rate["crawl"]
    print(f"\nsimcrawl warc / the crawl, pages a second: {ratio:.2f} (goal: at least {GOAL}); "
          "start-up = from the launch to the first request (the crawl) or to the spider's "
          "opening (warc); crawl = the scrapy process; workers = its extraction processes "
          "(the site's server is left out)")
    print(json.dumps({"bench": "bench_warc", "records": records, "cores": cores,
                      "warc_per_s": round(rate["warc"], 1),
                      "crawl_per_s": round(rate["crawl"], 1),
                      "warc_over_crawl": round(ratio, 2), "goal": GOAL,
                      "goal_met": ratio >= GOAL}))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--spark", action="store_true",
                        help="one process against --engine spark on the pages as 16 files")
    parser.add_argument("--master", default="local[*]", help="the Spark master (--spark)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not (SHARED / "near-dup-dev" / "pages.jsonl").exists():
        raise SystemExit(f"the development data is not in {SHARED}")
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        if args.spark:
            return spark_rows(Path(tmp), args.repeat, args.master)
        return side_by_side(Path(tmp), args.repeat)


if __name__ == "__main__":
    raise SystemExit(main())
