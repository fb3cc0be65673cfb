"""What every console command shares: the records' filters (crawl id, time range) and the
store's options and connection (``--mongo-uri``, ``--database``, ``--data-dir``; the
embedded MongoDB when no URI is given)."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dedup.config import DEMO_DATABASE
from dedup.store.reads import StoreReads


def iso_time(text: str) -> dt.datetime:
    """An ISO date or time from the command line (UTC unless it says otherwise)."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO date or time: {text!r} (e.g. 2026-11-23 or 2026-11-23T14:00)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)




def add_options(parser: argparse.ArgumentParser, redis: bool = False) -> None:
    """``--crawl-id``, ``--since``, ``--until`` and the store's options (with ``redis``:
    ``--redis-url`` and ``--namespace`` too)."""
    parser.add_argument("--crawl-id", help="only this crawl's records (its id is in the "
                        "crawl's log and in every record's crawl_id / crawl_ids)")
    parser.add_argument("--since", type=iso_time, help="only records from this time on (ISO "
                        "date or time, UTC unless it says otherwise)")
    parser.add_argument("--until", type=iso_time, help="only records before this time")
    add_service_options(parser, redis)


def add_service_options(parser: argparse.ArgumentParser, redis: bool = False) -> None:
    """The store's options: ``--mongo-uri``, ``--database``, ``--data-dir`` (with
    ``redis``: ``--redis-url`` and ``--namespace`` too)."""
    from dedup.adapters.index import DEFAULT_NAMESPACE
    from dedup.config import DEFAULT_DATABASE
    from dedup.adapters.servers.services import DEFAULT_DATA_DIR

    g = parser.add_argument_group("services (default: $MONGO_URI" +
                                  (" / $REDIS_URL" if redis else "") + ", else embedded)")
    g.add_argument("--mongo-uri", help="MongoDB URI (default: $MONGO_URI)")
    if redis:
        g.add_argument("--redis-url", help="Redis URL (default: $REDIS_URL)")
        g.add_argument("--namespace", default=None,
                       help=f"Redis key prefix of the crawl's index (default: the "
                       f"database's own: {DEFAULT_NAMESPACE} for {DEFAULT_DATABASE}, 'demo' "
                       "for the demo's, else the database's name)")
    g.add_argument("--database", default=None,
                   help=f"MongoDB database (default {DEFAULT_DATABASE}; when that one holds "
                   f"no pages and the demo's {DEMO_DATABASE} does, the demo's)")
    g.add_argument("--data-dir", default=None, help=f"embedded servers' data folder "
                   f"(default $SIMCRAWL_DATA or ./{DEFAULT_DATA_DIR})")


def holds_crawl(reads: StoreReads) -> bool:
    """Whether the database holds a crawl (:meth:`dedup.store.reads.StoreReads.holds_crawl`:
    registered originals alone are not one)."""
    return reads.holds_crawl()


def choose_database(client: Any, name: str | None, say: bool = True) -> StoreReads:
    """The reads of the database the store's verbs read, chosen one way for all of them:
    the one named (``--database``), else ``simcrawl``, unless it holds no crawl
    (:func:`holds_crawl`: registered originals alone are not one) and the demo's
    ``simcrawl_demo`` does. With ``say``, one line on stderr names the database read and
    why."""
    from dedup.config import DEFAULT_DATABASE
    from dedup.adapters.mongo.reads import MongoReads

    if name:
        reads, why = MongoReads(client[name]), "--database"
    else:
        reads, why = MongoReads(client[DEFAULT_DATABASE]), "the default"
        if not reads.holds_crawl():
            demo = MongoReads(client[DEMO_DATABASE])
            if demo.holds_crawl():
                reads, why = demo, (f"{DEFAULT_DATABASE!r} holds no crawl, the demo's "
                                    "does; --database to choose")
    if say:
        print(f"simcrawl: database {reads.name!r} ({why})", file=sys.stderr)
    return reads


class NoCrawl(LookupError):
    """The database holds no crawl: no pages and no match records."""


def require_crawl(reads: StoreReads) -> StoreReads:
    """``reads``, when its database holds a crawl (pages or match records).

    Raises:
        NoCrawl: it holds neither (a mistyped ``--database``, or nothing crawled yet).
    """
    if not reads.has_records():
        raise NoCrawl(f"the database {reads.name!r} holds no crawl (no pages or match "
                      "records): crawl first, or name the crawl's database with --database")
    return reads


@contextlib.contextmanager
def open_database(args: argparse.Namespace, whole: tuple[str, ...] = (),
                  verb: str = "simcrawl") -> Iterator[StoreReads]:
    """The reads of the database the options name (see :func:`choose_database`), holding a crawl; the
    embedded MongoDB is started (and stopped after) when neither ``--mongo-uri`` nor
    ``$MONGO_URI`` is given. ``whole``: the collections the verb reads whole, checked
    first against what the embedded MongoDB can serve
    (:func:`dedup.adapters.servers.embedded_limits.check_whole_read`).

    Raises:
        ServiceUnavailable: MongoDB cannot be reached.
        NoCrawl: the database holds no crawl.
        StoreTooLarge: the embedded MongoDB cannot read the collections whole here.
    """
    from dedup.adapters.servers.embedded_limits import check_whole_read
    from dedup.adapters.servers.services import connect_mongo, data_folder, resolve

    folder = Path(data_folder(args.data_dir))
    new = not args.mongo_uri and not os.environ.get("MONGO_URI") and not folder.exists()
    _, uri, services = resolve(None, args.mongo_uri, args.data_dir, redis=False)
    try:
        try:
            reads = require_crawl(choose_database(connect_mongo(uri), args.database))
        except NoCrawl as exc:
            if services is None:
                raise
            # the embedded servers' folder is relative: a verb run from another folder
            # reads another (new, empty) one
            raise NoCrawl(f"{exc}. It was read in the embedded servers' data folder "
                          f"{services.data_dir}" + (
                              ", made now: none was there (run from the folder the crawl "
                              "ran in, or give --data-dir or $SIMCRAWL_DATA)" if new
                              else "")) from None
        check_whole_read(reads, whole, verb)
        yield reads
    finally:
        if services is not None:
            services.stop()
