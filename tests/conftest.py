"""Shared test settings: a deterministic Hypothesis profile for CI, a real Redis Cluster
for the tests that need one, and the development data (real pages) for the tests of the
detection rules."""

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


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Three ``redis-server --cluster-enabled yes`` nodes on loopback (append-only file,
    fsync always, as simcrawl runs Redis), joined by ``redis-cli --cluster create`` into
    one cluster of three masters; yields the URL of the first node."""
    import redis

    from dedup.services import free_port, redis_server_binary

    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.fail("redis-cli is missing: install Debian's redis-tools (./run-tests "
                    "installs redis-server, which brings it)")
    server = redis_server_binary()
    folder = tmp_path_factory.mktemp("cluster")
    ports = _cluster_ports(3, free_port)
    procs = []
    for port in ports:
        node = folder / str(port)
        node.mkdir()
        procs.append(subprocess.Popen(
            [server, "--port", str(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
             "--cluster-config-file", str(node / "nodes.conf"), "--dir", str(node),
             "--appendonly", "yes", "--appendfsync", "always", "--save", ""],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        for port in ports:
            _wait(lambda p=port: redis.Redis(host="127.0.0.1", port=p, socket_timeout=1).ping())
        subprocess.run([cli, "--cluster", "create", *(f"127.0.0.1:{p}" for p in ports),
                        "--cluster-replicas", "0", "--cluster-yes"], check=True,
                       capture_output=True, timeout=60)
        for port in ports:
            _wait(lambda p=port: redis.Redis(host="127.0.0.1", port=p, socket_timeout=1).info("cluster")
                  and redis.Redis(host="127.0.0.1", port=p).cluster("info")["cluster_state"] == "ok")
        yield f"redis://127.0.0.1:{ports[0]}/0"
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


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

