"""The console behind its token, over real HTTP (the Flask app served by werkzeug on
loopback, a real MongoDB-wire server behind it): sign-in sends a browser only to a path
of this site, and signing out makes the session cookie worthless."""

from __future__ import annotations

import html
import http.client
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from werkzeug.serving import make_server

from dedup.adapters.servers.services import free_port

pytestmark = pytest.mark.integration

TOKEN = "a-long-enough-console-token"


class Browser:
    """A client that keeps its cookies (one per name) and never follows redirects."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None
                ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if form is not None:
            body = "&".join(f"{k}={quote(v, safe='')}" for k, v in form.items())
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        for name, value in reply.getheaders():
            if name.lower() == "set-cookie":
                key, _, rest = value.partition("=")
                self.cookies[key] = rest.split(";", 1)[0]
        text = reply.read().decode("utf-8", "replace")
        conn.close()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, text

    def sign_in(self, next_: str) -> tuple[int, str]:
        """The login form, sent with ``next``; the status and where it redirects."""
        _, _, page = self.request("GET", "/login?next=" + quote(next_, safe=""))
        csrf = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page)
        assert csrf, page[:500]
        status, headers, _ = self.request("POST", "/login", {
            "csrf_token": csrf.group(1), "token": TOKEN, "next": next_})
        return status, headers.get("location", "")


@pytest.fixture
def console(pages, tmp_path: Path) -> Iterator[int]:  # type: ignore[no-untyped-def]
    from crawler.console.app import create_app
    from dedup.adapters.mongo.reads import MongoReads

    app = create_app(MongoReads(pages.db), token=TOKEN, figures_folder=tmp_path / "figures",
                     refresh=3600)
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield port
    server.shutdown()


@pytest.mark.parametrize("target", ["/\t/evil.example/", "//evil.example/",
                                    "/\\evil.example/", "https://evil.example/",
                                    "/\n/evil.example/", "/ok\r\nSet-Cookie: x=1"])
def test_sign_in_never_sends_the_browser_to_another_site(console: int, target: str) -> None:
    status, location = Browser(console).sign_in(target)
    assert status == 302
    assert location in ("/", f"http://127.0.0.1:{console}/"), location


def test_sign_in_keeps_a_path_of_this_site(console: int) -> None:
    status, location = Browser(console).sign_in("/matches?q=news")
    assert status == 302 and location.endswith("/matches?q=news")


def test_signing_out_makes_the_old_session_cookie_worthless(console: int) -> None:
    browser = Browser(console)
    assert browser.request("GET", "/")[0] == 401
    browser.sign_in("/")
    assert browser.request("GET", "/")[0] == 200
    kept = dict(browser.cookies)  # what an attacker copied before the sign-out
    _, _, page = browser.request("GET", "/")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', page) or re.search(
        r'name="csrf_token" type="hidden" value="([^"]+)"', page)
    assert csrf, "the sign-out form carries a CSRF token"
    assert browser.request("POST", "/logout", {"csrf_token": csrf.group(1)})[0] == 302
    assert browser.request("GET", "/")[0] == 401
    replay = Browser(console)
    replay.cookies = kept
    assert replay.request("GET", "/")[0] == 401  # the copied cookie no longer signs in
    # a new sign-in is a new session: the cookie from before it is not the one after
    again = Browser(console)
    again.cookies = dict(kept)
    again.sign_in("/")
    assert again.cookies.get("session") != kept.get("session")


@pytest.mark.parametrize("name", ["press/agency", "a b%c?d#e", "novels/2026/spring"])
def test_any_source_name_round_trips_through_its_url(console: int, pages, name: str) -> None:  # type: ignore[no-untyped-def]
    # a registered original under a source whose name URLs treat specially: the sources
    # page links it, and the link opens it
    from bson import ObjectId

    pages.db.pages.insert_one({"_id": ObjectId(), "url": f"file:///corpus/{quote(name)}.txt",
                               "host": "registered", "source": name, "title": "an original"})
    browser = Browser(console)
    status, _ = browser.sign_in("/sources")
    assert status == 302
    status, _, listing = browser.request("GET", "/sources")
    assert status == 200
    links = sorted({html.unescape(h) for h in re.findall(r'href="(/sources/[^"]+)"', listing)})
    assert len(links) == 1, links  # the one source, linked
    status, _, page = browser.request("GET", links[0])
    assert status == 200, (links[0], page[:300])
    assert "an original" in page or f"{quote(name)}.txt" in page  # its original listed
