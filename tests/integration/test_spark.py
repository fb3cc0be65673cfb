"""The batch job on Spark gives exactly the in-process answer: the same pairs and the same
clusters, on ``local[2]`` and on a real standalone cluster (a master and two workers
started from the installed pyspark's ``spark-class``), from a file and from the store."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dedup import all_pairs
from dedup.adapters.servers.services import free_port

pytest.importorskip("pyspark", reason="the Spark engine needs the extra simcrawl[spark] "
                    "(./run-tests installs it)")
pytestmark = pytest.mark.spark


def planted(n: int, groups: int, k: int, seed: int = 7) -> np.ndarray:
    """``n`` random fingerprints and ``groups`` planted groups of 2 to 6 near duplicates,
    each member 0 to k bits from the one before it: chains, so that a member may be more
    than k bits from the first (a group held together only through its middle), and
    exact copies."""
    rng = np.random.default_rng(seed)
    values = [rng.integers(0, 2 ** 64, size=n, dtype=np.uint64)]
    for _ in range(groups):
        member = int(rng.integers(0, 2 ** 64, dtype=np.uint64))
        chain = [member]
        for _ in range(int(rng.integers(1, 6))):
            for bit in rng.choice(64, int(rng.integers(0, k + 1)), replace=False):
                member ^= 1 << int(bit)
            chain.append(member)
        values.append(np.array(chain, dtype=np.uint64))
    out = np.concatenate(values)
    return out[rng.permutation(len(out))]


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "crawler.cli", "find-all", *args],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def spark() -> Iterator[object]:
    from dedup.spark import session

    spark = session.start("local[2]", app="simcrawl-tests")
    yield spark
    spark.stop()


def spark_points(spark, values: np.ndarray, folder: Path):  # type: ignore[no-untyped-def]
    from dedup.spark import stage

    stage.write(stage.file_chunks(values, size=len(values) // 3 + 1), folder)
    return spark.read.parquet(str(folder))


@pytest.mark.parametrize(("n", "k"), [(1_000_000, 3), (100_000, 6)])
def test_spark_pairs_and_clusters_equal_in_process(spark, tmp_path: Path, n: int,
                                                   k: int) -> None:
    from dedup.spark import job

    values = planted(n, 500, k)
    points = spark_points(spark, values, tmp_path / "in")
    pairs = job.find_all(points, k).persist()
    got = {(r.i, r.j, r.distance) for r in pairs.select("i", "j", "distance").collect()}
    want = {(int(i), int(j), int(d)) for i, j, d in all_pairs.find_all(values, k)}
    assert len(want) >= 500  # the planted groups are there to be found
    assert any(d == 0 for _, _, d in want) and any(d == k for _, _, d in want)
    assert got == want
    clusters = sorted(list(r.members) for r in job.cluster_records(points, pairs).collect())
    assert clusters == sorted(all_pairs.clusters(values, k))
    assert max(len(c) for c in clusters) >= 5


def test_components_settle_on_a_long_chain(spark) -> None:  # type: ignore[no-untyped-def]
    from dedup.spark import job

    chain = [(i, i + 1) for i in range(200)] + [(1000, 1001), (1001, 1002)]
    edges = spark.createDataFrame(chain, "i long, j long")
    labels = {r.id: r.cluster for r in job.components(edges).collect()}
    assert {labels[i] for i in range(201)} == {0}
    assert {labels[i] for i in (1000, 1001, 1002)} == {1000}


def test_cli_spark_prints_what_local_prints(tmp_path: Path) -> None:
    values = planted(20_000, 200, 3, seed=11)
    lines = ["# planted groups", *(f"{int(v):016x}" for v in values[:100]), "",
             *(str(int(v)) for v in values[100:])]
    source = tmp_path / "fps.txt"
    source.write_text("\n".join(lines) + "\n")
    local = run_cli(str(source))
    on_spark = run_cli(str(source), "--engine", "spark", "--master", "local[2]")
    assert local.returncode == 0 and on_spark.returncode == 0, on_spark.stderr[-2000:]
    assert on_spark.stdout == local.stdout and local.stdout.count("\n") > 150
    assert "Spark (local[2])" in on_spark.stderr
    # the clusters written as Parquet on Spark: test_standalone_cluster_gives_the_in_process_answer


def test_cli_without_java_says_how_to_install_it(tmp_path: Path) -> None:
    source = tmp_path / "fps.txt"
    source.write_text("0000000000000001\n0000000000000003\n")
    result = run_cli(str(source), "--engine", "spark",
                     env={"JAVA_HOME": str(tmp_path / "no-java")})
    assert result.returncode == 2
    assert "apt-get install openjdk-17-jre-headless" in result.stderr
    assert "Traceback" not in result.stderr


def test_store_input_on_both_engines(services, pages, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from bson import ObjectId

    from dedup.adapters.mongo import fingerprint_document
    from dedup.store.records import fingerprint_row

    values = planted(3_000, 100, 3, seed=5)
    docs = [fingerprint_row(str(ObjectId()), int(v), checksum="0" * 32, tokens=200,
                            short=False, algorithm="test") for v in values]
    docs.append(fingerprint_row(str(ObjectId()), int(values[0]), checksum="0" * 32,
                                tokens=3, short=True, algorithm="test"))  # not indexed
    pages.fingerprints.insert_many([fingerprint_document(d) for d in docs])
    pages.pages.insert_one({"url": "http://a.test/", "host": "a.test"})
    store = ["--store", "--mongo-uri", services.mongo_uri, "--database", pages.db.name]
    local = run_cli(*store)
    on_spark = run_cli(*store, "--engine", "spark", "--master", "local[2]")
    assert local.returncode == 0, local.stderr
    assert on_spark.returncode == 0, on_spark.stderr[-2000:]
    assert on_spark.stdout == local.stdout
    first = local.stdout.splitlines()[0]
    assert '"pages": ["' in first  # page ids, not line numbers
    assert f"{len(values):,} fingerprints" in local.stderr  # the short one left out


def test_standalone_cluster_gives_the_in_process_answer(standalone: str, tmp_path: Path
                                                         ) -> None:
    values = planted(50_000, 300, 3, seed=3)
    source = tmp_path / "fps.txt"
    source.write_text("".join(f"{int(v):016x}\n" for v in values))
    # the clusters, written as Parquet by each engine (the pairs printed on Spark:
    # test_cli_spark_prints_what_local_prints; one Spark job a test, as each starts a JVM)
    import pyarrow.parquet as pq

    mine, theirs = tmp_path / "local.parquet", tmp_path / "spark.parquet"
    assert run_cli(str(source), "--clusters", "-o", str(mine)).returncode == 0
    done = run_cli(str(source), "--clusters", "--engine", "spark", "--master", standalone,
                   "-o", str(theirs))
    assert done.returncode == 0, done.stderr[-3000:]
    assert standalone in done.stderr
    clusters = pq.read_table(mine).to_pylist()
    assert pq.read_table(theirs).to_pylist() == clusters and len(clusters) >= 300
    assert set(clusters[0]) == {"size", "members", "fingerprints"}
