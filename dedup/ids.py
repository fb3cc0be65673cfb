"""A page's identities: its id (24 hex digits laid out as a MongoDB ``ObjectId``, also its
``_id`` there) and its URL's canonical form, the key of a page across crawls."""

from __future__ import annotations

import itertools
import os
import threading
import time

from w3lib.url import canonicalize_url

#: Five random bytes per process, and a counter from a random start (an ObjectId's layout).
_PROCESS = (os.urandom(5), os.getpid())
_COUNTER = itertools.count(int.from_bytes(os.urandom(3), "big"))
_LOCK = threading.Lock()


def url_key(url: str) -> str:
    """A page's identity across crawls: its URL in canonical form (w3lib: query arguments
    sorted, percent-encoding normalised, the host in lower case, the fragment dropped),
    kept as ``url_key`` beside ``url``.

    >>> url_key("http://Example.com/a?y=2&x=1#top")
    'http://example.com/a?x=1&y=2'
    """
    return canonicalize_url(url)


def new_page_id() -> str:
    """A fresh page id: 24 hex digits as an ``ObjectId`` lays them out (seconds since the
    epoch, 5 random bytes per process, a 3-byte counter), so MongoDB stores it as one and
    ids sort by creation time; made here so the core needs no MongoDB library.

    >>> a, b = new_page_id(), new_page_id()
    >>> len(a), a != b, int(a[:8], 16) <= int(time.time())
    (24, True, True)
    """
    global _PROCESS
    if _PROCESS[1] != os.getpid():  # a forked process gets bytes of its own
        _PROCESS = (os.urandom(5), os.getpid())
    with _LOCK:
        count = next(_COUNTER) & 0xFFFFFF
    return f"{int(time.time()) & 0xFFFFFFFF:08x}{_PROCESS[0].hex()}{count:06x}"
