"""The docs are true to the repository: every link resolves inside it, nothing cites a
file a clone does not have, and a benchmark whose data is missing says where it lives."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_every_relative_link_resolves() -> None:
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", doc.read_text("utf-8")):
            if "://" in target:
                continue
            assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"


def test_nothing_cites_files_outside_the_repository() -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    for name in tracked:
        if not name.endswith((".py", ".pyx", ".md", ".toml", ".cfg", ".yml")) \
                or name == "tests/unit/test_docs.py":
            continue
        text = (ROOT / name).read_text("utf-8")
        assert "DESIGN.md" not in text, name
        if name.startswith(("dedup/", "crawler/")):  # the docs say the data is outside;
            assert "shared/data" not in text, name  # benchmarks read it from there


def test_the_readme_is_a_short_guide_that_links_the_rest() -> None:
    """A guide: what simcrawl does and gives, the two commands, then the common tasks, each
    a few lines; the settings, stats, exit statuses and figures are reference pages it
    links (it held a 30-row settings table and 40 lines of stats names)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) < 260
    for page in ("settings", "commands", "operations", "queries", "benchmarks",
                 "fingerprints", "chinese", "index-and-store", "design", "scaling", "batch"):
        assert f"docs/{page}.md" in readme
    assert "docs/operations.md#the-crawls-stats" in readme
    assert "docs/commands.md#exit-statuses" in readme
    sections = re.findall(r"^## (.+)$", readme, re.MULTILINE)
    assert sections[0] == "The two commands" and "![" in readme.split("## ", 1)[0]
    for task in ("Crawl your sites", "Add it to your Scrapy project", "Scale out",
                 "Query the record", "See what a crawl found",
                 "Batch: all pairs, clusters, what the crawl let through"):
        assert task in sections
    rows = [len(table.splitlines()) for table in re.findall(r"(?:^\|.*\n)+", readme, re.MULTILINE)]
    assert max(rows) <= 12, f"a table of {max(rows)} rows belongs in a reference page"
    for section in re.split(r"^## ", readme, flags=re.MULTILINE)[1:]:
        prose = [line for line in section.splitlines() if line and not line.startswith(("|", "-"))]
        assert len(prose) <= 45, f"the section {section.splitlines()[0]!r} is not a few lines"


def test_every_setting_the_crawl_reads_is_documented() -> None:
    """docs/settings.md is the one reference of settings since the README's table left:
    every ``DEDUP_*`` / ``SIMCRAWL_*`` name the code reads is in it."""
    from dedup.config import _SETTING

    read = set(_SETTING.values())
    pattern = re.compile(r"(?:settings\.get\w*\(|environ\.get\(|getenv\()\s*[\"']"
                         r"((?:DEDUP|SIMCRAWL)_[A-Z_]+)")
    for folder in ("crawler", "dedup", "cli", "console"):
        for source in (ROOT / folder).rglob("*.py"):
            read.update(pattern.findall(source.read_text("utf-8")))
    documented = (ROOT / "docs" / "settings.md").read_text("utf-8")
    missing = sorted(name for name in read if f"`{name}`" not in documented)
    assert len(read) > 40 and not missing, f"docs/settings.md lacks {missing}"
    # the one list of names (dedup/setting_names.py), which the warning about unknown
    # names reads: every name read is in it, and every name in it is documented
    from dedup.config import known

    listed = known()
    lacking = sorted(n for n in read - set(listed) if n.startswith(("DEDUP_", "SIMCRAWL_")))
    assert not lacking, f"dedup/setting_names.py lacks {lacking}"
    assert not [n for n in listed if f"`{n}`" not in documented]


def test_a_benchmark_without_its_data_says_where_it_comes_from(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "quality_neardup.py"),
                           "--data", str(tmp_path / "nope")], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode != 0
    assert "development data" in done.stderr and "kept outside the repository" in done.stderr
    assert "--data PATH" in done.stderr


