"""A progress line for long commands (rebuild-index, register): counts, rate and time
left, redrawn in place on a terminal and printed every few seconds otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Report progress of ``total`` steps to a stream (stderr by default).

    Args:
        label: what is being done, e.g. ``"rebuild-index"``.
        total: the expected number of steps (``None`` if unknown).
        stream: where to write.
        every: seconds between lines when the stream is not a terminal.

    Use as a callable: ``progress(n)`` adds ``n`` steps; :meth:`close` prints the final
    line.
    """

    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None,
                 every: float = 5.0) -> None:
        self.label, self.total = label, total
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = 0.2 if self.tty else every
        self.done = 0
        self.start = self._last = time.monotonic()

    def line(self) -> str:
        """The current progress text."""
        elapsed = max(time.monotonic() - self.start, 1e-9)
        rate = self.done / elapsed
        text = f"{self.label}: {self.done:,}"
        if self.total:
            share = min(self.done / self.total, 1.0)
            width = 24
            bar = "#" * int(share * width) + "-" * (width - int(share * width))
            left = (self.total - self.done) / rate if rate > 0 else 0.0
            text += f" / {self.total:,} [{bar}] {share:6.1%}  ETA {left:5.0f} s"
        return text + f"  {rate:,.0f}/s  {elapsed:.1f} s"

    def __call__(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self._write(self.line())

    def _write(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r" + text + "\x1b[K")
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Print the final line."""
        self._write(self.line())
        if self.tty:
            self.stream.write("\n")
        self.stream.flush()


def counted(n: int, one: str, many: str | None = None) -> str:
    """``n`` and the noun for it: ``1 page``, ``2 pages``, ``1 copy``, ``3 copies``
    (``many``: the plural when it is not ``one`` + ``s``).

    >>> counted(1, "page"), counted(1_200, "copy", "copies")
    ('1 page', '1,200 copies')
    """
    return f"{n:,} {one if n == 1 else many or one + 's'}"
