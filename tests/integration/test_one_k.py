"""One k: the console's commands mark the k the crawl's index was built with (its layout,
saved in MongoDB), not a default of their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dedup.index import IndexLayout
from dedup.store import index_k

pytestmark = pytest.mark.integration


def test_report_web_and_calibrate_use_the_stored_layouts_k(pages, tmp_path: Path) -> None:
    from cli.calibrate import main as calibrate
    from console.report import write_report
    from console.web import create_app

    db = pages.db
    assert index_k(db) == 6  # nothing saved: the crawl's default
    pages.save_layout("simcrawl", IndexLayout.plan(1000, 4).describe())
    pages.save_layout("other", IndexLayout.plan(1000, 2).describe())
    assert (index_k(db), index_k(db, "other")) == (4, 2)
    write_report(db, tmp_path / "report")
    assert json.loads((tmp_path / "report" / "report.json").read_text())["k"] == 4
    app = create_app(db, figures_folder=tmp_path / "figures", refresh=3600)
    assert app.extensions["simcrawl_figures"].k == 4
    assert create_app(db, namespace="other", figures_folder=tmp_path / "f2",
                      refresh=3600).extensions["simcrawl_figures"].k == 2
    uri = f"mongodb://{db.client.address[0]}:{db.client.address[1]}/"
    assert calibrate(["--mongo-uri", uri, "--database", db.name, "-o",
                      str(tmp_path / "cal")]) == 0
    assert json.loads((tmp_path / "cal" / "calibrate.json").read_text())["k"] == 4
