"""One crawl on 1, 2, 4 ... processes sharing the frontier in Redis, in one run: handled
pages per second, speed-up over one process, CPU per page, the dedup share of a crawl
process, double admissions and double fetches.

The site is :func:`crawler.examples.demosite.build_groups` (copy groups whose members are pairwise
within k, traps linked only from copies), written to disk and served by Debian's nginx
(installed with apt-get when missing and run as root), so the server is never the limit.
Each row crawls the whole site from scratch (its own database and namespace) with the
embedded Redis and SecantusDB.

Handled pages per second are counted between the first and the last request nginx logs
(process start-up, about two seconds, is left out; the wall time is shown too). CPU per
page is the crawl processes' and their extraction workers' CPU seconds per handled page;
the services' CPU is shown apart. The dedup share comes from sampling one crawl process
of the last row with py-spy (``--no-profile`` to skip; the sampled process runs a few
percent slower). The named peer is a bare Scrapy spider (``bench/bare_spider.py``) on the
same site: the CPU a Scrapy process spends per response when it does nothing but follow
links, the floor under simcrawl's crawl process.

    python bench/crawl_scale.py [--groups 3000] [--processes 1,2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_crawl import profile_table

from crawler.examples.demosite import HOSTS, build_groups, export
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

ROOT = Path(__file__).resolve().parents[1]

NGINX_CONF = """
daemon off;
worker_processes {workers};
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    default_type text/html;
    types {{ text/html html; text/plain txt; }}
    log_format scale '$msec $status $server_port $request_uri';
    access_log {prefix}/access.log scale;
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path {prefix}/tmp;
    proxy_temp_path {prefix}/tmp;
    fastcgi_temp_path {prefix}/tmp;
    uwsgi_temp_path {prefix}/tmp;
    scgi_temp_path {prefix}/tmp;
{servers}
}}
"""

SERVER = """    server {{
        listen 127.0.0.1:{port};
        root {root};
        index index.html;
    }}
"""


def nginx_binary() -> str:
    """Debian's nginx, installed when missing (root and apt-get only)."""
    found = shutil.which("nginx") or (Path("/usr/sbin/nginx").exists() and "/usr/sbin/nginx")
    if found:
        return str(found)
    if os.geteuid() == 0 and shutil.which("apt-get"):
        print("[bench] installing Debian's nginx ...", file=sys.stderr, flush=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "nginx-light"], check=False,
                       capture_output=True, env=dict(os.environ,
                                                     DEBIAN_FRONTEND="noninteractive"))
        found = shutil.which("nginx") or (Path("/usr/sbin/nginx").exists() and "/usr/sbin/nginx")
        if found:
            return str(found)
    raise SystemExit("nginx is needed: apt-get install nginx-light (Debian/Ubuntu)")


class Nginx:
    """The generated site as static files behind nginx, one loopback port per host."""

    def __init__(self, folder: Path, groups: int) -> None:
        self.folder = folder
        self.ports = {host: free_port() for host in HOSTS}
        self.urls = {h: f"http://127.0.0.1:{p}" for h, p in self.ports.items()}
        self.content = build_groups(groups)
        export(self.content, folder / "site", self.urls)
        (folder / "tmp").mkdir()
        for path in [folder.parent, folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)  # nginx's workers run as nobody
        servers = "".join(SERVER.format(port=p, root=folder / "site" / h)
                          for h, p in self.ports.items())
        conf = folder / "nginx.conf"
        conf.write_text(NGINX_CONF.format(workers=os.cpu_count() or 1, prefix=folder,
                                          servers=servers))
        with (folder / "stderr.log").open("wb") as err:
            self.proc = subprocess.Popen([nginx_binary(), "-p", str(folder), "-c", str(conf)],
                                         stderr=err)
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise SystemExit("nginx did not start: "
                             + (folder / "stderr.log").read_text(errors="replace").strip())

    def requests(self) -> list[tuple[float, str]]:
        """(time, host/path) of every request so far, robots.txt aside."""
        hosts = {str(p): h for h, p in self.ports.items()}
        out = []
        log = self.folder / "access.log"
        for line in log.read_text().splitlines() if log.exists() else []:
            stamp, _, port, uri = line.split(" ", 3)
            if not uri.endswith("/robots.txt"):
                out.append((float(stamp), f"{hosts[port]}{uri}"))
        return out

    def reset_log(self) -> None:
        (self.folder / "access.log").write_text("")
        subprocess.run(["kill", "-USR1", str(self.proc.pid)], check=False)  # reopen logs
        time.sleep(0.2)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


