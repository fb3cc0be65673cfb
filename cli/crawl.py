"""``simcrawl crawl [URL ...]``: crawl the URLs (no URL: the bundled demo site); the
options and the work: :mod:`crawler.run`."""

from __future__ import annotations

HELP = "crawl the URLs (no URL: the bundled demo site, compared with its known outcome)"


def main(argv: list[str], prog: str = "simcrawl crawl") -> int:
    from crawler.run import main as crawl

    return crawl(argv, prog=prog)
