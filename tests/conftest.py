"""Shared test settings: a deterministic Hypothesis profile for CI, a real Redis Cluster
for the tests that need one, and the development data (real pages) for the tests of the
detection rules."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from dedup.adapters.servers.services import LocalRedisCluster as RedisClusterNodes
from dedup.adapters.servers.services import free_port

settings.register_profile("ci", max_examples=200, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """The suite takes about a quarter of an hour on two cores (three pytest-xdist workers,
    ``./run-tests``): each line of progress also says how long the run has taken so far
    (`` [ 42%  6:31]``)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    message = getattr(reporter, "_get_progress_information_message", None)
    if message is None or config.getini("console_output_style") != "progress":
        return  # another pytest, or another style asked for: pytest's own progress
    started = time.monotonic()

    def with_elapsed() -> str:
        shown = message()
        minutes, seconds = divmod(int(time.monotonic() - started), 60)
        return f"{shown.rstrip(']')} {minutes:2d}:{seconds:02d}]" if shown.endswith("]") else shown

    reporter._get_progress_information_message = with_elapsed


#: What a test costs, roughly, by its mark, in seconds: a Spark job (a JVM, a session, a
#: cluster), a crawl in a subprocess, real servers, none.
COST = {"spark": 40.0, "e2e": 10.0, "integration": 1.0}


def file_cost(items: list[pytest.Item]) -> float:
    return sum(next((c for m, c in COST.items() if item.get_closest_marker(m)), 0.05)
               for item in items)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files that cost most run first (``./run-tests`` hands the workers a file at a
    time in this order, ``--no-loadscope-reorder``): a long file started last would run
    alone at the end while the other workers wait. A file's tests keep their order."""
    by_file: dict[str, list[pytest.Item]] = {}
    for item in items:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
    ranked = sorted(by_file.values(), key=file_cost, reverse=True)
    items[:] = [item for group in ranked for item in group]


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


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Spark standalone master and two one-core workers on 127.0.0.1, started from the
    installed pyspark's ``spark-class``; yields the master URL."""
    pyspark = pytest.importorskip("pyspark", reason="the Spark engine needs simcrawl[spark]")

    home = Path(pyspark.__file__).parent
    folder = tmp_path_factory.mktemp("spark-standalone")
    port = free_port()
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(folder),
           "PYSPARK_PYTHON": sys.executable}
    spark_class = str(home / "bin" / "spark-class")
    url = f"spark://127.0.0.1:{port}"
    logs = [open(folder / name, "w") for name in ("master.log", "worker1.log", "worker2.log")]
    procs = [subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master",
                               "--host", "127.0.0.1", "--port", str(port),
                               "--webui-port", str(free_port())],
                              env=env, stdout=logs[0], stderr=subprocess.STDOUT)]
    try:
        _wait_for(folder / "master.log", "Starting Spark master", procs[0])
        for n in (1, 2):
            procs.append(subprocess.Popen(
                [spark_class, "org.apache.spark.deploy.worker.Worker", url, "--host",
                 "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port",
                 str(free_port()), "--work-dir", str(folder / f"work{n}")],
                env=env, stdout=logs[n], stderr=subprocess.STDOUT))
        for n in (1, 2):
            _wait_for(folder / f"worker{n}.log", "Successfully registered with master",
                      procs[n])
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        for log in logs:
            log.close()


def _wait_for(log: Path, text: str, proc: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.3)
    pytest.fail(f"{log.name}: no {text!r}:\n{log.read_text(errors='replace')[-3000:]}")
