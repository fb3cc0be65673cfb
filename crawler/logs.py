"""Keep third-party libraries' logging out of the crawl log unless it matters."""

from __future__ import annotations

import logging

#: Libraries whose INFO / DEBUG records drown the crawl's own (pymongo alone logs every
#: command at DEBUG): they log at WARNING and above.
THIRD_PARTY = ("pymongo", "urllib3", "trafilatura", "htmldate", "courlan", "justext",
               "readability", "charset_normalizer", "asyncio", "filelock", "hpack")


def quiet_third_party(level: int = logging.WARNING) -> None:
    """Set the third-party loggers to ``level`` (idempotent)."""
    for name in THIRD_PARTY:
        logging.getLogger(name).setLevel(level)
