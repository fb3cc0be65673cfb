"""Every ``DEDUP_*`` and ``SIMCRAWL_*`` name simcrawl reads, in one place: how each is read,
its type, its default, and the one reader of those values.

The ``DEDUP_*`` settings of the decision are the fields of :class:`dedup.config.DedupConfig`
(read with :meth:`~dedup.config.DedupConfig.from_settings`); every other name is declared
below, once (:class:`Declared`), and read with :func:`value`: a Scrapy setting, the
environment, or either (a setting first), converted to its type, else its default. No
module reads one of these names by itself (``tests/unit/test_settings_registry.py``
holds it), so a name means the same under the add-on, under ``./simcrawl`` and in every
process, and its default is written once.

A mistyped setting (``-s DEDUP_MAX_DISTANC=3``) did nothing and said nothing.
:func:`dedup.config.unknown` says, for the names a crawl was given, which do nothing and
which known name each is closest to; the crawl logs it (:func:`crawler.wiring.parts_of`) and
``simcrawl crawl`` prints it before it starts. tests/unit/test_docs.py holds the registry
and docs/settings.md together: every name here is documented. This module imports nothing
of simcrawl's, so that any module can read its names (the kernels' at import).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: How a name is read.
SETTING, ENVIRONMENT, EITHER = "a Scrapy setting", "the environment", "either"


@dataclass(frozen=True)
class Declared:
    """A name simcrawl reads (docs/settings.md says what each does).

    Attributes:
        how: :data:`SETTING`, :data:`ENVIRONMENT` or :data:`EITHER` (a setting first).
        kind: ``bool``, ``int``, ``float`` or ``str`` (converted by :func:`convert`), or
            ``raw`` (handed on as given: its reader parses it and names what is wrong).
        default: its value when it is given neither way.
    """

    how: str
    kind: str = "str"
    default: Any = ""


#: ``DEDUP_*`` settings beside :class:`dedup.config.DedupConfig`'s fields.
OTHER_DEDUP = {
    "DEDUP_SUMMARY_FILE": Declared(SETTING),  # the crawl's summary as JSON, at its end
    "DEDUP_CRAWL_ID": Declared(SETTING),  # the crawl's id ("": a new one)
    "DEDUP_WARC_DIR": Declared(SETTING),  # write the crawl as WARC files there
    "DEDUP_WARC_FILE_BYTES": Declared(SETTING, "int", 1 << 30),  # a file's size (1 GiB)
    "DEDUP_WARC_NEAR": Declared(SETTING, "str", "response"),  # what a near copy keeps
    "DEDUP_WARC_DIGESTS": Declared(SETTING, "str", "decide"),  # a record failing its digest
    "DEDUP_WARC_KEEP": Declared(SETTING, "str", "all"),  # simcrawl warc --warc: other records
}

#: ``SIMCRAWL_*`` names.
SIMCRAWL = {
    "SIMCRAWL_FRONTIER": Declared(EITHER, "str", "memory"),
    # seconds with nothing queued or in flight anywhere before a shared crawl ends
    "SIMCRAWL_IDLE_SECONDS": Declared(EITHER, "float", 1.0),
    "SIMCRAWL_KEEP_WAITING": Declared(SETTING, "bool", False),
    "SIMCRAWL_METRICS_PORT": Declared(EITHER, "raw", 0),
    "SIMCRAWL_METRICS_ADDRESS": Declared(EITHER, "str", "127.0.0.1"),
    "SIMCRAWL_ROBOTS_RETRIES": Declared(EITHER, "int", 3),
    "SIMCRAWL_ROBOTS_RETRY_SECONDS": Declared(EITHER, "float", 1.0),
    # links followed from one page at most (0: no cap)
    "SIMCRAWL_MAX_OUTLINKS": Declared(SETTING, "int", 10_000),
    "SIMCRAWL_INCLUDE": Declared(SETTING, "raw", None),
    "SIMCRAWL_EXCLUDE": Declared(SETTING, "raw", None),
    "SIMCRAWL_SITEMAPS": Declared(SETTING, "bool", False),
    # seconds the crawl processes have, after the first Ctrl-C or SIGTERM, to finish or
    # put back what is in flight and store what they decided; then they are forced out
    # (Scrapy's second signal), and killed 10 s later (crawler.run.stop_seconds parses it)
    "SIMCRAWL_STOP_SECONDS": Declared(EITHER, "raw", 30.0),
    "SIMCRAWL_ALLOWED_PORTS": Declared(SETTING, "raw", ""),
    "SIMCRAWL_PROGRESS_FILE": Declared(SETTING),
    # seconds between two writes of a crawl process's counters to its progress file
    "SIMCRAWL_PROGRESS_SECONDS": Declared(EITHER, "float", 2.0),
    # seconds between two plain progress lines of ./simcrawl when it writes to no terminal
    "SIMCRAWL_PROGRESS_LINE_SECONDS": Declared(ENVIRONMENT, "float", 10.0),
    # seconds between two updates of a running crawl's ``crawls`` record (0 turns them
    # off: the record is written at the end only)
    "SIMCRAWL_RECORD_SECONDS": Declared(SETTING, "float", 5.0),
    "SIMCRAWL_THROTTLE_SCRAPY_RULE": Declared(SETTING, "bool", False),
    # the crawl process's threshold for the garbage collector's youngest generation
    # (Python's is 700 allocations). At Python's, a crawl of a thousand real pages ran 800
    # collections, four of them full ones of 70-100 ms over every object alive (Scrapy's
    # queued requests, the libraries): half a second of the crawl process, during which
    # nothing else moves. A page's work leaves almost no cyclic garbage
    # (tests/unit/test_extraction.py), so the crawl's memory is the same at 50,000.
    "SIMCRAWL_GC_THRESHOLD": Declared(SETTING, "int", 50_000),
    "SIMCRAWL_DATA": Declared(ENVIRONMENT),  # unset: dedup.config.DEFAULT_DATA_DIR
    "SIMCRAWL_LOG_LEVEL": Declared(ENVIRONMENT, "str", "INFO"),
    "SIMCRAWL_USER_AGENT": Declared(ENVIRONMENT, "str",
                                    "simcrawl/0.1 (+https://github.com/simcrawl/simcrawl)"),
    "SIMCRAWL_MAX_BODY": Declared(ENVIRONMENT, "int", 5 * 1024 * 1024),
    "SIMCRAWL_DEPTH_LIMIT": Declared(ENVIRONMENT, "int", 5),
    "SIMCRAWL_REDIS_SERVER": Declared(ENVIRONMENT),
    "SIMCRAWL_EMBEDDED_MEMORY": Declared(ENVIRONMENT),
    "SIMCRAWL_PURE_PYTHON": Declared(ENVIRONMENT, "raw", ""),  # set, but "0": on
    "SIMCRAWL_WEB_TOKEN": Declared(ENVIRONMENT),
    "SIMCRAWL_WEB_SECRET": Declared(ENVIRONMENT),
    # the two commands' installer (scripts/bootstrap.sh) and ./simcrawl's own hints
    "SIMCRAWL_EXTRAS": Declared(ENVIRONMENT),
    "SIMCRAWL_VENV": Declared(ENVIRONMENT),
    "SIMCRAWL_REQUIRE_KERNELS": Declared(ENVIRONMENT),
    "SIMCRAWL_COMMAND": Declared(ENVIRONMENT),
    # ./run-tests: how many processes run the suite
    "SIMCRAWL_TEST_WORKERS": Declared(ENVIRONMENT),
}

DECLARED = {**OTHER_DEDUP, **SIMCRAWL}


def value(name: str, get: Callable[[str, Any], Any] | None = None) -> Any:
    """The value of a declared name: the Scrapy setting (``get``: ``settings.get``), when
    it is read as one and given, else the environment's, when it is read from there and
    set, converted to its type; else its default.

    Raises:
        KeyError: a name not declared here.
        ValueError: a value that is not of its type (the message names the setting).
    """
    declared = DECLARED[name]
    raw = get(name, None) if get is not None and declared.how != ENVIRONMENT else None
    if (raw is None or raw == "") and declared.how != SETTING:
        raw = os.environ.get(name)
    if raw is None or raw == "":
        return declared.default
    return raw if declared.kind == "raw" else convert(name, raw, declared.kind)


def default(name: str) -> Any:
    """A declared name's default (what :func:`value` gives when it is not set)."""
    return DECLARED[name].default


def convert(name: str, raw: Any, kind: Any) -> Any:
    """``raw`` (a setting's value: a string from ``-s`` or the environment, or a Python
    value from a project's settings) as ``kind`` (``bool``, ``int``, ``float``, else a
    string).

    Raises:
        ValueError: naming the setting and what it must be.
    """
    kind = str(kind)
    try:
        if kind == "bool":
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError
        if kind == "int":
            if isinstance(raw, float) and not raw.is_integer():
                raise ValueError
            return int(raw)
        if kind == "float":
            return float(raw)
        return str(raw)
    except (TypeError, ValueError):
        what = {"bool": "true or false", "int": "an integer", "float": "a number"}.get(
            kind, "a string")
        raise ValueError(f"{name} must be {what}, got {raw!r}") from None


#: Families of names that tools around the crawl set (the benchmarks' peers' folders).
FAMILIES = ("SIMCRAWL_BENCH_",)

#: The prefixes a name of simcrawl's has.
PREFIXES = ("DEDUP_", "SIMCRAWL_")
