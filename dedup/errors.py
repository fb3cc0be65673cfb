"""Errors that name what the user must fix."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


class ServiceUnavailable(ConnectionError):
    """Redis or MongoDB could not be reached, or dropped the connection.

    The message names the server (without credentials) and what to do. Nothing was
    decided: an index call that raises this admitted nothing and dropped nothing.
    """


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
