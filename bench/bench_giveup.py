"""How soon a crawl stops once it gives up on a service: ``DEDUP_RETRY_SECONDS=2``, a
fault mid-crawl, and the seconds from the fault to the crawl's "has failed for ... s
(DEDUP_RETRY_SECONDS); stopping the crawl" line, and from that line to the process's
exit, against issue 71's limit (the crawl stops within 5 s of giving up).

Faults: MongoDB killed (SIGKILL: connections refused), Redis killed, Redis frozen
(SIGSTOP: connections hang, as in a partition that drops packets; each call waits for
the client's 5 s timeout). Each with Scrapy's own frontier (``SIMCRAWL_FRONTIER=memory``)
and the shared one in Redis (``redis``). The crawl is ``tests/e2e/test_outages.py``'s: the
demo site, 4 requests at a time, the fault after 40 requests. Prints a table (the median
of ``--runs``) and one JSON line.

    python bench/bench_giveup.py [--runs 1] [--fault "redis frozen"] [--frontier redis]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from crawler.examples.demosite import DemoSite, build
from dedup.adapters.servers.services import EmbeddedServer

ROOT = Path(__file__).resolve().parents[1]
#: issue 71's limit: seconds from giving up to the crawl's end
LIMIT = 5.0
#: seconds after the fault when a crawl that has not stopped is killed (and counted so)
STUCK = 120.0
FAULTS = ("mongo killed", "redis killed", "redis frozen")
GAVE_UP = re.compile(r"^(\S+ \S+) \[[^]]+\] ERROR: .* failed for [0-9]+ s "
                     r"\((?:DEDUP_RETRY_SECONDS|the crawl gave up on it)\)")


def one(fault: str, frontier: str, workdir: Path) -> dict[str, float]:
    """One crawl under ``fault``: seconds from the fault to giving up and to the exit."""
    redis_server, mongo = EmbeddedServer("redis", workdir), EmbeddedServer("mongo", workdir)
    redis_server.start()
    mongo.start()
    target = mongo if fault.startswith("mongo") else redis_server
    log = workdir / "crawl.log"
    try:
        with DemoSite(build(articles=40, zh_articles=2, novel_chapters=0)) as site:
            env = dict(os.environ, REDIS_URL=redis_server.url, MONGO_URI=mongo.url)
            proc = subprocess.Popen(
                [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                 f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=giveup",
                 "-s", "DEDUP_NAMESPACE=giveup", "-s", "AUTOTHROTTLE_ENABLED=0",
                 "-s", "CONCURRENT_REQUESTS=4", "-s", "DOWNLOAD_DELAY=0.02",
                 "-s", "DEDUP_RETRY_SECONDS=2", "-s", f"SIMCRAWL_FRONTIER={frontier}",
                 "-s", f"LOG_FILE={log}"], cwd=ROOT, env=env)
            deadline = time.monotonic() + 120
            while len(site.requests) < 40 and time.monotonic() < deadline:
                time.sleep(0.02)
            at = time.time()
            pid = target.pid or 0
            if fault.endswith("frozen"):
                os.kill(pid, signal.SIGSTOP)
            else:
                target.kill()
            try:
                code = proc.wait(timeout=STUCK)
            except subprocess.TimeoutExpired:  # a finding: said in the table, not waited on
                proc.kill()
                proc.wait()
                code = None
            finally:
                if fault.endswith("frozen"):
                    os.kill(pid, signal.SIGCONT)
            ended = time.time()
    finally:
        redis_server.stop()
        mongo.stop()
    said = next((m.group(1) for line in log.read_text().splitlines()
                 if (m := GAVE_UP.match(line))), None)
    if code is None:
        print(f"{fault}, {frontier}: the crawl did not stop within {STUCK:.0f} s of the "
              f"fault (killed); its log ends: {log.read_text()[-600:]}", file=sys.stderr)
        return {"to_give_up": float(STUCK), "to_exit": float(STUCK)}
    if said is None or code != 1:
        raise SystemExit(f"{fault}, {frontier}: exit {code}, no give-up line in {log}")
    gave_up = datetime.strptime(said, "%Y-%m-%d %H:%M:%S").timestamp()  # to the second
    return {"to_give_up": gave_up - at, "to_exit": ended - gave_up}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--fault", choices=FAULTS, action="append",
                        help="only this fault (repeatable; default: every one)")
    parser.add_argument("--frontier", choices=("memory", "redis"), action="append",
                        help="only this frontier (repeatable; default: both)")
    args = parser.parse_args()
    rows = []
    print(f"{'fault':<14} {'frontier':<8} {'fault -> give-up s':>19} "
          f"{'give-up -> exit s':>18} {'limit s':>8}  within")
    for fault in args.fault or FAULTS:
        for frontier in args.frontier or ("memory", "redis"):
            runs = []
            for _ in range(args.runs):
                with tempfile.TemporaryDirectory(prefix="giveup-") as tmp:
                    runs.append(one(fault, frontier, Path(tmp)))
            row = {"fault": fault, "frontier": frontier,
                   "to_give_up": round(statistics.median(r["to_give_up"] for r in runs), 1),
                   "to_exit": round(statistics.median(r["to_exit"] for r in runs), 1)}
            rows.append(row)
            print(f"{fault:<14} {frontier:<8} {row['to_give_up']:>19.1f} "
                  f"{row['to_exit']:>18.1f} {LIMIT:>8.0f}  "
                  f"{'yes' if row['to_exit'] <= LIMIT else 'NO'}", flush=True)
    print("(the give-up line is logged to the second: each figure is +-1 s)")
    print(json.dumps({"bench": "giveup", "runs": args.runs, "limit_s": LIMIT, "rows": rows}))


if __name__ == "__main__":
    main()
