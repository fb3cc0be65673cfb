"""Shared by the end-to-end tests: register the demo site's chapters as originals,
through the command users run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from crawler.examples.demosite import DemoSite
from dedup.adapters.servers.services import EmbeddedServices

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):  # type: ignore[no-untyped-def]
    """``simcrawl crawl`` (the demo crawl) once for the session, on embedded
    services kept up while the session runs: ``(finished process, the demo's database)``;
    ``process.folder`` is the data folder (the crawl's log is there, and its WARC files
    in ``warc/``)."""
    import os

    from dedup.adapters.servers.services import connect_mongo

    folder = tmp_path_factory.mktemp("demo")
    with EmbeddedServices(folder) as services:
        env = dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)
        proc = subprocess.run([sys.executable, "-m", "crawler.cli", "crawl", "--data-dir", str(folder),
                               "--warc", str(folder / "warc")],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
                              check=False)
        db = connect_mongo(services.mongo_uri)["simcrawl_demo"]
        proc.folder = folder  # type: ignore[attr-defined]
        proc.services = services  # type: ignore[attr-defined]
        yield proc, db


def register_corpus(site: DemoSite, services: EmbeddedServices, tmp: Path, name: str
                    ) -> subprocess.CompletedProcess:
    """``simcrawl register`` the site's registered chapters into database and
    namespace ``name``; returns the finished process."""
    folder = tmp / "corpus"
    folder.mkdir(exist_ok=True)
    for file, text in site.content.expected.registered.items():
        (folder / file).write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "register", str(folder), "--source", "demo-novels",
         "--redis-url", services.redis_url or "", "--mongo-uri", services.mongo_uri or "",
         "--database", name, "--namespace", name],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(name="register_corpus")
def register_corpus_fixture():  # type: ignore[no-untyped-def]
    """The :func:`register_corpus` function."""
    return register_corpus


def outcome(db) -> tuple[set[str], set[tuple[str, str, str]]]:  # type: ignore[no-untyped-def]
    """A crawl's record: stored page URLs and (copy URL, original URL, kind)."""
    return ({p["url"] for p in db.pages.find({"host": {"$ne": "registered"}})},
            {(m["url"], m["original_url"], m["kind"]) for m in db.matches.find({})})


def reference_crawl(site: DemoSite, env: dict[str, str], tmp: Path
                    ) -> tuple[set[str], set[tuple[str, str, str]], set[str]]:
    """Crawl ``site`` once without faults (database and namespace ``reference``) and
    return its :func:`outcome` and the traps it requested (those linked from copies
    too far from their original to be dropped): what a crawl disturbed by faults must
    end with."""
    subprocess.run([sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                    f"start_urls={site.start_urls()[0]}", "-s", "DEDUP_DATABASE=reference",
                    "-s", "DEDUP_NAMESPACE=reference", "-s", "AUTOTHROTTLE_ENABLED=0",
                    "-s", f"LOG_FILE={tmp / 'reference.log'}"], cwd=ROOT, env=env,
                   check=True, timeout=600)
    from dedup.adapters.servers.services import connect_mongo

    traps = {t for t in site.content.expected.traps if t in site.requests}
    return (*outcome(connect_mongo(env["MONGO_URI"])["reference"]), traps)


def _structure(db, site: DemoSite) -> tuple[dict, set[str]]:  # type: ignore[no-untyped-def]
    """The record's own consistency: every unique page stored, every copy group with a
    stored page, every match naming a stored page, no URL both stored and matched, one
    match record per URL. Returns (stored URL -> id, matched URLs)."""
    pages = {d["url"]: d["_id"] for d in db.pages.find({}, {"url": 1})}
    matches = list(db.matches.find({}))
    matched = {m["url"] for m in matches}
    exp = site.content.expected
    missing = [u for u in exp.unique if site.path_url(u) not in pages]
    assert not missing, f"unique pages not stored: {missing}"
    for cluster in exp.clusters:
        urls = [site.path_url(p) for p in cluster]
        assert any(u in pages for u in urls), f"copy group {cluster[0]}: nothing stored"
    ids = set(pages.values())
    ghosts = [m["url"] for m in matches if m["original_id"] not in ids]
    assert not ghosts, f"match records naming a page that is not stored: {ghosts}"
    assert not matched & set(pages)
    assert len(matched) == len(matches)
    return pages, matched


def _check_record(db, site: DemoSite, expected) -> None:  # type: ignore[no-untyped-def]
    """What a user of the store must be able to rely on after any crawl, killed or not:
    the pages and match records of an uninterrupted crawl (``expected``, from
    :func:`reference_crawl`), every unique page stored, every match naming a stored page,
    no URL both stored and matched, one match record per URL, and no trap requested."""
    _structure(db, site)
    exp = site.content.expected
    assert not [t for t in exp.traps if t in site.requests and t not in expected[2]]
    got = outcome(db)
    assert got[0] == expected[0], (f"stored: missing {expected[0] - got[0]}, "
                                   f"extra {got[0] - expected[0]}")
    assert got[1] == expected[1], (f"matches: missing {expected[1] - got[1]}, "
                                   f"extra {got[1] - expected[1]}")


def _trap_linkers(site: DemoSite) -> dict[str, set[str]]:
    """Trap path -> the pages (``host/path``) that link to it."""
    import re

    linkers: dict[str, set[str]] = {}
    for host, pages in site.content.pages.items():
        for path, page in pages.items():
            for href in re.findall(rb'href="([^"]*?/trap/[^"]*)"', page.body):
                target = href.decode()
                if target.startswith("/"):
                    target = f"{host}{target}"
                linkers.setdefault(target, set()).add(f"{host}{path}")
    return linkers


def _check_groups(db, site: DemoSite, expected) -> None:  # type: ignore[no-untyped-def]
    """The record after a crawl whose order was disturbed (a process killed and its
    requests put back): as :func:`_check_record`, but the same stored set only up to which
    member of a copy group came first: every group stored and accounted for, no two
    stored pages within k, and a copy's trap requested only when the copy was admitted
    (the robots.txt rule is the demo test's subject)."""
    pages, matched = _structure(db, site)
    exp = site.content.expected
    for cluster in exp.clusters:
        urls = [site.path_url(p) for p in cluster]
        lost = [u for u in urls if u not in pages and u not in matched]
        assert not lost, f"neither stored nor recorded as copies: {lost}"
    # near duplication is not transitive: two copies within k of their original may be
    # farther apart, and both are rightly admitted when they come first; what must hold
    # is the index's promise, no two stored pages within k of each other
    import numpy as np

    from dedup.all_pairs import find_all
    from dedup.adapters.mongo import from_int64

    fps = [from_int64(d["simhash"]) for d in db.fingerprints.find({"short": False})]
    pairs = find_all(np.array(fps, dtype=np.uint64), 3)
    assert len(pairs) == 0, f"{len(pairs)} pairs of stored pages within k = 3"
    linkers = _trap_linkers(site)
    wrong = [t for t in exp.traps if t in site.requests and t in linkers  # copies' traps
             and not any(site.path_url(p) in pages for p in linkers[t])]
    assert not wrong, f"traps requested from pages that were not admitted: {wrong}"


def _check_exact_groups(db, site: DemoSite) -> None:  # type: ignore[no-untyped-def]
    """The record of a crawl of :func:`crawler.examples.demosite.build_groups` (groups whose
    members are pairwise within k), whatever the order of decisions: exactly one page of
    each group stored, every other member fetched recorded as its copy and naming it, one
    match record per dropped URL and none naming the URL itself, every unique page
    stored, and no trap requested."""
    pages, _ = _structure(db, site)
    originals = {m["url"]: m["original_url"] for m in db.matches.find({})}
    assert all(url != original for url, original in originals.items())
    fetched = set(site.requests)
    for cluster in site.content.expected.clusters:
        urls = [site.path_url(p) for p in cluster]
        stored = [u for u in urls if u in pages]
        assert len(stored) == 1, f"group {cluster[0]}: {len(stored)} pages stored"
        for key, url in zip(cluster, urls):
            if url not in stored and key in fetched:
                assert originals.get(url) == stored[0], f"{key} not recorded against {stored[0]}"
    traps = [t for t in site.content.expected.traps if t in fetched]
    assert not traps, f"traps requested: {traps[:5]}"


@pytest.fixture(name="check_exact_groups")
def check_exact_groups_fixture():  # type: ignore[no-untyped-def]
    """The :func:`_check_exact_groups` function."""
    return _check_exact_groups


@pytest.fixture(name="check_groups")
def check_groups_fixture():  # type: ignore[no-untyped-def]
    """The :func:`_check_groups` function."""
    return _check_groups


@pytest.fixture(name="check_record")
def check_record_fixture():  # type: ignore[no-untyped-def]
    """The :func:`_check_record` function."""
    return _check_record


@pytest.fixture(name="reference_crawl")
def reference_crawl_fixture():  # type: ignore[no-untyped-def]
    """The :func:`reference_crawl` function."""
    return reference_crawl


@pytest.fixture(name="adds_up")
def adds_up_fixture():  # type: ignore[no-untyped-def]
    """:func:`crawler.pipelines.summary_adds_up`: whether a summary adds up."""
    from crawler.pipelines import summary_adds_up

    return summary_adds_up
