"""The cost of a URL rule's check a link (dedup/urlrules.py), against the limit the crawl
can spend on it (20 µs a link), and against w3lib's canonicalize_url, which Scrapy's own
duplicate filter runs on every request, in the same run.

A host of ``--pages`` stored pages with rules that hold (a tracking parameter dropped, a
print view, a mirror host, a sort order ignored) and links of four kinds: variants the
rules predict, stored URLs (revisits), new pages, and links of a host without rules.

    python bench/bench_urlrules.py [--pages 10000] [--links 20000] [--repeat 3]

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

from dedup.urlrules import UrlRules

LIMIT_US = 20.0


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
    print("\ngoal met" if check <= LIMIT_US else "\ngoal NOT met")
    print(json.dumps({"pages": args.pages, "links": args.links, "predicted": predicted,
                      "check_us": round(check, 3), "canonicalize_url_us": round(peer, 3),
                      "limit_us": LIMIT_US, "goal_met": check <= LIMIT_US}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
