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
    env = dict(os.environ, START_URLS="https://example.org/")
    done = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config"],
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    config = yaml.safe_load(done.stdout)
    assert config["services"]["crawler"]["environment"]["START_URLS"] == "https://example.org/"
    missing = subprocess.run(["docker-compose", "-f", str(ROOT / "docker-compose.yml"),
                              "config", "-q"], env={k: v for k, v in os.environ.items()
                                                    if k != "START_URLS"},
                             capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode != 0 and "START_URLS" in missing.stderr


def test_compose_promises() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert "--appendonly" in services["redis"]["command"]
    assert any(v.startswith("mongo-data:") for v in services["mongo"]["volumes"])
    for name in ("redis", "mongo"):
        assert all(str(p).startswith("127.0.0.1:") for p in services[name].get("ports", []))
    for service in services.values():  # secrets only ever come from the environment
        for key, value in (service.get("environment") or {}).items():
            if "PASSWORD" in key or "USERNAME" in key:
                assert str(value).startswith("${"), key
    assert "ports" not in services["crawler"]
