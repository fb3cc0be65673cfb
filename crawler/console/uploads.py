"""The console's register form (a blueprint): uploaded text or HTML files registered as
originals of a source, by the code ``simcrawl register`` runs
(:func:`dedup.adapters.registered_originals.register_files`). Offered when the console has the
crawl's Redis."""

from __future__ import annotations

import hashlib
import tempfile
import time
from pathlib import Path
from typing import Any

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from werkzeug.utils import secure_filename
from wtforms import MultipleFileField, StringField
from wtforms.validators import DataRequired, Length

from crawler.console.context import console

bp = Blueprint("uploads", __name__)


class RegisterForm(FlaskForm):  # type: ignore[misc]
    """The register form: a source name and the files of its originals."""

    source = StringField("Source", validators=[DataRequired(), Length(max=200)])
    files = MultipleFileField("Files (text or HTML)")


@bp.route("/register", methods=["GET", "POST"])
def register_page() -> Any:
    if console().redis_client is None:
        abort(404)
    form = RegisterForm()
    if form.validate_on_submit():
        files = [f for f in request.files.getlist(form.files.name) if f and f.filename]
        if not files:
            form.files.errors = ["choose at least one file"]
        else:
            message, ok = register_uploads(form.source.data.strip(), files)
            flash(message, "ok" if ok else "error")
            if ok:
                return redirect(url_for("browse.source", name=form.source.data.strip()))
    return render_template("register.html", form=form)


def register_uploads(source_name: str, files: list[Any]) -> tuple[str, bool]:
    """Keep the uploaded ``files`` in the source's folder and register them: the line the
    form shows, and whether anything was registered."""
    from dedup.adapters.registered_originals import register_files
    from dedup.config import DedupConfig
    from dedup.errors import ServiceUnavailable
    from dedup.index import IndexMismatchError

    state = console()
    folder = (state.uploads or Path(tempfile.gettempdir()) / "simcrawl-uploads") / (
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
    config = DedupConfig(namespace=state.namespace, database=state.reads.name)
    try:
        done = register_files(paths, source_name, state.store, state.redis_client, config)
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
