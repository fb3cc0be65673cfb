"""``simcrawl remove PAGE_ID ...``: pages out of the store and the index."""

from __future__ import annotations

import argparse

from crawler.cli.common import InputError, connect, parser, run, service_options
from crawler.cli.find_all import parse_fingerprint

HELP = "remove pages (or fingerprints) from the store and the index"


def remove(args: argparse.Namespace) -> int:
    from dedup.adapters.index import open_index, redis_store

    redis_client, pages, services = connect(args)
    try:
        store = redis_store(redis_client, args.namespace)
        if store.read_layout() is None:
            raise InputError(f"no index in {store.describe()}")
        index = open_index(store)
        # a released page's anchors are in its stored sketch: read before the page goes
        known: dict[str, bytes] = {}
        index.sketch_source = lambda ids: {**pages.sketches_of(ids - known.keys()),
                                           **{p: known[p] for p in ids & known.keys()}}
        status = 0
        for fp_text in args.fingerprint:
            fp = parse_fingerprint(fp_text)
            done = index.remove(fp)
            kept_out = pages.unindex(fp)  # and out of later rebuilds of the index
            print(f"fingerprint {fp:016x}: {'removed' if done else 'not in the index'}"
                  + (f"; kept out of rebuilds ({kept_out} stored page"
                     f"{'s' if kept_out != 1 else ''})" if kept_out else ""))
            status |= 0 if done else 1
        for page_id in args.page_ids:
            known.update(pages.sketches_of([page_id]))
            fp = pages.remove_page(page_id)
            done = fp is not None and index.remove(fp, page_id)
            where = f"fingerprint {fp:016x}" if fp is not None else "no fingerprint"
            print(f"page {page_id}: {'removed' if done else 'not in the index'} ({where}; "
                  f"database {args.database!r})")
            status |= 0 if done else 1
    finally:
        if services is not None:
            services.stop()
    return status



def main(argv: list[str], prog: str = "simcrawl remove") -> int:
    p = parser(prog, "Remove pages by id from MongoDB and their fingerprints from the "
               "Redis index; --fingerprint removes a fingerprint from the index only. Exit "
               "status 1 if something was not found.")
    p.add_argument("page_ids", nargs="*", help="page ids (24 hex digits)")
    p.add_argument("--fingerprint", action="append", default=[], metavar="HEX",
                   help="a fingerprint to remove from the index (repeatable)")
    service_options(p)
    args = p.parse_args(argv)
    if not args.page_ids and not args.fingerprint:
        p.error("name what to remove: page ids, or --fingerprint HEX")
    return run(remove, args)
