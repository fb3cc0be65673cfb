"""docker-compose.yml validates with Debian's docker-compose (no engine needed) and keeps
its promises: append-only Redis, a Mongo volume, loopback-only ports, no credentials."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("docker-compose") is None,
                    reason="docker-compose not installed (./run-tests installs it as root)")
def test_compose_file_validates() -> None:
    secrets = {"REDIS_PASSWORD": "r3d1s", "MONGO_PASSWORD": "m0ng0"}
    env = dict(os.environ, START_URLS="https://example.org/", **secrets)
    done = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    crawler = config["services"]["crawler"]["environment"]
    assert crawler["START_URLS"] == "https://example.org/"
    assert crawler["REDIS_URL"] == "redis://:r3d1s@redis:6379/0"
    assert crawler["MONGO_URI"] == "mongodb://simcrawl:m0ng0@mongo:27017/?authSource=admin"
    mongo = config["services"]["mongo"]["environment"]
    assert (mongo["MONGO_INITDB_ROOT_USERNAME"], mongo["MONGO_INITDB_ROOT_PASSWORD"]) == \
        ("simcrawl", "m0ng0")
    assert "--requirepass" in " ".join(config["services"]["redis"]["command"])
    # the console and batch profiles run without START_URLS (it used to be required of the
    # whole file); the crawler then gets an empty one, which its spider refuses in one line
    for profile in ("console", "batch", "cluster"):
        without = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"),
                                  "--profile", profile, "config"],
                                 env={k: v for k, v in env.items() if k != "START_URLS"},
                                 capture_output=True, text=True, timeout=60, check=False)
        assert without.returncode == 0, (profile, without.stderr)
        assert yaml.safe_load(without.stdout)["services"]["crawler"]["environment"][
            "START_URLS"] in ("", None)
    for name in ("REDIS_PASSWORD", "MONGO_PASSWORD"):  # required, said so
        missing = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"),
                                  "config", "-q"], env={k: v for k, v in env.items()
                                                        if k != name},
                                 capture_output=True, text=True, timeout=60, check=False)
        assert missing.returncode != 0 and name in missing.stderr


def test_compose_promises() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert "--appendonly yes --appendfsync always" in " ".join(services["redis"]["command"])
    assert any(v.startswith("mongo-data:") for v in services["mongo"]["volumes"])
    for name in ("redis", "mongo"):
        assert all(str(p).startswith("127.0.0.1:") for p in services[name].get("ports", []))
    for service in services.values():  # secrets only ever come from the environment
        for key, value in (service.get("environment") or {}).items():
            if "PASSWORD" in key or key in ("REDIS_URL", "MONGO_URI"):
                assert "${REDIS_PASSWORD}" in str(value) or "${MONGO_PASSWORD" in str(value) \
                    or str(value).startswith("${"), key
    assert "ports" not in services["crawler"]
    # scalable (--scale crawler=N): one shared frontier, no per-container name or job folder
    crawler = services["crawler"]
    assert crawler["environment"]["SIMCRAWL_FRONTIER"] == "redis"
    assert "container_name" not in crawler and "volumes" not in crawler
    assert "JOBDIR" not in (ROOT / "Dockerfile").read_text()
    # the cluster profile: three official-image nodes, cluster-enabled, append-only,
    # password-protected, joined once; its crawler names a hash-tag namespace
    nodes = [services[f"redis-node-{n}"] for n in (1, 2, 3)]
    for node in nodes:
        line = " ".join(node["command"])
        assert node["image"].startswith("redis:") and node["profiles"] == ["cluster"]
        assert "--cluster-enabled yes" in line and "--appendonly yes --appendfsync always" in line
        assert "--requirepass" in line and "--masterauth" in line and "ports" not in node
    assert len({node["volumes"][0] for node in nodes}) == 3
    init = services["redis-cluster-init"]
    assert "--cluster create" in " ".join(init["command"])
    on_cluster = services["crawler-cluster"]
    assert on_cluster["depends_on"]["redis-cluster-init"]["condition"] == \
        "service_completed_successfully"
    assert on_cluster["environment"]["DEDUP_NAMESPACE"] == "{simcrawl}"
    assert on_cluster["environment"]["SIMCRAWL_FRONTIER"] == "redis"
    # the console: its own profile, the host's loopback only, the token from the environment
    console = services["console"]
    assert console["profiles"] == ["console"]
    assert all(str(p).startswith("127.0.0.1:") for p in console["ports"])
    assert console["environment"]["SIMCRAWL_WEB_TOKEN"].startswith("${")
    # every package the installed command imports is copied into the image
    dockerfile = (ROOT / "Dockerfile").read_text()
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    tops = {p.split(".")[0] for p in setup["packages"]["find"]["include"]}
    assert tops == {"crawler", "dedup"}
    for top in tops:
        assert f"COPY {top} ./{top}" in dockerfile, top


def test_batch_profile_runs_the_job_on_the_official_spark_image() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for name in ("spark-master", "spark-worker", "batch"):
        assert services[name]["profiles"] == ["batch"]
        assert services[name]["build"]["dockerfile"] == "Dockerfile.spark"
    assert "org.apache.spark.deploy.master.Master" in services["spark-master"]["command"]
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    assert services["batch"]["command"][:4] == ["simcrawl", "clusters", "--engine", "spark"]
    assert all(str(p).startswith("127.0.0.1:") for p in services["spark-master"]["ports"])
    dockerfile = (ROOT / "Dockerfile.spark").read_text()
    assert "FROM apache/spark:" in dockerfile and '"pyspark==${SPARK_VERSION}"' in dockerfile
    for package in ("dedup", "crawler"):  # the command, console and batch job inside them
        assert f"COPY {package} ./{package}" in dockerfile
