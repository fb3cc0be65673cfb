"""``simcrawl rules``: the URL rules a namespace's crawls learned (docs/url-rules.md)."""

from __future__ import annotations

import argparse
import json

from crawler.cli.common import connect, parser, run, service_options

HELP = "list the URL rules the crawls learned (and the requests they saved), or clear them"


def rules(args: argparse.Namespace) -> int:
    from dedup.adapters.redis_url_rules import RedisUrlRules

    redis_client, _pages, services = connect(args)
    try:
        store = RedisUrlRules(redis_client, args.namespace)
        if args.clear:
            removed = store.clear()
            print(f"URL rules of namespace {args.namespace!r} cleared ({removed} keys)")
            return 0
        rows = [r for r in store.rows()
                if (not args.host or r.rule.host == args.host) and (r.holds or args.all)]
        if args.json:
            for r in rows:
                print(json.dumps({"host": r.rule.host, "kind": r.rule.kind, "arg": r.rule.arg,
                                  "support": r.support, "against": r.against,
                                  "saved": r.saved, "holds": r.holds}))
            return 0
        if not rows:
            print(f"no URL rule{'' if args.all else ' holds'} in namespace "
                  f"{args.namespace!r}" + (f" for {args.host}" if args.host else "")
                  + ("" if args.all else " (--all lists the rules that do not hold too)"))
            return 0
        width = max(len(r.rule.host) for r in rows)
        print(f"{'host':<{width}}  {'rule':<28} {'pairs':>6} {'against':>8} {'saved':>7}  holds")
        for r in rows:
            rule = f"{r.rule.kind} {r.rule.arg}".strip()
            print(f"{r.rule.host:<{width}}  {rule:<28} {r.support:>6} {r.against:>8} "
                  f"{r.saved:>7}  {'yes' if r.holds else 'no'}")
        print(f"{sum(r.saved for r in rows)} requests not sent through these rules")
    finally:
        if services is not None:
            services.stop()
    return 0


def main(argv: list[str], prog: str = "simcrawl rules") -> int:
    p = parser(prog, "List the URL rules the crawls of a namespace learned from their match "
               "records: each host's rule, the pairs (copy, original) for it, the pages "
               "against it, and the requests it kept from being sent. Only the rules that "
               "hold are listed unless --all.")
    p.add_argument("--host", help="only this host's rules (its name and port, as in URLs)")
    p.add_argument("--all", action="store_true",
                   help="the rules that do not hold (too few pairs, or pages against them) too")
    p.add_argument("--json", action="store_true", help="one JSON object a rule")
    p.add_argument("--clear", action="store_true",
                   help="forget every rule of the namespace and what they learned from")
    service_options(p)
    return run(rules, p.parse_args(argv))
