"""What the verbs share: running a command with one-line errors and the exit-status
table, the services options, and the fingerprint options."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from dedup.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_STATUSES,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    exit_status,
)


def store_errors() -> tuple[type[Exception], ...]:
    """What reading the crawl's store can raise that :func:`store_failure` reports."""
    from crawler.console.options import NoCrawl
    from dedup.errors import ServiceUnavailable
    from dedup.adapters.servers.embedded_limits import StoreTooLarge

    return ServiceUnavailable, NoCrawl, StoreTooLarge


#: Set by ``simcrawl --debug``: errors print their traceback too.
DEBUG = False


class InputError(Exception):
    """Bad input that the user must fix (exit status 2); printed without a traceback."""


def exit_table() -> str:
    """The exit statuses, for ``--help`` texts."""
    return "exit status: " + "; ".join(f"{code} {what}" for code, what in EXIT_STATUSES)


def parser(prog: str, description: str, **kwargs: Any) -> argparse.ArgumentParser:
    """A verb's argument parser (its usage names ``simcrawl VERB``)."""
    return argparse.ArgumentParser(prog=prog, description=description,
                                   epilog=kwargs.pop("epilog", exit_table()), **kwargs)


def run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a verb: errors end it in one line on stderr with their exit status (the
    traceback too with ``--debug``)."""
    from dedup.adapters.servers.services import DataDirError

    try:
        return int(func(args))
    except BrokenPipeError:  # `simcrawl export | head`
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (InputError, DataDirError) as exc:
        _say(exc)
        return EXIT_USAGE
    except Exception as exc:  # noqa: BLE001  (any error: one line, and the table's status)
        _say(exc)
        return exit_status(exc)


def _say(exc: BaseException) -> None:
    if DEBUG:
        traceback.print_exception(exc)
    print(f"error: {str(exc).strip() or type(exc).__name__}", file=sys.stderr)


def store_failure(exc: Exception) -> int:
    """Say in one line why a verb could not read the crawl's store; its exit status (the
    store has no crawl, or is too large for the embedded MongoDB: 1; MongoDB failed or
    cannot be reached: 3)."""
    from crawler.console.options import NoCrawl
    from dedup.adapters.servers.embedded_limits import StoreTooLarge

    print(f"error: {exc}", file=sys.stderr)
    return EXIT_FAILED if isinstance(exc, (NoCrawl, StoreTooLarge)) else EXIT_UNAVAILABLE


def check_k(parser_: argparse.ArgumentParser, k: int | None) -> None:
    """A usage error unless ``k`` is a Hamming distance the index supports (0..31)."""
    if k is not None and not 0 <= k <= 31:
        parser_.error(f"-k must be between 0 and 31, got {k}")


def service_options(p: argparse.ArgumentParser) -> None:
    """``--redis-url``, ``--mongo-uri``, ``--database``, ``--namespace``, ``--data-dir``."""
    from dedup.config import DEFAULT_DATABASE
    from dedup.adapters.servers.services import DEFAULT_DATA_DIR

    g = p.add_argument_group("services (default: $REDIS_URL / $MONGO_URI, else embedded)")
    g.add_argument("--redis-url", help="Redis URL (default: $REDIS_URL)")
    g.add_argument("--mongo-uri", help="MongoDB URI (default: $MONGO_URI)")
    g.add_argument("--database", default=DEFAULT_DATABASE,
                   help=f"MongoDB database (default {DEFAULT_DATABASE})")
    g.add_argument("--namespace", default=None,
                   help="Redis key prefix of the index (default: the database's own: "
                   "simcrawl for simcrawl, demo for simcrawl_demo, else the database's name)")
    g.add_argument("--data-dir", default=None,
                   help=f"embedded servers' data folder (default $SIMCRAWL_DATA or "
                   f"./{DEFAULT_DATA_DIR})")


def connect(args: argparse.Namespace, op_timeout: float | None = 60.0
            ) -> tuple[Any, Any, Any]:
    """Connect to Redis and MongoDB (or start the embedded servers): returns
    ``(redis client, page store, embedded services or None)``."""
    from dedup.config import namespace_of
    from dedup.errors import redact
    from dedup.adapters.servers.services import connect_mongo, connect_redis, resolve
    from dedup.adapters.mongo import PageStore

    try:  # the database's own index unless one is named
        args.namespace = namespace_of(args.database, args.namespace)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    redis_url, mongo_uri, services = resolve(args.redis_url, args.mongo_uri, args.data_dir)
    try:
        client = connect_redis(redis_url)
        pages = PageStore(connect_mongo(mongo_uri, op_timeout=op_timeout), args.database,
                          redact(mongo_uri))
    except BaseException:
        if services is not None:
            services.stop()
        raise
    return client, pages, services


def fingerprint_options(p: argparse.ArgumentParser) -> None:
    """How files are read and fingerprinted (the crawl's defaults)."""
    from dedup.config import DedupConfig
    from dedup.files import MAX_BYTES

    crawl = DedupConfig()
    p.add_argument("--max-size", type=float, default=MAX_BYTES / 1e6, metavar="MB",
                   help=f"skip files larger than this (default {MAX_BYTES / 1e6:.0f} MB); "
                   "binary files and data files (.json, .csv, ...) are skipped too, "
                   "each listed with its reason")
    p.add_argument("--shingle", type=int, default=crawl.shingle,
                   help=f"tokens per feature (default {crawl.shingle}, the crawl's)")
    p.add_argument("--drop-numbers", dest="drop_numbers", action="store_true",
                   default=crawl.drop_numbers,
                   help="leave number-only tokens (counters, dates) out of the features "
                   "(default: keep them, as the crawl does: DEDUP_DROP_NUMBERS)")
    p.add_argument("--keep-numbers", dest="drop_numbers", action="store_false",
                   help="keep number-only tokens (the default)")
    p.add_argument("--min-tokens", type=int, default=crawl.min_tokens,
                   help="texts with fewer tokens are matched by checksum only "
                        f"(default {crawl.min_tokens})")


def iter_files(paths: list[Path]) -> Iterator[Path]:
    """The files under ``paths`` (:func:`dedup.files.iter_files`); a missing path is an
    :class:`InputError`."""
    from dedup.files import iter_files as files

    try:
        yield from files(paths)
    except FileNotFoundError as exc:
        raise InputError(str(exc)) from None


def documents(files: list[Path], max_mb: float, skipped: list[tuple[Path, str]]
              ) -> Iterator[tuple[Path, str, str]]:
    """``(path, text, method)`` of each file that is a document; the others go to
    ``skipped`` with their reason (binary, too big, not text, unreadable)."""
    from dedup.files import SkipFile, read_document

    for path in files:
        try:
            text, method = read_document(path, int(max_mb * 1e6))
        except SkipFile as exc:
            skipped.append((path, str(exc)))
            continue
        except OSError as exc:
            skipped.append((path, f"unreadable: {exc.strerror or exc}"))
            continue
        yield path, text, method


def engine_options(p: argparse.ArgumentParser, local: str) -> None:
    """``--engine local|spark`` and the Spark engine's ``--master``, ``--stage``,
    ``--spark-conf`` (``local``: what the in-process engine is, for the help)."""
    from dedup.spark.session import DEFAULT_MASTER

    g = p.add_argument_group("engine")
    g.add_argument("--engine", choices=["local", "spark"], default="local",
                   help=f"local: {local} (default); spark: a Spark job")
    g.add_argument("--master", default=DEFAULT_MASTER,
                   help=f"Spark master: local[N], local[*] or spark://HOST:7077 (default "
                   f"{DEFAULT_MASTER})")
    g.add_argument("--stage", metavar="DIR",
                   help="folder for the data handed to Spark as Parquet (default: a "
                   "temporary folder; on a cluster of other machines, a folder every "
                   "executor can read)")
    g.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                   help="a Spark setting, e.g. spark.driver.host=HOST or "
                   "spark.executor.memory=8g (repeatable)")


