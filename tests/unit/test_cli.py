"""The command line, run as users run it."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "crawler.cli", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)


def test_plan_prints_the_trade_off():
    out = run("plan", "--docs", "100000000", "--k", "3")
    assert out.returncode == 0
    assert "candidates/query" in out.stdout and "4x4 blocks (two-level)" in out.stdout
    assert any(line.startswith("*") for line in out.stdout.splitlines())


def test_plan_says_where_the_embedded_mongodb_stops_serving():
    """The embedded SecantusDB holds a crawl's writes and builds a whole read in memory:
    `plan` gives the pages it serves on this machine (or under SIMCRAWL_EMBEDDED_MEMORY)."""
    import json
    import os

    from dedup.adapters.servers.embedded_limits import READ_BYTES_PER_DOC, WRITE_BYTES_PER_PAGE

    env = {**os.environ, "SIMCRAWL_EMBEDDED_MEMORY": "1GiB"}
    out = subprocess.run([sys.executable, "-m", "crawler.cli", "plan"], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=120, check=False)
    serves = 2**30 // (WRITE_BYTES_PER_PAGE + READ_BYTES_PER_DOC["pages"])
    said = " ".join(out.stdout.split())
    assert f"1.0 GiB available serve about {serves:,} pages" in said
    assert "embedded MongoDB (SecantusDB" in said and "a real MongoDB (MONGO_URI" in said
    out = subprocess.run([sys.executable, "-m", "crawler.cli", "plan", "--docs", "1000000", "--json"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
                         check=False)
    assert json.loads(out.stdout)["embedded_mongodb_serves_pages"] == serves


def test_plan_says_what_the_crawls_index_costs_at_scale():
    out = run("plan", "--docs", "1000000000", "--json")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    # issue 22's bounds: at most 450 GB and 1,000 candidates a probe at a billion pages
    assert got["memory_bytes"] <= 450 * 10**9 and got["candidates_per_probe"] <= 1000
    assert got["memory_bytes"] == got["bytes_per_page"] * 1_000_000_000
    assert got["sketches"] == "until-stored" and got["anchor_reads_per_probe"] == 48
    small = json.loads(run("plan", "--docs", "10000000", "--json").stdout)
    assert small["sketches"] == "redis" and small["tables"] == 10
    table = run("plan")  # the crawl's index from 1M to 8B pages
    assert table.returncode == 0
    assert "8,000,000,000" in table.stdout and "1,000,000" in table.stdout


def test_find_all_reads_hex_and_decimal():
    out = run("find-all", stdin="0123456789abcdef\n# comment\n\n81985529216486894\nffffffffffffffff\n")
    assert out.returncode == 0, out.stderr
    pairs = [json.loads(line) for line in out.stdout.splitlines()]
    assert pairs == [{"a": "0123456789abcdef", "b": "0123456789abcdee", "distance": 1,
                      "lines": [1, 4]}]


def test_find_all_clusters():
    out = run("find-all", "--clusters", stdin="0000000000000000\n0000000000000007\n000000000000003f\n")
    assert out.returncode == 0
    assert json.loads(out.stdout)["lines"] == [1, 2, 3]


def test_find_all_names_the_bad_line():
    out = run("find-all", stdin="0123456789abcdef\nnot-a-number\n")
    assert out.returncode == 2
    assert "<stdin>:2" in out.stderr and "Traceback" not in out.stderr
    out = run("find-all", stdin="18446744073709551616\n")
    assert out.returncode == 2 and "<stdin>:1" in out.stderr


def test_find_all_missing_file():
    out = run("find-all", "/nonexistent/fps.txt")
    assert out.returncode == 2 and "nonexistent" in out.stderr and "Traceback" not in out.stderr


def test_scan_examples_reports_the_mirror():
    out = run("scan")
    assert out.returncode == 0, out.stderr
    # the samples' originals come first: the mirror is the copy, not the original
    exact = [line for line in out.stdout.splitlines() if line.startswith("exact duplicate")]
    assert len(exact) == 1 and exact[0].split("  =  ")[0].endswith("harbour-mirror.html")
    assert exact[0].endswith("harbour-original.html")
    assert "in this order: the samples' originals first" in out.stdout
    assert "not-found.html  (short: checksum only)" in out.stdout
    near = [line for line in out.stdout.splitlines() if line.startswith("near duplicate")]
    assert any("harbour-syndicated.txt" in line for line in near)
    assert any("spring-town" in line and "gbk" in line for line in near)  # GBK copy, 2 edits
    assert not any("library-hours" in line for line in near)


def test_scan_says_its_order_and_decides_by_modification_time_when_asked(tmp_path):
    import os

    text = " ".join(f"word{i} of the original story about the harbour" for i in range(60))
    (tmp_path / "a-copy.txt").write_text(text)
    (tmp_path / "b-original.txt").write_text(text)
    os.utime(tmp_path / "b-original.txt", (1_000_000_000, 1_000_000_000))  # older
    by_name = run("scan", str(tmp_path))
    assert "in this order: as given, a folder's files by name" in by_name.stdout
    assert "b-original.txt  =  " in by_name.stdout  # the first by name is the original
    by_time = run("scan", "--order", "mtime", str(tmp_path))
    assert by_time.returncode == 0, by_time.stderr
    assert "in this order: by modification time, oldest first" in by_time.stdout
    assert "a-copy.txt  =  " in by_time.stdout and str(tmp_path / "b-original.txt") in by_time.stdout


def test_fingerprint_json():
    out = run("fingerprint", "crawler/examples/spring-town.zh.txt")  # a relative path
    record = json.loads(out.stdout)
    assert len(record["simhash"]) == 16 and record["tokens"] > 100


def test_help_lists_every_verb_and_the_exit_statuses():
    from crawler.cli.main import VERBS

    out = run("help")
    assert out.returncode == 0
    for verb in VERBS:
        assert f"  {verb} " in out.stdout
    assert "  2  bad usage" in out.stdout and "  3  Redis or MongoDB cannot be reached" in out.stdout


def test_version_is_the_projects_own():
    import re
    from pathlib import Path

    project = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8")
    expected = re.search(r'^version = "([^"]+)"', project, re.MULTILINE).group(1)  # type: ignore[union-attr]
    for flag in ("--version", "-V"):
        out = run(flag)
        assert (out.returncode, out.stdout) == (0, f"simcrawl {expected}\n")


def test_every_verbs_help_lists_the_exit_statuses():
    from crawler.cli.main import VERBS

    for verb in VERBS:
        out = run(verb, "--help")
        assert out.returncode == 0, verb
        text = " ".join(out.stdout.split())
        assert "exit status" in text.lower() and "3 Redis or MongoDB" in text, verb


def test_the_demos_hints_name_simcrawl_as_the_user_runs_it(monkeypatch):
    import shutil

    from crawler import run as crawl_run

    monkeypatch.setattr(shutil, "which", lambda name: None)  # no mongosh, no simcrawl
    monkeypatch.setenv("SIMCRAWL_COMMAND", "./simcrawl")  # what ./simcrawl exports
    hint = crawl_run.query_hint("simcrawl_demo")
    assert "  ./simcrawl export matches" in hint and "  ./simcrawl web" in hint
    monkeypatch.delenv("SIMCRAWL_COMMAND")
    hint = crawl_run.query_hint("simcrawl_demo")
    assert f"  {sys.executable} -m crawler.cli export matches" in hint  # nothing on the PATH
    assert "\n  simcrawl " not in hint
    # a crawl into another database, on servers with their data elsewhere: the commands
    # read the same (they left both out)
    options = crawl_run.hint_options("mysites", "/data/my crawl")
    hint = crawl_run.query_hint("mysites", options)
    assert "-m crawler.cli export matches --database mysites --data-dir '/data/my crawl' " in hint
    assert "-m crawler.cli web --database mysites --data-dir '/data/my crawl'" in hint
    # `services` takes no --database: its hint is a command that runs (it exited 2)
    assert "-m crawler.cli services --data-dir '/data/my crawl' prints" in hint
    assert "services --database" not in hint
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/mongosh" if name == "mongosh"
                        else None)
    hint = crawl_run.query_hint("mysites", crawl_run.hint_options("my sites", None))
    assert "services prints the MongoDB URI" in hint, hint
    assert crawl_run.hint_options("simcrawl") == ""


def test_an_unknown_verb_is_named_with_a_hint():
    out = run("scna", "examples")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("simcrawl: unknown command 'scna'; did you mean 'scan'? "
                          "('simcrawl help' lists the commands)\n")
    out = run("nosuchverb")
    assert out.returncode == 2 and "unknown command 'nosuchverb'" in out.stderr


def test_debug_shows_the_traceback_of_an_error():
    assert "Traceback" not in run("find-all", "/nonexistent").stderr
    out = run("--debug", "remove", "0" * 24, "--redis-url", "foo://x", "--mongo-uri",
              "mongodb://x")
    assert out.returncode == 2 and "Traceback" in out.stderr
    assert out.stderr.rstrip().endswith("is not a Redis URL: Redis URL must specify one of "
                                        "the following schemes (redis://, rediss://, unix://)")


def test_a_subcommands_errors_show_its_own_usage():
    for args, message in ((["scan", "-k", "-1"], "-k must be between 0 and 31, got -1"),
                          (["scan", "--bogus"], "unrecognized arguments: --bogus")):
        out = run(*args)
        assert out.returncode == 2
        assert "usage: simcrawl scan" in out.stderr and message in out.stderr
        assert "{scan,fingerprint" not in out.stderr  # not the top-level usage


def test_number_options_say_what_they_do():
    text = run("scan", "--help").stdout
    assert "--drop-numbers" in text and "default: keep them" in " ".join(text.split())
    assert "(dropped by default)" not in text


def test_the_main_command_refuses_bad_arguments_in_one_line(tmp_path):
    main = [sys.executable, "-m", "crawler.cli", "crawl"]
    listed = tmp_path / "urls.txt"
    listed.write_text("# start here\nhttps://example.org/\n  ftp://example.org/x\n")
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing yet\n\n")
    for args, message in ((["--depth", "-3", "https://example.org/"], "must be at least 1"),
                          (["--data-dir", "/dev/null/x", "https://example.org/"],
                           "cannot use /dev/null/x as a data folder"),
                          (["-s", "DOWNLOAD_DELAY", "https://example.org/"],
                           "-s takes NAME=VALUE"),
                          (["-s", "download_delay=1", "https://example.org/"],
                           "-s takes NAME=VALUE"),
                          (["--database", "mine"], "--database is for a crawl of URLs"),
                          (["-s", "DEDUP_DATABASE=mine"], "is for a crawl of URLs"),
                          (["-i", str(tmp_path / "none.txt")],
                           f"cannot read {tmp_path / 'none.txt'}: No such file"),
                          (["-i", str(listed)], f"{listed}:3: ftp://example.org/x (not an "
                           "http or https URL)"),
                          (["-i", str(empty)], f"{empty} lists no start URL"),
                          (["https://example.org/", "--exclude", "a(b"],
                           "--exclude: 'a(b' is not a regular expression"),
                          (["--sitemaps"], "are for a crawl of URLs")):
        out = subprocess.run(main + args, capture_output=True, text=True, cwd=ROOT, timeout=60,
                             check=False)
        assert out.returncode == 2 and message in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


FRENCH = ("Le conseil municipal a approuvé mardi le projet de rénovation du port. Selon le "
          "maire, les travaux commenceront en février et dureront environ dix-huit mois. Les "
          "pêcheurs, inquiets, ont demandé une réunion publique avant toute décision.")


def test_scan_skips_binary_big_and_data_files_and_decodes_latin1(tmp_path):
    (tmp_path / "latin1.txt").write_bytes(FRENCH.encode("latin-1"))
    (tmp_path / "copy.txt").write_text(FRENCH, encoding="utf-8")
    (tmp_path / "program.bin").write_bytes(b"\x7fELF" + bytes(range(256)) * 40)
    (tmp_path / "report.json").write_text('{"pages": 3}')
    with open(tmp_path / "huge.txt", "wb") as fh:  # sparse: 256 MB, never read
        fh.truncate(256 * 1024 * 1024)
        fh.seek(0)
        fh.write(b"text " * 3000)
    out = subprocess.run([sys.executable, "-m", "crawler.cli", "scan", str(tmp_path)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert "2 documents fingerprinted" in out.stdout and "3 files skipped" in out.stdout
    assert f"skipped (binary content): {tmp_path / 'program.bin'}" in out.stdout
    assert "skipped (not a text or HTML document (.json file))" in out.stdout
    assert "skipped (too big (268 MB; the limit is 17 MB))" in out.stdout
    assert "text/damaged" not in out.stdout
    assert "exact duplicate" in out.stdout  # the Latin-1 file decoded to the same text
    lines = [json.loads(line) for line in run("fingerprint", str(tmp_path)).stdout.splitlines()]
    assert {line["file"].rsplit("/", 1)[1]: line.get("skipped", line.get("text_from"))
            for line in lines}["latin1.txt"].startswith("text/")
    assert sum(1 for line in lines if "skipped" in line) == 3


def test_scan_decides_with_the_crawls_k_and_text_check(tmp_path):
    """A copy with comments added, 4-6 bits from its original (beyond k = 3, within the
    crawl's 6), is reported as the crawl would drop it, with its containment."""
    sys.path.insert(0, str(ROOT / "tests"))
    from decision_cases import article, words

    from dedup import fingerprint, hamming

    seed = next(s for s in range(100) if 4 <= hamming(
        fingerprint(article(s, 300)).simhash,
        fingerprint(article(s, 300) + "\n" + " ".join(words(45, 1000 + s))).simhash) <= 6)
    original = article(seed, 300)
    (tmp_path / "a-original.txt").write_text(original)
    (tmp_path / "b-with-comments.txt").write_text(
        original + "\n" + " ".join(words(45, 1000 + seed)))
    (tmp_path / "c-other.txt").write_text(article(seed + 500, 300))
    out = run("scan", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "k = 3, the crawl's rules" in out.stdout  # and 4-6 bits away: found by anchors
    near = [line for line in out.stdout.splitlines() if line.startswith("near duplicate")]
    assert len(near) == 1 and "b-with-comments.txt  ~  " in near[0]
    # the copy's own text in the original's: all but the 45 words of comments it adds
    assert 0.8 <= float(near[0].rstrip().rsplit("containment ", 1)[1].rstrip(")")) < 0.9
    assert "c-other" not in out.stdout.split("near duplicate", 1)[1]


def test_the_docs_give_the_exit_statuses_the_commands_use():
    import re

    from dedup.errors import EXIT_STATUSES

    reference = (ROOT / "docs" / "commands.md").read_text("utf-8")
    table = reference.split("## Exit statuses", 1)[1].split("\n\n", 3)[2]
    documented = [int(code) for code in re.findall(r"^\|\s*(\d+)\s*\|", table, re.MULTILINE)]
    assert documented == [code for code, _ in EXIT_STATUSES]


def test_find_all_engine_options_are_checked():
    out = run("find-all", "--master", "spark://h:7077", stdin="0000000000000001\n")
    assert out.returncode == 2 and "options of --engine spark" in out.stderr
    out = run("find-all", "--engine", "spark", "--spark-conf", "no-equals-sign")
    assert out.returncode == 2 and "KEY=VALUE" in out.stderr
    out = run("find-all", "some-file", "--store")
    assert out.returncode == 2 and "not both" in out.stderr
    out = run("clusters", "--stage", "/tmp/x")
    assert out.returncode == 2 and "options of --engine spark" in out.stderr


def test_remove_without_anything_to_remove_is_a_usage_error():
    """It exited 0 and said nothing."""
    out = run("remove")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.rstrip().endswith(
        "error: name what to remove: page ids, or --fingerprint HEX")


def test_a_bad_option_is_named_alone():
    """One error covered three options (--containment, --target, --sample)."""
    out = run("calibrate", "--sample", "-3")
    assert out.returncode == 2
    assert out.stderr.rstrip().endswith("error: --sample must be at least 1, got -3")


def test_the_summary_puts_every_page_decided_in_one_line_and_they_add_up(capsys) -> None:  # type: ignore[no-untyped-def]
    """Issue 72: with matches turned round the summary said admitted 10, exact 1, pages
    stored 6, match records 5, the 4 turns nowhere; excerpt records had no line."""
    from crawler.run import print_summary

    print_summary({"dedup/requests": 11, "dedup/unique": 10, "dedup/exact_duplicate": 1,
                   "dedup/turned/canonical": 1, "dedup/turned/published": 3,
                   "dedup/excerpt": 2, "dedup/stored/pages": 6, "dedup/stored/matches": 5,
                   "seconds": 1.0})
    rows = dict(ln.strip().split("  ", 1) for ln in capsys.readouterr().out.splitlines())
    rows = {name.strip(): value.strip() for name, value in rows.items()}
    assert rows["matches turned round"] == (
        "4 (admitted, then copies of a later page that said it came first: 1 by the "
        "canonical link, 3 by the publication date)")
    assert rows["of them quoting an original (excerpt records)"] == "2"
    decided = ("admitted (unique)", "near duplicates dropped", "exact duplicates dropped",
               "copies of registered originals (pinyin)", "matches turned round", "revisits")
    assert [int(rows[name].split()[0]) for name in decided] == [6, 0, 1, 0, 4, 0]
    assert rows["requests (all accounted for)"].startswith("11 = 11 pages decided")
    assert rows["pages stored / match records stored"] == "6 / 5"  # 6 admitted; 1 + 4


def test_no_start_url_fetched_says_what_failed_in_words():
    """A DNS failure or a refused port is not robots.txt's fault: the line says what
    failed (it said the hosts' robots.txt could not be had); a robots.txt that answered
    500 is."""
    from crawler.run import unreachable

    robots = {"dedup/requests": 1, "dedup/skipped/robots_txt": 1,
              "dedup/robots/unreachable": 1}
    said = unreachable({**robots, "dedup/robots/error/no_such_host": 1})
    assert said == "none of the start URLs could be fetched: no such host (the log names the hosts)"
    said = unreachable({**robots, "dedup/robots/error/http_503": 1,
                        "downloader/response_count": 1})
    assert said is not None and "robots.txt could not be had" in said and "http_503" in said
    said = unreachable({"dedup/requests": 1, "dedup/skipped/connection_refused": 1})
    assert said == "none of the start URLs could be fetched: connection refused"
    assert unreachable({"dedup/requests": 3, "dedup/unique": 1, "dedup/skipped/http_404": 2,
                        "downloader/response_count": 3}) is None


def test_a_failed_download_is_skipped_under_a_snake_case_reason():
    """A skip's reason was an exception's class name (DownloadTimeoutError) where every
    other is snake_case (docs/operations.md lists them)."""
    from twisted.internet.error import DNSLookupError

    from crawler.skips import error_reason

    assert error_reason(DNSLookupError()) == "no_such_host"
    assert error_reason(TimeoutError()) == "timed_out"

    class DownloadFailedError(Exception):
        pass

    assert error_reason(DownloadFailedError()) == "download_failed_error"


def test_calibrate_takes_the_crawls_k_range_and_judges_as_the_crawl():
    """``simcrawl calibrate -k`` is the crawl's k: the same range as every verb's (it took
    any number), and its judging options default to the crawl's settings."""
    from dedup.config import DedupConfig

    out = run("calibrate", "-k", "40")
    assert out.returncode == 2 and "-k must be between 0 and 31, got 40" in out.stderr
    text = " ".join(run("calibrate", "--help").stdout.split())
    assert f"(default the crawl's, {DedupConfig().verify_distance})" in text
    assert f"(default the crawl's, {DedupConfig().verify_containment})" in text
