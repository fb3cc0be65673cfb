"""A chaos run: one shared crawl on three processes under a seeded schedule of faults,
then an invariant checker over the whole record, against the same crawl without faults.

The run, on services it starts itself (``tmp`` folder, loopback only):

1. A generated site (:func:`crawler.examples.demosite.build_groups`: articles reached
   from paginated listings, each with copies under other templates: a mirror and a wire
   copy that link to traps, a print version that races its article) served with every
   request logged.
2. The same crawl without faults (three processes, database ``reference``): the record
   a disturbed crawl must end with.
3. The chaos crawl (database ``chaos``): three processes on one shared frontier in Redis
   (one node, or a cluster of three primaries with a replica each), the embedded MongoDB
   (SecantusDB). The site answers each page after a delay chosen so that the crawl lasts
   about as long as the schedule. A nemesis draws faults at random times from the seed:

   - ``crawl_kill``: SIGKILL of a crawl process;
   - ``crawl_freeze``: SIGSTOP of a crawling process for 5-60 s (its lease runs out), then
     SIGCONT;
   - ``worker_kill``: SIGKILL of an extraction worker of a crawl process;
   - ``crawl_term``: SIGTERM to a crawl process's group (a clean stop);
   - ``crawl_restart``: SIGINT, then the process started again with the same job;
   - ``redis_kill``: SIGKILL of redis-server, started again 1-10 s later (one node);
   - ``primary_kill``: SIGKILL of a cluster primary, which fails over to its replica, the
     node started again 5-15 s later (it rejoins as a replica) (cluster);
   - ``mongo_freeze``: SIGSTOP of the MongoDB server for 5-60 s, then SIGCONT;
   - ``disk_full``: the services' disk (a tmpfs the run mounts, as root: Redis's and
     MongoDB's data) filled to 8 MB free for 5-15 s, then emptied; the crawl processes
     watch it (``DEDUP_DISK_WATCH``, ``DEDUP_DISK_MIN_FREE`` 32) and wait for room;
   - ``cpu_burn``: a busy process on every core for 5-15 s;
   - ``memory_hog``: a process holding half the memory available for 5-15 s;
   - ``net_partition``: the crawl cut off from Redis or from MongoDB (packets to its port
     dropped in the services' network namespace: connections hang, not refuse) for
     5-15 s; on a cluster, from MongoDB or from one primary (its client port on loopback;
     its cluster bus goes on, so nothing fails over);
   - ``net_loss``: 30% of the packets into the namespace dropped at random for 5-15 s;
   - ``net_slow``: the link to the namespace slowed to 1 Mbit/s each way (``tc tbf``) for
     5-15 s.

   The services run in a network namespace the run makes (as root: ``ip netns``, a veth
   pair; on a cluster, MongoDB alone), reached at ``10.213.N.2``; without root the run
   says it has no network faults and keeps the others. ``tc netem`` (delay, reordering)
   is not in these machines' kernel: a slow link is a rate.

   ``--burner`` keeps a busy process on every core beside the whole chaos crawl.

   Each fault runs in its own thread at its time, so faults overlap (faults on one
   service take turns). An operator loop starts again every crawl process that ended
   while the crawl was not complete (killed, stopped, or exited 1 after an outage). When the schedule ends every
   frozen process is woken, every service is up, and the crawl runs to its end.
4. A re-crawl of the same site (one process).
5. The checker (:func:`check`): every page the site served was decided once (stored or
   recorded as a copy); every copy group has exactly one stored page and the set of
   groups and unique pages stored is the fault-free crawl's (which member of a group is
   stored may differ: the first to be decided is); no trap, which only copies link to,
   was requested; every match record names a stored page; every index entry has its
   page and every stored page its index entry; every summary written adds up; no crawl
   record is left ``running``; no journal, in-flight hash or frontier key is left: all
   checked on the chaos crawl's record before the re-crawl; and the re-crawl changed
   nothing.

It prints a table of the faults and the violations, each with what the run saw of its
first page (when the site served it, what the record holds of it, the faults done before,
the crawl logs' lines that name it), then one JSON line (``{"seed", "redis", "faults":
{kind: n}, "violations": [...], "evidence": [...], ...}``), and exits 1 when any
invariant is violated. The run's folder keeps its schedule (``schedule.json``), the
faults done (``faults.json``), what it saw of every violation (``violations.json``) and
the logs; a temporary folder is kept when a violation is found, and ``--schedule`` replays
its faults at the same seconds on the same processes (the seed builds the same site).

    python bench/chaos.py --minutes 30 --seed 1 [--redis cluster] [--groups 7000]
    python bench/chaos.py --seed 1 --minutes 30 --schedule FOLDER/schedule.json
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: Faults of the machine's load and disk, on either Redis (``disk_full`` only where the
#: run can mount the small filesystem it fills: as root).
LOAD_FAULTS = ("disk_full", "cpu_burn", "memory_hog")
#: Faults of the network between the crawl and its services, which the run reaches in a
#: network namespace of its own (as root; on a cluster, MongoDB alone is in it).
NET_FAULTS = ("net_partition", "net_loss", "net_slow")
#: Fault kinds on one Redis node, and on a cluster.
NODE_FAULTS = ("crawl_kill", "crawl_freeze", "worker_kill", "crawl_term", "crawl_restart",
               "redis_kill", "mongo_freeze", *LOAD_FAULTS, *NET_FAULTS)
CLUSTER_FAULTS = ("crawl_kill", "crawl_freeze", "worker_kill", "crawl_term",
                  "crawl_restart", "primary_kill", "mongo_freeze", *LOAD_FAULTS, *NET_FAULTS)
#: A share of packets lost (net_loss), and a slow link's rate (net_slow, each way).
LOSS, SLOW_RATE = 0.3, "1mbit"
#: The services' disk (a tmpfs the run mounts): its size, what a full disk leaves free,
#: and the crawl's DEDUP_DISK_MIN_FREE (more than that: the crawl sees it full).
DISK_SIZE, DISK_LEFT, DISK_MIN_FREE = "4g", 8, 32
#: The share of the memory available a memory hog takes and touches.
HOG_SHARE = 0.5
PROCESSES = 3
#: Requests a crawl process keeps in flight (Scrapy's per-domain default: every host of
#: the site is on 127.0.0.1).
IN_FLIGHT = 8


def say(*args: Any) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *args, flush=True)


@dataclasses.dataclass
class Fault:
    at: float       # seconds after the chaos crawl starts
    kind: str
    target: int     # which crawl process (slot), when the fault concerns one
    hold: float     # seconds a freeze or an outage lasts


def schedule(seed: int, seconds: float, count: int, kinds: tuple[str, ...],
             lease: float = 30.0) -> list[Fault]:
    """``count`` faults at random times of ``seconds``, each kind at least once when
    ``count`` allows, all drawn from ``seed``. Freezes last from 5 s to 60 s, or in a
    short run to a quarter of it, but at least to two and a half leases, so that some
    outlast the lease (the process is taken for dead while it sleeps)."""
    rng = random.Random(seed)
    chosen = list(kinds[:count]) + [rng.choice(kinds) for _ in range(count - len(kinds))]
    rng.shuffle(chosen)
    times = sorted(rng.uniform(0.05 * seconds, 0.9 * seconds) for _ in chosen)
    faults = []
    longest = min(60.0, max(5.0, seconds / 4, 2.5 * lease))
    for at, kind in zip(times, chosen):
        hold = rng.uniform(5, longest) if kind.endswith("freeze") else (
            rng.uniform(1, 10) if kind == "redis_kill" else rng.uniform(5, 15))
        faults.append(Fault(at, kind, rng.randrange(PROCESSES), hold))
    return faults


def read_schedule(path: Path, kinds: tuple[str, ...]) -> list[Fault]:
    """The faults of a run's ``schedule.json`` (``kinds``: those this run's Redis takes).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not a schedule of such faults, saying why.
    """
    try:
        rows = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    fields = [f.name for f in dataclasses.fields(Fault)]
    if not isinstance(rows, list) or not all(
            isinstance(r, dict) and sorted(r) == sorted(fields) for r in rows):
        raise ValueError(f"not a chaos run's schedule.json (a list of faults, each with "
                         f"{', '.join(fields)})")
    unknown = sorted({r["kind"] for r in rows} - set(kinds))
    if unknown:
        raise ValueError(f"faults of another Redis: {', '.join(map(str, unknown))} "
                         f"(this run's: {', '.join(kinds)})")
    return [Fault(float(r["at"]), r["kind"], int(r["target"]), float(r["hold"]))
            for r in rows]


class Crawls:
    """Three crawl processes on one shared crawl, each run logged and summarised apart,
    started again by :meth:`supervise` as an operator would."""

    def __init__(self, folder: Path, env: dict[str, str], start_url: str, database: str,
                 namespace: str, extra: list[str]) -> None:
        self.folder, self.env, self.start_url = folder, env, start_url
        self.database, self.namespace, self.extra = database, namespace, extra
        self.slots: list[subprocess.Popen | None] = [None] * PROCESSES
        self.runs: list[dict[str, Any]] = []
        self.done = [False] * PROCESSES
        self.signalled: dict[int, str] = {}   # pid -> what we did to it
        self.frozen: set[int] = set()
        self.lock = threading.Lock()

    def command(self, run: int) -> list[str]:
        return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                f"start_urls={self.start_url}", "-s", f"DEDUP_DATABASE={self.database}",
                "-s", f"DEDUP_NAMESPACE={self.namespace}", "-s", "AUTOTHROTTLE_ENABLED=0",
                "-s", "SIMCRAWL_FRONTIER=redis", "-s", "SIMCRAWL_IDLE_SECONDS=2",
                "-s", "DEDUP_EXTRACT_WORKERS=1", "-s", "LOG_LEVEL=INFO",
                "-s", f"LOG_FILE={self.folder / f'{self.database}-{run}.log'}",
                "-s", f"DEDUP_SUMMARY_FILE={self.folder / f'{self.database}-{run}.json'}",
                *self.extra]

    def start(self, slot: int) -> None:
        run = len(self.runs)
        proc = subprocess.Popen(self.command(run), cwd=ROOT, env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        self.slots[slot] = proc
        self.runs.append({"run": run, "slot": slot, "pid": proc.pid, "code": None})

    def start_all(self) -> None:
        for slot in range(PROCESSES):
            self.start(slot)

    def supervise(self, restart: bool) -> None:
        """Note the processes that ended; start again those that ended before the crawl
        was complete (``restart``)."""
        with self.lock:
            for slot, proc in enumerate(self.slots):
                if proc is None or proc.poll() is None:
                    continue
                run = next(r for r in reversed(self.runs) if r["pid"] == proc.pid)
                if run["code"] is None:
                    run["code"] = proc.returncode
                    run["signalled"] = self.signalled.get(proc.pid)
                complete = proc.returncode == 0 and "the crawl is complete" in self.log(run)
                if complete:
                    self.done[slot] = True
                    self.slots[slot] = None
                elif restart or run["signalled"] or proc.returncode != 0:
                    self.start(slot)
                else:
                    self.slots[slot] = None

    def log(self, run: dict[str, Any]) -> str:
        path = self.folder / f"{self.database}-{run['run']}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def live(self, slot: int) -> subprocess.Popen | None:
        proc = self.slots[slot]
        return proc if proc is not None and proc.poll() is None else None

    def signal(self, slot: int, sig: int, why: str, group: bool = False) -> bool:
        with self.lock:
            proc = self.live(slot)
            if proc is None:
                return False
            self.signalled[proc.pid] = why
            with contextlib.suppress(ProcessLookupError):
                if group:
                    os.killpg(proc.pid, sig)
                else:
                    proc.send_signal(sig)
            return True

    def wake_all(self) -> None:
        for pid in list(self.frozen):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        self.frozen.clear()

    def finished(self) -> bool:
        return all(self.done[s] or self.slots[s] is None for s in range(PROCESSES)) \
            and any(self.done)

    def stop(self) -> None:
        self.wake_all()
        for proc in self.slots:
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def worker_of(pid: int) -> int | None:
    """An extraction worker of crawl process ``pid``: a process forked by its forkserver."""
    import psutil

    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return None
    workers = [c.pid for c in children if c.ppid() != pid]
    return workers[0] if workers else None


class Network:
    """A network namespace the services run in, reached from the crawl through a veth
    pair (``10.213.N.1`` here, ``10.213.N.2`` there), where the nemesis drops packets
    (iptables) and slows the link (``tc tbf``). ``None`` from :meth:`make` when it cannot
    be made (not root), which the run says."""

    def __init__(self, name: str, here: str, there: str, address: str) -> None:
        self.name, self.here, self.there, self.address = name, here, there, address

    @classmethod
    def make(cls) -> Network | None:
        # a subnet no other run holds (two runs at once: the second's could not be reached)
        held = subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True,
                              check=False).stdout
        n = next((c for c in ((os.getpid() + i) % 250 + 1 for i in range(250))
                  if f"10.213.{c}." not in held), os.getpid() % 250 + 1)
        net = cls(f"simcrawl-chaos-{os.getpid()}", f"scch{os.getpid()}"[:15],
                  f"sccn{os.getpid()}"[:15], f"10.213.{n}.2")
        steps = [["ip", "netns", "add", net.name],
                 ["ip", "link", "add", net.here, "type", "veth", "peer", "name", net.there],
                 ["ip", "link", "set", net.there, "netns", net.name],
                 ["ip", "addr", "add", f"10.213.{n}.1/30", "dev", net.here],
                 ["ip", "link", "set", net.here, "up"],
                 net.inside("ip", "addr", "add", f"{net.address}/30", "dev", net.there),
                 net.inside("ip", "link", "set", net.there, "up"),
                 net.inside("ip", "link", "set", "lo", "up")]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                say(f"no network faults: the services' network namespace cannot be made "
                    f"({' '.join(step)}: {(done.stderr or 'failed').strip()})")
                net.remove()
                return None
        return net

    def inside(self, *command: str) -> list[str]:
        """``command`` run in the namespace."""
        return ["ip", "netns", "exec", self.name, *command]

    def run(self, *command: str) -> None:
        subprocess.run(self.inside(*command), check=True, capture_output=True)

    def remove(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False)
        subprocess.run(["ip", "link", "del", self.here], capture_output=True, check=False)


def mount_disk(folder: Path) -> Path | None:
    """A tmpfs of :data:`DISK_SIZE` mounted at ``folder/disk`` for the services' data, or
    ``None`` when it cannot be mounted (not root), which the run says."""
    disk = folder / "disk"
    disk.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs",
                           str(disk)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        say(f"no disk_full faults: the services' disk cannot be mounted "
            f"({(done.stderr or 'mount failed').strip()})")
        return None
    return disk


class Services:
    """Redis (one node or a cluster of three primaries with a replica each) and the
    embedded MongoDB, which the nemesis may kill, freeze and start again; their data on
    a small disk of their own (``disk``) when the run could mount one."""

    def __init__(self, folder: Path, cluster: bool, disk: Path | None = None,
                 network: Network | None = None) -> None:
        from dedup.adapters.servers.services import EmbeddedServer, LocalRedisCluster

        data = disk or folder
        self.disk, self.network = disk, network
        where: dict[str, Any] = {} if network is None else {
            "host": network.address, "prefix": network.inside()}
        self.mongo = EmbeddedServer("mongo", data, **where)
        self.redis = None if cluster else EmbeddedServer("redis", data, **where)
        self.cluster = LocalRedisCluster(data / "cluster", primaries=3, replicas=1,
                                         node_timeout_ms=2000) if cluster else None
        self.down: dict[str, float] = {}
        self.folder = folder
        #: what a fault holds down ("redis", a cluster node's port): not started again
        self.held: set[str | int] = set()
        self.lock = threading.Lock()
        #: the servers that exited by themselves and were started again (:meth:`revive`)
        self.revived: list[dict[str, Any]] = []
        self._next_try = 0.0

    def __enter__(self) -> Services:
        try:
            self.mongo.start()
            if self.redis is not None:
                self.redis.start()
            else:
                assert self.cluster is not None
                self.cluster.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def revive(self, since: float) -> None:
        """Start again a server that exited by itself, as docker compose's ``restart:
        unless-stopped`` does (docker-compose.yml): Redis exits when it cannot write its
        append-only file under ``appendfsync always`` (a full disk: every node of a
        cluster on it, a primary and its replica together), and a crawl can only wait
        for it. What a fault holds down stays down; each start is said and kept in
        :attr:`revived` (when, which server, the last line of its log)."""
        if time.monotonic() < self._next_try:
            return
        with self.lock:
            dead: list[tuple[str, Any]] = []
            for name, server in (("MongoDB", self.mongo), ("Redis", self.redis)):
                proc = getattr(server, "_proc", None)
                if proc is not None and proc.poll() is not None and \
                        ("redis" if server is self.redis else "mongo") not in self.held:
                    dead.append((name, server))
            if self.cluster is not None:
                dead += [(f"Redis Cluster node {port}", port)
                         for port, proc in self.cluster.procs.items()
                         if proc.poll() is not None and port not in self.held]
            for name, server in dead:
                why = self._last_line(server)
                try:
                    if isinstance(server, int):
                        self.cluster.restart(server)  # type: ignore[union-attr]
                    else:
                        port = server.port
                        server.stop()
                        server.port = port
                        server.start()
                except Exception as exc:  # noqa: BLE001 - a disk still full: tried again
                    say(f"{name} exited by itself ({why}); starting it again failed, tried "
                        f"again in 2 s: {str(exc).splitlines()[0][:160]}")
                    self._next_try = time.monotonic() + 2.0
                    return
                at = round(time.monotonic() - since, 1)
                self.revived.append({"at": at, "server": name, "log": why})
                say(f"{name} exited by itself at about {at} s ({why}): started again, as "
                    "restart: unless-stopped would")

    def _last_line(self, server: Any) -> str:
        """The last line of a server's log (a cluster node's port, or the server)."""
        path = (self.cluster.folder / str(server) / "redis.log"  # type: ignore[union-attr]
                if isinstance(server, int) else server.data_dir / f"{server.name}.log")
        with contextlib.suppress(OSError):
            with open(path, "rb") as fh:
                fh.seek(max(0, path.stat().st_size - 2000))
                lines = [x.strip() for x in fh.read().decode(errors="replace").splitlines()]
            return next((x for x in reversed(lines) if x), "its log is empty")[-160:]
        return "no log"

    def keep_logs(self) -> None:
        """Copy the servers' logs next to the crawls' (the disk they are on is unmounted
        at the end): ``services/``."""
        if self.disk is None:
            return
        out = self.folder / "services"
        for path in [*self.disk.glob("*.log"), *self.disk.glob("cluster/*/redis.log")]:
            target = out / path.relative_to(self.disk)
            target.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(OSError):
                shutil.copyfile(path, target)

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(ProcessLookupError, TypeError):
            os.kill(self.mongo.pid or 0, signal.SIGCONT)
        self.mongo.stop()
        if self.redis is not None:
            self.redis.stop()
        if self.cluster is not None:
            self.cluster.stop()
        self.keep_logs()
        if self.disk is not None:
            subprocess.run(["umount", "-l", str(self.disk)], check=False)
        if self.network is not None:
            self.network.remove()

    @property
    def redis_url(self) -> str:
        return self.redis.url if self.redis is not None else self.cluster.url  # type: ignore[union-attr]

    def redis_client(self) -> Any:
        from dedup.adapters.servers.services import connect_redis

        return connect_redis(self.redis_url)


def inject(fault: Fault, crawls: Crawls, services: Services, stop: threading.Event
           ) -> str | None:
    """Inject one fault; returns what was done, or None when it found no target (the
    process it would hit is between runs, or has ended, for 30 s). A worker is killed,
    and a process frozen, once the process is crawling (its extraction workers are up):
    a process frozen while it starts holds no lease yet, and is no process taken for
    dead."""
    slot = fault.target
    deadline = time.monotonic() + 30
    crawling = fault.kind in ("worker_kill", "crawl_freeze")
    while fault.kind.startswith(("crawl", "worker")) and not stop.is_set():
        proc = crawls.live(slot)
        if proc is not None and (not crawling or worker_of(proc.pid)):
            break
        if time.monotonic() > deadline:
            return None
        stop.wait(0.2)
    if fault.kind == "crawl_kill":
        return "SIGKILL" if crawls.signal(slot, signal.SIGKILL, "crawl_kill") else None
    if fault.kind == "crawl_term":
        return "SIGTERM to the group" if crawls.signal(slot, signal.SIGTERM, "crawl_term",
                                                       group=True) else None
    if fault.kind == "crawl_restart":
        return "SIGINT, started again" if crawls.signal(slot, signal.SIGINT,
                                                        "crawl_restart") else None
    if fault.kind == "crawl_freeze":
        proc = crawls.live(slot)
        if proc is None:
            return None
        os.kill(proc.pid, signal.SIGSTOP)
        crawls.frozen.add(proc.pid)
        stop.wait(fault.hold)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGCONT)
        crawls.frozen.discard(proc.pid)
        return f"frozen {fault.hold:.0f} s"
    if fault.kind == "worker_kill":
        proc = crawls.live(slot)
        worker = worker_of(proc.pid) if proc is not None else None
        if worker is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGKILL)
        return f"worker {worker} killed"
    if fault.kind == "mongo_freeze":
        pid = services.mongo.pid
        if pid is None:
            return None
        os.kill(pid, signal.SIGSTOP)
        stop.wait(fault.hold)
        os.kill(pid, signal.SIGCONT)
        return f"frozen {fault.hold:.0f} s"
    if fault.kind == "redis_kill":
        assert services.redis is not None
        with services.lock:
            services.held.add("redis")
            port = services.redis.port
            services.redis.kill()
        stop.wait(fault.hold)
        with services.lock:
            services.redis.port = port
            services.redis.start()
            services.held.discard("redis")
        return f"down {fault.hold:.0f} s"
    if fault.kind == "disk_full":
        if services.disk is None:
            return None
        st = os.statvfs(services.disk)
        filler = services.disk / "filler"
        with open(filler, "wb") as fh:
            os.posix_fallocate(fh.fileno(), 0,
                               max(1, st.f_bavail * st.f_frsize - DISK_LEFT * 1024 * 1024))
        stop.wait(fault.hold)
        filler.unlink()
        return f"full ({DISK_LEFT} MB left) {fault.hold:.0f} s"
    if fault.kind == "cpu_burn":
        burners = burn(os.cpu_count() or 1)
        stop.wait(fault.hold)
        ended(burners)
        return f"{len(burners)} CPU burners {fault.hold:.0f} s"
    if fault.kind == "memory_hog":
        size = int(HOG_SHARE * available_memory())
        hog = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                                f"held = b'x' * {size}\ntime.sleep({fault.hold})"])
        stop.wait(fault.hold)
        ended([hog])
        return f"{size / 2**30:.1f} GiB held {fault.hold:.0f} s"
    if fault.kind in NET_FAULTS:
        return net_fault(fault, services, stop)
    if fault.kind == "primary_kill":
        assert services.cluster is not None
        primaries = services.cluster.primaries()
        if not primaries:
            return None
        port = primaries[slot % len(primaries)]
        with services.lock:
            services.held.add(port)
            services.cluster.kill(port)
        stop.wait(fault.hold)
        with services.lock:
            services.cluster.restart(port)
            services.held.discard(port)
        return f"primary {port} down {fault.hold:.0f} s"
    raise ValueError(fault.kind)


def net_fault(fault: Fault, services: Services, stop: threading.Event) -> str | None:
    """A partition of the crawl from Redis or MongoDB (the target's parity: packets to
    its port dropped, so that connections hang, not refuse), a share of all packets lost,
    or a slow link (``tc tbf`` on both ends), for the fault's hold."""
    net = services.network
    if net is None:
        return None
    here: list[str] = []  # a rule of this machine's own namespace (the cluster's nodes)
    if fault.kind == "net_partition" and fault.target % 2 == 0 and services.cluster:
        # one primary of the cluster cut off from its clients (its port on loopback): its
        # cluster bus goes on, so the others see it up and fail nothing over
        primaries = services.cluster.primaries()
        if not primaries:
            return None
        port = primaries[fault.target // 2 % len(primaries)]
        rule, here = [], ["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), "-j", "DROP"]
        what = f"the crawl cut off from the cluster's primary {port}"
    elif fault.kind == "net_partition":
        on_redis = fault.target % 2 == 0 and services.redis is not None
        server = services.redis if on_redis else services.mongo
        rule = ["INPUT", "-p", "tcp", "--dport", str(server.port), "-j", "DROP"]  # type: ignore[union-attr]
        what = f"the crawl cut off from {'Redis' if on_redis else 'MongoDB'}"
    elif fault.kind == "net_loss":
        rule = ["INPUT", "-m", "statistic", "--mode", "random", "--probability",
                str(LOSS), "-j", "DROP"]
        what = f"{LOSS:.0%} of packets lost"
    else:
        rule = []
        what = f"the link slowed to {SLOW_RATE}"
    tbf = ["root", "tbf", "rate", SLOW_RATE, "burst", "32kbit", "latency", "400ms"]
    if here:
        subprocess.run(["iptables", "-I", *here], check=True)
        try:
            stop.wait(fault.hold)
        finally:
            subprocess.run(["iptables", "-D", *here], check=True)
        return f"{what} {fault.hold:.0f} s"
    if rule:
        net.run("iptables", "-I", *rule)
    else:  # both ways: the replies leave the namespace, the requests enter it
        net.run("tc", "qdisc", "add", "dev", net.there, *tbf)
        subprocess.run(["tc", "qdisc", "add", "dev", net.here, *tbf], check=True)
    stop.wait(fault.hold)
    if rule:
        net.run("iptables", "-D", *rule)
    else:
        net.run("tc", "qdisc", "del", "dev", net.there, "root")
        subprocess.run(["tc", "qdisc", "del", "dev", net.here, "root"], check=True)
    return f"{what} {fault.hold:.0f} s"


def burn(n: int) -> list[subprocess.Popen]:
    """``n`` processes that keep a core busy each, until :func:`ended`."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def ended(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def available_memory() -> int:
    """Bytes of memory available (``MemAvailable`` of /proc/meminfo)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


def nemesis(faults: list[Fault], crawls: Crawls, services: Services, started: float,
            stop: threading.Event, done: list[dict[str, Any]]) -> None:
    """Inject each fault at its time, in a thread of its own, so that faults overlap (a
    process killed while MongoDB is frozen); faults on one service, or freezes of one
    process, take turns."""
    locks = collections.defaultdict(threading.Lock)

    def one(fault: Fault, at: float) -> None:
        key = {"redis_kill": "redis", "primary_kill": "redis", "mongo_freeze": "mongo",
               "crawl_freeze": f"freeze-{fault.target}", "disk_full": "disk",
               "cpu_burn": "cpu", "memory_hog": "memory", "net_partition": "network",
               "net_loss": "network", "net_slow": "network"}.get(fault.kind, f"{id(fault)}")
        with locks[key]:
            what = inject(fault, crawls, services, stop)
        record = {"at": round(at, 1), "kind": fault.kind, "slot": fault.target, "done": what}
        done.append(record)
        say(f"fault at {record['at']:>7.1f} s  {fault.kind:<14} process {fault.target}: "
            f"{what or 'no target (between runs)'}")

    threads = []
    for fault in faults:
        if stop.wait(max(0.0, started + fault.at - time.monotonic())):
            break
        thread = threading.Thread(target=one, args=(fault, time.monotonic() - started),
                                  daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()


def run_crawl(crawls: Crawls, faults: list[Fault], services: Services, timeout: float
              ) -> list[dict[str, Any]]:
    """Run the crawl under ``faults`` (none: undisturbed) to its end."""
    done: list[dict[str, Any]] = []
    stop = threading.Event()
    started = time.monotonic()
    crawls.start_all()
    thread = threading.Thread(target=nemesis, args=(faults, crawls, services, started, stop,
                                                    done), daemon=True)
    thread.start()
    try:
        while not crawls.finished():
            if time.monotonic() - started > timeout:
                raise TimeoutError(f"the crawl did not end within {timeout:.0f} s")
            crawls.supervise(restart=thread.is_alive())
            services.revive(started)
            time.sleep(0.5)
    finally:
        stop.set()
        thread.join()
        crawls.stop()
    return done


def set_delay(content: Any, delay: float) -> None:
    """Make the site answer every page after ``delay`` seconds."""
    for pages in content.pages.values():
        for page in pages.values():
            page.delay = delay


def pacing(content: Any, seconds: float) -> float:
    """The delay that makes a crawl of the site on three processes last about
    ``seconds`` (each keeps :data:`IN_FLIGHT` requests waiting on the site)."""
    total = sum(len(pages) for pages in content.pages.values())
    return max(0.0, PROCESSES * IN_FLIGHT * seconds / total)


# ----------------------------------------------------------------------------- checking

def record_of(db: Any) -> tuple[set[str], set[tuple[str, str]]]:
    """Stored URLs, and (copy URL, original URL) of every match record."""
    return ({p["url"] for p in db.pages.find({}, {"url": 1})},
            {(m["url"], m["original_url"]) for m in db.matches.find({}, {"url": 1,
                                                                        "original_url": 1})})


def groups_stored(db: Any, site: Any) -> tuple[list[int], set[str]]:
    """Per copy group, how many of its pages are stored; and the unique pages stored."""
    stored = {p["url"] for p in db.pages.find({}, {"url": 1})}
    per_group = [sum(site.path_url(p) in stored for p in cluster)
                 for cluster in site.content.expected.clusters]
    unique = {u for u in site.content.expected.unique if site.path_url(u) in stored}
    return per_group, unique


@dataclasses.dataclass
class Violation:
    """An invariant broken: its line, and a few of the pages (URLs) it concerns."""
    line: str
    urls: list[str] = dataclasses.field(default_factory=list)


def check(db: Any, client: Any, namespace: str, site: Any, served: set[str],
          requested: set[str], crawls: Crawls, reference: tuple[list[int], set[str]]
          ) -> list[Violation]:
    """Every invariant of a finished crawl, each violation one line and its pages."""
    from crawler.pipelines import summary_adds_up
    from dedup.adapters.index import open_index, redis_store
    from dedup.adapters.mongo import from_int64

    violations: list[Violation] = []
    clusters = site.content.expected.clusters
    pages = list(db.pages.find({}, {"url": 1}))
    urls = collections.Counter(p["url"] for p in pages)
    matches = list(db.matches.find({}, {"url": 1, "original_id": 1}))
    matched = collections.Counter(m["url"] for m in matches)
    ids = {p["_id"] for p in pages}
    twice = [u for u, n in urls.items() if n > 1]
    if twice:
        violations.append(Violation(f"{len(twice)} URLs stored twice, e.g. {twice[0]}",
                                    twice[:3]))
    both = set(urls) & set(matched)
    if both:
        violations.append(Violation(f"{len(both)} URLs both stored and recorded as copies, "
                                    f"e.g. {sorted(both)[0]}", sorted(both)[:3]))
    again = [u for u, n in matched.items() if n > 1]
    if again:
        violations.append(Violation(f"{len(again)} URLs with two match records, "
                                    f"e.g. {again[0]}", again[:3]))
    undecided = sorted(u for u in served if u not in urls and u not in matched)
    if undecided:
        violations.append(Violation(f"{len(undecided)} pages served but neither stored nor "
                                    f"recorded as copies, e.g. {undecided[0]}",
                                    undecided[:3]))
    per_group, unique = groups_stored(db, site)
    extra = [clusters[i] for i, n in enumerate(per_group) if n > 1]
    if extra:
        violations.append(Violation(f"{len(extra)} copy groups with two stored pages, "
                                    f"e.g. {extra[0][0]}", list(map(site.path_url, extra[0]))))
    missing = [clusters[i] for i, n in enumerate(per_group) if n == 0]
    if missing:
        violations.append(Violation(f"{len(missing)} copy groups with no stored page, "
                                    f"e.g. {missing[0][0]}",
                                    list(map(site.path_url, missing[0]))))
    if (per_group, unique) != reference:
        differ = [site.path_url(u) for u in sorted(unique ^ reference[1])][:3]
        violations.append(Violation(
            "the groups and unique pages stored differ from the fault-free "
            f"crawl's ({sum(1 for n in per_group if n)} groups, {len(unique)} "
            f"unique; fault-free {sum(1 for n in reference[0] if n)}, "
            f"{len(reference[1])})", differ))
    traps = [t for t in site.content.expected.traps if t in requested]
    if traps:
        violations.append(Violation(f"{len(traps)} traps requested (linked only from "
                                    f"copies), e.g. {traps[0]}",
                                    [site.path_url(t) for t in traps[:3]]))
    dangling = [m["url"] for m in matches if m["original_id"] not in ids]
    if dangling:
        violations.append(Violation(f"{len(dangling)} match records naming no stored "
                                    f"page, e.g. {dangling[0]}", dangling[:3]))
    index = open_index(redis_store(client, namespace))
    entries = list(index.entries())
    indexed = {pid for _, pid in entries}
    id_strings = {str(i) for i in ids}
    orphans = [pid for pid in indexed if pid not in id_strings]
    if orphans:
        violations.append(Violation(f"{len(orphans)} index entries without their page, "
                                    f"e.g. {orphans[0]}"))
    fps = {str(d["_id"]): from_int64(d["simhash"])
           for d in db.fingerprints.find({"short": False}, {"simhash": 1})}
    unindexed = missing_from_index(index, fps, indexed)
    if unindexed:
        shown = set(unindexed[:3])
        unindexed_urls = [p["url"] for p in db.pages.find(
            {"_id": {"$in": [i for i in ids if str(i) in shown]}}, {"url": 1})]
        # what the index holds at their fingerprints: another page's id (an entry named
        # for another page), or nothing (an entry lost or never made)
        elsewhere = sum(1 for pid in unindexed if index.page_id(fps[pid]) is not None)
        violations.append(Violation(f"{len(unindexed)} stored pages missing from the index, "
                                    f"e.g. {unindexed[0]} ({elsewhere} of them with their "
                                    "fingerprint indexed under another page's id)",
                                    unindexed_urls))
    written = killed = 0
    for run in crawls.runs:
        path = crawls.folder / f"{crawls.database}-{run['run']}.json"
        if not path.exists():
            killed += 1
            continue
        written += 1
        summary = json.loads(path.read_text())
        if not summary_adds_up(summary):
            violations.append(Violation(f"the summary of run {run['run']} does not add up"))
    running = db.crawls.count_documents({"state": "running"})
    if running:
        violations.append(Violation(f"{running} crawl records left running"))
    left = [k for pattern in (f"{namespace}:inflight:*", f"{namespace}:frontier:*")
            for k in client.scan_iter(match=pattern, count=1000)]
    if left:
        violations.append(Violation(f"{len(left)} journal or frontier keys left, "
                                    f"e.g. {left[0]!r}"))
    return violations


def missing_from_index(index: Any, fps: dict[str, int], indexed: set[str]) -> list[str]:
    """The pages of ``fps`` (page id -> simhash) that the index does not hold. An entry
    names the first page of its fingerprint (``indexed``: those names); a later page
    with the very same fingerprint, admitted beside it (two listings of other items that
    read alike), is one of the fingerprint's records: seed 1's run took two such list
    pages for pages missing from the index."""
    unnamed = [pid for pid in fps if pid not in indexed]
    held = index.store.evidence([fps[pid] for pid in unnamed]) if unnamed else []
    return [pid for pid, records in zip(unnamed, held) if pid not in {p for p, _ in records}]


def prove_checker(db: Any, client: Any, namespace: str, site: Any, served: set[str],
                  requested: set[str], crawls: Crawls, reference: Any) -> list[Violation]:
    """Break the finished record the ways the invariants forbid, and return what the
    checker says of it (each break must be caught): a stored page lost, a copy stored as
    a second page of its group, a crawl record left running, a trap requested."""
    from bson import ObjectId

    copy = db.matches.find_one({})
    db.pages.delete_one({"_id": copy["original_id"]})
    other = db.matches.find_one({"original_id": {"$ne": copy["original_id"]}})
    db.pages.insert_one({"_id": ObjectId(), "url": other["url"]})
    db.crawls.insert_one({"_id": "chaos-proof", "state": "running"})
    trap = site.content.expected.traps[0]
    return check(db, client, namespace, site, served, requested | {trap}, crawls, reference)


def evidence(violations: list[Violation], db: Any, site: Any, access: Path, since: float,
             injected: list[dict[str, Any]], crawls: Crawls, recrawl: float
             ) -> list[dict[str, Any]]:
    """What the run saw of each violation's pages: when the site served each (seconds
    after the chaos crawl started, the status, and ``re-crawl`` for a request of the
    re-crawl, which started at ``recrawl``), what the record holds of it (stored, its
    match records), the crawl logs' lines that name it (at INFO: warnings, retries, pages
    lost), and the faults done before it was first served (the last three) and in the
    ten seconds after."""
    wanted = {u for v in violations for u in v.urls}
    served: dict[str, list[tuple[float, int, str]]] = collections.defaultdict(list)
    if wanted and access.exists():
        for line in access.read_text().splitlines():
            entry = json.loads(line)
            url = f"{site.url(entry['host'])}{entry['path']}"
            if url in wanted and entry["time"] >= since:
                served[url].append((round(entry["time"] - since, 1), entry["status"],
                                    "re-crawl" if entry["time"] >= recrawl else "chaos"))
    logs = {run["run"]: crawls.log(run).splitlines() for run in crawls.runs} if wanted else {}
    done = [f for f in injected if f["done"]]
    out = []
    for violation in violations:
        pages = []
        for url in violation.urls:
            first = served[url][0][0] if served[url] else None
            before = [f for f in done if first is not None and f["at"] <= first][-3:]
            after = [f for f in done if first is not None and first < f["at"] <= first + 10]
            said = [f"run {run}: {line}" for run, lines in logs.items() for line in lines
                    if url in line]
            pages.append({
                "url": url, "served": served[url],
                "stored": db.pages.count_documents({"url": url}),
                "matches": [{"original_url": m.get("original_url"), "kind": m.get("kind")}
                            for m in db.matches.find({"url": url})],
                "log": said[-8:], "faults_before": before, "faults_after": after})
        out.append({"violation": violation.line, "pages": pages})
    return out


def explain(found: list[dict[str, Any]]) -> None:
    """Print each violation with what the run saw of its first page."""
    for item in found:
        print(f"  - {item['violation']}")
        for page in item["pages"][:1]:
            served = ", ".join(f"{at} s ({status}{', re-crawl' if by == 're-crawl' else ''})"
                               for at, status, by in page["served"]) or "never"
            print(f"      {page['url']}: served at {served}; stored {page['stored']}, "
                  f"match records {page['matches'] or 'none'}")
            for fault in page["faults_before"]:
                print(f"      fault before: {fault['at']} s {fault['kind']} process "
                      f"{fault['slot']}: {fault['done']}")
            for line in page["log"][-3:]:
                print(f"      log {line[:200]}")


def served_pages(site: Any, log_path: Path, since: float) -> set[str]:
    """URLs the site answered with a page (status 200) since ``since``."""
    out = set()
    for line in log_path.read_text().splitlines():
        entry = json.loads(line)
        if entry["time"] >= since and entry["status"] == 200 \
                and not entry["path"].endswith("/robots.txt"):
            out.add(f"{site.url(entry['host'])}{entry['path']}")
    return out


# ----------------------------------------------------------------------------- the run

def run(seed: int, seconds: float, groups: int, cluster: bool, faults: int,
        folder: Path, prove: bool = False, lease: float = 30.0,
        replay: list[Fault] | None = None, burner: bool = False) -> dict[str, Any]:
    """One chaos run; returns its result (the JSON line's fields). ``replay``: the
    faults of an earlier run's ``schedule.json``, instead of a schedule drawn from the
    seed (the seed still builds the site); ``burner``: a CPU burner on every core beside
    the whole chaos crawl. The run's folder keeps its schedule
    (``schedule.json``), the faults done (``faults.json``) and what it saw of each
    violation (``violations.json``; ``checker-proof.json`` for the checker's proof)."""
    from crawler.examples.demosite import DemoSite, build_groups
    from dedup.adapters.servers.services import connect_mongo

    disk, network = mount_disk(folder), Network.make()
    kinds = tuple(k for k in (CLUSTER_FAULTS if cluster else NODE_FAULTS)
                  if (disk is not None or k != "disk_full")
                  and (network is not None or k not in NET_FAULTS))
    plan = replay if replay is not None else schedule(seed, seconds, faults, kinds, lease)
    (folder / "schedule.json").write_text(
        json.dumps([dataclasses.asdict(f) for f in plan], indent=1))
    extra = ["-s", f"DEDUP_LEASE_SECONDS={lease:g}"]
    if disk is not None:  # the crawl watches the services' disk, which the run fills
        extra += ["-s", f"DEDUP_DISK_WATCH={disk}", "-s", f"DEDUP_DISK_MIN_FREE={DISK_MIN_FREE}"]
    content = build_groups(groups, seed=seed)
    delay = pacing(content, seconds)
    namespace = "{chaos}" if cluster else "chaos"
    access = folder / "access.jsonl"
    with Services(folder, cluster, disk, network) as services, DemoSite(content, log_path=access) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo.url)
        mongo = connect_mongo(services.mongo.url)
        total = sum(len(p) for p in content.pages.values())
        say(f"site: {total} pages ({groups} copy groups); Redis: "
            f"{'a cluster of 3 primaries and 3 replicas' if cluster else 'one node'}; "
            f"{len(plan)} faults over {seconds:.0f} s (seed {seed})")
        say("the crawl without faults (three processes) ...")
        reference_crawls = Crawls(folder, env, site.start_urls()[0], "reference",
                                  "{reference}" if cluster else "reference", extra)
        run_crawl(reference_crawls, [], services, timeout=3600)
        reference = groups_stored(mongo["reference"], site)
        site.forget_requests()
        set_delay(content, delay)
        say(f"the chaos crawl (each page answered after {delay:.2f} s) ...")
        since = time.time()
        crawls = Crawls(folder, env, site.start_urls()[0], "chaos", namespace, extra)
        started = time.monotonic()
        burners = burn(os.cpu_count() or 1) if burner else []
        try:
            injected = run_crawl(crawls, plan, services, timeout=seconds * 3 + 600)
        finally:
            ended(burners)
        took = time.monotonic() - started
        served = served_pages(site, access, since)
        requested = set(site.requests)
        db = mongo["chaos"]
        before = record_of(db)
        # the chaos crawl's own record, before the re-crawl could mend anything
        found = check(db, services.redis_client(), namespace, site, served, requested,
                      crawls, reference)
        say("the re-crawl (one process) ...")
        set_delay(content, 0.0)
        recrawl = time.time()
        code = subprocess.run(crawls.command(len(crawls.runs)), cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=3600, check=False).returncode
        after = record_of(db)
        if code != 0:
            found.append(Violation(f"the re-crawl exited {code}"))
        if after != before:
            moved = sorted((after[0] ^ before[0]) | {u for u, _ in after[1] ^ before[1]})
            found.append(Violation(
                f"the re-crawl changed the record: stored +{len(after[0] - before[0])}"
                f" -{len(before[0] - after[0])}, matches +{len(after[1] - before[1])}"
                f" -{len(before[1] - after[1])}", moved[:3]))
        (folder / "faults.json").write_text(json.dumps(injected, indent=1))
        seen = evidence(found, db, site, access, since, injected, crawls, recrawl)
        (folder / "violations.json").write_text(json.dumps(seen, indent=1))
        caught = None
        if prove:
            broken = prove_checker(db, services.redis_client(), namespace, site, served,
                                   requested, crawls, reference)
            (folder / "checker-proof.json").write_text(json.dumps(
                evidence(broken, db, site, access, since, injected, crawls, recrawl),
                indent=1))
            caught = [v.line for v in broken]
        kinds_done = collections.Counter(f["kind"] for f in injected if f["done"])
        return {"seed": seed, "redis": "cluster" if cluster else "node", "burner": burner,
                "schedule_s": round(seconds), "crawl_s": round(took, 1), "pages": total,
                "served": len(served), "faults": dict(sorted(kinds_done.items())),
                "faults_without_target": sum(1 for f in injected if not f["done"]),
                "process_runs": len(crawls.runs), "lease_s": lease,
                "lease_lapses": sum(crawls.log(r).count("lease ran out") for r in crawls.runs),
                "revived": services.revived, "violations": [v.line for v in found], "evidence": seen,
                **({"checker_caught": caught} if caught is not None else {})}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="length of the schedule")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--redis", choices=("node", "cluster"), default="node")
    parser.add_argument("--groups", type=int, default=7000,
                        help="copy groups of the site (about 2.9 pages each)")
    parser.add_argument("--faults", type=int, default=0,
                        help="faults in the schedule (default: 1.5 a minute, at least 7)")
    parser.add_argument("--lease", type=float, default=30.0,
                        help="the crawl processes' lease (DEDUP_LEASE_SECONDS)")
    parser.add_argument("--keep", type=Path, help="keep the run's logs in this folder "
                        "(without it, a temporary folder, kept when a violation is found)")
    parser.add_argument("--schedule", type=Path, metavar="FILE",
                        help="replay the faults of an earlier run's schedule.json (at the "
                             "same seconds, on the same processes) instead of drawing them")
    parser.add_argument("--burner", action="store_true",
                        help="a CPU burner on every core beside the whole chaos crawl")
    parser.add_argument("--prove-checker", action="store_true",
                        help="then break the record on purpose and show what the checker "
                             "says of it (checker_caught)")
    args = parser.parse_args()
    faults = args.faults or max(7, round(1.5 * args.minutes))
    replay = None
    if args.schedule is not None:
        try:
            replay = read_schedule(args.schedule, CLUSTER_FAULTS if args.redis == "cluster"
                                   else NODE_FAULTS)
        except (OSError, ValueError) as exc:
            print(f"error: --schedule {args.schedule}: {exc}", file=sys.stderr)
            return 2
    folder = args.keep or Path(tempfile.mkdtemp(prefix="simcrawl-chaos-"))
    folder.mkdir(parents=True, exist_ok=True)
    result = None
    try:
        result = run(args.seed, args.minutes * 60, args.groups, args.redis == "cluster",
                     faults, folder, args.prove_checker, args.lease, replay, args.burner)
    except TimeoutError as exc:  # the crawl hung: a finding, said as one
        print(f"error: {exc}; the logs are in {folder}", file=sys.stderr)
        return 1
    finally:
        if not args.keep and result is not None and not result["violations"]:
            shutil.rmtree(folder, ignore_errors=True)
        elif not args.keep:  # a violation, or the run failed: what it saw is kept
            print(f"the run's folder is kept: {folder}", file=sys.stderr)
    print()
    print(f"{'fault':<16} {'injected':>8}")
    print("-" * 25)
    for kind, n in result["faults"].items():
        print(f"{kind:<16} {n:>8}")
    if result["revived"]:
        print(f"\nservers that exited by themselves, started again: {len(result['revived'])}"
              f" ({', '.join(sorted({r['server'] for r in result['revived']}))})")
    print(f"\n{len(result['violations'])} invariant violations")
    explain(result["evidence"])
    if result["violations"]:
        print(f"\nwhat the run saw is kept in {folder} (violations.json, faults.json, the "
              f"logs); replay its faults: python bench/chaos.py --seed {args.seed} "
              f"--minutes {args.minutes:g} --groups {args.groups} --redis {args.redis} "
              f"--lease {args.lease:g}{' --burner' if args.burner else ''} "
              f"--schedule {folder / 'schedule.json'}")
    print(json.dumps(result))
    return 1 if result["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
