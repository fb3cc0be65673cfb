"""The ``simcrawl`` command of an installed simcrawl (the package's console script).

    simcrawl crawl [URL ...] [--depth N] [--data-dir DIR]   crawl (no URL: the demo site)
    simcrawl URL ...                                        the same as crawl URL ...
    simcrawl export matches|pages [--format csv|jsonl]      stream records (console/export.py)
    simcrawl report [-o DIR]                                HTML report with plots (console/report.py)
    simcrawl web [--host H] [--port P]                      the web console (console/web.py)
    simcrawl calibrate [-o DIR]                             choose k from your crawl (console/calibrate.py)
    simcrawl scan | fingerprint | find-all | plan | register | rebuild-index | remove |
             services | pinyin-reference ...                 the dedup library's commands
    simcrawl VERB --help                                     each verb's options

It runs from any folder: the crawl uses the settings module inside the package
(:mod:`crawler.settings`), and ``scrapy crawl site`` does too with
``SCRAPY_SETTINGS_MODULE=crawler.settings``.
"""

from __future__ import annotations

import sys

USAGE = """usage: simcrawl crawl [URL ...] [--depth N] [--data-dir DIR]
       simcrawl URL ...
       simcrawl export {matches,pages} [--format csv|jsonl] [-o FILE] [--crawl-id ID] ...
       simcrawl report [-o DIR] [--crawl-id ID] [--since T] [--until T] ...
       simcrawl web [--host 127.0.0.1] [--port 8000] ...
       simcrawl calibrate [-o DIR] [--sample 30] ...
       simcrawl {scan,fingerprint,find-all,plan,rebuild-index,register,remove,services,
                 pinyin-reference} ...

A web crawler that drops near-duplicate pages while it crawls.

  crawl             crawl the URLs (no URL: the bundled demo site, compared with its
                    known outcome), on REDIS_URL / MONGO_URI or embedded servers
  export            stream the store's match records or pages to CSV or JSON lines
  report            one self-contained HTML file with plots (and PNG files) of the store
  web               the web console: dashboard, search, a copy beside its original,
                    registered sources, a form to register originals
  calibrate         the share of page pairs that are copies at each distance 0-12,
                    from the store, to choose k
  scan ... services the dedup library's commands (python -m dedup); VERB --help for each
"""


#: The dedup library's commands (``python -m dedup VERB``), reachable as ``simcrawl VERB``.
LIBRARY_VERBS = ("scan", "fingerprint", "find-all", "plan", "rebuild-index", "register",
                 "remove", "services", "pinyin-reference")


def main(argv: list[str] | None = None) -> int:
    """Run ``simcrawl``; returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0 if args else 2
    if args[0] == "crawl" or args[0].startswith(("http://", "https://")):
        from crawler.run import main as crawl

        return crawl(args[1:] if args[0] == "crawl" else args, prog="simcrawl crawl")
    if args[0] == "export":
        from console.export import main as export

        return export(args[1:])
    if args[0] == "report":
        from console.report import main as report

        return report(args[1:])
    if args[0] == "calibrate":
        from console.calibrate import main as calibrate

        return calibrate(args[1:])
    if args[0] == "web":
        from console.web import main as web

        return web(args[1:])
    if args[0] not in LIBRARY_VERBS:  # not a command: the crawl says what is wrong with it
        from crawler.run import main as crawl

        return crawl(args, prog="simcrawl crawl")
    from dedup.__main__ import main as dedup_main

    return dedup_main(args)


if __name__ == "__main__":
    sys.exit(main())
