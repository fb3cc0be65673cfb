"""One k: the console's commands mark the k the crawl's index was built with (its layout,
saved in MongoDB), not a default of their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dedup.index import IndexLayout
from dedup.page import Page
from dedup.adapters.mongo import index_k
from dedup.store.records import page_record

pytestmark = pytest.mark.integration


def test_report_web_and_calibrate_use_the_stored_layouts_k(pages, tmp_path: Path) -> None:
    from crawler.cli.calibrate import main as calibrate
    from crawler.console.report_file import write_report
    from crawler.console.app import create_app
    from dedup.adapters.mongo.reads import MongoReads

    db = pages.db
    pages.save_pages([page_record(Page("http://a.example/1", "a.example", "0" * 32, 1,
                                         False, text="a page"))])
    assert index_k(db) == 3  # nothing saved: the crawl's default
    pages.save_layout("simcrawl", IndexLayout.plan(1000, 4).describe())
    pages.save_layout("other", IndexLayout.plan(1000, 2).describe())
    assert (index_k(db), index_k(db, "other")) == (4, 2)
    write_report(MongoReads(db), tmp_path / "report")
    assert json.loads((tmp_path / "report" / "report.json").read_text())["k"] == 4
    app = create_app(MongoReads(db), figures_folder=tmp_path / "figures", refresh=3600)
    assert app.extensions["simcrawl"].figures.k == 4
    assert create_app(MongoReads(db), namespace="other", figures_folder=tmp_path / "f2",
                      refresh=3600).extensions["simcrawl"].figures.k == 2
    uri = f"mongodb://{db.client.address[0]}:{db.client.address[1]}/"
    assert calibrate(["--mongo-uri", uri, "--database", db.name, "-o",
                      str(tmp_path / "cal")]) == 0
    assert json.loads((tmp_path / "cal" / "calibrate.json").read_text())["k"] == 4


@pytest.mark.parametrize("verb", ["report", "export", "calibrate"])
def test_a_database_without_a_crawl_is_named_not_reported_empty(services, tmp_path: Path,
                                                                verb: str) -> None:
    import subprocess
    import sys

    args = {"report": ["-o", str(tmp_path / "out")], "export": ["pages"],
            "calibrate": []}[verb]
    done = subprocess.run([sys.executable, "-m", "crawler.cli", verb, *args, "--mongo-uri",
                           services.mongo_uri, "--database", "nosuchdb"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [
        "simcrawl: database 'nosuchdb' (--database)",
        ("error: the database 'nosuchdb' holds no crawl (no pages or match records): crawl "
         "first, or name the crawl's database with --database")]
    assert done.stdout == "" and not (tmp_path / "out").exists()


def test_a_verb_run_from_another_folder_names_the_folder_it_read(tmp_path: Path) -> None:
    """The embedded servers' folder is ./simcrawl-data: a verb run from another folder read
    a new, empty one and said only that the database holds no crawl."""
    import os
    import subprocess
    import sys

    ROOT = Path(__file__).resolve().parents[2]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("MONGO_URI", "SIMCRAWL_DATA")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "export", "matches"],
                          cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert said.startswith("error: the database 'simcrawl' holds no crawl")
    assert (f"read in the embedded servers' data folder {elsewhere / 'simcrawl-data'}, made "
            "now: none was there (run from the folder the crawl ran in, or give --data-dir "
            "or $SIMCRAWL_DATA)") in said
