"""``simcrawl web``: the web console: dashboard, search, a copy beside its original, sources (the options and the work: :mod:`console.web`)."""

from __future__ import annotations

HELP = "the web console: dashboard, search, a copy beside its original, sources"


def main(argv: list[str], prog: str = "simcrawl web") -> int:
    from console.web import main as web

    return web(argv, prog=prog)
