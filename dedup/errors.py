"""Errors that name what the user must fix."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


class ServiceUnavailable(ConnectionError):
    """Redis or MongoDB could not be reached, or dropped the connection.

    The message names the server (without credentials) and what to do. Nothing was
    decided: an index call that raises this admitted nothing and dropped nothing.

    Attributes:
        service: ``"Redis"`` or ``"MongoDB"``: which one failed (``""``: not said).
    """

    def __init__(self, message: str, service: str = "") -> None:
        super().__init__(message)
        self.service = service


def redact(url: str) -> str:
    """A service URL without its password, for messages and logs.

    >>> redact("redis://:secret@db.example:6379/0")
    'redis://:***@db.example:6379/0'
    >>> redact("mongodb://alice:pw@127.0.0.1:27017/crawl")
    'mongodb://alice:***@127.0.0.1:27017/crawl'
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


#: The exit statuses of every simcrawl command (``simcrawl --help`` and docs/commands.md print
#: this table): ``(status, meaning)``.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNAVAILABLE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_STATUSES = (
    (EXIT_OK, "done"),
    (EXIT_FAILED, ("the work failed: a crawl lost pages, fetched none of its start URLs, "
                   "could not start or stopped on a full disk (DEDUP_DISK_FULL=stop); an archive's record could not be read; something "
                   "asked for was not found")),
    (EXIT_USAGE, "bad usage: an unknown command, a bad option, setting, URL or input file"),
    (EXIT_UNAVAILABLE, "Redis or MongoDB cannot be reached"),
    (EXIT_INTERRUPTED, ("interrupted (Ctrl-C); a crawl forced out by a second signal before "
                        "it closed")),
)


def exit_status(exc: BaseException) -> int:
    """The exit status for an error that ends a command (see :data:`EXIT_STATUSES`):
    a service that cannot be reached, bad usage (``ValueError``: a bad setting or value),
    an interruption, anything else."""
    if isinstance(exc, ServiceUnavailable):
        return EXIT_UNAVAILABLE
    if isinstance(exc, ValueError):
        return EXIT_USAGE
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_FAILED
