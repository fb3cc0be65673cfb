"""Shared by the end-to-end tests: register the demo site's chapters as originals,
through the command users run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from crawler.demosite import DemoSite
from dedup.services import EmbeddedServices

ROOT = Path(__file__).resolve().parents[2]


def register_corpus(site: DemoSite, services: EmbeddedServices, tmp: Path, name: str
                    ) -> subprocess.CompletedProcess:
    """``python -m dedup register`` the site's registered chapters into database and
    namespace ``name``; returns the finished process."""
    folder = tmp / "corpus"
    folder.mkdir(exist_ok=True)
    for file, text in site.content.expected.registered.items():
        (folder / file).write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "dedup", "register", str(folder), "--source", "demo-novels",
         "--redis-url", services.redis_url or "", "--mongo-uri", services.mongo_uri or "",
         "--database", name, "--namespace", name],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(name="register_corpus")
def register_corpus_fixture():  # type: ignore[no-untyped-def]
    """The :func:`register_corpus` function."""
    return register_corpus
