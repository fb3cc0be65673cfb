"""``simcrawl web``: the web console over a crawl's store (Flask, server-side Jinja
templates, served by waitress; no JavaScript).

Pages:

* ``/`` the dashboard: totals, the crawl processes with their live counters (a running
  crawl rewrites its ``crawls`` record every ``SIMCRAWL_RECORD_SECONDS``; the page reloads
  itself while one runs), the report's figures (drawn in the background from the whole
  store, at most every ``--refresh`` seconds: never on a request) and the latest copies;
* ``/search?q=`` pages and copies by host (``news.example.com``) or by URL prefix
  (``https://news.example.com/2026/``), 50 per page, in URL order;
* ``/match/<id>`` a copy beside its original, the differing passages marked
  (:mod:`crawler.console.diff`), with the distance, the kind and, for Chinese, the pinyin share
  and run;
* ``/page/<id>`` a stored page (or registered original) and the copies found of it;
* ``/sources`` the registered sources, ``/sources/<name>`` one source's originals with
  their copies, and the pages kept that quote them;
* ``/register`` a form that registers uploaded text or HTML files as originals of a
  source: the code ``simcrawl register`` runs (:func:`dedup.adapters.register.register_files`).

Every list is one indexed query with a limit (keyset pagination: ``after=<url>``), so the
pages stay fast on a store of millions of pages (``bench/bench_console.py``).

Security: it binds to 127.0.0.1 by default. Binding to any other address requires
``SIMCRAWL_WEB_TOKEN`` (at least 16 characters): every request must then carry it, as
``Authorization: Bearer <token>`` or through the login form (a signed session cookie).
Every form carries a CSRF token (Flask-WTF), so another site cannot post to it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import ipaddress
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from flask import (
    Flask,
    abort,
    flash,
    redirect,
    render_template,
    request,
    send_file,
    session,
    url_for,
)
from flask_wtf import FlaskForm
from flask_wtf.csrf import CSRFError, CSRFProtect
from markupsafe import Markup
from werkzeug.utils import secure_filename
from wtforms import MultipleFileField, PasswordField, StringField
from wtforms.validators import DataRequired, Length

from crawler.console.diff import side_by_side
from crawler.console.report import TOP, Findings, collect, figures
from dedup.store.reads import StoreReads, Where
from dedup.store.reads import search as search_of

log = logging.getLogger(__name__)

#: Results per page of a list.
PAGE_SIZE = 50

#: Largest upload of the register form (all files together).
MAX_UPLOAD = 64 * 1024 * 1024

#: Shortest token accepted for a console reachable from other machines.
MIN_TOKEN = 16

#: The environment variable holding the token.
TOKEN_ENV = "SIMCRAWL_WEB_TOKEN"

#: Seconds after which a running crawl that has not rewritten its record is shown as
#: "not reporting" (a few missed updates: killed, or MongoDB unreachable).
STALE_SECONDS = 30.0


class FigureCache:
    """The report's figures of the whole store, drawn in a background thread at most every
    ``refresh`` seconds, so that no request waits for a scan of the store.

    Args:
        reads: the store's reads (:class:`dedup.store.reads.StoreReads`).
        k: the crawl's k (marked on the distance histogram).
        refresh: seconds before the figures are drawn again (on the next request).
        folder: where the PNG files go (one sub-folder per drawing).
    """

    def __init__(self, reads: StoreReads, k: int, refresh: float, folder: Path) -> None:
        self.reads, self.k, self.refresh, self.folder = reads, k, refresh, folder
        self.drawn: list[tuple[str, Path, str]] = []
        self.found: Findings | None = None
        self.made_at: dt.datetime | None = None
        self.read = 0  # records read by the drawing under way
        self.error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._generation = 0

    def current(self) -> tuple[list[tuple[str, Path, str]], Findings | None]:
        """The latest figures (empty before the first drawing ends); starts a drawing when
        there is none or the latest is older than ``refresh`` seconds."""
        with self._lock:
            stale = self.made_at is None or (
                dt.datetime.now(dt.timezone.utc) - self.made_at).total_seconds() > self.refresh
            if stale and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._draw, name="figures", daemon=True)
                self._thread.start()
            return self.drawn, self.found

    @property
    def busy(self) -> bool:
        """Whether a drawing is under way."""
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout: float) -> bool:
        """Wait for the drawing under way; whether figures are ready."""
        self.current()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.made_at is not None

    def _count(self, n: int) -> None:
        self.read += n

    def _draw(self) -> None:
        self.read = 0
        self._generation += 1
        out = self.folder / str(self._generation)
        try:
            out.mkdir(parents=True, exist_ok=True)
            found = collect(self.reads, progress=self._count)
            drawn = figures(found, self.k, out)
        except Exception as exc:  # noqa: BLE001 - shown on the dashboard, tried again later
            log.warning("drawing the dashboard's figures failed: %s", exc)
            with self._lock:
                self.error = str(exc)
                self.made_at = dt.datetime.now(dt.timezone.utc)
            return
        with self._lock:
            old = self.folder / str(self._generation - 1)
            self.drawn, self.found, self.error = drawn, found, None
            self.made_at = dt.datetime.now(dt.timezone.utc)
        shutil.rmtree(old, ignore_errors=True)

    def path(self, name: str) -> Path | None:
        """The PNG file of the figure ``name`` (``distances``...), if drawn."""
        for _, path, _ in self.drawn:
            if path.stem == name:
                return path
        return None


class RegisterForm(FlaskForm):  # type: ignore[misc]
    """The register form: a source name and the files of its originals."""

    source = StringField("Source", validators=[DataRequired(), Length(max=200)])
    files = MultipleFileField("Files (text or HTML)")


def same_site_path(target: str | None) -> str | None:
    r"""``target`` when it is a path of this site to send a signed-in browser to, else
    ``None``: one leading ``/`` (not ``//`` or ``/\``, which browsers read as another
    host), no scheme or host, no backslash, white space or control character (browsers
    drop tabs and newlines, so ``/\t/evil.example`` would become ``//evil.example``).

    >>> [same_site_path(t) for t in ("/matches?q=a", "//evil.example/", "/\t/evil.example",
    ...                              "https://evil.example/", "/a\nb", None)]
    ['/matches?q=a', None, None, None, None, None]
    """
    from urllib.parse import urlsplit

    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return None
    if any(c == "\\" or c.isspace() or ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return None
    parts = urlsplit(target)
    return None if parts.scheme or parts.netloc else target


class LoginForm(FlaskForm):  # type: ignore[misc]
    """The token, for a console bound to a non-loopback address."""

    token = PasswordField("Token", validators=[DataRequired()])


def crawl_state(record: dict[str, Any], now: dt.datetime) -> str:
    """``running``, ``not reporting`` (a running record not rewritten lately),
    ``interrupted`` (its process was found gone without a summary) or ``finished``."""
    if record.get("state") == "interrupted":
        return "interrupted"
    if record.get("state") != "running":
        return "finished"
    updated = record.get("updated_at")
    if isinstance(updated, dt.datetime):
        if updated.tzinfo is None:
            updated = updated.replace(tzinfo=dt.timezone.utc)
        if (now - updated).total_seconds() > STALE_SECONDS:
            return "not reporting"
    return "running"


def create_app(reads: StoreReads, *, redis_client: Any = None, namespace: str | None = None,
               token: str | None = None, secret_key: str | None = None,
               uploads: Path | None = None, k: int | None = None, refresh: float = 60.0,
               figures_folder: Path | None = None) -> Flask:
    """The console's Flask application over a database's reads
    (:class:`dedup.store.reads.StoreReads`).

    Args:
        redis_client: the crawl's Redis (for the register form; without it the form is
            not offered).
        namespace: the crawl's index namespace in Redis (the register form adds there).
        token: when given, every request must carry it (``Authorization: Bearer`` or
            the login form).
        secret_key: signs the session and CSRF tokens (default: random per start).
        uploads: where uploaded originals are kept (their ``file://`` URL names them).
        k: marked on the distance histogram (default: the k the crawl's index was
            built with, :meth:`dedup.store.reads.StoreReads.index_k`).
        refresh: seconds between two drawings of the dashboard's figures.
        figures_folder: where the figures are drawn (default: a temporary folder).
    """
    from dedup.config import namespace_of

    here = Path(__file__).resolve().parent
    app = Flask("console", template_folder=str(here / "templates"),
                static_folder=str(here / "static"))
    app.config.update(SECRET_KEY=secret_key or os.urandom(32).hex(),
                      MAX_CONTENT_LENGTH=MAX_UPLOAD, SESSION_COOKIE_SAMESITE="Lax",
                      SESSION_COOKIE_HTTPONLY=True, WTF_CSRF_TIME_LIMIT=None)
    CSRFProtect(app)
    named, namespace = namespace, namespace_of(reads.name, namespace)
    cache = FigureCache(reads, reads.index_k(named) if k is None else k, refresh,
                        figures_folder or Path(tempfile.mkdtemp(prefix="simcrawl-web-")))
    app.extensions["simcrawl_figures"] = cache
    cache.current()  # the first drawing starts now, not on the first visit
    store = reads.page_store()  # the register form writes
    store.ensure_indexes()
    # signed-in sessions, by a random id given at sign-in: a session cookie is signed, not
    # secret-bound, so signing out must make the old cookie worthless on the server too
    sessions: set[str] = set()
    sessions_lock = threading.Lock()

    def authorised() -> bool:
        if token is None:
            return True
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer ") and hmac.compare_digest(
                header[7:].strip().encode(), token.encode()):
            return True
        with sessions_lock:
            return str(session.get("auth", "")) in sessions

    @app.before_request
    def require_token() -> Any:
        if authorised() or request.endpoint in ("login", "static"):
            return None
        return render_template("login.html", form=LoginForm(), next=request.full_path,
                               refused=True), 401

    @app.context_processor
    def common() -> dict[str, Any]:
        return {"database": reads.name, "can_register": redis_client is not None,
                "signed_in": token is not None and authorised()}

    @app.template_filter("when")
    def when(value: Any) -> str:
        if isinstance(value, dt.datetime):
            return value.strftime("%Y-%m-%d %H:%M:%S")
        return "" if value is None else str(value)

    @app.template_filter("num")
    def num(value: Any) -> str:
        return f"{value:,}" if isinstance(value, int) else ("" if value is None else str(value))

    @app.errorhandler(CSRFError)
    def csrf_error(exc: CSRFError) -> Any:
        return render_template("error.html", title="Refused",
                               message=f"The form was refused: {exc.description} Reload "
                               "the page and send it again."), 400

    @app.errorhandler(404)
    def not_found(exc: Any) -> Any:
        return render_template("error.html", title="Not found",
                               message="There is no such page or record in the store."), 404

    from redis.exceptions import ConnectionError as RedisDown

    from dedup.errors import ServiceUnavailable

    # the store's reads say a MongoDB that does not answer as ServiceUnavailable
    # (dedup/store/mongo_reads.py); the index is read through redis-py
    @app.errorhandler(RedisDown)
    @app.errorhandler(ServiceUnavailable)
    def store_gone(exc: Exception) -> Any:
        # the store stopped under the console (`simcrawl services stop`, a server down):
        # say so, not a bare "Internal Server Error"
        log.warning("the store does not answer: %s", exc)
        return render_template(
            "error.html", title="The store does not answer",
            message=f"The console cannot reach the store of database {reads.name!r}: its "
            "servers may have been stopped (simcrawl services stop) or be down. Start "
            "them again (simcrawl services), then reload this page."), 503

    @app.errorhandler(413)
    def too_big(exc: Any) -> Any:
        return render_template("error.html", title="Too large",
                               message=f"Uploads are limited to {MAX_UPLOAD >> 20} MB at "
                               "a time; send the files in several parts."), 413

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        form = LoginForm()
        # never a redirect to another site
        target = same_site_path(request.values.get("next")) or url_for("dashboard")
        if token is None:
            return redirect(target)
        if form.validate_on_submit():
            if hmac.compare_digest(form.token.data.encode(), token.encode()):
                fresh = os.urandom(24).hex()  # a new session at every sign-in
                with sessions_lock:
                    sessions.discard(str(session.get("auth", "")))
                    sessions.add(fresh)
                session.clear()
                session["auth"] = fresh
                return redirect(target)
            flash("That is not the token.", "error")
            return render_template("login.html", form=form, next=target), 401
        return render_template("login.html", form=form, next=target)

    @app.post("/logout")
    def logout() -> Any:
        with sessions_lock:  # the cookie is worthless from now on, kept or not
            sessions.discard(str(session.get("auth", "")))
        session.clear()
        return redirect(url_for("login"))

    @app.get("/")
    def dashboard() -> Any:
        now = dt.datetime.now(dt.timezone.utc)
        crawls = reads.recent_crawls(20)
        for c in crawls:
            c["shown_state"] = crawl_state(c, now)
            counters = c.get("counters") or {}
            elapsed = counters.get("elapsed") or 0
            c["rate"] = counters.get("fetched", 0) / elapsed if elapsed else 0.0
        drawn, found = cache.current()
        recent, _ = reads.newest("matches", Where(), 20, by="detected_at")
        return render_template(
            "dashboard.html", crawls=crawls, drawn=drawn, found=found,
            drawing=cache.busy, read=cache.read, made_at=cache.made_at, error=cache.error,
            live=any(c["shown_state"] == "running" for c in crawls), recent=recent, top=TOP)

    @app.get("/figures/<name>.png")
    def figure(name: str) -> Any:
        path = cache.path(name)
        if path is None or not path.exists():
            abort(404)
        return send_file(path, mimetype="image/png", max_age=0)

    @app.get("/search")
    def search() -> Any:
        q = request.args.get("q", "").strip()
        what = request.args.get("what", "")
        before = request.args.get("before") or None
        results: dict[str, tuple[list[dict[str, Any]], str | None]] = {}
        described = ""
        if q:
            where, described = search_of(q)
            start = before if before and what else None
            for kind in ("matches", "pages"):
                if what in ("", kind):
                    results[kind] = reads.newest(kind, where, PAGE_SIZE, start)
        return render_template("search.html", q=q, what=what, results=results,
                               described=described)

    @app.get("/match/<match_id>")
    def match(match_id: str) -> Any:
        record = reads.match(match_id)
        if record is None:
            abort(404)
        original = reads.page(str(record.get("original_id")))
        compared = None
        if original is not None and original.get("text") and record.get("text"):
            compared = side_by_side(original["text"], record["text"])
        return render_template("match.html", m=record, original=original, compared=compared,
                               original_html=Markup(compared.original) if compared else "",
                               copy_html=Markup(compared.copy) if compared else "")

    @app.get("/page/<page_id>")
    def page(page_id: str) -> Any:
        doc = reads.page(page_id, text=False)
        if doc is None:
            abort(404)
        copies, total = reads.copies_of(doc["_id"], 100)
        cluster = reads.cluster(str(doc["cluster"])) if doc.get("cluster") is not None else None
        members = reads.pages_of(cluster["members"][:100]) if cluster else []
        batch = reads.batch_record(doc["url"])
        return render_template("page.html", p=doc, copies=copies, total=total,
                               cluster=cluster, members=members, batch=batch)

    @app.get("/sources")
    def sources() -> Any:
        originals = reads.source_counts()
        _, found = cache.current()
        copies = {s: sum(days.values()) for s, days in
                  (found.copies_per_source_day if found else {}).items()}
        rows = [{"name": n, "originals": originals[n], "copies": copies.get(n)}
                for n in sorted(originals)]
        return render_template("sources.html", rows=rows, made_at=cache.made_at)

    @app.get("/sources/<path:name>")
    def source(name: str) -> Any:
        after = request.args.get("after") or None
        originals, next_after = reads.originals(name, after, PAGE_SIZE)
        if not originals and not after:
            abort(404)
        counts = reads.copy_counts(o["_id"] for o in originals)
        for o in originals:
            o["copies"] = counts.get(o["_id"], 0)
        latest, _ = reads.newest("matches", Where(source=name), PAGE_SIZE, by="detected_at")
        # pages kept because they only quote the source's originals (excerpt records)
        quoted, _ = reads.newest("excerpts", Where(source=name), PAGE_SIZE, by="detected_at")
        return render_template("source.html", name=name, originals=originals,
                               next_after=next_after, after=after, latest=latest,
                               quoted=quoted)

    @app.route("/register", methods=["GET", "POST"])
    def register_page() -> Any:
        if redis_client is None:
            abort(404)
        form = RegisterForm()
        if form.validate_on_submit():
            files = [f for f in request.files.getlist(form.files.name) if f and f.filename]
            if not files:
                form.files.errors = ["choose at least one file"]
            else:
                message, ok = _register_uploads(form.source.data.strip(), files)
                flash(message, "ok" if ok else "error")
                if ok:
                    return redirect(url_for("source", name=form.source.data.strip()))
        return render_template("register.html", form=form)

    def _register_uploads(source_name: str, files: list[Any]) -> tuple[str, bool]:
        from dedup.adapters.register import register_files
        from dedup.config import DedupConfig
        from dedup.errors import ServiceUnavailable
        from dedup.index import IndexMismatchError

        folder = (uploads or Path(tempfile.gettempdir()) / "simcrawl-uploads") / (
            secure_filename(source_name) or hashlib.sha1(source_name.encode()).hexdigest())
        folder.mkdir(parents=True, exist_ok=True)
        paths, kept = [], []
        for upload in files:
            name = secure_filename(upload.filename) or f"upload-{time.time_ns()}.txt"
            path = folder / name
            data = upload.read()
            if path.exists() and path.read_bytes() != data:
                kept.append(name)  # the registered file stays as it was registered
            else:
                path.write_bytes(data)
            paths.append(path)
        config = DedupConfig(namespace=namespace, database=reads.name)
        try:
            done = register_files(paths, source_name, store, redis_client, config)
        except (IndexMismatchError, ServiceUnavailable, ValueError) as exc:
            return f"Nothing registered: {exc}", False
        parts = [f"{done.added} added", f"{done.unchanged} already registered"]
        if done.changed or kept:
            parts.append(f"{len(set(done.changed) | set(kept))} changed since they were "
                         "registered (kept as first registered)")
        if done.skipped:
            parts.append(f"{len(done.skipped)} skipped (" + "; ".join(
                f"{Path(p).name}: {why}" for p, why in done.skipped[:5]) + ")")
        return f"Registered to {source_name}: " + ", ".join(parts) + ".", True

    return app


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
