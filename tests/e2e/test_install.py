"""An installed simcrawl crawls from any folder: an sdist built from the source tree, a
wheel built from the sdist, installed (not editable) into a fresh virtual environment,
run from an empty folder; and where no C compiler exists, the same package with its
pure-Python kernels."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from crawler.examples.demosite import build

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def sdist(where: Path) -> Path:
    """The source distribution of the source tree, as ``python -m build --sdist`` makes
    it."""
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "-o",
                    str(where), str(ROOT)], check=True, timeout=600, capture_output=True,
                   cwd=where)
    return next(where.glob("simcrawl-*.tar.gz"))


def wheel_from(source: Path, where: Path, **env: str) -> tuple[Path, str]:
    """A wheel built from the sdist ``source`` (``python -m build --wheel``), and the
    build's output."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "-o",
                           str(where), str(source)], timeout=600, capture_output=True,
                          text=True, cwd=where, env=dict(os.environ, **env), check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return next(where.glob("simcrawl-*.whl")), done.stdout + done.stderr


def fresh_venv(where: Path, wheel: Path) -> Path:
    """A fresh venv holding ``wheel``; its dependencies come from the test environment (no
    network needed), the package itself only from the wheel."""
    venv.EnvBuilder(with_pip=False).create(where)
    python = where / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", ("import sysconfig; print(sysconfig."
                                "get_paths()['purelib'])")], capture_output=True, text=True,
                               check=True).stdout.strip())
    # the dependencies, after the venv's own site-packages (the editable simcrawl of the
    # test environment is not seen: .pth files of an added folder are not read)
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                    "--no-deps", str(wheel)], check=True, timeout=300, capture_output=True)
    return where


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sdist, which must hold everything a build needs (the kernels' sources too)."""
    return sdist(tmp_path_factory.mktemp("sdist"))


@pytest.fixture(scope="module")
def installed(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the wheel built from the sdist, with the compiled kernels."""
    tmp = tmp_path_factory.mktemp("install")
    wheel, _ = wheel_from(source, tmp / "wheels", SIMCRAWL_REQUIRE_KERNELS="1")
    return fresh_venv(tmp / "venv", wheel)


def test_without_a_compiler_the_package_installs_with_the_pure_python_kernels(
        source: Path, installed: Path, tmp_path: Path) -> None:
    """No C compiler (``CC=false``): the build says so and the wheel still installs; its
    twins give the compiled kernels' fingerprints."""
    wheel, output = wheel_from(source, tmp_path / "wheels", CC="false")
    assert "the pure-Python twin runs instead" in output
    env_dir = fresh_venv(tmp_path / "venv", wheel)
    code = ("import warnings; warnings.simplefilter('ignore'); import dedup, dedup.pinyin as p; "
            "import dedup.maintext as m; from dedup.simhash import simhash; "
            "print(dedup.KERNEL, p.KERNEL, m.KERNEL, "
            "simhash('the harbour opened its new pier today'))")
    pure = subprocess.run([str(env_dir / "bin" / "python"), "-c", code], cwd=tmp_path,
                          capture_output=True, text=True, check=True).stdout.split()
    compiled = subprocess.run([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path,
                              capture_output=True, text=True, check=True).stdout.split()
    assert pure[:3] == ["python"] * 3 and compiled[:3] == ["cython"] * 3
    assert pure[3] == compiled[3]
    helped = subprocess.run([str(env_dir / "bin" / "simcrawl"), "--version"], cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert helped.returncode == 0 and "simcrawl 0.1.0" in helped.stdout + helped.stderr


def test_the_installed_package_crawls_the_demo_from_an_empty_folder(installed: Path,
                                                                    tmp_path: Path) -> None:
    where = tmp_path / "elsewhere"
    where.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "MONGO_URI",
                                                            "PYTHONPATH")}
    env["PATH"] = f"{installed / 'bin'}:{env['PATH']}"
    code = ("import dedup, dedup.pinyin as p, dedup.maintext as m, crawler; "
            "print(dedup.KERNEL, p.KERNEL, m.KERNEL, crawler.__file__)")
    probe = subprocess.run([str(installed / "bin" / "python"), "-c", code], cwd=where, env=env,
                           capture_output=True, text=True, check=True)
    kernels = probe.stdout.split()
    assert kernels[:3] == ["cython"] * 3 and str(installed) in kernels[3]
    done = subprocess.run([str(installed / "bin" / "simcrawl"), "crawl", "--data-dir",
                           str(where / "data")], cwd=where, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    copies = sum(len(c) - 1 for c in build().expected.clusters)
    assert f"copies dropped, naming their original   {copies} / {copies}" in done.stdout
    assert "SlowKernelWarning" not in done.stderr
    # scrapy crawl from anywhere, through the settings module inside the package
    scrapy = subprocess.run([str(installed / "bin" / "python"), "-m", "scrapy", "crawl", "site",
                             "-s", f"DEDUP_DATA_DIR={where / 'data'}"], cwd=where,
                            env=dict(env, SCRAPY_SETTINGS_MODULE="crawler.settings"),
                            capture_output=True, text=True, timeout=120, check=False)
    assert scrapy.returncode == 2  # our settings and commands, found from anywhere
    assert scrapy.stderr.splitlines()[-1].startswith("error: give http(s) start URLs")
    helped = subprocess.run([str(installed / "bin" / "simcrawl"), "--help"], cwd=where, env=env,
                            capture_output=True, text=True, check=True)
    assert "simcrawl crawl" in helped.stdout
    # the report and the console, from the installed package (templates and style inside)
    report = subprocess.run([str(installed / "bin" / "simcrawl"), "report", "-o",
                             str(where / "report"), "--data-dir", str(where / "data")],
                            cwd=where, env=env, capture_output=True, text=True, timeout=300,
                            check=False)
    assert report.returncode == 0, report.stderr
    assert (where / "report" / "report.html").exists()
    assert str(where / "report" / "report.html") in report.stderr
    from dedup.adapters.servers.services import free_port

    port = free_port()
    web = subprocess.Popen([str(installed / "bin" / "simcrawl"), "web", "--port", str(port),
                            "--data-dir", str(where / "data")], cwd=where, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        import time
        import urllib.request

        deadline = time.monotonic() + 60
        while True:
            try:
                body = urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5).read()
                break
            except OSError:
                assert web.poll() is None and time.monotonic() < deadline, \
                    web.stderr.read() if web.poll() is not None else "no answer in 60 s"  # type: ignore[union-attr]
                time.sleep(0.3)
        assert b"<h1>Dashboard</h1>" in body and b"simcrawl_demo" in body
        css = urllib.request.urlopen(f"http://127.0.0.1:{port}/static/style.css", timeout=5)
        assert b"mark.added" in css.read()
    finally:
        web.terminate()
        web.wait(timeout=30)


def test_the_package_adds_two_names_to_the_environment(installed: Path, tmp_path: Path) -> None:
    """The wheel puts two packages at the top of site-packages, ``crawler`` and ``dedup``
    (the command, the console, the batch job and the demo site inside them), so a user's
    own ``cli`` or ``console`` is theirs: ``scrapy startproject console`` works beside it."""
    code = ("import importlib.metadata as m; print(' '.join(sorted({p.parts[0] for p in "
            "m.files('simcrawl') if len(p.parts) > 1 and p.name == '__init__.py'})))")
    top = subprocess.run([str(installed / "bin" / "python"), "-c", code], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.split()
    assert top == ["crawler", "dedup"]
    for name in ("console", "cli", "sparkjob"):
        made = subprocess.run([str(installed / "bin" / "python"), "-m", "scrapy",
                               "startproject", name], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, check=False)
        assert made.returncode == 0, made.stdout + made.stderr
        assert (tmp_path / name / "scrapy.cfg").exists()
