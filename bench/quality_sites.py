"""The crawl's decision on whole sites: coverage, wrong drops and missed copies.

The development articles rendered as real site structures (``bench/sites/sitegen.py``: a
Jekyll blog with the minima theme, a quotes site with a table layout, a shop with colour
variants, empty search pages and an empty event calendar, a news site whose re-titled
pages repeat another's body with 3 words changed), each crawled breadth-first
from its start URL the way the crawl does it: every page read by the crawl's own reader
(``crawler.extraction.read_page``: main text, fingerprints, Scrapy's link extractor) and
decided in order by the crawl's decision on memory stores
(:func:`dedup.deduplicator.in_memory`, the crawl's settings); the links of a page are
followed unless it is dropped as a copy (a skipped page's are followed, as the crawl
does).

The truth: each page's group (sitegen's docstring). The *ideal* crawl is the same
breadth-first crawl deciding by the truth: a page is a copy when a page of its group was
stored before it. Figures per site:

* **coverage**: the share of the ideal crawl's pages that the crawl requested and
  either stored or dropped as a true copy (100%: every page reachable without passing
  through a true copy);
* **wrong drops**: pages dropped as copies of a page of another group;
* **missed copies**: pages stored although a page of their group was stored before;
* **copies found** under another layout (print, AMP, table) or another title (reposts,
  variants, empty search and calendar pages): of the true copies of those kinds the
  crawl met, the share dropped;
* **originals in a copy's form**: pages stored as originals that are a print or AMP
  view, a repost or a variant of a page of their own group (met before it: the crawl's
  order reached the copy first, and followed its links);
* **listings**: the listing pages the crawl requested that its reader took for listings
  (:mod:`dedup.listing`), and the other pages it took for listings.

Development figures: the articles are read from ``../shared`` (never copied).

With ``--crawl 1 3`` each site is crawled again over HTTP by the real crawler (``scrapy
crawl site`` through :func:`crawler.run.crawl`, the processes sharing the frontier in
Redis), its pages served on 127.0.0.1's loopback addresses, and the same figures are read
from the store and the server's log (pages in the order requested); ``--redis-cluster``
puts the index on a real three-node Redis Cluster.

    python bench/quality_sites.py [--data PATH ...] [--show] [--keep DIR]
                                  [--crawl PROCESSES ...] [--redis-cluster]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import sys
import tempfile
import time
from collections import Counter, deque
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urlsplit

from _peers import missing_data  # bench/ is the script's folder: on sys.path

sys.path.insert(0, str(Path(__file__).resolve().parent / "sites"))

from docsites import BUILDERS, ensure_generators
from quality_reading import truth
from sitegen import Article, Site, build_blog, build_news, build_quotes, build_shop

from crawler.extraction import read_page
from dedup.config import DedupConfig
from dedup.decide import NEW, TEMPLATE_ONLY
from dedup.deduplicator import in_memory
from dedup.reading import fingerprint_params, read_html

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_DATA = [SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"]
LAYOUT_KINDS = {"print", "amp", "table listing", "listing alias"}
TITLE_KINDS = {"repost", "variant", "empty search", "empty calendar", "retitled edit"}
#: The kinds of page that are another form of a page of their group (a search or calendar
#: page is its group's only form).
COPY_FORMS = {"print", "amp", "table listing", "listing alias", "repost", "variant",
              "retitled edit"}


def articles(sets: list[Path]) -> list[Article]:
    """The original (``-P``) page of each development article, as the crawl reads it."""
    params = fingerprint_params(DedupConfig())
    out = []
    for data in sets:
        if not (data / "pages.jsonl").is_file():
            raise missing_data(data, "The near-duplicate development set (pages.jsonl)")
        for line in (data / "pages.jsonl").open():
            row = json.loads(line)
            if not row["page"].endswith("-P"):
                continue
            html = gzip.decompress((data / "pages" / f"{row['page']}.html.gz").read_bytes())
            page = read_html(html, row["url"], params)
            lines = [x for x in page.text.splitlines() if x.strip()]
            if page.title and len(" ".join(lines).split()) >= 100:
                out.append(Article(page.title, lines))
    return out


#: The kinds of the generators' pages (bench/sites/docsites.py) that list other pages.
DOC_LISTINGS = {"tag", "category", "author", "index", "archives", "tags", "categories",
                "authors", "genindex", "py-modindex", "source index"}
#: The sites this script builds: the four from the development articles, and the
#: generators' sites from this repository's docs and modules.
ARTICLE_SITES = ("blog", "quotes", "shop", "news")


def docsite(name: str, work: Path) -> Site:
    """A generator's site (``bench/sites/docsites.py``) as a site of this script, on host
    ``NAME.test``. Its truth is the reading benchmark's (:func:`quality_reading.truth`): two
    pages are one document when they show the same own text (an article and a tag page
    showing it whole are one; listings are one when they show the same items); a page
    with no own text in its sources (a search page, an archive of titles) is a document of
    its own. A folder's ``index.html`` is served under the folder's URL too (a copy under
    another URL), which is where the crawl starts."""
    built = BUILDERS[name](work)
    site = Site(name, f"http://{name}.test/")
    for rel, html in built.pages.items():
        required, _allowed = truth(built, rel, html)
        group = "|".join(sorted(required)) if required else f"page:{rel}"
        kind = built.kind[rel] + (" listing" if built.kind[rel] in DOC_LISTINGS else "")
        site.add(f"http://{name}.test/{rel}", html, group, kind)
        if rel == "index.html" or rel.endswith("/index.html"):
            site.add(f"http://{name}.test/{rel[:-len('index.html')]}", html, group,
                     kind + " alias")
    return site


def key(url: str) -> str:
    return urldefrag(url)[0]


def crawl(site: Site, decide: bool = True) -> dict[str, Any]:
    """Breadth-first from the site's start: with ``decide``, by the crawl's decision;
    else by the truth (the ideal crawl). Returns what happened to each requested page."""
    decider, facts = in_memory(DedupConfig())
    params = fingerprint_params(DedupConfig())
    host = urlsplit(site.start).netloc
    queue, seen = deque([site.start]), {site.start}
    stored_groups: set[str] = set()
    by_id: dict[str, str] = {}
    outcome: dict[str, tuple[str, str | None]] = {}  # url -> (what, original url)
    listings: dict[str, bool] = {}  # url -> read as a listing
    while queue:
        url = queue.popleft()
        body = site.pages.get(url)
        if body is None:
            outcome[url] = ("not a page", None)
            continue
        page = read_page(body, url, "utf-8", params)
        listings[url] = page.listing
        group = site.group[url]
        if not decide:
            what = "copy" if group in stored_groups else "stored"
            original = None
        elif page.tokens == 0:
            what, original = "skipped", None
        else:
            d = decider.decide([page])[0]
            if d.kind == TEMPLATE_ONLY:
                what, original = "skipped", None
            elif d.dropped:
                what, original = "copy", by_id.get(d.original_id or "")
            else:
                what, original = "stored", None
                if d.turn is not None:  # the page stored first is this one's copy now
                    first = by_id[d.page_id]
                    outcome[first] = ("copy", url)
                if d.kind == NEW:
                    page.page_id = d.page_id
                    facts.add_page(page)
                    by_id[d.page_id] = url
        if what == "stored":
            stored_groups.add(group)
        outcome[url] = (what, original)
        if what == "copy":
            continue
        for link in page.links or []:
            link = key(link)
            if urlsplit(link).netloc == host and link not in seen:
                seen.add(link)
                queue.append(link)
    return {"outcome": outcome, "listings": listings}


def crawl_http(site: Site, processes: int, workdir: Path, cluster_url: str | None = None,
               settings: list[str] | None = None) -> dict[str, Any]:
    """The real crawl of the site over HTTP: its pages served on a loopback address of
    their own, ``scrapy crawl site`` from its start URL with ``processes`` processes (on
    the embedded Redis, or the Redis Cluster at ``cluster_url``, and SecantusDB), then the
    store and the server's log read back: what happened to each page requested, in the
    order requested (stored, a copy of its recorded original, or neither: skipped), then
    to each page recorded as a copy without a request (the URL rules' predictions)."""
    from crawler.examples.pageserver import serve
    from crawler.run import crawl as run_crawl
    from dedup.adapters.servers.services import EmbeddedServices, connect_mongo, free_port

    port, origin = free_port(), site.start.rstrip("/")
    served = f"http://127.0.0.2:{port}"
    pages = {url.replace(origin, served, 1): body for url, body in site.pages.items()}
    server, asked = serve({u: b.encode() if isinstance(b, str) else b
                           for u, b in pages.items()}, port)
    database = f"sites_{site.name}_{processes}"
    params = fingerprint_params(DedupConfig())
    try:
        with EmbeddedServices(workdir / database) as services:
            namespace = f"{{{database}}}" if cluster_url else database
            summary = run_crawl([served + "/"], cluster_url or services.redis_url or "",
                                services.mongo_uri or "",
                                ["-s", f"DEDUP_DATABASE={database}",
                                 "-s", f"DEDUP_NAMESPACE={namespace}",
                                 "-s", "AUTOTHROTTLE_ENABLED=0", "-s", "ROBOTSTXT_OBEY=0",
                                 "-s", "DEPTH_LIMIT=0", "-s", "LOG_LEVEL=INFO",
                                 *[x for kv in settings or [] for x in ("-s", kv)]],
                                workdir / f"{database}.log", processes)
            db = connect_mongo(services.mongo_uri)[database]
            stored = {key(d["url"]) for d in db.pages.find({}, {"url": 1})}
            copies = {key(d["url"]): key(d.get("original_url") or "")
                      for d in db.matches.find({}, {"url": 1, "original_url": 1})}
    finally:
        server.shutdown()
    outcome: dict[str, tuple[str, str | None]] = {}
    listings: dict[str, bool] = {}
    for url in asked:
        url = key(url)
        mine = origin + url[len(served):]  # the site's own URL of the page served
        if urlsplit(url).path == "/robots.txt" or mine in outcome:
            continue
        if mine not in site.pages:
            outcome[mine] = ("not a page", None)
            continue
        listings[mine] = read_page(site.pages[mine], mine, "utf-8", params).listing
        if url in copies:
            original = copies[url]
            outcome[mine] = ("copy", origin + original[len(served):]
                             if original.startswith(served) else None)
        else:
            outcome[mine] = ("stored" if url in stored else "skipped", None)
    for url, original in copies.items():  # recorded without a request (URL rules)
        mine = origin + url[len(served):]
        if mine in site.pages and mine not in outcome:
            listings[mine] = read_page(site.pages[mine], mine, "utf-8", params).listing
            outcome[mine] = ("copy", origin + original[len(served):]
                             if original.startswith(served) else None)
    return {"outcome": outcome, "listings": listings,
            "lost": len(summary.get("lost_urls", []))}


def measure(site: Site, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The figures of one site: of ``run`` (:func:`crawl_http`'s), else of the model
    crawl (:func:`crawl`), against the ideal crawl."""
    ideal = crawl(site, decide=False)["outcome"]
    run = run or crawl(site)
    got, listings = run["outcome"], run["listings"]
    is_listing = {u: "listing" in site.kind[u] for u in listings}
    ideal_pages = {u for u, (what, _) in ideal.items() if what != "not a page"}
    stored_before: dict[str, str] = {}  # group -> the kind of its page stored first
    wrong, missed, cases = 0, 0, []
    found: Counter[str] = Counter()
    met: Counter[str] = Counter()
    for url, (what, original) in got.items():
        if what == "not a page":
            continue
        group, kind = site.group[url], site.kind[url]
        # a page dropped for a page of its group is a true copy even when it was
        # requested before that page: with several processes, the order of requests is
        # not quite the order of decisions
        right = what == "copy" and original is not None and site.group.get(original) == group
        true_copy = group in stored_before or right
        first = stored_before.get(group) or (site.kind[original] if right and original
                                             else kind)
        pair = {kind, first}  # how it differs from its original
        klass = "title" if pair & TITLE_KINDS else "layout" if pair & LAYOUT_KINDS else ""
        if true_copy and klass:
            met[klass] += 1
        if what == "copy":
            if original is None or site.group.get(original) != group:
                wrong += 1
                cases.append(f"wrong  {url} ({kind}) as a copy of {original}")
            elif klass:
                found[klass] += 1
        elif what == "skipped":
            cases.append(f"skipped {url} ({kind}{', a true copy' if true_copy else ''})")
        elif what == "stored":
            if true_copy:
                missed += 1
                cases.append(f"missed {url} ({kind})")
            stored_before.setdefault(group, kind)
    covered = {u for u, (what, original) in got.items() if u in ideal_pages and (
        what in ("stored", "skipped") or (what == "copy" and original is not None
                                          and site.group.get(original) == site.group[u]))}
    for url in sorted(ideal_pages - set(got)):
        cases.append(f"never requested {url} ({site.kind[url]})")
    # an original in a copy's form (a print or AMP view, a repost, a colour variant) while
    # its group has a page of its own form: met first, its links were followed
    plain = {site.group[u] for u in site.pages if site.kind[u] not in COPY_FORMS}
    other_form = sum(1 for u, (what, _) in got.items() if what == "stored"
                     and site.kind[u] in COPY_FORMS and site.group[u] in plain)
    return {"pages": len(site.pages), "ideal": len(ideal_pages), "covered": len(covered),
            "other_form": other_form,
            "requested": sum(1 for w, _ in got.values() if w != "not a page"),
            "stored": sum(1 for w, _ in got.values() if w == "stored"),
            "skipped": sum(1 for w, _ in got.values() if w == "skipped"),
            "wrong": wrong, "missed": missed, "found": found, "met": met, "cases": cases,
            "listings": (sum(1 for u, v in listings.items() if v and is_listing[u]),
                         sum(is_listing.values()),
                         sum(1 for u, v in listings.items() if v and not is_listing[u]))}


def share(found: int, met: int) -> str:
    return f"{found} / {met} ({found / met:.0%})" if met else "none met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", nargs="+", default=[*ARTICLE_SITES, *BUILDERS],
                        choices=[*ARTICLE_SITES, *BUILDERS], help="the sites to build and crawl")
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA,
                        help="development sets whose articles the sites are built from")
    parser.add_argument("--show", action="store_true",
                        help="list the wrong drops, missed copies, skipped pages and pages never "
                             "requested")
    parser.add_argument("--keep", type=Path, help="build the sites here and keep them")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of the crawls over HTTP (repeatable)")
    parser.add_argument("--crawl", type=int, nargs="+", metavar="PROCESSES",
                        help="also crawl each site over HTTP with the real crawler, at each "
                        "of these numbers of processes (sharing one frontier), on the "
                        "embedded services")
    parser.add_argument("--redis-cluster", action="store_true",
                        help="with --crawl: on a real Redis Cluster of three primaries "
                        "(started here), the index sharded over its nodes")
    args = parser.parse_args()
    if args.redis_cluster and not args.crawl:
        parser.error("--redis-cluster needs --crawl")
    started = time.perf_counter()
    texts = articles(args.data) if set(args.sites) & set(ARTICLE_SITES) else []
    if set(args.sites) & set(BUILDERS):
        ensure_generators()
    # ignore_cleanup_errors: a crawl's embedded servers may still be writing as they stop
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp, \
            contextlib.ExitStack() as stack:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        cluster_url = None
        if args.redis_cluster:
            from dedup.adapters.servers.services import LocalRedisCluster

            cluster = LocalRedisCluster(Path(tmp) / "cluster").start()
            stack.callback(cluster.stop)
            cluster_url = cluster.url
        builders = {"blog": lambda: build_blog(texts, work), "quotes": lambda: build_quotes(texts),
                    "shop": lambda: build_shop(texts), "news": lambda: build_news(texts)}
        sites = [builders[name]() if name in builders else docsite(name, work)
                 for name in args.sites]
        results = [(site, "model", measure(site)) for site in sites]
        for processes in args.crawl or []:
            results += [(site, f"crawl, {processes} process{'es' * (processes > 1)}"
                         + (", Redis Cluster" if cluster_url else ""),
                         measure(site, crawl_http(site, processes, Path(tmp), cluster_url,
                                                   args.set)))
                        for site in sites]
    print(f"{len(texts)} articles and {len(set(args.sites) & set(BUILDERS))} generators' sites; the crawl's settings; {os.cpu_count()} cores; "
          f"{time.perf_counter() - started:.0f} s (development figures)\n")
    print("| site | run | pages | ideal crawl | coverage | stored | skipped | wrong drops | "
          "missed copies | originals in a copy's form | copies found: other layout | other "
          "title | listings read as such | other pages read as listings |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---:|")
    for site, how, r in results:
        print(f"| {site.name} | {how} | {r['pages']} | {r['ideal']} | "
              f"{r['covered']} ({r['covered'] / r['ideal']:.1%}) | {r['stored']} | "
              f"{r['skipped']} | {r['wrong']} | {r['missed']} | {r['other_form']} | "
              f"{share(r['found']['layout'], r['met']['layout'])} | "
              f"{share(r['found']['title'], r['met']['title'])} | "
              f"{r['listings'][0]} of {r['listings'][1]} | {r['listings'][2]} |")
    if args.show:
        for site, how, r in results:
            print(f"\n{site.name} ({how}):")
            print("\n".join(r["cases"]) or "nothing to show")
    return 0


if __name__ == "__main__":
    sys.exit(main())
