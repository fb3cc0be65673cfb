"""``simcrawl pinyin-reference PATH ... -o FILE``: the pinyin fingerprint's reference."""

from __future__ import annotations

import argparse
from pathlib import Path

from crawler.cli.common import InputError, documents, iter_files, parser, run

HELP = "compute the pinyin fingerprint's reference distribution"


def reference(args: argparse.Namespace) -> int:
    from dedup.pinyin import Reference

    files = list(iter_files(args.paths))
    if not files:
        raise InputError("no files to read")
    try:
        skipped: list[tuple[Path, str]] = []
        ref = Reference.from_texts((text for _, text, _ in documents(files, 16, skipped)),
                                   source=args.source or ", ".join(map(str, args.paths)))
    except ValueError as exc:
        raise InputError(str(exc)) from None
    ref.save(args.output)
    top = " ".join(f"{k}={v:.3f}" for k, v in sorted(ref.frequency.items(),
                                                       key=lambda kv: -kv[1])[:8])
    print(f"{len(files) - len(skipped)} files, {ref.characters:,} Han characters; most "
          f"common initials: {top}\nwritten to {args.output}")
    for path, why in skipped:
        print(f"  skipped ({why}): {path}")
    return 0


def main(argv: list[str], prog: str = "simcrawl pinyin-reference") -> int:
    p = parser(prog, "Count the pinyin initials of the Han characters in text and HTML "
               "files (folders recursively) and write each letter's share as JSON: the "
               "reference the pinyin fingerprint subtracts.")
    p.add_argument("paths", nargs="+", type=Path, help="corpus files or folders")
    p.add_argument("-o", "--output", type=Path, required=True,
                   help="where to write the JSON (required: the shipped reference, "
                   "dedup/data/pinyin_reference.json inside the installed package, is "
                   "only replaced when you name it)")
    p.add_argument("--source", help="a description of the corpus, stored in the file")
    return run(reference, p.parse_args(argv))
