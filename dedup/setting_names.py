"""Every ``DEDUP_*`` and ``SIMCRAWL_*`` name simcrawl reads, in one place, and the warning
for a name it does not know.

A mistyped setting (``-s DEDUP_MAX_DISTANC=3``) did nothing and said nothing. The names are
the fields of :class:`dedup.config.DedupConfig` (``DEDUP_*``, Scrapy settings), the few
other ``DEDUP_*`` settings below, and the ``SIMCRAWL_*`` names below, each read as a Scrapy
setting, from the environment, or either. :func:`unknown` says, for the names a crawl was
given, which do nothing and which known name each is closest to; the crawl logs it
(:func:`crawler.wiring.parts_of`) and ``simcrawl crawl`` prints it before it starts.
tests/unit/test_docs.py holds the registry, the code and docs/settings.md together: every
name the code reads is here, and every name here is documented.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

#: How a name is read.
SETTING, ENVIRONMENT, EITHER = "a Scrapy setting", "the environment", "either"

#: ``DEDUP_*`` settings beside :class:`dedup.config.DedupConfig`'s fields.
OTHER_DEDUP = {
    "DEDUP_SUMMARY_FILE": SETTING,  # the crawl's summary as JSON, at its end
    "DEDUP_CRAWL_ID": SETTING,  # the crawl's id (default: a new one)
    "DEDUP_WARC_DIR": SETTING,  # write the crawl as WARC files there (crawler/warc.py)
    "DEDUP_WARC_FILE_BYTES": SETTING,
    "DEDUP_WARC_NEAR": SETTING,
    "DEDUP_WARC_DIGESTS": SETTING,
    "DEDUP_WARC_KEEP": SETTING,  # simcrawl warc --warc: the files' other records kept too  # a record that fails its digest: decide, skip, raise
}

#: ``SIMCRAWL_*`` names and how each is read (docs/settings.md says what each does).
SIMCRAWL = {
    "SIMCRAWL_FRONTIER": EITHER,
    "SIMCRAWL_IDLE_SECONDS": EITHER,
    "SIMCRAWL_KEEP_WAITING": SETTING,
    "SIMCRAWL_METRICS_PORT": EITHER,
    "SIMCRAWL_METRICS_ADDRESS": EITHER,
    "SIMCRAWL_ROBOTS_RETRIES": EITHER,
    "SIMCRAWL_ROBOTS_RETRY_SECONDS": EITHER,
    "SIMCRAWL_MAX_OUTLINKS": SETTING,
    "SIMCRAWL_INCLUDE": SETTING,
    "SIMCRAWL_EXCLUDE": SETTING,
    "SIMCRAWL_SITEMAPS": SETTING,
    "SIMCRAWL_STOP_SECONDS": EITHER,
    "SIMCRAWL_ALLOWED_PORTS": SETTING,
    "SIMCRAWL_PROGRESS_FILE": SETTING,
    "SIMCRAWL_PROGRESS_SECONDS": EITHER,
    "SIMCRAWL_RECORD_SECONDS": SETTING,
    "SIMCRAWL_THROTTLE_SCRAPY_RULE": SETTING,
    "SIMCRAWL_GC_THRESHOLD": SETTING,
    "SIMCRAWL_DATA": ENVIRONMENT,
    "SIMCRAWL_LOG_LEVEL": ENVIRONMENT,
    "SIMCRAWL_USER_AGENT": ENVIRONMENT,
    "SIMCRAWL_MAX_BODY": ENVIRONMENT,
    "SIMCRAWL_DEPTH_LIMIT": ENVIRONMENT,
    "SIMCRAWL_REDIS_SERVER": ENVIRONMENT,
    "SIMCRAWL_EMBEDDED_MEMORY": ENVIRONMENT,
    "SIMCRAWL_PURE_PYTHON": ENVIRONMENT,
    "SIMCRAWL_WEB_TOKEN": ENVIRONMENT,
    "SIMCRAWL_WEB_SECRET": ENVIRONMENT,
    # the two commands' installer (scripts/bootstrap.sh) and ./simcrawl's own hints
    "SIMCRAWL_EXTRAS": ENVIRONMENT,
    "SIMCRAWL_VENV": ENVIRONMENT,
    "SIMCRAWL_REQUIRE_KERNELS": ENVIRONMENT,
    "SIMCRAWL_COMMAND": ENVIRONMENT,
}

#: Families of names that tools around the crawl set (the benchmarks' peers' folders).
FAMILIES = ("SIMCRAWL_BENCH_",)

#: The prefixes a name of simcrawl's has.
PREFIXES = ("DEDUP_", "SIMCRAWL_")


def known() -> dict[str, str]:
    """Every name simcrawl reads and how it is read (:data:`SETTING`, :data:`ENVIRONMENT`
    or :data:`EITHER`)."""
    from dedup.config import _SETTING

    names = {name: SETTING for name in _SETTING.values() if name.startswith(PREFIXES)}
    return {**names, **OTHER_DEDUP, **SIMCRAWL}


def unknown(names: Iterable[str], read_as: str) -> list[str]:
    """For the ``DEDUP_*`` / ``SIMCRAWL_*`` names among ``names``, given as ``read_as``
    (:data:`SETTING`: ``-s`` or a project's settings; :data:`ENVIRONMENT`), a line for
    each that does nothing: one simcrawl does not know (with the closest known name), or
    one it reads the other way only."""
    table = known()
    out = []
    for name in sorted(set(names)):
        if not name.startswith(PREFIXES) or name.startswith(FAMILIES):
            continue
        how = table.get(name)
        if how is None:
            near = difflib.get_close_matches(name, table, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]}?" if near else ""
            out.append(f"{name} is not a simcrawl setting and does nothing{hint}")
        elif how not in (EITHER, read_as):
            if read_as == SETTING:
                out.append(f"{name} is read from the environment only: as a setting it does "
                           f"nothing (set it in the environment: {name}=... ./simcrawl ...)")
            else:
                out.append(f"{name} is a Scrapy setting, not read from the environment: it "
                           f"does nothing there (-s {name}=... or the project's settings)")
    return out
