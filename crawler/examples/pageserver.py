"""Serve fixed pages on loopback for crawls of the development pages (tests and
benchmarks): each URL's body as given, and what was asked, in order."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def serve(pages: dict[str, bytes], port: int,
          fallback: Callable[[str], bytes | None] | None = None
          ) -> tuple[ThreadingHTTPServer, list[str]]:
    """Serve ``pages`` (URL -> body) on 0.0.0.0:``port``; a URL not among them gets
    ``fallback(path)`` when that gives a body, else a 404. Returns the server and the URLs
    asked, in order."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = f"http://{self.headers['Host']}{self.path}"
            asked.append(url)
            body = pages.get(url)
            if body is None and fallback is not None:
                body = fallback(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(body or b"not here")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("0.0.0.0", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, asked
