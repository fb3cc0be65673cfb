"""``simcrawl``: one command, a module per verb.

    simcrawl [crawl] [URL ...]      crawl (no URL: the bundled demo site)
    simcrawl VERB [OPTIONS]         any other verb; simcrawl VERB --help for its options
    simcrawl help                   the verbs and the exit statuses
    simcrawl --version              the installed version

It runs from any folder: the crawl uses the settings module inside the package
(:mod:`crawler.settings`), and ``scrapy crawl site`` does too with
``SCRAPY_SETTINGS_MODULE=crawler.settings``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys

from crawler.cli import common
from dedup.errors import EXIT_OK, EXIT_STATUSES, EXIT_USAGE

#: verb -> its module in this package (in the order ``simcrawl help`` lists them).
VERBS = {
    "crawl": "crawler.cli.crawl",
    "scan": "crawler.cli.scan",
    "fingerprint": "crawler.cli.fingerprint",
    "find-all": "crawler.cli.find_all",
    "clusters": "crawler.cli.clusters",
    "plan": "crawler.cli.plan",
    "register": "crawler.cli.register",
    "remove": "crawler.cli.remove",
    "rebuild-index": "crawler.cli.rebuild_index",
    "rules": "crawler.cli.rules",
    "warc": "crawler.cli.warc",
    "services": "crawler.cli.services",
    "export": "crawler.cli.export",
    "report": "crawler.cli.report",
    "web": "crawler.cli.web",
    "calibrate": "crawler.cli.calibrate",
    "pinyin-reference": "crawler.cli.pinyin_reference",
}


def usage() -> str:
    """The list of verbs and the exit-status table."""
    lines = ["usage: simcrawl crawl [URL ...]    (or simcrawl URL ...; no argument: the demo)",
             "       simcrawl VERB [OPTIONS]      (simcrawl VERB --help: its options)",
             "       simcrawl --debug VERB ...    (an error's traceback too)",
             "       simcrawl --version",
             "",
             "A web crawler that drops near-duplicate pages while it crawls.",
             "",
             "verbs:"]
    width = max(map(len, VERBS))
    for verb, module in VERBS.items():
        lines.append(f"  {verb:<{width}}  {importlib.import_module(module).HELP}")
    lines += ["", "exit status:"]
    lines += [f"  {code:>3}  {what}" for code, what in EXIT_STATUSES]
    return "\n".join(lines) + "\n"


def version() -> str:
    """simcrawl's version (:func:`dedup.about.version`)."""
    from dedup.about import version as of_package

    return of_package()


def main(argv: list[str] | None = None) -> int:
    """Run ``simcrawl``; returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if "--debug" in args[:1]:
        common.DEBUG = True
        args = args[1:]
    if args and args[0] in ("-h", "--help", "help"):
        print(usage(), end="")
        return EXIT_OK
    if args[:1] in (["--version"], ["-V"]):
        print(f"simcrawl {version()}")
        return EXIT_OK
    verb = "crawl"
    if args and not args[0].startswith("-") and not any(c in args[0] for c in "./:"):
        verb, args = args[0], args[1:]  # anything like a URL is the crawl's to judge
    if verb not in VERBS:
        near = difflib.get_close_matches(verb, VERBS, n=2, cutoff=0.5)
        hint = f"; did you mean {' or '.join(repr(v) for v in near)}?" if near else ""
        print(f"simcrawl: unknown command {verb!r}{hint} ('simcrawl help' lists the "
              "commands)", file=sys.stderr)
        return EXIT_USAGE
    module = importlib.import_module(VERBS[verb])
    # an error no verb says more about (a bad environment variable read deep down) is
    # one line with its exit status too, not a traceback (common.run)
    return common.run(lambda _: int(module.main(args, prog=f"simcrawl {verb}")),
                      argparse.Namespace())


if __name__ == "__main__":
    sys.exit(main())
