"""Peer libraries for the benchmarks, each installed into its own folder.

The PyPI ``simhash`` package and ``simhash-pybind`` both install a top-level module named
``simhash``, so each peer lives in ``.bench-peers/<name>`` and is measured in a
subprocess with that folder on ``PYTHONPATH``. Installing needs the package registry once;
a peer that cannot be installed is reported as such in the table, not silently left out.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PEERS = ROOT / ".bench-peers"
SHARED = ROOT.parent / "shared"


def missing_data(path: Path, what: str) -> SystemExit:
    """The error for a benchmark whose development data is not where it looked."""
    return SystemExit(
        f"{what} not found at {path}. It is the project's development data (labelled "
        "near-duplicate news pages in near-dup-dev/, Chinese essays in zh-dev/), kept "
        f"outside the repository: on the development machines in {SHARED / 'data'}, next "
        "to the checkout. Copy it there, or pass --data PATH to a copy; nothing in the "
        "test suite needs it.")


def ensure(name: str, requirement: str) -> Path | None:
    """Install ``requirement`` into ``.bench-peers/name`` (once); return the folder or None."""
    target = PEERS / name
    marker = target / ".installed"
    if marker.is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--target", str(target), requirement],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        print(f"[bench] could not install {requirement}: {proc.stderr.strip()[-300:]}",
              file=sys.stderr)
        return None
    marker.write_text(requirement)
    return target


def run_worker(script: Path, args: list[str], peer_path: Path | None = None,
               timeout: float = 900, extra_env: dict[str, str] | None = None) -> dict:
    """Run ``script --worker ...`` in a subprocess and return the JSON it prints last."""
    env = dict(os.environ, **(extra_env or {}))
    if peer_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(peer_path),
                                                          env.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, str(script), "--worker", *args], env=env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        return {"error": (proc.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def essays_and_jieba(data: Path) -> tuple[list[Path], Any]:
    """The zh-dev essay files under ``data`` and the jieba module (installed into
    ``.bench-peers/jieba`` on first use, quiet); exits with a message when either is
    missing."""
    files = sorted(data.glob("*.txt"))
    if not files:
        raise missing_data(data, "The Chinese essays of zh-dev (*.txt)")
    peer = ensure("jieba", "jieba==0.42.1")
    if peer is None:
        raise SystemExit("jieba (the word segmenter) could not be installed")
    sys.path.insert(0, str(peer))
    import jieba

    jieba.setLogLevel(60)
    return files, jieba
