"""The same crawl of a generated site of over 5,000 pages with dedup on and off, in one run:
pages per second both ways and the ratio (extraction and storage are included in both),
and dedup on with the reading before simcrawl's own (``DEDUP_EXTRACTOR=trafilatura``,
the row "before").
With ``--real``, the site is the development pages instead (``../shared/data``
near-dup-dev and near-dup-dev-2: about 990 real news and blog pages of about 100 KiB,
served as they were saved, behind one listing page), and the figure is what a crawl
process and its extraction workers handle of real pages a second on this machine.

With dedup off every page is fetched, extracted, fingerprinted and stored, and the copies'
links are followed too (so it also fetches the trap pages); with dedup on, copies are
dropped with their links. Pages per second is the fair comparison; the table also gives
the wall times.

Each crawl's start-up (from its launch to its first request: imports, services, spider) and
shut-down (from its summary, written once every page is stored, to its exit) are printed,
and the rates after start-up and while crawling (between the two): what a long crawl keeps
up.

With ``--real --pages-only`` the crawl requests the listing's links only
(``DEPTH_LIMIT=1``): every response is then one of the real pages, read and decided, as
on a real site, whose links lead to more pages; without it, the pages' relative links
lead to 404s on this host, which the crawl fetches too (three or four a page).

    python bench/bench_crawl.py [--articles 1800] [--real [--pages-only]] [--repeat N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from crawler.examples.demosite import DemoSite, Expected, Page, SiteContent, build
from dedup.adapters.servers.services import EmbeddedServices

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def real_content(sets: list[Path]) -> tuple[SiteContent, int]:
    """The development pages as one site: ``/`` lists every page, each served at
    ``/p/{set}/{page}.html`` as it was saved (no charset in the header: the crawler reads
    the page's own). Their links lead to the sites they came from: not followed. Returns
    the site and the number of pages labelled as copies of an earlier one (a cluster's
    pages after its first)."""
    import gzip

    pages: dict[str, Page] = {}
    links, copies = [], 0
    for data in sets:
        seen: set[str] = set()
        for line in (data / "pages.jsonl").read_text().splitlines():
            p = json.loads(line)
            path = f"/p/{data.name}/{p['page']}.html"
            body = gzip.decompress((data / "pages" / f"{p['page']}.html.gz").read_bytes())
            pages[path] = Page(body, content_type="text/html")
            links.append(f'<li><a href="{path}">{p["page"]}</a></li>')
            copies += p["cluster"] in seen
            seen.add(p["cluster"])
    index = ("<!doctype html><html><head><title>Development pages</title></head><body>"
             f"<h1>Development pages</h1><ul>{''.join(links)}</ul></body></html>")
    pages["/"] = Page(index.encode("utf-8"))
    pages["/robots.txt"] = Page(b"User-agent: *\nAllow: /\n", content_type="text/plain")
    # one host, named as the demo's start host (DemoSite.start_urls)
    return SiteContent(pages={"news": pages}, expected=Expected(), big_size=0), copies


class CpuMeter:
    """CPU seconds of the crawl process, its extraction workers, the services and this
    process (which serves the site), sampled every half second while the crawl runs."""

    def __init__(self, crawl_pid: int, services: EmbeddedServices) -> None:
        import psutil

        self.psutil = psutil
        self.crawl = psutil.Process(crawl_pid)
        self.fixed = {"MongoDB": psutil.Process(services.servers["mongo"].pid),
                      "Redis": psutil.Process(services.servers["redis"].pid),
                      "site": psutil.Process()}
        self.base = {k: self._cpu(p) for k, p in self.fixed.items()}
        self.seen: dict[int, tuple[str, float]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    @staticmethod
    def _cpu(proc: Any) -> float:
        t = proc.cpu_times()
        return t.user + t.system

    def _loop(self) -> None:
        while not self.stop.wait(0.5):
            try:
                procs = [("crawl", self.crawl)] + [
                    ("workers", c) for c in self.crawl.children(recursive=True)]
            except self.psutil.Error:
                return
            for role, proc in procs:
                try:
                    self.seen[proc.pid] = (role, self._cpu(proc))
                except self.psutil.Error:
                    continue

    def result(self) -> dict[str, float]:
        self.stop.set()
        self.thread.join()
        out = {"crawl": 0.0, "workers": 0.0}
        for role, cpu in self.seen.values():
            out[role] += cpu
        for k, p in self.fixed.items():
            out[k] = self._cpu(p) - self.base[k]
        return out


#: Where the crawl process's CPU goes: the innermost frame that matches decides.
PROFILE_PARTS = (
    ("spider: parse, link extraction", ("crawler/spiders/",)),
    ("dedup: middleware, decisions, storage", ("crawler/middlewares/", "crawler/extraction.py",
                                               "crawler/pipelines.py", "dedup/")),
    ("downloader: HTTP client", ("scrapy/core/downloader/", "twisted/web/")),
    ("scheduler, dupefilter", ("scrapy/core/scheduler.py", "scrapy/dupefilters.py")),
    ("spider middlewares (Scrapy's)", ("scrapy/spidermiddlewares/",)),
)


def profile_table(raw: Path) -> list[tuple[str, float]]:
    """Shares of the crawl process's samples (py-spy ``--gil --format raw``) by part."""
    counts: dict[str, int] = {}
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        total += int(n)
        part = "Scrapy engine, Twisted and asyncio (the rest)"
        for frame in reversed(stack.split(";")):
            hit = next((name for name, marks in PROFILE_PARTS
                        if any(m in frame for m in marks)), None)
            if hit:
                part = hit
                break
        counts[part] = counts.get(part, 0) + int(n)
    return sorted(((k, v / max(total, 1)) for k, v in counts.items()), key=lambda kv: -kv[1])


def run(site: DemoSite, services: EmbeddedServices, tmp: Path, name: str, enabled: bool,
        settings: list[str], profile: Path | None = None) -> dict:
    summary = tmp / f"{name}.json"
    env = dict(os.environ, REDIS_URL=services.redis_url or "",
               MONGO_URI=services.mongo_uri or "")
    started, launched = time.monotonic(), time.time()
    spy = [str(Path(sys.executable).with_name("py-spy")), "record", "--gil", "-r", "100",
           "--format", "raw", "-o", str(profile), "--"] if profile else []
    proc = subprocess.Popen(
        [*spy, sys.executable, "-m", "scrapy", "crawl", "site", "-a",
         f"start_urls={site.start_urls()[0]}", "-s", f"DEDUP_ENABLED={enabled}",
         "-s", f"DEDUP_DATABASE=bench_{name}", "-s", f"DEDUP_NAMESPACE=bench-{name}",
         "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "CONCURRENT_REQUESTS=32",
         "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32", "-s", "DEDUP_CAPACITY=100000",
         "-s", f"DEDUP_SUMMARY_FILE={summary}", "-s", f"LOG_FILE={tmp / (name + '.log')}",
         *(a for s in settings for a in ("-s", s))],
        cwd=ROOT, env=env)
    pid = proc.pid
    if profile:  # meter the crawl, py-spy's child
        import psutil

        for _ in range(100):
            children = psutil.Process(proc.pid).children()
            if children:
                pid = children[0].pid
                break
            time.sleep(0.05)
    meter = CpuMeter(pid, services)
    returncode = proc.wait()
    took = time.monotonic() - started
    cpu = meter.result()
    if returncode != 0:
        raise SystemExit(f"crawl {name} failed; see {tmp / (name + '.log')}")
    stats = json.loads(summary.read_text())
    stats["seconds"] = took
    # start-up: from the process's launch to its first request (imports, services, spider)
    stats["start-up"] = min(site.times, default=started + took) - started
    # shut-down: from the summary, written once every page is stored, to the process's exit
    # (pymongo's monitor threads alone take up to half a second to stop)
    stats["shut-down"] = max(0.0, launched + took - summary.stat().st_mtime)
    stats["cpu"] = cpu
    return stats


def bare(site: DemoSite, tmp: Path, depth_limit: int | None) -> dict[str, float]:
    """The named peer of a crawl of real pages: ``bench/bare_spider.py`` (Scrapy's
    defaults, follows links with Scrapy's link extractor and does nothing else), one
    process, on the same site; run outside the project, so no simcrawl setting applies."""
    import psutil

    out = tmp / "bare.json"
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scrapy", "runspider", str(ROOT / "bench" / "bare_spider.py"),
         "-a", f"start={site.start_urls()[0]}", "-a", f"out={out}",
         "-s", f"LOG_FILE={tmp / 'bare.log'}",
         *(["-s", f"DEPTH_LIMIT={depth_limit}"] if depth_limit is not None else [])],
        cwd=tmp)
    watched = psutil.Process(proc.pid)
    cpu = 0.0
    while proc.poll() is None:
        with contextlib.suppress(psutil.Error):
            times = watched.cpu_times()
            cpu = times.user + times.system
        time.sleep(0.2)
    took = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"the bare spider failed; see {tmp / 'bare.log'}")
    stats = json.loads(out.read_text())
    return {"responses": stats.get("downloader/response_count", 0), "seconds": took,
            "cpu": cpu}


