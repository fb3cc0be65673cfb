"""Every verb that reads the store chooses its database one way and says which: the one
named, else ``simcrawl``, unless that holds no crawl (registered originals alone are not
one) and the demo's does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dedup.adapters.servers.services import EmbeddedServices, connect_mongo

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def export(uri: str, *extra: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    return subprocess.run([sys.executable, "-m", "crawler.cli", "export", "pages", "--format",
                           "jsonl", "--mongo-uri", uri, *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_every_reading_verb_names_the_database_it_chose(tmp_path: Path) -> None:
    with EmbeddedServices(tmp_path / "data") as services:
        uri = services.mongo_uri or ""
        client = connect_mongo(uri)
        client["simcrawl_demo"].pages.insert_one({"url": "http://demo.test/a", "host": "demo.test",
                                                  "text": "a crawled page"})
        # `simcrawl register ... --source` wrote into the default database: originals only
        client["simcrawl"].pages.insert_one({"url": "file:///novels/1.txt", "host": "registered",
                                             "source": "novels", "text": "an original"})
        done = export(uri)
        assert done.returncode == 0, done.stderr
        assert "http://demo.test/a" in done.stdout and "novels" not in done.stdout
        assert "simcrawl: database 'simcrawl_demo' ('simcrawl' holds no crawl, the demo's " \
            "does; --database to choose)" in done.stderr
        named = export(uri, "--database", "simcrawl")
        assert "file:///novels/1.txt" in named.stdout
        assert "simcrawl: database 'simcrawl' (--database)" in named.stderr
        # once the default database holds a crawl, it is the one read
        client["simcrawl"].pages.insert_one({"url": "http://site.test/b", "host": "site.test",
                                             "text": "crawled"})
        done = export(uri)
        assert "http://site.test/b" in done.stdout and "http://demo.test/a" not in done.stdout
        assert "simcrawl: database 'simcrawl' (the default)" in done.stderr
