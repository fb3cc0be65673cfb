"""``simcrawl report``: one self-contained HTML report with plots of the store (the options and the work: :mod:`console.report`)."""

from __future__ import annotations

HELP = "one self-contained HTML report with plots of the store"


def main(argv: list[str], prog: str = "simcrawl report") -> int:
    from console.report import main as report

    return report(argv, prog=prog)
