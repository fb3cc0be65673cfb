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
  source: the code ``simcrawl register`` runs (:func:`dedup.adapters.registered_originals.register_files`).

The views are blueprints of :mod:`crawler.console.auth` (sign-in),
:mod:`crawler.console.browse` (the pages) and :mod:`crawler.console.uploads` (the
register form), which share :class:`crawler.console.context.Console`.

Every list is one indexed query with a limit (keyset pagination: ``after=<url>``), so the
pages stay fast on a store of millions of pages (``bench/bench_console.py``).

Security: it binds to 127.0.0.1 by default. Binding to any other address requires
``SIMCRAWL_WEB_TOKEN`` (at least 16 characters): every request must then carry it, as
``Authorization: Bearer <token>`` or through the login form (a signed session cookie).
Every form carries a CSRF token (Flask-WTF), so another site cannot post to it.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from flask import Flask, render_template
from flask_wtf.csrf import CSRFError, CSRFProtect

from crawler.console import auth, browse, uploads as uploads_views
from crawler.console.context import Console, console
from crawler.console.figures import FigureCache
from dedup.store.reads import StoreReads

log = logging.getLogger(__name__)

#: Largest upload of the register form (all files together).
MAX_UPLOAD = 64 * 1024 * 1024

#: Shortest token accepted for a console reachable from other machines.
MIN_TOKEN = 16

#: The environment variable holding the token.
TOKEN_ENV = "SIMCRAWL_WEB_TOKEN"


def create_app(reads: StoreReads, *, redis_client: Any = None, namespace: str | None = None,
               token: str | None = None, secret_key: str | None = None,
               uploads: Path | None = None, k: int | None = None, refresh: float = 60.0,
               figures_folder: Path | None = None) -> Flask:
    """The console's Flask application over a database's reads
    (:class:`dedup.store.reads.StoreReads`): its views are the blueprints of
    :mod:`crawler.console.auth` (sign-in), :mod:`crawler.console.browse` (the store's
    pages) and :mod:`crawler.console.uploads` (the register form).

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
    cache.current()  # the first drawing starts now, not on the first visit
    store = reads.page_store()  # the register form writes
    store.ensure_indexes()
    app.extensions["simcrawl"] = Console(reads, store, cache, redis_client, namespace,
                                         token, uploads)
    for blueprint in (auth.bp, browse.bp, uploads_views.bp):
        app.register_blueprint(blueprint)
    app.context_processor(_common)
    app.add_template_filter(_when, "when")
    app.add_template_filter(_num, "num")
    app.register_error_handler(CSRFError, _csrf_error)
    app.register_error_handler(404, _not_found)
    app.register_error_handler(413, _too_big)
    from redis.exceptions import ConnectionError as RedisDown

    from dedup.errors import ServiceUnavailable

    # the store's reads say a MongoDB that does not answer as ServiceUnavailable
    # (dedup/adapters/mongo/reads.py); the index is read through redis-py
    app.register_error_handler(RedisDown, _store_gone)
    app.register_error_handler(ServiceUnavailable, _store_gone)
    return app


def _common() -> dict[str, Any]:
    state = console()
    return {"database": state.reads.name, "can_register": state.redis_client is not None,
            "signed_in": state.token is not None and state.authorised()}


def _when(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return "" if value is None else str(value)


def _num(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else ("" if value is None else str(value))


def _csrf_error(exc: CSRFError) -> Any:
    return render_template("error.html", title="Refused",
                           message=f"The form was refused: {exc.description} Reload "
                           "the page and send it again."), 400


def _not_found(exc: Any) -> Any:
    return render_template("error.html", title="Not found",
                           message="There is no such page or record in the store."), 404


def _store_gone(exc: Exception) -> Any:
    # the store stopped under the console (`simcrawl services stop`, a server down): say
    # so, not a bare "Internal Server Error"
    log.warning("the store does not answer: %s", exc)
    return render_template(
        "error.html", title="The store does not answer",
        message=f"The console cannot reach the store of database {console().reads.name!r}: "
        "its servers may have been stopped (simcrawl services stop) or be down. Start "
        "them again (simcrawl services), then reload this page."), 503


def _too_big(exc: Any) -> Any:
    return render_template("error.html", title="Too large",
                           message=f"Uploads are limited to {MAX_UPLOAD >> 20} MB at "
                           "a time; send the files in several parts."), 413


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
