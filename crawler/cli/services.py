"""``simcrawl services [run|stop]``: the embedded Redis and MongoDB servers."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from crawler.cli.common import parser, run
from dedup.progress_line import counted

HELP = "run (or stop) the embedded Redis and MongoDB servers"


def services_(args: argparse.Namespace) -> int:
    from dedup.adapters.servers.services import EmbeddedServices, data_folder, stop_services

    folder = data_folder(args.data_dir)
    if args.action == "stop":
        stopped, users = stop_services(folder)
        print(f"stopped {', '.join(stopped) or 'nothing (no servers were running)'} in "
              f"{Path(folder).resolve()}" + (f"; {counted(users, 'process', 'processes')} "
                                              f"{'was' if users == 1 else 'were'} still using them"
                                              if users else ""))
        return 0
    services = EmbeddedServices(folder)
    from dedup.adapters.servers.services import stop_on_signals

    with stop_on_signals():
        try:
            services.start()
            print(f"REDIS_URL={services.redis_url}")
            print(f"MONGO_URI={services.mongo_uri}", flush=True)
            joined = not any(s.owned for s in services.servers.values())
            print(f"embedded services {'joined (already running)' if joined else 'running'}, "
                  f"data in {services.data_dir}; they stay up while this runs and other "
                  "processes use them; Ctrl-C leaves", file=sys.stderr, flush=True)
            while True:
                time.sleep(WATCH_SECONDS)
                gone = stopped_servers(services)
                if gone:
                    print(f"embedded services stopped ({', '.join(gone)} no longer "
                          "running: 'simcrawl services stop', or the server exited); "
                          "leaving", file=sys.stderr, flush=True)
                    return 0
        except KeyboardInterrupt:
            return 0
        finally:
            services.stop()
            if services.left_to:  # it does not stop them: say so, and who holds them
                print(f"leaving; the servers stay up for "
                      f"{counted(len(services.left_to), 'other process', 'other processes')}"
                      f" still using them (pid {', '.join(map(str, services.left_to))}; the "
                      "last to leave stops them, 'simcrawl services stop' at once)",
                      file=sys.stderr, flush=True)


#: How often ``services run`` checks that its servers still run.
WATCH_SECONDS = 1.0


def stopped_servers(services: object) -> list[str]:
    """The servers of ``services`` (a started :class:`dedup.adapters.servers.services.EmbeddedServices`)
    whose process no longer runs: stopped by ``simcrawl services stop`` from another
    shell, or exited."""
    from dedup.adapters.servers.services import process_alive

    return [name for name, server in getattr(services, "servers", {}).items()
            if server.pid is not None and not process_alive(server.pid)]



def main(argv: list[str], prog: str = "simcrawl services") -> int:
    p = parser(prog, "Start the embedded redis-server and SecantusDB (or join them if "
               "running) on loopback, print their URLs, and keep them up until Ctrl-C or "
               "SIGTERM: for querying the stored pages and matches with other tools, or for "
               "sharing them between crawler processes. Every process using a data folder "
               "counts as a user; the last one to leave stops the servers. 'services stop' "
               "stops them at once.")
    p.add_argument("action", nargs="?", choices=["run", "stop"], default="run",
                   help="run (default) or stop the servers of the data folder")
    p.add_argument("--data-dir", default=None,
                   help="data folder (default $SIMCRAWL_DATA or ./simcrawl-data)")
    return run(services_, p.parse_args(argv))
