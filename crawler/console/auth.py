"""The console's sign-in (a blueprint): a console bound to another address than the
loopback asks every request for ``SIMCRAWL_WEB_TOKEN``, as ``Authorization: Bearer`` or
through the login form (a signed session cookie, worthless once signed out)."""

from __future__ import annotations

import hmac
import os
from typing import Any

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from flask_wtf import FlaskForm
from wtforms import PasswordField
from wtforms.validators import DataRequired

from crawler.console.context import console

bp = Blueprint("auth", __name__)


class LoginForm(FlaskForm):  # type: ignore[misc]
    """The token, for a console bound to a non-loopback address."""

    token = PasswordField("Token", validators=[DataRequired()])


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


@bp.before_app_request
def require_token() -> Any:
    if console().authorised() or request.endpoint in ("auth.login", "static"):
        return None
    return render_template("login.html", form=LoginForm(), next=request.full_path,
                           refused=True), 401


@bp.route("/login", methods=["GET", "POST"])
def login() -> Any:
    state = console()
    form = LoginForm()
    # never a redirect to another site
    target = same_site_path(request.values.get("next")) or url_for("browse.dashboard")
    if state.token is None:
        return redirect(target)
    if form.validate_on_submit():
        if hmac.compare_digest(form.token.data.encode(), state.token.encode()):
            fresh = os.urandom(24).hex()  # a new session at every sign-in
            with state.sessions_lock:
                state.sessions.discard(str(session.get("auth", "")))
                state.sessions.add(fresh)
            session.clear()
            session["auth"] = fresh
            return redirect(target)
        flash("That is not the token.", "error")
        return render_template("login.html", form=form, next=target), 401
    return render_template("login.html", form=form, next=target)


@bp.post("/logout")
def logout() -> Any:
    state = console()
    with state.sessions_lock:  # the cookie is worthless from now on, kept or not
        state.sessions.discard(str(session.get("auth", "")))
    session.clear()
    return redirect(url_for("auth.login"))
