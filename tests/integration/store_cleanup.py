"""Dropping a test's MongoDB database at its end, bounded.

Under a neighbour's load the embedded SecantusDB once took over 60 s to answer a
``dropDatabase`` (pymongo's ``NetworkTimeout`` at a test's teardown: an error, a red
suite, for a test whose assertions had passed). The drop is the test's cleaning, not
its outcome: it is given :data:`DROP_SECONDS`, and a stall past them is named (a
warning in the test report: the store, the database, how long) and the database left
to the session's temporary folder, which is removed with the servers."""

from __future__ import annotations

import time
import warnings

import pymongo
from pymongo.errors import PyMongoError

#: Seconds a test database's drop may take.
DROP_SECONDS = 20.0


class StoreStalled(UserWarning):
    """The embedded MongoDB did not answer a test's cleaning in time."""


def drop_test_database(client: pymongo.MongoClient, name: str) -> None:
    """Drop ``name``, within :data:`DROP_SECONDS`; a stall is warned of, not waited on."""
    started = time.monotonic()
    try:
        with pymongo.timeout(DROP_SECONDS):
            client.drop_database(name)
    except PyMongoError as exc:
        if not exc.timeout:
            raise
        warnings.warn(StoreStalled(
            f"the embedded MongoDB did not drop the test database {name!r} within "
            f"{time.monotonic() - started:.0f} s ({type(exc).__name__}); left to the "
            "session's temporary folder"), stacklevel=2)
