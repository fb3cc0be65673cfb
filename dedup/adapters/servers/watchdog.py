"""The embedded servers' watchdog: it stops them once every process using them is gone.

The last user of a data folder's servers stops them as it leaves
(:class:`dedup.adapters.servers.services.EmbeddedServices`). A user that cannot leave (killed with
SIGKILL, out of memory, a power cut of its terminal) left them running until the next
process joined the folder, which could be never: servers orphaned for hours. The process
that starts the servers therefore starts this one beside them, in a session of its own
(no terminal's Ctrl-C reaches it: :func:`dedup.adapters.servers.services.start_watchdog`). Every :data:`WATCH_SECONDS` it reads ``services.json``
under the folder's lock, as every user does: once no user is alive, it stops the servers
(SIGTERM, so Redis flushes its append-only file and SecantusDB closes WiredTiger) and
says so in ``watchdog.log`` of the folder; once the servers are gone (stopped by their
last user or by ``simcrawl services stop``), it leaves.

    python -m dedup.adapters.servers.watchdog DATA_DIR
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path

from dedup.adapters.servers.services import SERVERS, EmbeddedServices, process_alive, terminate

#: Seconds between two looks at the folder's users.
WATCH_SECONDS = 2.0


def watch(data_dir: Path, every: float = WATCH_SECONDS) -> str:
    """Watch a data folder's servers until they are gone; returns why it stopped
    watching (written to ``watchdog.log`` when it stopped them)."""

    folder = EmbeddedServices(data_dir, redis=False, mongo=False)
    while True:
        time.sleep(every)
        with folder._locked() as state:
            running = {name: int(state[name]["pid"]) for name in SERVERS
                       if name in state and process_alive(int(state[name]["pid"]))}
            ports = {name: state[name].get("port") for name in running}
            if not running:
                return "the servers were stopped by their users"
            if state["users"]:
                continue
            for name, pid in running.items():
                terminate(pid, address=("127.0.0.1", ports[name]))
                state.pop(name, None)
        said = ("stopped " + ", ".join(f"{n} (pid {p})" for n, p in running.items())
                + ": every process that used them had gone without stopping them")
        _note(data_dir, said)
        return said


def _note(data_dir: Path, line: str) -> None:
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with open(data_dir / "watchdog.log", "a", encoding="utf-8") as fh:
        fh.write(f"{stamp} {line}\n")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m dedup.adapters.servers.watchdog DATA_DIR", file=sys.stderr)
        return 2
    try:
        watch(Path(argv[0]))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    os.umask(0o077)
    raise SystemExit(main(sys.argv[1:]))
