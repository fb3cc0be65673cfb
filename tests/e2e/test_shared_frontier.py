"""One crawl on several processes through the shared frontier in Redis
(SIMCRAWL_FRONTIER=redis): every URL requested once across them, the same record as one
process, no trap requested, and every process ends by itself when the crawl is done."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite, build, build_groups
from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, connect_redis

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
#: Copy groups of the generated site the concurrency tests crawl.
GROUPS = 1000


def shared_crawl(site: DemoSite, tmp: Path, n: int, namespace: str = "shared") -> list[str]:
    return [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
            f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=shared", "-s",
            f"DEDUP_NAMESPACE={namespace}", "-s", "AUTOTHROTTLE_ENABLED=0", "-s",
            "SIMCRAWL_FRONTIER=redis", "-s", "SIMCRAWL_IDLE_SECONDS=2", "-s",
            "DEDUP_EXTRACT_WORKERS=1", "-s", "DEDUP_DEBUG=1",
            "-s", f"LOG_FILE={tmp / f'shared-{n}.log'}"]


def test_three_processes_share_one_crawl(tmp_path: Path, check_record,
                                         reference_crawl) -> None:  # type: ignore[no-untyped-def]
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=80, zh_articles=2, novel_chapters=0)) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        expected = reference_crawl(site, env, tmp_path)
        before = len(site.requests)
        procs = [subprocess.Popen(shared_crawl(site, tmp_path, n), cwd=ROOT, env=env)
                 for n in range(3)]
        assert [p.wait(timeout=600) for p in procs] == [0, 0, 0]  # each ended by itself
        fetched = collections.Counter(r for r in site.requests[before:]
                                      if not r.endswith("/robots.txt"))
        assert fetched and max(fetched.values()) == 1, "a URL was requested twice"
        check_record(connect_mongo(services.mongo_uri)["shared"], site, expected)
        logs = [(tmp_path / f"shared-{n}.log").read_text() for n in range(3)]
        assert all("the crawl is complete" in log for log in logs)
        # the finished crawl left no frontier behind: the next one starts afresh
        assert not list(connect_redis(services.redis_url).scan_iter(match="shared:frontier:*"))


def test_sketches_that_leave_redis_once_stored_give_the_same_record(
        tmp_path: Path, check_record, reference_crawl) -> None:  # type: ignore[no-untyped-def]
    """An index too large for one node keeps a page's text sketch in Redis only until
    MongoDB holds it (DEDUP_SKETCHES=until-stored, what DEDUP_SKETCHES=auto chooses past
    one node): two processes crawl the demo with it and record what one process records
    with every sketch in Redis, each judging the other's stored pages on their sketches
    from MongoDB; at the end no stored page's sketch is left in Redis."""
    from dedup.index.core import RELEASED, unpack_page_id

    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build(articles=40, zh_articles=2, novel_chapters=0)) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        expected = reference_crawl(site, env, tmp_path)
        procs = [subprocess.Popen([*shared_crawl(site, tmp_path, n, "released"), "-s",
                                   "DEDUP_SKETCHES=until-stored"], cwd=ROOT, env=env)
                 for n in range(2)]
        assert [p.wait(timeout=600) for p in procs] == [0, 0]
        db = connect_mongo(services.mongo_uri)["shared"]
        check_record(db, site, expected)
        client = connect_redis(services.redis_url)
        records = []
        for key in client.scan_iter(match="released:s:*"):
            for raw in client.hvals(key):
                at = 0
                while at < len(raw):
                    n = raw[at]
                    size = int.from_bytes(raw[at + 1 + n:at + 3 + n], "little")
                    records.append((unpack_page_id(raw[at + 1:at + 1 + n]),
                                    raw[at + 3 + n:at + 3 + n + size]))
                    at += 3 + n + size
        stored = {str(d["_id"]) for d in db.fingerprints.find({"sketch": {"$exists": True}})}
        assert records and {p for p, _ in records} <= stored
        assert all(sketch == RELEASED for _, sketch in records)


def test_the_demo_on_two_processes_gives_the_known_outcome(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "MONGO_URI")}
    env["SIMCRAWL_PROGRESS_SECONDS"] = "1"  # not a terminal: a plain line every second
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "crawl", "--processes", "2",
                           "--data-dir", str(folder)], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    exp = build().expected
    originals = len(exp.clusters) + len(exp.unique)
    copies = sum(len(c) - 1 for c in exp.clusters)
    assert f"originals stored          {originals} / {originals}" in done.stdout
    assert f"copies dropped, naming their original   {copies} / {copies}" in done.stdout
    assert "trap pages requested      0 (must be 0)" in done.stdout
    # each process's share is printed (on a site this small, on a busy machine, the one
    # that starts first may take it all: the thousand-group test below checks sharing)
    assert re.search(r"pages handled per process\s+\d+ / \d+", done.stdout), done.stdout
    assert (folder / "demo-crawl-1.log").exists() and (folder / "demo-crawl-2.log").exists()
    # one combined live line for both processes while they crawl
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("progress:")]
    assert lines and all("per process" in ln and "queue" in ln for ln in lines)
    last = re.search(r"fetched (\d+) .* admitted (\d+)  dropped (\d+)", lines[-1])
    assert last and int(last.group(2)) == originals and int(last.group(3)) >= copies