class Meter:
    """CPU seconds of process trees, sampled every half second (a process's last sample
    before it exits is its total): the roots (crawl processes) and their children
    (extraction workers) apart."""

    def __init__(self, pids: list[int]) -> None:
        import psutil

        self.psutil = psutil
        self.roots = [psutil.Process(p) for p in pids]
        self.seen: dict[int, tuple[bool, float]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.stop.wait(0.5):
            for root in self.roots:
                try:
                    procs = [root, *root.children(recursive=True)]
                except self.psutil.Error:
                    continue
                for proc in procs:
                    try:
                        t = proc.cpu_times()
                        self.seen[proc.pid] = (proc.pid == root.pid, t.user + t.system)
                    except self.psutil.Error:
                        continue

    def totals(self) -> tuple[float, float]:
        """(CPU seconds of the roots, of their children)."""
        self.stop.set()
        self.thread.join()
        return (sum(c for root, c in self.seen.values() if root),
                sum(c for root, c in self.seen.values() if not root))


def service_cpu(services: EmbeddedServices, nginx: Nginx) -> float:
    import psutil

    procs = [psutil.Process(services.servers[n].pid) for n in ("mongo", "redis")]
    procs += [psutil.Process(nginx.proc.pid), *psutil.Process(nginx.proc.pid).children()]
    return sum(p.cpu_times().user + p.cpu_times().system for p in procs)


def redis_memory(services: EmbeddedServices, namespace: str) -> dict[str, int]:
    """Bytes Redis holds for the crawl's keys (``MEMORY USAGE``), by kind: the index's
    tables, the exact-copy checksum registry, the frontier's seen set, the rest."""
    from dedup.adapters.servers.services import connect_redis

    client = connect_redis(services.redis_url or "")
    out = {"index": 0, "checksums": 0, "frontier": 0, "other": 0}
    for key in client.scan_iter(match=f"{namespace}:*", count=1000):
        kind = key.decode()[len(namespace) + 1:].split(":", 1)[0]
        group = ("index" if kind[:1] == "t" and kind[1:].isdigit() else
                 "checksums" if kind == "sum" else "frontier" if kind == "frontier"
                 else "other")
        out[group] += int(client.memory_usage(key, samples=0) or 0)
    return out


def crawl(nginx: Nginx, services: EmbeddedServices, tmp: Path, n: int, profile: bool
          ) -> dict[str, Any]:
    """Crawl the whole site with ``n`` processes on the shared frontier."""
    name = f"scale{n}"
    env = dict(os.environ, REDIS_URL=services.redis_url or "", MONGO_URI=services.mongo_uri or "")
    command = [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
               f"start_urls={nginx.urls['news']}/", "-s", f"DEDUP_DATABASE={name}",
               "-s", f"DEDUP_NAMESPACE={name}", "-s", "SIMCRAWL_FRONTIER=redis",
               "-s", "AUTOTHROTTLE_ENABLED=0",
               "-s", "CONCURRENT_REQUESTS=32", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=32",
               "-s", "DEDUP_CAPACITY=100000"]
    spy = [str(Path(sys.executable).with_name("py-spy")), "record", "--gil", "-r", "50",
           "--format", "raw", "-o", str(tmp / f"{name}.pyspy"), "--"]
    nginx.reset_log()
    cpu0 = service_cpu(services, nginx)
    started = time.monotonic()
    procs = [subprocess.Popen([*(spy if profile and i == 0 else []), *command, "-s",
                               f"LOG_FILE={tmp / f'{name}-{i}.log'}"], cwd=ROOT, env=env)
             for i in range(n)]
    pids = [p.pid for p in procs]
    if profile:  # meter the crawl process, py-spy's child, not py-spy
        import psutil

        for _ in range(200):
            children = psutil.Process(pids[0]).children()
            if children:
                pids[0] = children[0].pid
                break
            time.sleep(0.02)
    meter = Meter(pids)
    codes = [p.wait() for p in procs]
    wall = time.monotonic() - started
    cpu, workers = meter.totals()
    if any(codes):
        raise SystemExit(f"a crawl process failed ({codes}); see {tmp}/{name}-*.log")
    requests = nginx.requests()
    times = [t for t, _ in requests]
    db = connect_mongo(services.mongo_uri or "")[name]
    stored = {d["url"] for d in db.pages.find({}, {"url": 1})}
    dropped = db.matches.count_documents({})
    urls = {h: nginx.urls[h] for h in HOSTS}

    def url(key: str) -> str:
        host, _, path = key.partition("/")
        return f"{urls[host]}/{path}"

    double = sum(max(0, sum(url(k) in stored for k in group) - 1)
                 for group in nginx.content.expected.clusters)
    counts: dict[str, int] = {}
    for _, key in requests:
        counts[key] = counts.get(key, 0) + 1
    handled = len(stored) + dropped
    if not handled or len(times) < 2:
        raise SystemExit(f"the crawl handled no pages; see {tmp}/{name}-0.log")
    memory = redis_memory(services, name)
    shares = [per_process_handled(tmp / f"{name}-{i}.log") for i in range(n)]
    share = None
    if profile and (tmp / f"{name}.pyspy").exists():
        share = dict(profile_table(tmp / f"{name}.pyspy")).get(
            "dedup: middleware, decisions, storage", 0.0)
    return {"n": n, "handled": handled, "stored": len(stored), "dropped": dropped,
            "seconds": max(times) - min(times) if times else wall, "wall": wall,
            "cpu": cpu, "workers": workers, "responses": len(requests),
            "services": service_cpu(services, nginx) - cpu0,
            "double": double, "refetched": sum(c - 1 for c in counts.values()),
            "traps": sum(1 for _, k in requests if "/trap/" in k), "dedup": share,
            "memory": memory, "shares": shares}


def per_process_handled(log: Path) -> int:
    """Pages one crawl process decided, from the summary line of its log."""
    import ast
    import re

    from crawler.run import HANDLED

    found = re.search(r"dedup summary: (\{.*\})", log.read_text())
    summary = ast.literal_eval(found.group(1)) if found else {}
    return sum(int(summary.get(k, 0)) for k in HANDLED)


def bare(nginx: Nginx, tmp: Path) -> dict[str, Any]:
    """The named peer: ``bench/bare_spider.py`` (Scrapy's defaults, follows links only),
    one process, on the same site; run outside the project so no simcrawl setting applies."""
    out = tmp / "bare.json"
    nginx.reset_log()
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", "runspider",
                             str(ROOT / "bench" / "bare_spider.py"), "-a",
                             f"start={nginx.urls['news']}/", "-a", f"out={out}", "-s",
                             f"LOG_FILE={tmp / 'bare.log'}"], cwd=tmp)
    meter = Meter([proc.pid])
    if proc.wait():
        raise SystemExit(f"the bare spider failed; see {tmp / 'bare.log'}")
    cpu, _ = meter.totals()
    return {"responses": len(nginx.requests()), "cpu": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=3000,
                        help="copy groups of the generated site (about 2.9 pages each)")
    parser.add_argument("--processes", default=None,
                        help="comma-separated process counts (default: 1, 2, 4, ... up to "
                        "the cores)")
    parser.add_argument("--no-profile", action="store_true",
                        help="do not sample a crawl process with py-spy")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    counts = ([int(c) for c in args.processes.split(",")] if args.processes else
              [c for c in (1, 2, 4, 8, 16) if c <= max(cores, 2)])
    tmp = Path(tempfile.mkdtemp(prefix="simcrawl-scale-"))
    profile = not args.no_profile and Path(sys.executable).with_name("py-spy").exists()
    rows = []
    nginx = Nginx(tmp / "nginx", args.groups)
    try:
        with EmbeddedServices(tmp / "data") as services:
            for n in counts:
                print(f"[bench] crawling with {n} process(es) ...", file=sys.stderr, flush=True)
                rows.append(crawl(nginx, services, tmp, n, profile and n == counts[-1]))
            print("[bench] the bare Scrapy spider ...", file=sys.stderr, flush=True)
            peer = bare(nginx, tmp)
    finally:
        nginx.stop()
    pages = sum(len(p) for p in nginx.content.pages.values())
    print(f"\nGenerated site: {args.groups:,} copy groups, {pages:,} pages, served by nginx; "
          f"{cores} cores; embedded Redis and SecantusDB; shared frontier in Redis\n")
    head = (f"{'procs':>5} {'handled':>8} {'stored':>7} {'seconds':>8} {'handled/s':>9} "
            f"{'speed-up':>8} {'CPU ms/page':>11} {'services ms/page':>16} {'dedup share':>11} "
            f"{'double adm.':>11} {'refetched':>9} {'traps':>5}")
    print(head + "\n" + "-" * len(head))
    base = rows[0]["handled"] / rows[0]["seconds"]
    for r in rows:
        rate = r["handled"] / r["seconds"]
        share = "n/a" if r["dedup"] is None else f"{r['dedup']:.1%}"
        print(f"{r['n']:>5} {r['handled']:>8,} {r['stored']:>7,} {r['seconds']:>8.1f} "
              f"{rate:>9.1f} {rate / base:>7.2f}x {1000 * (r['cpu'] + r['workers']) / r['handled']:>11.2f} "
              f"{1000 * r['services'] / r['handled']:>16.2f} {share:>11} {r['double']:>11} "
              f"{r['refetched']:>9} {r['traps']:>5}")
    print("handled = pages extracted, fingerprinted and stored or dropped; seconds = first "
          "to last request (wall time with start-up and the end: "
          + ", ".join(f"{r['wall']:.1f}" for r in rows) + "); handled per process: "
          + ", ".join(" / ".join(map(str, r["shares"])) for r in rows))
    print("CPU ms/page = crawl processes and their extraction workers; services = Redis, "
          "SecantusDB and nginx; dedup share = of the samples of one crawl process of the "
          "last row (py-spy; the other rows run unsampled)")
    one = rows[0]
    print("\nOne crawl process, CPU per response (the peer follows links only, on "
          "Scrapy's defaults, the same site):")
    print(f"  simcrawl crawl process   {1000 * one['cpu'] / one['responses']:.2f} ms "
          f"(+ {1000 * one['workers'] / one['responses']:.2f} ms in its extraction workers)")
    print(f"  bare Scrapy spider       {1000 * peer['cpu'] / peer['responses']:.2f} ms "
          f"({peer['responses']:,} responses: it also fetches every copy and trap)")
    r = rows[-1]
    print(f"Redis memory per stored page ({r['stored']:,} pages): "
          + ", ".join(f"{k} {v / r['stored']:.0f} B" for k, v in r["memory"].items())
          + " (after the crawl: the frontier's keys are gone once it ends)")
    if max(counts) > cores:
        print(f"note: more processes than the {cores} cores: the rows beyond {cores} "
              "measure contention, not scaling")


if __name__ == "__main__":
    main()
