"""What URL rules save and what they cost, on a site built for them (bench/sites/urlsite.py:
articles under tracking parameters, session ids, print and AMP views, directory aliases,
sort orders; pagination and search parameters that do change the page).

The same site is crawled over HTTP (``scrapy crawl site``, the embedded services) with
``DEDUP_URL_RULES=False``, then with the rules at one process and at ``--processes`` more,
each on fresh services. For each run, from the server's log and the store:

- requests for copies: requests of a page's URLs after the first one requested;
- saved: links recorded as copies without a request (``url_rule`` match records);
- wrong drops: pages recorded as copies (any kind) of a page of another group;
- documents lost: groups stored by the crawl without rules that this one did not store;
- same groups: whether the groups stored are the crawl-without-rules' groups.

    python bench/quality_urlrules.py [--processes 1 3] [--data DIR ...]

Prints a table and one JSON line. Goals (issue "Copies never fetched"): requests for
copies cut by at least 60%, no page lost, no wrong drop, one process and three the same.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag

sys.path.insert(0, str(Path(__file__).resolve().parent / "sites"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from quality_sites import DEFAULT_DATA, articles
from sitegen import Site
from urlsite import HOST, MIRROR, build_urls


def crawl(site: Site, processes: int, rules: bool, workdir: Path) -> dict[str, Any]:
    """Crawl the site over HTTP; what was requested (in order), stored and recorded."""
    from crawler.examples.pageserver import serve
    from crawler.run import crawl as run_crawl
    from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

    port = free_port()
    hosts = {HOST: f"http://127.0.0.2:{port}", MIRROR: f"http://127.0.0.3:{port}"}
    served = hosts[HOST]

    def out(text: str) -> str:  # the site's hosts as served (the mirror first: it ends so)
        for name in (MIRROR, HOST):
            text = text.replace(name, hosts[name])
        return text

    pages = {out(url): out(body.decode("utf-8")).encode("utf-8")
             for url, body in site.pages.items()}
    server, asked = serve(pages, port)  # type: ignore[arg-type]
    database = f"urlrules_{'on' if rules else 'off'}_{processes}"
    try:
        with EmbeddedServices(workdir / database) as services:
            summary = run_crawl([served + "/"], services.redis_url or "",
                                services.mongo_uri or "",
                                ["-s", f"DEDUP_DATABASE={database}",
                                 "-s", f"DEDUP_URL_RULES={rules}",
                                 "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "ROBOTSTXT_OBEY=0",
                                 "-s", "DEPTH_LIMIT=0", "-s", "LOG_LEVEL=INFO",
                                 "-a", "allowed_domains=127.0.0.2,127.0.0.3"],
                                workdir / f"{database}.log", processes)
            db = connect_mongo(services.mongo_uri)[database]
            stored = [d["url"] for d in db.pages.find({}, {"url": 1})]
            matches = [(d["url"], d.get("original_url") or "", d["kind"])
                       for d in db.matches.find({}, {"url": 1, "original_url": 1, "kind": 1})]
    finally:
        server.shutdown()

    def mine(url: str) -> str:
        url = urldefrag(url)[0]
        for name, at in hosts.items():
            if url.startswith(at):
                return name + url[len(at):]
        return url

    return {"asked": [mine(u) for u in asked if not u.endswith("/robots.txt")],
            "stored": [mine(u) for u in stored],
            "matches": [(mine(u), mine(o), k) for u, o, k in matches],
            "lost": len(summary.get("lost_urls", [])),
            "saved": summary.get("dedup/url_rule", 0),
            "resent": summary.get("dedup/url_rules/resent", 0),
            "contradicted": summary.get("dedup/url_rules/contradicted", 0),
            "screens": summary.get("dedup/url_rules/screens", 0),
            "screened": summary.get("dedup/url_rules/screened", 0)}


def measure(site: Site, run: dict[str, Any], reference: set[str] | None) -> dict[str, Any]:
    first: dict[str, str] = {}
    copies = 0
    by_kind: dict[str, int] = defaultdict(int)
    for url in run["asked"]:
        group = site.group.get(url)
        if group is None:
            continue
        if first.setdefault(group, url) != url:
            copies += 1
            by_kind[site.kind[url]] += 1
    groups = {site.group[u] for u in run["stored"] if u in site.group}
    wrong = [(u, o) for u, o, _ in run["matches"]
             if u in site.group and site.group.get(o) != site.group[u]]
    kinds: dict[str, int] = defaultdict(int)
    for _, _, k in run["matches"]:
        kinds[k] += 1
    return {"requests": len(run["asked"]), "copy_requests": copies, "saved": run["saved"],
            "url_rule_records": kinds["url_rule"], "wrong_drops": len(wrong),
            "wrong": wrong[:5], "lost_groups": len((reference or groups) - groups),
            "same_groups": reference is None or groups == reference,
            "groups": len(groups), "lost_pages": run["lost"], "resent": run["resent"],
            "contradicted": run["contradicted"], "copy_requests_by_kind": dict(by_kind),
            "links_a_screen": round(run["screened"] / run["screens"], 2) if run["screens"]
            else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    args = parser.parse_args()
    site = build_urls(articles(args.data))
    print(f"site: {len(site.pages)} URLs of {len(set(site.group.values()))} pages; "
          f"{os.cpu_count()} cores")
    rows = []
    with tempfile.TemporaryDirectory(prefix="urlrules-") as tmp:
        off = measure(site, crawl(site, 1, False, Path(tmp)), None)
        reference = {site.group[u] for u in site.group}  # every page of the site
        rows.append(("rules off, 1 process", off))
        for n in args.processes:
            run = crawl(site, n, True, Path(tmp))
            rows.append((f"rules on, {n} process{'es' if n > 1 else ''}",
                         measure(site, run, None)))
    groups_off = off["groups"]
    print(f"\n| run | requests | for copies | cut | saved (url_rule) | wrong drops | "
          f"pages stored of {len(reference)} | documents lost | rules dropped |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    out = []
    for name, m in rows:
        cut = 1 - m["copy_requests"] / off["copy_requests"] if off["copy_requests"] else 0.0
        lost = max(0, groups_off - m["groups"])
        print(f"| {name} | {m['requests']} | {m['copy_requests']} | {cut:.0%} | "
              f"{m['saved']} | {m['wrong_drops']} | {m['groups']} | {lost} | "
              f"{m['contradicted']} |")
        out.append({"run": name, **{k: v for k, v in m.items() if k != "wrong"},
                    "cut": round(cut, 3), "documents_lost": lost})
        print("    requests for copies by kind: " + ", ".join(
            f"{k} {v}" for k, v in sorted(m["copy_requests_by_kind"].items()))
            + (f"; links the gate screened a call: {m['links_a_screen']}"
               if m["links_a_screen"] else ""))
        for u, o in m["wrong"]:
            print(f"    wrong: {u} recorded as a copy of {o}")
    print(json.dumps({"bench": "quality_urlrules", "runs": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
