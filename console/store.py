"""What every console command shares: the records' filters (crawl id, time range) and the
store's options and connection (``--mongo-uri``, ``--database``, ``--data-dir``; the
embedded MongoDB when no URI is given)."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
from collections.abc import Iterator
from typing import Any


def iso_time(text: str) -> dt.datetime:
    """An ISO date or time from the command line (UTC unless it says otherwise)."""
    try:
        value = dt.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an ISO date or time: {text!r} (e.g. 2026-11-23 or 2026-11-23T14:00)"
        ) from None
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--crawl-id``, ``--since``, ``--until`` and the store's options."""
    from dedup.services import DEFAULT_DATA_DIR
    from dedup.store import DEFAULT_DATABASE

    parser.add_argument("--crawl-id", help="only this crawl's records (its id is in the "
                        "crawl's log and in every record's crawl_id / crawl_ids)")
    parser.add_argument("--since", type=iso_time, help="only records from this time on (ISO "
                        "date or time, UTC unless it says otherwise)")
    parser.add_argument("--until", type=iso_time, help="only records before this time")
    g = parser.add_argument_group("services (default: $MONGO_URI, else embedded)")
    g.add_argument("--mongo-uri", help="MongoDB URI (default: $MONGO_URI)")
    g.add_argument("--database", default=DEFAULT_DATABASE,
                   help=f"MongoDB database (default {DEFAULT_DATABASE})")
    g.add_argument("--data-dir", default=None, help=f"embedded servers' data folder "
                   f"(default $SIMCRAWL_DATA or ./{DEFAULT_DATA_DIR})")


@contextlib.contextmanager
def open_database(args: argparse.Namespace) -> Iterator[Any]:
    """The database the options name; the embedded MongoDB is started (and stopped after)
    when neither ``--mongo-uri`` nor ``$MONGO_URI`` is given.

    Raises:
        ServiceUnavailable: MongoDB cannot be reached.
    """
    from dedup.services import DEFAULT_DATA_DIR, EmbeddedServices, connect_mongo

    services = None
    try:
        uri = args.mongo_uri or os.environ.get("MONGO_URI")
        if not uri:
            folder = args.data_dir or os.environ.get("SIMCRAWL_DATA") or DEFAULT_DATA_DIR
            services = EmbeddedServices(folder, redis=False).start()
            uri = services.mongo_uri
        yield connect_mongo(uri or "")[args.database]
    finally:
        if services is not None:
            services.stop()