def check_engine_options(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A usage error for Spark options without ``--engine spark`` or a bad
    ``--spark-conf``; ``args.spark_conf`` becomes a dict."""
    from dedup.spark.session import DEFAULT_MASTER, parse_conf

    if args.engine == "local" and (args.master != DEFAULT_MASTER or args.stage
                                   or args.spark_conf):
        p.error("--master, --stage and --spark-conf are options of --engine spark")
    try:
        args.spark_conf = parse_conf(args.spark_conf)
    except ValueError as exc:
        p.error(str(exc))


def open_spark(args: argparse.Namespace, stack: Any, app: str) -> tuple[Any, Path]:
    """Start Spark on ``args.master`` (stopped when ``stack`` closes) and a staging folder
    (``--stage``, else a temporary one removed with ``stack``).

    Raises:
        InputError: Spark cannot start here (pyspark or Java missing: the message says
            what to install).
    """
    import tempfile

    from dedup.spark import session

    try:
        spark = session.start(args.master, app=app, conf=args.spark_conf)
    except session.SparkUnavailable as exc:
        raise InputError(str(exc)) from None
    stack.callback(spark.stop)
    folder = Path(args.stage) if args.stage else \
        Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="simcrawl-stage-")))
    return spark, folder


__all__ = ["EXIT_FAILED", "InputError", "check_engine_options", "check_k", "connect",
           "documents", "engine_options", "exit_table", "fingerprint_options", "iter_files",
           "open_spark", "parser", "run", "service_options"]
