"""``simcrawl fingerprint PATH ...``: fingerprints of files as JSON lines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from crawler.cli.common import documents, fingerprint_options, iter_files, parser, run

HELP = "print the fingerprints of files as JSON lines"


def fingerprints(args: argparse.Namespace) -> int:
    from dedup.simhash import fingerprint

    skipped: list[tuple[Path, str]] = []
    for path, text, method in documents(list(iter_files(args.paths)), args.max_size, skipped):
        fp = fingerprint(text, shingle=args.shingle, drop_numbers=args.drop_numbers,
                         min_tokens=args.min_tokens)
        print(json.dumps({"file": str(path), "simhash": fp.hex, "checksum": fp.checksum_hex,
                          "tokens": fp.tokens, "features": fp.features, "short": fp.short,
                          "text_from": method}, ensure_ascii=False))
    for path, reason in skipped:  # one JSON line each too, so nothing is silently lost
        print(json.dumps({"file": str(path), "skipped": reason}, ensure_ascii=False))
    return 0


def main(argv: list[str], prog: str = "simcrawl fingerprint") -> int:
    p = parser(prog, "Print the fingerprint of each text or HTML file (folders "
               "recursively) as one JSON line; skipped files get a line with the reason.")
    p.add_argument("paths", nargs="+", type=Path, help="files or folders")
    fingerprint_options(p)
    return run(fingerprints, p.parse_args(argv))
