"""The web console (``simcrawl web``) in a real headless browser: Debian's chromium driven by
Playwright, against the console serving the demo crawl's store over real servers.

Screenshots of every page go to a temporary folder (printed with ``pytest -s``) and,
when ``SIMCRAWL_SCREENSHOTS`` names a folder, there too (the README's pictures are made
this way: ``SIMCRAWL_SCREENSHOTS=docs/images ./run-tests tests/e2e/test_web.py``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from crawler.examples.demosite import build
from dedup.adapters.servers.services import free_port

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: What a browser on a machine without internet needs to start quietly (no background
#: connections, no first-run work, a sandbox-less start as root in a container).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


def _serve(env: dict[str, str], *args: str, data_dir: Path) -> tuple[subprocess.Popen, str]:
    """Start ``simcrawl web`` and wait until it answers; (process, base URL)."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "crawler.cli", "web", "--port", str(port),
                             "--data-dir", str(data_dir), "--refresh", "5", *args],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    host = "127.0.0.1"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"simcrawl web exited: {proc.stderr.read()}")  # type: ignore[union-attr]
        try:
            urllib.request.urlopen(f"http://{host}:{port}/static/style.css", timeout=2)
            return proc, f"http://{host}:{port}"
        except (urllib.error.URLError, OSError):
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("simcrawl web did not answer within 60 s")


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def env(demo_run) -> dict[str, str]:  # type: ignore[no-untyped-def]
    services = demo_run[0].services
    return dict(os.environ, REDIS_URL=services.redis_url, MONGO_URI=services.mongo_uri)


