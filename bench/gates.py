"""Every gate of a change to the reading or the decision, in one run, before and after.

A change to the reading or the decision lands with these figures measured on this
machine in the same session (docs/benchmarks.md, "Every gate in one run"):

- detection on the three development sets (``quality_crawl.py``): crawl order (precision,
  recall, wrong drops, documents lost), the labelled pairs (precision, recall) and each
  labelled kind's share dropped;
- the reading on real labelled pages (``quality_wcxb.py``): WCXB's own metric per page
  type, simcrawl beside trafilatura, and the CPU a page;
- the reading of the generator sites (``quality_reading.py``): own text kept, furniture,
  pairs read as one.

"After" is this checkout. "Before" is ``--base REV`` (default ``HEAD``: what the
uncommitted change is measured against), checked out into a scratch git worktree and
measured by *this* checkout's scripts, so that both sides are counted the same way. Its
compiled kernels are this checkout's when the base's Cython sources are the same, and are
built in the worktree when they differ. The table lists every figure, the ones that got worse first: a figure that
falls is a finding to state at the top of the change's note.

    python bench/gates.py --wcxb PATH [--base REV] [--after-only] [--no-sites]

PATH: a checkout of Murrough-Foley/web-content-extraction-benchmark. Development
figures; takes about 15 minutes a side on two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _peers import ROOT, SHARED

BENCH = Path(__file__).resolve().parent
SETS = [SHARED / "data" / name for name in ("near-dup-dev", "near-dup-dev-2", "near-dup-dev-3")]
#: Figures where lower is better (the rest: higher is better).
LOWER = ("wrong", "lost", "fp", "fn", "ms", "furniture", "pages < 0.8", "pairs read as one",
         "read as nothing", "boilerplate-only", "rewrite", "same-site", "same-template")


def last_json(out: str, name: str) -> dict[str, Any]:
    for line in reversed(out.splitlines()):
        if line.startswith("{") and f'"bench": "{name}"' in line:
            return json.loads(line)
    raise SystemExit(f"bench/{name}.py printed no figures:\n{out[-2000:]}")


def run(script: str, args: list[str], code: Path) -> str:
    """``bench/script`` of this checkout, importing the ``dedup`` of ``code``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), str(BENCH)]))
    done = subprocess.run([sys.executable, str(BENCH / script), *args], cwd=code, env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"bench/{script} failed on {code}:\n{done.stderr[-3000:]}")
    return done.stdout


def figures(code: Path, wcxb: Path, sites: bool) -> dict[str, float]:
    """Every gate's figures of the code at ``code``, flat: ``"set / figure" -> value``."""
    flat: dict[str, float] = {}
    started = time.perf_counter()
    crawl = last_json(run("quality_crawl.py", ["--data", *map(str, SETS), "--json"], code),
                      "quality_crawl")
    for name, got in crawl["sets"].items():
        for part in ("crawl order", "pairs"):
            for key, value in got[part].items():
                if key != "documents":
                    flat[f"{name} {part} {key}"] = value
        for kind, share in got["kinds"].items():
            flat[f"{name} dropped: {kind}"] = share
    reading = last_json(run("quality_wcxb.py", ["--wcxb", str(wcxb)], code), "quality_wcxb")
    for part in ("wcxb", "near-dup-dev-2", "near-dup-dev-3"):
        for kind, got in reading.get(part, {}).items():
            for reader in ("simcrawl", "trafilatura"):
                flat[f"{part} F1 {kind}: {reader}"] = got[reader]
    flat["reading ms a page: simcrawl"] = reading["ms"]["simcrawl"]
    if sites:
        built = last_json(run("quality_reading.py", ["--json"], code), "quality_reading")
        mine = built["readers"]["simcrawl"]
        for key, name in (("own_min", "own text kept, least"), ("own_below", "pages < 0.8"),
                          ("furniture_above", "furniture pages > 0.1"),
                          ("pairs", "pairs read as one"), ("empty", "pages read as nothing")):
            flat[f"sites {name}"] = mine[key]
    print(f"  measured {code} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return flat


def worse(key: str, before: float, after: float) -> bool:
    if key.endswith("trafilatura"):
        return False  # the peer's figure, the same code either side
    lower = any(word in key for word in LOWER) and "F1" not in key
    return after > before + 1e-9 if lower else after < before - 1e-9


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wcxb", type=Path, required=True,
                        help="a checkout of Murrough-Foley/web-content-extraction-benchmark")
    parser.add_argument("--base", default="HEAD", help="the code before (a git revision)")
    parser.add_argument("--after-only", action="store_true", help="measure this checkout only")
    parser.add_argument("--no-sites", action="store_true",
                        help="leave out the generator sites (they build Sphinx, MkDocs and "
                        "Pelican sites first)")
    args = parser.parse_args()
    for data in SETS:
        if not (data / "pages.jsonl").is_file():
            raise SystemExit(f"{data}: not found (the development sets live in "
                             f"{SHARED / 'data'})")
    after = figures(ROOT, args.wcxb, not args.no_sites)
    before: dict[str, float] = {}
    if not args.after_only:
        with tempfile.TemporaryDirectory(prefix="simcrawl-gates-") as tmp:
            tree = Path(tmp) / "base"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                            args.base], check=True, capture_output=True)
            try:
                same = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", args.base,
                                       "--", "dedup/*.pyx", "setup.py"], check=False)
                if same.returncode != 0:  # the base's own kernels
                    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"],
                                   cwd=tree, check=True, capture_output=True)
                before = figures(tree, args.wcxb, not args.no_sites)
            finally:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                                str(tree)], check=False, capture_output=True)
    fell = [k for k in after if k in before and worse(k, before[k], after[k])]
    print(f"Every gate, {'this checkout' if args.after_only else f'{args.base} -> this checkout'}"
          f" (development figures; {os.cpu_count()} cores)\n")
    print(f"figures that got worse: {len(fell)}" + ("" if not fell else ": " + ", ".join(fell)))
    print("\n| figure | before | after |\n|---|---:|---:|")
    for key in [*fell, *(k for k in after if k not in fell)]:
        was = before.get(key)
        mark = " **worse**" if key in fell else ""
        print(f"| {key} | {'' if was is None else f'{was:.4g}'} | {after[key]:.4g}{mark} |")
    print(json.dumps({"bench": "gates", "base": None if args.after_only else args.base,
                      "worse": fell, "before": before, "after": after}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
