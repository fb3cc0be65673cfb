"""``simcrawl export``: stream the store's match records or pages to CSV or JSON lines (the options and the work: :mod:`console.export`)."""

from __future__ import annotations

HELP = "stream the store's match records or pages to CSV or JSON lines"


def main(argv: list[str], prog: str = "simcrawl export") -> int:
    from console.export import main as export

    return export(argv, prog=prog)