@pytest.fixture(scope="module")
def console(env, tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The console over the demo crawl's store (its database and index are found by
    default); its base URL."""
    proc, base = _serve(env, data_dir=tmp_path_factory.mktemp("web"))
    yield base
    _stop(proc)


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    folder = tmp_path_factory.mktemp("screenshots")
    print(f"\nscreenshots in {folder}")
    return folder


def _shot(page: Any, shots: Path, name: str, full: bool = False) -> None:
    page.screenshot(path=str(shots / name), full_page=full)
    extra = os.environ.get("SIMCRAWL_SCREENSHOTS")
    if extra:
        Path(extra).mkdir(parents=True, exist_ok=True)
        shutil.copy(shots / name, Path(extra) / name)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (./run-tests installs it as root: "
                    "apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    yield tab
    context.close()


def _images_loaded(page: Any) -> bool:
    return bool(page.evaluate(
        "Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)"))


def test_the_dashboard_shows_the_figures_and_the_crawls(console, page, demo_run, shots) -> None:  # type: ignore[no-untyped-def]
    _, db = demo_run
    deadline = time.monotonic() + 90
    while True:  # the figures are drawn in the background; the page says so meanwhile
        page.goto(console + "/")
        if page.locator("figure img").count() or time.monotonic() > deadline:
            break
        assert "Drawing the figures" in page.content()
        time.sleep(1)
    titles = page.locator("figcaption strong").all_inner_texts()
    assert {"Hamming distances of near matches", "Duplicate share per host",
            "Copies per original", "Pages per second of the crawl",  # a crawl of seconds
            "Why pages were skipped"} <= set(titles)
    assert _images_loaded(page)
    sizes = page.evaluate("Array.from(document.images).map(i => i.naturalWidth)")
    assert len(sizes) == len(titles) and min(sizes) > 300
    # the crawl process's counters, as it stored them
    record = db.crawls.find_one({})
    row = page.locator("#crawls tr.finished").first.inner_text()
    assert record["_id"] in row and "finished" in row
    assert f"{db.pages.count_documents({'crawl_id': record['_id']})}" in row.split()
    # the latest copies link to their match pages
    assert page.locator("a[href^='/match/']").count() >= 20
    _shot(page, shots, "dashboard.png", full=True)


def test_search_finds_a_dropped_copy_and_its_match_page_marks_the_difference(  # type: ignore[no-untyped-def]
        console, page, demo_run, shots) -> None:
    _, db = demo_run
    m = db.matches.find_one({"kind": "simhash", "distance": {"$gt": 0}},
                            sort=[("distance", -1), ("url", 1)])
    host = m["url"].split("/")[2]
    page.goto(console + "/")
    page.fill("nav input[name=q]", host)
    page.click("nav button[type=submit]")
    assert f"host {host}" in page.inner_text("main")
    found = page.locator(f"table.list a[href^='/match/']:text-is('{m['url']}')")
    assert found.count() == 1
    # as many copies as the store holds on that host (fewer than a page of results)
    copies = db.matches.count_documents({"host": host})
    assert page.locator("table.list").first.locator("a[href^='/match/']").count() == copies
    _shot(page, shots, "search.png")
    found.click()
    page.wait_for_selector("#copy-text")
    original = db.pages.find_one({"_id": m["original_id"]})
    facts = page.inner_text("table.facts")
    assert original["url"] in facts and f"{m['distance']} bits of 64" in facts
    assert "simhash" in facts
    left, right = page.inner_text("#original-text"), page.inner_text("#copy-text")
    story = original["text"].split("\n")[-1][:60]  # a sentence of the story itself
    assert story in left and story in right
    marks = page.locator("mark")
    assert marks.count() >= 1  # the passages that differ, marked in either text
    changed = " ".join(marks.all_inner_texts())
    assert all(part in original["text"] or part in m["text"] for part in
               page.locator("#copy-text mark").all_inner_texts()) and changed.strip()
    _shot(page, shots, "match.png")


def test_a_chinese_copy_shows_its_pinyin_share_and_source(console, page, demo_run) -> None:  # type: ignore[no-untyped-def]
    _, db = demo_run
    m = db.matches.find_one({"kind": "pinyin"}, sort=[("url", 1)])
    page.goto(f"{console}/match/{m['_id']}")
    facts = page.inner_text("table.facts")
    assert f"share {m['pinyin']['share']:.2f}" in facts and f"run {m['pinyin']['run']}" in facts
    assert m["source"] in facts
    page.click(f"table.facts a:text-is('{m['source']}')")  # the source's page
    assert page.locator("h1").inner_text() == f"Source {m['source']}"
    originals = page.locator("table.list").first.locator("a[href^='/page/']").count()
    assert originals == db.pages.count_documents({"source": m["source"]})
    # the pages that only quote the source's originals are listed too (the demo keeps
    # two quotations, each with an excerpt record)
    quoted = list(db.excerpts.find({"source": m["source"]}))
    assert len(quoted) == 2
    text = page.inner_text("main") if page.locator("main").count() else page.inner_text("body")
    assert "Latest quotations" in text
    assert all(e["url"] in text for e in quoted), [e["url"] for e in quoted]


class _Site:
    """A two-page site on loopback: a home page linking to a page that copies a Chinese
    chapter inside a site template."""

    def __init__(self, folder: Path, chapter: str) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        paragraphs = "".join(f"<p>{line}</p>" for line in chapter.splitlines() if line)
        (folder / "index.html").write_text(
            "<html><head><meta charset='utf-8'><title>书库</title></head><body>"
            "<h1>书库首页</h1><p>今日更新的章节。</p><a href='/read/1.html'>第一章</a>"
            "</body></html>", encoding="utf-8")
        (folder / "read").mkdir(exist_ok=True)
        (folder / "read" / "1.html").write_text(
            "<html><head><meta charset='utf-8'><title>免费阅读</title></head><body>"
            "<nav><a href='/'>首页</a> 排行榜 分类 书架</nav><article><h1>第一章</h1>"
            f"{paragraphs}</article><footer>本站所有小说均来自网友上传</footer></body></html>",
            encoding="utf-8")
        handler = type("Quiet", (SimpleHTTPRequestHandler,), {
            "log_message": lambda self, *a: None})
        self.server = ThreadingHTTPServer(
            ("127.0.0.1", 0), lambda *a: handler(*a, directory=str(folder)))
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_an_original_registered_through_the_form_makes_a_later_crawl_drop_its_copy(  # type: ignore[no-untyped-def]
        env, page, demo_run, tmp_path, shots) -> None:
    from dedup.adapters.servers.services import connect_mongo

    name = "webform"
    db = connect_mongo(env["MONGO_URI"])[name]
    chapter = build().expected.registered["chapter-2.txt"]
    upload = tmp_path / "chapter-2.txt"
    upload.write_text(chapter, encoding="utf-8")
    proc, base = _serve(env, "--database", name, "--namespace", name,
                        data_dir=tmp_path / "data")
    try:
        page.goto(base + "/register")
        page.fill("input[name=source]", "novelist")
        page.set_input_files("input[name=files]", str(upload))
        page.click("form.card button[type=submit]")
        assert "Registered to novelist: 1 added" in page.inner_text("main")
        assert page.locator("h1").inner_text() == "Source novelist"
        _shot(page, shots, "registered.png")
        registered = db.pages.find_one({"source": "novelist"})
        assert registered and registered["text"].strip() == chapter.strip()
        # a crawl on the same index: the copy is dropped, naming the registered original
        site = _Site(tmp_path / "site", chapter)
        try:
            done = subprocess.run(
                [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                 f"start_urls={site.url}/", "-s", f"DEDUP_DATABASE={name}",
                 "-s", f"DEDUP_NAMESPACE={name}", "-s", "AUTOTHROTTLE_ENABLED=0",
                 "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"],
                cwd=ROOT, env=dict(env, SCRAPY_SETTINGS_MODULE="crawler.settings"),
                capture_output=True, text=True, timeout=300, check=False)
        finally:
            site.close()
        assert done.returncode == 0, (tmp_path / "crawl.log").read_text()[-3000:]
        copy = db.matches.find_one({"url": f"{site.url}/read/1.html"})
        assert copy is not None, "the copy of the registered chapter was not dropped"
        assert copy["original_id"] == registered["_id"] and copy["source"] == "novelist"
        assert db.pages.count_documents({"url": f"{site.url}/"}) == 1  # the home page stays
        # and the console shows it under the source
        page.goto(base + "/sources/novelist")
        assert page.locator(f"a:text-is('{copy['url']}')").count() == 1
        # registering the same file again changes nothing
        page.goto(base + "/register")
        page.fill("input[name=source]", "novelist")
        page.set_input_files("input[name=files]", str(upload))
        page.click("form.card button[type=submit]")
        assert "0 added, 1 already registered" in page.inner_text("main")
        assert db.pages.count_documents({"source": "novelist"}) == 1
    finally:
        _stop(proc)


def test_a_console_on_a_public_address_needs_its_token(env, page, tmp_path, shots) -> None:  # type: ignore[no-untyped-def]
    # without a token it does not start at all
    refused = subprocess.run([sys.executable, "-m", "crawler.cli", "web", "--host", "0.0.0.0",
                              "--port", str(free_port())], cwd=ROOT,
                             env={k: v for k, v in env.items() if k != "SIMCRAWL_WEB_TOKEN"},
                             capture_output=True, text=True, timeout=60, check=False)
    assert refused.returncode == 2 and "SIMCRAWL_WEB_TOKEN" in refused.stderr
    token = "correct-horse-battery-staple"
    proc, base = _serve(dict(env, SIMCRAWL_WEB_TOKEN=token), "--host", "0.0.0.0",
                        data_dir=tmp_path / "data")
    try:
        with pytest.raises(urllib.error.HTTPError) as no_token:
            urllib.request.urlopen(base + "/search?q=127.0.0.1", timeout=10)
        assert no_token.value.code == 401
        wrong = urllib.request.Request(base + "/", headers={"Authorization": "Bearer nope"})
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(wrong, timeout=10)
        assert bad.value.code == 401
        right = urllib.request.Request(base + "/search?q=127.0.0.1",
                                       headers={"Authorization": f"Bearer {token}"})
        assert urllib.request.urlopen(right, timeout=10).status == 200
        # a form posted without its CSRF token is refused even with the token
        post = urllib.request.Request(base + "/register", data=b"source=x", method="POST",
                                      headers={"Authorization": f"Bearer {token}"})
        with pytest.raises(urllib.error.HTTPError) as forged:
            urllib.request.urlopen(post, timeout=10)
        assert forged.value.code == 400
        # a browser signs in with the token through the login form
        page.goto(base + "/")
        assert page.locator("input[name=token]").count() == 1
        page.fill("input[name=token]", "wrong")
        page.click("form.card button[type=submit]")
        assert "That is not the token" in page.inner_text("main")
        page.fill("input[name=token]", token)
        page.click("form.card button[type=submit]")
        assert page.locator("h1").inner_text() == "Dashboard"
        _shot(page, shots, "signed-in.png")
    finally:
        _stop(proc)


def test_the_report_opens_offline_in_a_browser(demo_run, env, page, tmp_path, shots) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "report"
    done = subprocess.run([sys.executable, "-m", "crawler.cli", "report", "-o", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "simcrawl_demo" in done.stderr  # the demo's database, found by default
    fetched: list[str] = []

    def offline(route: Any) -> None:  # the file itself loads; anything else would fail
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            fetched.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    page.goto((out / "report.html").as_uri())
    assert not fetched
    assert page.locator("img").count() == len(list(out.glob("*.png")))
    assert _images_loaded(page)
    _shot(page, shots, "report.png")


def test_the_dashboard_follows_a_running_crawl(env, page, tmp_path, shots) -> None:  # type: ignore[no-untyped-def]
    """A crawl rewrites its record every SIMCRAWL_RECORD_SECONDS: the dashboard shows it
    running with counters that grow, then finished."""
    from crawler.examples.demosite import DemoSite

    name = "weblive"
    proc, base = _serve(env, "--database", name, "--namespace", name,
                        data_dir=tmp_path / "data")
    try:
        with DemoSite() as site:
            crawl = subprocess.Popen(
                [sys.executable, "-m", "scrapy", "crawl", "site", "-a",
                 f"start_urls={site.start_urls()[0]}", "-s", f"DEDUP_DATABASE={name}",
                 "-s", f"DEDUP_NAMESPACE={name}", "-s", "AUTOTHROTTLE_ENABLED=0",
                 "-s", "DOWNLOAD_DELAY=0.25", "-s", "CONCURRENT_REQUESTS=1",
                 "-s", "SIMCRAWL_RECORD_SECONDS=1", "-s", f"LOG_FILE={tmp_path / 'crawl.log'}"],
                cwd=ROOT, env=dict(env, SCRAPY_SETTINGS_MODULE="crawler.settings"))
            try:
                seen: list[int] = []
                deadline = time.monotonic() + 60
                while crawl.poll() is None and time.monotonic() < deadline:
                    page.goto(base + "/")
                    row = page.locator("#crawls tr.running")
                    if row.count():
                        seen.append(int(row.first.locator("td").nth(2).inner_text()
                                        .replace(",", "")))
                        if len(seen) == 2:
                            _shot(page, shots, "running.png")
                    time.sleep(1)
                assert crawl.wait(timeout=120) == 0
            finally:
                if crawl.poll() is None:
                    crawl.kill()
        assert len(seen) >= 3, f"the running crawl was seen {len(seen)} times"
        assert seen[-1] > seen[0] and seen == sorted(seen)  # its counters grow
        page.goto(base + "/")
        assert page.locator("#crawls tr.finished").count() == 1
        assert page.locator("#crawls tr.running").count() == 0
    finally:
        _stop(proc)