def _median_run(rows: list[tuple]) -> tuple:
    """The run whose pages handled a second are the median of ``rows`` (the lower of the
    two middle ones): a whole run, so that its figures agree with one another."""
    ordered = sorted(rows, key=lambda r: (r[2] + r[3]) / r[4])
    return ordered[(len(ordered) - 1) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1800,
                        help="original articles (each with a mirror, and some with wire and "
                        "print copies)")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a Scrapy setting for both crawls (e.g. DEDUP_EXTRACT_WORKERS=0)")
    parser.add_argument("--real", action="store_true",
                        help="crawl the development pages (../shared/data) instead of a "
                        "generated site")
    parser.add_argument("--pages-only", action="store_true",
                        help="with --real: request the listing's links only (DEPTH_LIMIT=1), "
                        "so that every response is a real page; their relative links lead "
                        "to 404s on this host, where a real site serves more pages")
    parser.add_argument("--no-rules-row", action="store_true",
                        help="a fourth row, norules: dedup on without URL rules "
                             "(DEDUP_URL_RULES=False), taking turns with the others")
    parser.add_argument("--warc-row", action="store_true",
                        help="another row, warc: dedup on writing the crawl as WARC "
                             "(DEDUP_WARC_DIR), taking turns with the others (goal: it "
                             "costs at most 10%% of on's pages a second)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run each crawl N times, taking turns, and report each one's "
                        "median run (this machine's speed drifts from run to run)")
    parser.add_argument("--profile", action="store_true",
                        help="also sample the dedup-on crawl process with py-spy and print "
                        "where its CPU goes (py-spy slows that crawl down)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.profile and not Path(sys.executable).with_name("py-spy").exists():
        parser.error("--profile needs py-spy: install the benchmark extras "
                     "(.venv/bin/pip install -e .[bench])")
    if args.pages_only:
        if not args.real:
            parser.error("--pages-only goes with --real")
        args.set.append("DEPTH_LIMIT=1")
    tmp = Path(tempfile.mkdtemp(prefix="simcrawl-crawl-bench-"))
    labelled = 0
    if args.real:
        sets = [SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"]
        missing = [str(d) for d in sets if not (d / "pages.jsonl").exists()]
        if missing:
            raise SystemExit(f"--real needs the development data: {', '.join(missing)} "
                             "not found")
        content, labelled = real_content(sets)
    else:
        content = build(articles=args.articles, zh_articles=60, novel_chapters=0)
    runs: dict[str, list[tuple]] = {"off": [], "on": [], "before": []}
    modes = [("off", False, []), ("on", True, []),
             ("before", True, ["DEDUP_EXTRACTOR=trafilatura"])]
    if args.no_rules_row:
        runs["norules"] = []
        modes.append(("norules", True, ["DEDUP_URL_RULES=False"]))
    if args.warc_row:
        runs["warc"] = []
        modes.append(("warc", True, [f"DEDUP_WARC_DIR={tmp / 'warc'}"]))
    floors: list[dict[str, float]] = []
    with EmbeddedServices(tmp / "data") as services, DemoSite(content) as site:
        for turn in range(args.repeat):  # the crawls take turns: the machine's speed drifts
            for name, enabled, extra in modes:
                site.forget_requests()
                print(f"[bench] crawling with dedup {name} ({turn + 1} of {args.repeat}) ...",
                      file=sys.stderr, flush=True)
                profile = tmp / "on.pyspy" if args.profile and name == "on" and not turn \
                    else None
                stats = run(site, services, tmp, f"{name}-{turn + 1}", enabled,
                            [*args.set, *extra], profile)
                fetched = stats.get("downloader/response_count", 0)
                runs[name].append((name, fetched, stats.get("dedup/stored/pages", 0),
                                   stats.get("dedup/near_duplicate", 0)
                                   + stats.get("dedup/exact_duplicate", 0), stats["seconds"],
                                   sum(1 for r in site.requests if "/trap/" in r),
                                   stats["cpu"], stats["start-up"], stats["shut-down"]))
            if args.real:
                site.forget_requests()
                print("[bench] crawling with a bare Scrapy spider ...", file=sys.stderr,
                      flush=True)
                floors.append(bare(site, tmp, 1 if args.pages_only else None))
    rows = [_median_run(runs[name]) for name in runs]
    floor = sorted(floors, key=lambda f: f["responses"] / f["seconds"])[
        (len(floors) - 1) // 2] if floors else None
    what = (f"the development pages ({sum(len(p) for p in content.pages.values()) - 2:,} "
            "real pages behind one listing"
            + ("; the listing's links only, DEPTH_LIMIT=1)" if args.pages_only else ")")
            if args.real else f"Generated site: {args.articles:,} articles")
    print(f"\n{what}; {os.cpu_count()} cores; embedded Redis and SecantusDB; scrapy crawl as "
          "a subprocess (start-up included)\n")
    head = (f"{'dedup':6} {'fetched':>8} {'stored':>7} {'dropped':>8} {'traps':>6} "
            f"{'seconds':>8} {'start-up':>8} {'shut-down':>9} {'fetched/s':>9} "
            f"{'handled/s':>9} {'after start-up':>14} {'crawling':>8}")
    if args.repeat > 1:
        print(f"each row: the median of {args.repeat} runs by handled/s, the crawls taking "
              "turns (handled/s of every run: " + "; ".join(
                  f"{name} " + ", ".join(f"{(r[2] + r[3]) / r[4]:.1f}" for r in rs)
                  for name, rs in runs.items()) + ")\n")
    print(head + "\n" + "-" * len(head))
    for name, fetched, stored, dropped, seconds, traps, _, start, end in rows:
        print(f"{name:6} {fetched:>8,} {stored:>7,} {dropped:>8,} {traps:>6,} {seconds:>8.1f} "
              f"{start:>8.1f} {end:>9.1f} {fetched / seconds:>9.1f} "
              f"{(stored + dropped) / seconds:>9.1f} "
              f"{(stored + dropped) / max(seconds - start, 1e-9):>14.1f} "
              f"{(stored + dropped) / max(seconds - start - end, 1e-9):>8.1f}")
    off, on, before = rows[:3]
    print("handled = pages extracted, fingerprinted and stored or dropped; the trap pages "
          "that dedup off also fetches are 404s, cheap to fetch; before = dedup on with "
          "DEDUP_EXTRACTOR=trafilatura, the crawl's reading before simcrawl's own; start-up "
          "= seconds from the crawl's launch to its first request (imports, services, "
          "spider); shut-down = seconds from the crawl's summary, written once every page "
          "is stored, to the process's exit; after start-up = handled a second from the "
          "first request to the exit; crawling = handled a second from the first request to "
          "the summary, what a long crawl keeps up")
    if args.no_rules_row:
        norules = rows[3]
        print("norules = dedup on with DEDUP_URL_RULES=False; handled/s with dedup on / "
              f"norules: {(on[2] + on[3]) / on[4] / ((norules[2] + norules[3]) / norules[4]):.2f}")
    if args.warc_row:
        warc = rows[-1]
        ratio = (warc[2] + warc[3]) / warc[4] / ((on[2] + on[3]) / on[4])
        written = sum(f.stat().st_size for f in (tmp / "warc").glob("*.warc.gz"))
        print(f"warc = dedup on writing WARC (DEDUP_WARC_DIR; {written / 1e6:.1f} MB written "
              f"by its {args.repeat} runs); handled/s with warc / on: {ratio:.2f} (goal: at "
              "least 0.90)")
        print(json.dumps({"bench": "bench_crawl", "warc_over_on": round(ratio, 3),
                          "goal_met": ratio >= 0.90}))
    print(f"handled/s with dedup on / before: "
          f"{(on[2] + on[3]) / on[4] / ((before[2] + before[3]) / before[4]):.2f}")
    print(f"handled/s with dedup on / off: "
          f"{(on[2] + on[3]) / on[4] / ((off[2] + off[3]) / off[4]):.2f}; "
          f"fetched/s: {on[1] / on[4] / (off[1] / off[4]):.2f}")
    if floor is not None:
        print("the floor, a bare Scrapy spider on the same pages (bench/bare_spider.py: "
              "Scrapy's defaults, follows links, reads and stores nothing; one process"
              + (f"; the median of {len(floors)} runs" if len(floors) > 1 else "") + "): "
              f"{floor['responses']:,} responses in {floor['seconds']:.1f} s, "
              f"{floor['responses'] / floor['seconds']:.1f} a second; its CPU "
              f"{floor['cpu']:.1f} s, {1000 * floor['cpu'] / max(floor['responses'], 1):.1f} "
              "ms a response")
    if args.real:
        print(f"pages labelled as copies of an earlier page of their cluster: {labelled:,} "
              f"(exact and near variants, rewrites and pages sharing only a template "
              f"among them); dedup on dropped {on[3]:,}")
    else:
        copies = sum(len(c) - 1 for c in content.expected.clusters)
        print(f"copies on the site: {copies:,}; dedup on dropped {on[3]:,}; the "
              f"{copies - on[3]:,} kept are farther than k from their original, and the "
              "trap pages requested are theirs")
    roles = list(on[6])
    print(f"\nCPU seconds by process ({os.cpu_count()} cores):")
    print(f"{'dedup':6} " + " ".join(f"{r:>8}" for r in roles) + f" {'total':>8}"
          f" {'ms/page':>8}")
    for row in rows:
        print(f"{row[0]:6} " + " ".join(f"{row[6][r]:>8.1f}" for r in roles)
              + f" {sum(row[6].values()):>8.1f}"
              + f" {1000 * sum(row[6].values()) / max(row[2] + row[3], 1):>8.1f}")
    print("crawl = the scrapy process; workers = its extraction processes; site = the "
          "generated site's server; ms/page = all of it (start-up included) over the pages "
          "handled")
    if args.profile:
        print("\nThe dedup-on crawl process (py-spy --gil: samples of the thread running "
              "Python):")
        for part, share in profile_table(tmp / "on.pyspy"):
            print(f"  {share:6.1%}  {part}")

if __name__ == "__main__":
    main()
