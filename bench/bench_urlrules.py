"""The cost of a URL rule's check a link (dedup/url_rules.py), against the limit the crawl
can spend on it (20 µs a link), and against w3lib's canonicalize_url, which Scrapy's own
duplicate filter runs on every request, in the same run.

A host of ``--pages`` stored pages with rules that hold (a tracking parameter dropped, a
print view, a mirror host, a sort order ignored) and links of four kinds: variants the
rules predict, stored URLs (revisits), new pages, and links of a host without rules.

    python bench/bench_urlrules.py [--pages 10000] [--links 20000] [--repeat 3]

The crawl's own check is the gate's (crawler.middlewares.url_rule_gate.UrlRuleGate): a link of a host
without a holding rule is answered from memory (RedisUrlRules.unruled); one of a host with
rules is screened in Redis (RedisUrlRules.screen, in a worker thread, off the crawl's
reactor). Both are timed too, on an embedded redis-server, the CPU time of the calling
thread beside the wall time (most of which is waiting for Redis).

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time

from w3lib.url import canonicalize_url

from dedup.url_rules import UrlRules

LIMIT_US = 20.0

#: Links a screen: one at a time (a crawl at a walk), the gate's mean in a crawl of the URL
#: site (bench/quality_urlrules.py prints it: 4-5), and a crawl's full batch (Scrapy's
#: CONCURRENT_REQUESTS, 16, arriving at the gate while a screen is out).
BATCHES = (1, 5, 16)


def build(pages: int) -> tuple[UrlRules, list[str]]:
    rules = UrlRules()
    stored = [f"http://news.test/{y}/story-{n}.html?cat={n % 7}"
              for n, y in zip(range(pages), [2024, 2025, 2026] * pages)]
    for url in stored:
        rules.add_original(url)
    for n in range(5):
        rules.learn(f"{stored[n]}&utm_source=feed", stored[n])
        rules.learn(stored[n].replace("news.test/", "news.test/print/"), stored[n])
        rules.learn(stored[n].replace("http://news.test", "http://www.news.test"), stored[n])
    return rules, stored


def links(stored: list[str], n: int) -> list[str]:
    rng = random.Random(7)
    out = []
    for i in range(n):
        url = rng.choice(stored)
        kind = i % 4
        if kind == 0:  # a variant the rules predict
            url = rng.choice([f"{url}&utm_source=x", url.replace("news.test/", "news.test/print/"),
                              url.replace("http://news.test", "http://www.news.test")])
        elif kind == 2:  # a page not stored
            url = url.replace("story-", "other-")
        elif kind == 3:  # a host without rules
            url = url.replace("news.test", "blog.test")
        out.append(url)
    return out


def timed(fn, urls: list[str], repeat: int) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        for url in urls:
            fn(url)
        runs.append((time.perf_counter() - started) / len(urls) * 1e6)
    return statistics.median(runs)


def redis_costs(stored: list[str], urls: list[str]) -> dict[str, float]:
    """The gate's two paths on a real redis-server: ``unruled`` for a host seen without a
    holding rule, ``screen`` for a host whose rules hold (µs a link)."""
    import tempfile
    from pathlib import Path

    from dedup.adapters.redis_url_rules import RedisUrlRules
    from dedup.adapters.servers.services import EmbeddedServices, connect_redis

    with tempfile.TemporaryDirectory() as tmp, \
            EmbeddedServices(Path(tmp), mongo=False) as services:
        rules = RedisUrlRules(connect_redis(services.redis_url or ""), "bench", explore=0.0)
        rules.decided([(u, f"id{n}") for n, u in enumerate(stored[:2000])], [])
        rules.decided([], [(f"{u}&utm_source=feed", u, f"id{n}") for n, u in enumerate(stored[:5])])
        rules.screen([("http://blog.test/", 0)])  # a host without rules, seen
        unruled = timed(rules.unruled, ["http://blog.test/a.html"] * len(urls), 3)
        links = [f"{u}&utm_source=x" if n % 2 else u for n, u in enumerate(stored[:len(urls)])]
        costs = {}
        for batch in BATCHES:
            rules.clear()
            rules.decided([(u, f"id{n}") for n, u in enumerate(stored[:2000])], [])
            rules.decided([], [(f"{u}&utm_source=feed", u, f"id{n}")
                               for n, u in enumerate(stored[:5])])
            rules.screen([(links[0], 1)])  # the host's rules read
            cpu0, wall0 = time.thread_time(), time.perf_counter()
            for at in range(0, len(links), batch):
                rules.screen([(url, 1) for url in links[at:at + batch]])
            cpu, wall = time.thread_time() - cpu0, time.perf_counter() - wall0
            costs[f"screen{batch}_cpu_us"] = cpu / len(links) * 1e6
            costs[f"screen{batch}_wall_us"] = wall / len(links) * 1e6
        rules.clear()
    return {"unruled_us": unruled, **costs}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--links", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rules, stored = build(args.pages)
    urls = links(stored, args.links)
    predicted = sum(rules.predict(u) is not None for u in urls)
    check = timed(rules.predict, urls, args.repeat)
    peer = timed(canonicalize_url, urls, args.repeat)
    print(f"{args.pages:,} stored pages of one host, {len(rules.holding('news.test'))} rules "
          f"holding; {args.links:,} links ({predicted:,} predicted); {os.cpu_count()} cores; "
          f"median of {args.repeat} runs\n")
    print("| a link's | µs | against the limit (20 µs) |")
    print("|---|---:|---:|")
    print(f"| rule check (UrlRules.predict) | {check:.2f} | {check / LIMIT_US:.2f} |")
    print(f"| w3lib canonicalize_url (Scrapy's request fingerprint runs it) | {peer:.2f} | "
          f"{peer / LIMIT_US:.2f} |")
    gate = redis_costs(stored, urls[:2000])
    print(f"| the crawl's gate, a host without a holding rule (RedisUrlRules.unruled) | "
          f"{gate['unruled_us']:.2f} | {gate['unruled_us'] / LIMIT_US:.2f} |")
    for batch in BATCHES:
        cpu, wall = gate[f"screen{batch}_cpu_us"], gate[f"screen{batch}_wall_us"]
        print(f"| the crawl's gate, a host with rules, {batch} link{'s' if batch > 1 else ''} "
              f"a screen (RedisUrlRules.screen on Redis): CPU / wall, in a worker thread | "
              f"{cpu:.1f} / {wall:.1f} | {cpu / LIMIT_US:.2f} (CPU) |")
    print("\ngoal met" if check <= LIMIT_US else "\ngoal NOT met")
    print(json.dumps({"pages": args.pages, "links": args.links, "predicted": predicted,
                      "check_us": round(check, 3), "canonicalize_url_us": round(peer, 3),
                      **{k: round(v, 2) for k, v in gate.items()},
                      "limit_us": LIMIT_US, "goal_met": check <= LIMIT_US}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