def test_the_docs_give_the_crawls_own_k() -> None:
    """The crawl's k is written once, in dedup/config.py; the docs that name it must say
    that one (docs/commands.md said 6 after the default became 3)."""
    from dedup.config import DEFAULT_MAX_DISTANCE

    commands = (ROOT / "docs" / "commands.md").read_text("utf-8")
    said = re.findall(r"The crawl's k \((\d+)", commands)
    assert said == [str(DEFAULT_MAX_DISTANCE)]
    assert re.findall(r"`scan \[PATH\.\.\.\] \[-k (\d+)\]", commands) == [str(DEFAULT_MAX_DISTANCE)]


def test_every_table_row_is_inside_its_table() -> None:
    """A Markdown table ends at the first line that is not a row: a row after a paragraph
    shows as raw text (docs/batch.md's ``--engine spark`` row did)."""
    for doc in DOCS:
        lines = doc.read_text("utf-8").splitlines()
        fenced = False
        for n, line in enumerate(lines):
            if line.startswith("```"):
                fenced = not fenced
            if fenced or not line.startswith("|"):
                continue
            before = lines[n - 1] if n else ""
            after = lines[n + 1] if n + 1 < len(lines) else ""
            header = re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", after.strip())
            assert before.startswith("|") or header, \
                f"{doc.name}:{n + 1}: a table row outside a table: {line[:60]}"


def test_the_readme_names_no_issue_numbers() -> None:
    """A user has no access to the project's issue tracker: "(22)" and "issue 41" say
    nothing to them (the README said "Open: ... (22)")."""
    text = (ROOT / "README.md").read_text("utf-8")
    found = re.findall(r"\(\d{1,3}\)(?=[;.,])|\bissues? \d+\b", text)
    assert not found, f"the README names issue numbers: {found[:5]}"


def test_the_settings_tables_defaults_are_the_codes() -> None:
    """Every default docs/settings.md gives a ``DEDUP_*`` setting as a literal is
    :class:`dedup.config.DedupConfig`'s (the table and the code drifted apart before)."""
    from dataclasses import fields

    from dedup.config import _ATTR, DedupConfig

    defaults = {f.name: f.default for f in fields(DedupConfig)}
    checked = 0
    for row in (ROOT / "docs" / "settings.md").read_text("utf-8").splitlines():
        if not row.startswith("| `DEDUP_"):
            continue
        cells = row.split(" | ")
        names = re.findall(r"`(DEDUP_[A-Z_]+)`", cells[0])
        values = [v.strip() for v in cells[1].split(" / ")]
        if len(names) != len(values):
            continue
        for name, value in zip(names, values):
            literal = re.fullmatch(r"`([^`]+)`(?: \(.*\))?", value)
            if name not in _ATTR or not literal:
                continue
            want = defaults[_ATTR[name]]
            got = literal.group(1)
            if isinstance(want, bool):
                assert got == str(want), (name, got, want)
            elif isinstance(want, (int, float)):
                assert float(got) == want, (name, got, want)
            else:
                assert got == want, (name, got, want)
            checked += 1
    assert checked >= 30


def test_the_crawl_quality_bench_decides_with_the_crawls_own_settings() -> None:
    """bench/quality_crawl.py measures "the crawl's own decision": its options default to
    the crawl's settings. Its k stayed 6 after the crawl's became 3, so every development
    figure of the crawl's decision was taken at a k the crawl does not use."""
    from dedup.config import DedupConfig

    crawl = DedupConfig()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "quality_crawl.py"), "--help"],
                          capture_output=True, text=True, timeout=120, check=True)
    said = " ".join(done.stdout.split())
    for option, setting in (("index's k", crawl.max_distance),
                            ("threshold (-1: off;", crawl.verify_containment),
                            ("template text (0: off;", crawl.template_pages),
                            ("text check", crawl.trust_distance),
                            ("distance (-1: off;", crawl.verify_distance)):
        assert re.search(re.escape(option) + r".{0,40}?default " + re.escape(str(setting))
                         + r", the crawl's", said), (option, setting)
