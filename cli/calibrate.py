"""``simcrawl calibrate``: the share of page pairs that are copies at each distance, to choose k (the options and the work: :mod:`console.calibrate`)."""

from __future__ import annotations

HELP = "the share of page pairs that are copies at each distance, to choose k"


def main(argv: list[str], prog: str = "simcrawl calibrate") -> int:
    from console.calibrate import main as calibrate

    return calibrate(argv, prog=prog)