def fetched_counts(site: DemoSite, before: int = 0) -> collections.Counter:
    """How often each page was requested (robots.txt aside)."""
    return collections.Counter(r for r in site.requests[before:]
                               if not r.endswith("/robots.txt"))


def test_a_thousand_copy_groups_on_three_processes(tmp_path: Path,
                                                   check_exact_groups) -> None:  # type: ignore[no-untyped-def]
    content = build_groups(GROUPS)
    with EmbeddedServices(tmp_path / "data") as services, DemoSite(content) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        procs = [subprocess.Popen(shared_crawl(site, tmp_path, n), cwd=ROOT, env=env)
                 for n in range(3)]
        assert [p.wait(timeout=600) for p in procs] == [0, 0, 0]
        fetched = fetched_counts(site)
        assert max(fetched.values()) == 1, "a URL was requested twice"
        db = connect_mongo(services.mongo_uri)["shared"]
        check_exact_groups(db, site)  # 0 double admissions, 0 traps, every copy recorded
        assert db.pages.count_documents({}) == GROUPS + len(content.expected.unique)
        # the three processes shared the work
        handled = [int(m) for n in range(3) for m in re.findall(
            r"dedup summary: .*'dedup/stored/pages': (\d+)", (tmp_path / f"shared-{n}.log").read_text())]
        assert len(handled) == 3 and min(handled) > 0 and sum(handled) == db.pages.count_documents({})


def test_a_process_killed_mid_crawl_loses_no_url(tmp_path: Path,
                                                 check_exact_groups) -> None:  # type: ignore[no-untyped-def]
    import signal
    import time

    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build_groups(GROUPS)) as site:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)

        def wait_for(n: int) -> None:
            deadline = time.monotonic() + 120
            while len(site.requests) < n and time.monotonic() < deadline:
                time.sleep(0.02)

        procs = [subprocess.Popen(shared_crawl(site, tmp_path, 0), cwd=ROOT, env=env)]
        wait_for(60)  # the one to be killed is working before the others join
        procs += [subprocess.Popen(shared_crawl(site, tmp_path, n), cwd=ROOT, env=env)
                  for n in (1, 2)]
        wait_for(900)
        procs[0].send_signal(signal.SIGKILL)  # with requests in flight and pages buffered
        procs[0].wait()
        procs[0] = subprocess.Popen(shared_crawl(site, tmp_path, 3), cwd=ROOT, env=env)
        assert [p.wait(timeout=600) for p in procs] == [0, 0, 0]
        check_exact_groups(connect_mongo(services.mongo_uri)["shared"], site)
        again = sum(n - 1 for n in fetched_counts(site).values())
        logs = "".join((tmp_path / f"shared-{n}.log").read_text() for n in (1, 2, 3))
        back = sum(int(n) for n in re.findall(r"put (\d+) requests back into the shared queue",
                                              logs))
        # whichever process opened the frontier next put back what the killed one had
        # taken and not settled (in flight, or buffered for MongoDB); only those, and the
        # copies of the originals it lost, are fetched again
        assert 0 < back and again <= back
        print(f"SIGKILL mid-crawl: {back} requests put back, {again} pages fetched again")


def test_a_shared_crawl_on_a_redis_cluster(tmp_path: Path, redis_cluster: str,
                                           check_exact_groups) -> None:  # type: ignore[no-untyped-def]
    """Two processes share a crawl through a three-node Redis Cluster: the journals and
    the frontier live in the slot of the namespace's hash tag, the index on every node."""
    with EmbeddedServices(tmp_path / "data") as services, \
            DemoSite(build_groups(200)) as site:
        env = dict(os.environ, REDIS_URL=redis_cluster, MONGO_URI=services.mongo_uri)
        procs = [subprocess.Popen(shared_crawl(site, tmp_path, n, "{on-cluster}"), cwd=ROOT,
                                  env=env) for n in range(2)]
        assert [p.wait(timeout=600) for p in procs] == [0, 0]
        assert max(fetched_counts(site).values()) == 1, "a URL was requested twice"
        check_exact_groups(connect_mongo(services.mongo_uri)["shared"], site)
        client = connect_redis(redis_cluster)
        keys = list(client.scan_iter(match="{on-cluster}:*", count=1000))
        assert keys and len({client.keyslot(k) for k in keys}) == 1  # type: ignore[attr-defined]
        index_keys = list(client.scan_iter(match="on-cluster:ix:*", count=1000))
        assert len({client.get_node_from_key(k).port for k in index_keys}) == 3  # type: ignore[attr-defined]
        # a namespace that would scatter the crawl's keys is refused in one line
        refused = subprocess.run(shared_crawl(site, tmp_path, 9, "scattered"), cwd=ROOT,
                                 env=env, capture_output=True, text=True, timeout=120,
                                 check=False)
        assert refused.returncode != 0
        assert "DEDUP_NAMESPACE={scattered}" in refused.stdout + refused.stderr
