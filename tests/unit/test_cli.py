"""The command line, run as users run it."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args, stdin=""):
    return subprocess.run([sys.executable, "-m", "dedup", *args], input=stdin,
                          capture_output=True, text=True, cwd=ROOT, timeout=120, check=False)


def test_plan_prints_the_trade_off():
    out = run("plan", "--docs", "100000000", "--k", "3")
    assert out.returncode == 0
    assert "candidates/query" in out.stdout and "4x4 blocks (two-level)" in out.stdout
    assert any(line.startswith("*") for line in out.stdout.splitlines())


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
    assert "exact duplicate" in out.stdout and "harbour-mirror.html" in out.stdout
    assert "not-found.html  (short: checksum only)" in out.stdout
    near = [line for line in out.stdout.splitlines() if line.startswith("near duplicate")]
    assert any("harbour-syndicated.txt" in line for line in near)
    assert any("spring-town" in line and "gbk" in line for line in near)  # GBK copy, 2 edits
    assert not any("library-hours" in line for line in near)


def test_fingerprint_json():
    out = run("fingerprint", "examples/spring-town.zh.txt")  # a relative path
    record = json.loads(out.stdout)
    assert len(record["simhash"]) == 16 and record["tokens"] > 100


def test_no_command_prints_help():
    out = run()
    assert out.returncode == 2 and "scan" in out.stdout
