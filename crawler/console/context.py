"""What the console's views share (:class:`Console`), kept in the application by
:func:`crawler.console.app.create_app` and read by each view through :func:`console`."""

from __future__ import annotations

import hmac
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flask import current_app, request, session

if TYPE_CHECKING:
    from crawler.console.figures import FigureCache
    from dedup.store.reads import StoreReads


@dataclass
class Console:
    """What the console's views share, kept in ``app.extensions["simcrawl"]``
    (:func:`console`): the store's reads and the register form's writes, the crawl's Redis
    and namespace, the figures, the token and the signed-in sessions."""

    reads: StoreReads
    store: Any
    figures: FigureCache
    redis_client: Any = None
    namespace: str | None = None
    token: str | None = None
    uploads: Path | None = None
    # signed-in sessions, by a random id given at sign-in: a session cookie is signed, not
    # secret-bound, so signing out must make the old cookie worthless on the server too
    sessions: set[str] = field(default_factory=set)
    sessions_lock: threading.Lock = field(default_factory=threading.Lock)

    def authorised(self) -> bool:
        """Whether the request carries the token (no token: every request does)."""
        if self.token is None:
            return True
        header = request.headers.get("Authorization", "")
        if header.startswith("Bearer ") and hmac.compare_digest(
                header[7:].strip().encode(), self.token.encode()):
            return True
        with self.sessions_lock:
            return str(session.get("auth", "")) in self.sessions


def console() -> Console:
    """The running application's :class:`Console`."""
    return current_app.extensions["simcrawl"]  # type: ignore[no-any-return]
