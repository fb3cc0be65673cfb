"""Shared test settings: a deterministic Hypothesis profile for CI, a real Redis Cluster
for the tests that need one, and the development data (real pages) for the tests of the
detection rules."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def find_dev_data() -> Path | None:
    """The project's development data (``near-dup-dev/``, ``zh-dev/``): ``$SIMCRAWL_DEV_DATA``,
    else ``shared/data`` beside the checkout or beside one of its parent folders (it is
    kept outside the repository); ``None`` when it is not on this machine."""
    env = os.environ.get("SIMCRAWL_DEV_DATA")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents[1:]:
        if (parent / "shared" / "data" / "near-dup-dev" / "pages.jsonl").is_file():
            return parent / "shared" / "data"
    return None


@pytest.fixture(scope="session")
def dev_data() -> Path:
    """The development data folder; the test is skipped, saying why, where it is missing."""
    found = find_dev_data()
    if found is None or not (found / "near-dup-dev" / "pages.jsonl").is_file():
        pytest.skip("the development data (shared/data/near-dup-dev) is not on this machine; "
                    "set SIMCRAWL_DEV_DATA to its folder")
    return found


class RedisClusterNodes:
    """Real ``redis-server --cluster-enabled yes`` nodes on loopback (append-only file,
    fsync always, as simcrawl runs Redis), joined by ``redis-cli --cluster create``:
    ``primaries`` masters, each with ``replicas`` replicas; a node that stops answering
    for ``node_timeout_ms`` is failed over to its replica."""

    def __init__(self, folder: Path, primaries: int = 3, replicas: int = 0,
                 node_timeout_ms: int = 15000) -> None:
        self.folder = folder
        self.count = primaries * (1 + replicas)
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.procs: dict[int, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{min(self.procs)}/0"

    def start(self) -> RedisClusterNodes:
        import redis

        from dedup.services import free_port, redis_server_binary

        cli = shutil.which("redis-cli")
        if cli is None:
            pytest.fail("redis-cli is missing: install Debian's redis-tools (./run-tests "
                        "installs redis-server, which brings it)")
        server = redis_server_binary()
        ports = _cluster_ports(self.count, free_port)
        for port in ports:
            node = self.folder / str(port)
            node.mkdir(parents=True)
            self.procs[port] = subprocess.Popen(
                [server, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled",
                 "yes", "--cluster-config-file", str(node / "nodes.conf"), "--dir",
                 str(node), "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                 "--cluster-node-timeout", str(self.node_timeout_ms)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for port in ports:
            _wait(lambda p=port: redis.Redis(host="127.0.0.1", port=p, socket_timeout=1).ping())
        subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                        "--cluster-replicas", str(self.replicas), "--cluster-yes"],
                       check=True, capture_output=True, timeout=60)
        self.wait_ok()
        return self

    def wait_ok(self, timeout: float = 60.0) -> None:
        """Until every live node says the cluster is ok (and, with replicas, each
        replica is attached to its primary)."""
        import redis

        def ok() -> bool:
            for port, proc in self.procs.items():
                if proc.poll() is not None:
                    continue
                node = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)
                if node.cluster("info")["cluster_state"] != "ok":
                    return False
                role = node.info("replication")
                if role["role"] == "slave" and role.get("master_link_status") != "up":
                    return False
            return True

        _wait(ok, timeout)

    def primary_of(self, key: str) -> int:
        """The port of the primary that holds ``key``'s slot."""
        import redis

        node = redis.RedisCluster(host="127.0.0.1", port=min(self.procs))
        try:
            return int(node.get_node_from_key(key).port)
        finally:
            node.close()

    def kill(self, port: int) -> None:
        """SIGKILL one node."""
        self.procs[port].kill()
        self.procs[port].wait(timeout=30)

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs.values():
            proc.wait(timeout=30)


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Three cluster nodes of :class:`RedisClusterNodes`, three masters, no replicas;
    yields the URL of the first node."""
    nodes = RedisClusterNodes(tmp_path_factory.mktemp("cluster"))
    try:
        yield nodes.start().url
    finally:
        nodes.stop()


@pytest.fixture
def redis_cluster_with_replicas(tmp_path: Path) -> Iterator[RedisClusterNodes]:
    """A cluster of three primaries and three replicas that fails a silent primary over
    to its replica after one second (a test may kill nodes: one cluster per test)."""
    nodes = RedisClusterNodes(tmp_path / "cluster", primaries=3, replicas=1,
                              node_timeout_ms=1000)
    try:
        yield nodes.start()
    finally:
        nodes.stop()


def _cluster_ports(n: int, free_port) -> list[int]:  # type: ignore[no-untyped-def]
    """Free ports whose cluster bus port (port + 10000) is free too."""
    import socket

    ports: list[int] = []
    while len(ports) < n:
        port = free_port()
        if port + 10000 > 65535 or port in ports:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _wait(check, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return
        except Exception:  # not up yet
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError("the Redis Cluster did not come up")
        time.sleep(0.1)

