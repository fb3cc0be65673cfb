"""``simcrawl web``: its options and exit statuses; the work is :mod:`crawler.console.app`'s."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from flask import Flask

from crawler.cli.common import exit_table
from crawler.console.app import MIN_TOKEN, TOKEN_ENV, create_app, is_loopback

HELP = "the web console: dashboard, search, a copy beside its original, sources"


def build_parser(prog: str = "simcrawl web") -> argparse.ArgumentParser:
    """The command's options (``simcrawl web --help``)."""
    from crawler.console.options import add_service_options

    parser = argparse.ArgumentParser(
        prog=prog, description="Serve the web console over the crawl's store: dashboard "
        "(figures, live counters of running crawls), search, a copy beside its original, "
        "registered sources and a form to register originals.",
        epilog=f"Binding to an address other than loopback requires ${TOKEN_ENV} (at least "
        f"{MIN_TOKEN} characters); requests must then carry it (Authorization: Bearer, or "
        f"the login form). {exit_table()}")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default "
                        "127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--threads", type=int, default=8,
                        help="requests served at once (default 8)")
    parser.add_argument("-k", type=int, default=None, help="k, marked on the distance "
                        "histogram (default: the k the crawl's index was built with)")
    parser.add_argument("--refresh", type=float, default=60.0, help="seconds between two "
                        "drawings of the dashboard's figures (default 60)")
    parser.add_argument("--uploads", type=Path, default=None, help="where registered "
                        "uploads are kept (default: DATA_DIR/uploads)")
    add_service_options(parser, redis=True)
    return parser


def main(argv: list[str] | None = None, prog: str = "simcrawl web") -> int:
    """Run ``simcrawl web`` until Ctrl-C; returns the exit status (2: bad options, 3: a
    service unreachable)."""
    from waitress.server import create_server

    from crawler.console.options import choose_database
    from dedup.config import namespace_of
    from dedup.setting_names import value
    from dedup.errors import ServiceUnavailable
    from dedup.adapters.servers.services import (
        connect_mongo,
        connect_redis,
        data_folder,
        resolve,
        stop_on_signals,
    )

    args = build_parser(prog).parse_args(argv)
    token = value(TOKEN_ENV) or None
    if not is_loopback(args.host) and token is None:
        print(f"error: binding to {args.host} lets other machines reach the console: set "
              f"{TOKEN_ENV} to a secret of at least {MIN_TOKEN} characters (requests must "
              "then carry it), or bind to 127.0.0.1", file=sys.stderr)
        return 2
    if token is not None and len(token) < MIN_TOKEN:
        print(f"error: {TOKEN_ENV} is too short ({len(token)} characters; at least "
              f"{MIN_TOKEN})", file=sys.stderr)
        return 2
    if not 0 < args.port < 65536:
        print(f"error: --port must be 1-65535, got {args.port}", file=sys.stderr)
        return 2
    data_dir = data_folder(args.data_dir)
    with stop_on_signals():
        services = None
        app: Flask | None = None
        try:
            redis_url, mongo_uri, services = resolve(args.redis_url, args.mongo_uri,
                                                     data_dir)
            reads = choose_database(connect_mongo(mongo_uri), args.database)
            namespace = namespace_of(reads.name, args.namespace)
            app = create_app(reads, redis_client=connect_redis(redis_url), namespace=namespace,
                             token=token, secret_key=value("SIMCRAWL_WEB_SECRET") or None,
                             uploads=args.uploads or Path(data_dir) / "uploads", k=args.k,
                             refresh=args.refresh)
            # bound first: a busy port is the one line said, not after "Ctrl-C to stop"
            server = create_server(app, host=args.host, port=args.port, threads=args.threads,
                                   ident="simcrawl")
            print(f"simcrawl web: the database {reads.name!r} on http://{args.host}:{args.port}/"
                  + (" (token required)" if token else "") + "; Ctrl-C to stop",
                  file=sys.stderr, flush=True)
            server.run()
        except ServiceUnavailable as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 3
        except OSError as exc:
            print(f"error: cannot serve on {args.host}:{args.port}: {exc.strerror or exc}",
                  file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 0
        finally:
            if app is not None:  # the drawn figures go with the server
                shutil.rmtree(app.extensions["simcrawl"].figures.folder, ignore_errors=True)
            if services is not None:
                services.stop()
    return 0
