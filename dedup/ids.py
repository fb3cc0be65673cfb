"""A page's identities: its id (an ``ObjectId`` as 24 hex digits, also its ``_id`` in
MongoDB) and its URL's canonical form, the key of a page across crawls."""

from __future__ import annotations

from bson import ObjectId
from w3lib.url import canonicalize_url


def url_key(url: str) -> str:
    """A page's identity across crawls: its URL in canonical form (w3lib: query arguments
    sorted, percent-encoding normalised, the host in lower case, the fragment dropped),
    kept as ``url_key`` beside ``url``.

    >>> url_key("http://Example.com/a?y=2&x=1#top")
    'http://example.com/a?x=1&y=2'
    """
    return canonicalize_url(url)


def new_page_id() -> str:
    """A fresh page id (an ``ObjectId``, as hex)."""
    return str(ObjectId())
