"""Variants grown from the development articles, decided by the crawl's rules: heavy
rewrites at 30, 40 and 50% of the words edited, stubs of 10-80 words of their own in one
site's template, cross-template republications, and boilerplate changes with small edits.

The labelled sets hold a few variants of each kind per article; this grows many more from
the same articles, at chosen strengths, so that each rule is measured on hundreds of
pairs (development figures; the data is read from ``../shared``, never copied):

* the article: the own text of each original page (``-P``) as the crawl reads it
  (:func:`dedup.reading.read_html`, the crawl's settings);
* a site's template: the lines that the two template-only stubs of its group
  (``-F1``, ``-F2``, near-dup-dev-2) share, as the crawl extracts them;
* **rewrite r%**: spans of 3-12 words replaced by words of the same article until r% of
  its words are edited (same topic and vocabulary): never a copy;
* **stub n words**: a site's template with n words of their own and a title of their own
  (and, harder, the same title as the other stub; with the same title, and a description
  of its own each, its first words as a CMS writes one; with the same title once the
  site's template is learned, as the crawl learns it from five admitted pages of the
  site): two stubs of a site are never copies; and a site's eight stubs decided in crawl
  order by one deduplicator, which learns the site's template from those it admits;
* **republished**: the article's lines without its site's template, under another site's
  template: always a copy;
* **boilerplate + edit**: the article with three lines of another site's template added and
  2% of its words edited (spans of 1-2): always a copy; and the same on the article's
  site with neither page described (the pairs the own-passage rule asks about);
* **a title of its own**: the article's text on its site under the heading and title
  "Article N", the same or with 3 words in 250 edited: always a copy.

Each pair is decided alone by the crawl's decision on memory stores
(:func:`dedup.deduplicator.in_memory`): the first page admitted, then the second
decided.

    python bench/quality_grown.py [--data PATH ...] [--per-article 3] [--seed 7]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _peers import missing_data  # bench/ is the script's folder: on sys.path

from dedup.config import DedupConfig
from dedup.deduplicator import in_memory
from dedup.page import Page
from dedup.reading import fingerprint_params, fingerprint_text, read_html
from dedup.templates import lesson
from dedup.text import ExtractedText

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFAULT_DATA = [SHARED / "near-dup-dev", SHARED / "near-dup-dev-2"]


def read_set(data: Path, params: tuple) -> dict[str, Page]:  # type: ignore[type-arg]
    rows = [json.loads(line) for line in (data / "pages.jsonl").open()]
    out = {}
    for row in rows:
        if row["page"].rsplit("-", 1)[-1] not in ("P", "F1", "F2"):
            continue
        html = gzip.decompress((data / "pages" / f"{row['page']}.html.gz").read_bytes())
        out[row["page"]] = read_html(html, row["url"], params)
    return out


def templates(pages: dict[str, Page]) -> dict[str, list[str]]:
    """Per group, the lines its two stubs share (the site's template as extracted)."""
    out = {}
    for name, page in pages.items():
        if name.endswith("-F1") and name[:-1] + "2" in pages:
            other = set(pages[name[:-1] + "2"].text.splitlines())
            lines = [line for line in page.text.splitlines() if line in other]
            if len(" ".join(lines).split()) >= 30:
                out[name[:-3]] = lines
    return out


def edit(text: str, share: float, spans: tuple[int, int], rng: random.Random) -> str:
    """``text`` with spans of words replaced by other words of the same text until
    ``share`` of its words are edited."""
    lines = [line.split() for line in text.splitlines()]
    where = [(i, j) for i, words in enumerate(lines) for j in range(len(words))]
    vocab = [w for words in lines for w in words]
    if not where:
        return text
    done: set[tuple[int, int]] = set()
    while len(done) < share * len(where):
        at = rng.randrange(len(where))
        for i, j in where[at:at + rng.randint(*spans)]:
            if (i, j) not in done:
                replacement = rng.choice(vocab)
                lines[i][j] = replacement if replacement != lines[i][j] else lines[i][j] + "s"
                done.add((i, j))
    return "\n".join(" ".join(words) for words in lines)


def make(text: str, url: str, title: str, params: tuple,  # type: ignore[type-arg]
         description: str | None = None) -> Page:
    return fingerprint_text(ExtractedText(text, "trafilatura"), params, url, title=title,
                            description=description)


def decide_pair(first: Page, second: Page, template: list[str] | None = None) -> bool:
    """Whether ``second`` is dropped as a copy once ``first`` is admitted (``template``:
    the site's template lines, learned first as the crawl learns them from other pages
    of the site)."""
    dedup, _ = in_memory(capacity=1000)
    if template is not None and dedup.templates is not None:
        lines = "\n".join(template)  # on that many pages of the site, each with its own text
        dedup.templates.learn(
            lesson(first.host, " ".join(f"own{n}x{i}" for i in range(40)) + "\n" + lines)
            for n in range(DedupConfig().template_pages))
    dedup.decide([first])
    return dedup.decide([second])[0].dropped


def grow(articles: dict[str, Page], sites: dict[str, list[str]], per: int, seed: int,
         params: tuple) -> dict[str, list[bool]]:  # type: ignore[type-arg]
    rng = random.Random(seed)
    words = [w for p in articles.values() for w in p.text.split()]
    kinds: dict[str, list[bool]] = {}
    site_names = sorted(sites)

    def add(kind: str, dropped: bool) -> None:
        kinds.setdefault(kind, []).append(dropped)

    for n, (name, page) in enumerate(sorted(articles.items())):
        group = name.rsplit("-", 1)[0]
        own = [line for line in page.text.splitlines()
               if line not in set(sites.get(group, []))]
        for k in range(per):
            url = f"https://{page.host}/grown/{n}-{k}"
            elsewhere = sites[site_names[rng.randrange(len(site_names))]]
            for share in (0.3, 0.4, 0.5):
                add(f"rewrite {share:.0%}", decide_pair(page, make(
                    edit(page.text, share, (3, 12), rng), url + f"-r{share}", page.title or "",
                    params)))
            add("republished", decide_pair(page, make(
                "\n".join(own + elsewhere), f"https://republisher{k}.example/{n}",
                page.title or "", params)))
            teasers = elsewhere[:3]
            add("boilerplate + edit", decide_pair(page, make(
                edit(page.text, 0.02, (1, 2), rng) + "\n" + "\n".join(teasers), url + "-b",
                page.title or "", params)))
    for n, (group, lines) in enumerate(sorted(sites.items())):
        host = f"site{n}.example"
        for k in range(per):
            for size in (10, 20, 40, 80):
                at, other = rng.randrange(len(words) - size), rng.randrange(len(words) - size)
                titles = [" ".join(rng.sample(words, 6)), " ".join(rng.sample(words, 6))]
                own = [" ".join(words[at:at + size]), " ".join(words[other:other + size])]

                def stub(n: int, title: str, described: bool) -> Page:
                    """Stub ``n`` of the pair: the template with its own words (and a
                    description of its first 25 words, as a CMS writes one)."""
                    return make("\n".join(lines[:1] + [own[n]] + lines[1:]),
                                f"https://{host}/{'ab'[n]}{k}-{size}", title, params,
                                " ".join(own[n].split()[:25]) if described else None)

                for label, title, described in (("titles differ", titles[1], False),
                                                ("one title", titles[0], False),
                                                ("one title, own descriptions", titles[0],
                                                 True)):
                    add(f"stub {size} words, {label}",
                        decide_pair(stub(0, titles[0], described), stub(1, title, described)))
                add(f"stub {size} words, one title, site template learned",
                    decide_pair(stub(0, titles[0], False), stub(1, titles[0], False), lines))
    sites_of_stubs(sites, words, seed, params, add)
    undescribed_copies(articles, sites, per, seed, params, add)
    retitled_copies(articles, per, seed, params, add)
    return kinds


def undescribed_copies(articles: dict[str, Page], sites: dict[str, list[str]], per: int,
                       seed: int, params: tuple,  # type: ignore[type-arg]
                       add: Callable[[str, bool], None]) -> None:
    """Copies on their original's site where neither page is described (the pairs the
    own-passage rule asks about, docs/fingerprints.md): the article with 2% of its words
    edited, with three lines of another site's template added, and with both (their own
    random stream, so that the pairs above stay as they were)."""
    rng = random.Random(seed + 2)
    site_names = sorted(sites)
    for n, (_, page) in enumerate(sorted(articles.items())):
        url, title = f"https://{page.host}/grown/{n}", page.title or ""
        for k in range(per):
            lines = sites[site_names[rng.randrange(len(site_names))]][:3]
            edited = edit(page.text, 0.02, (1, 2), rng)
            for label, text in (("2% of the words edited", edited),
                                ("three lines added", page.text + "\n" + "\n".join(lines)),
                                ("both", edited + "\n" + "\n".join(lines))):
                add(f"copy on its site, neither described: {label}", decide_pair(
                    make(page.text, url, title, params),
                    make(text, f"{url}-{k}", title, params)))


def retitled_copies(articles: dict[str, Page], per: int, seed: int,
                    params: tuple,  # type: ignore[type-arg]
                    add: Callable[[str, bool], None]) -> None:
    """Copies on their original's site under titles of their own, as a site's reposts,
    doorway pages and "Article N" pages are: the article's text under the heading "Article
    N" (its title), the same or with 3 words in 250 edited (its own random stream)."""
    rng = random.Random(seed + 3)
    for n, (_, page) in enumerate(sorted(articles.items())):
        body = "\n".join(line for line in page.text.splitlines()
                         if line.strip() != (page.title or "").split(" | ")[0].strip())
        url = f"https://{page.host}/article-{2 * n}"
        first = make(f"Article {2 * n}\n{body}", url, f"Article {2 * n}", params)
        for k in range(per):
            other = f"Article {2 * n + 1 + 2 * k}"
            for label, text in (("the same text", body),
                                ("3 words in 250 edited", edit(body, 3 / 250, (1, 1), rng))):
                add(f"copy on its site under a title of its own: {label}", decide_pair(
                    first, make(f"{other}\n{text}", f"{url}-{k}", other, params)))


#: Stubs of one site decided in crawl order by :func:`sites_of_stubs`.
SITE_STUBS = 8


def sites_of_stubs(sites: dict[str, list[str]], words: list[str], seed: int,
                   params: tuple, add: Callable[[str, bool], None]  # type: ignore[type-arg]
                   ) -> None:
    """A site's :data:`SITE_STUBS` stubs (10-80 words of their own each) decided one
    after another by one deduplicator, as a crawl meets them: the admitted ones teach the
    site's template as the crawl learns it; each stub after the first is counted, dropped
    or not. Under one title and without descriptions, a dropped stub teaches nothing, so
    the template is learned only from the stubs admitted (their own random stream, so
    that the pairs above stay as they were)."""
    rng = random.Random(seed + 1)
    for n, (_, lines) in enumerate(sorted(sites.items())):
        for label, one_title in (("titles differ", False), ("one title, no description", True)):
            dedup, _ = in_memory(capacity=1000)
            title = " ".join(rng.sample(words, 6))
            for i in range(SITE_STUBS):
                size = rng.choice((10, 20, 40, 80))
                at = rng.randrange(len(words) - size)
                page = make("\n".join(lines[:1] + [" ".join(words[at:at + size])] + lines[1:]),
                            f"https://site{n}.example/stub/{i}", title if one_title
                            else " ".join(rng.sample(words, 6)), params)
                dropped = dedup.decide([page])[0].dropped
                if i:
                    which = "2nd-4th" if i < 4 else f"5th-{SITE_STUBS}th"
                    add(f"stub in crawl order, the {which} of a site's {SITE_STUBS}, {label}",
                        dropped)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, nargs="+", default=DEFAULT_DATA)
    parser.add_argument("--per-article", type=int, default=3,
                        help="variants of each kind grown from each article (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    params = fingerprint_params(DedupConfig())
    started = time.perf_counter()
    articles: dict[str, Page] = {}
    sites: dict[str, list[str]] = {}
    for data in args.data:
        if not (data / "pages.jsonl").is_file():
            raise missing_data(data, "A near-duplicate development set (pages.jsonl)")
        pages = read_set(data, params)
        articles.update({f"{data.name}/{k}": p for k, p in pages.items() if k.endswith("-P")})
        sites.update({f"{data.name}/{k}": v for k, v in templates(pages).items()})
    if not sites:
        raise SystemExit("no site templates: near-dup-dev-2's stub pages are needed")
    kinds = grow(articles, sites, args.per_article, args.seed, params)
    print(f"{len(articles)} articles, {len(sites)} site templates, {args.per_article} "
          f"variants of each kind per article or site; {time.perf_counter() - started:.0f} s "
          "(development figures)\n")
    print("| grown kind | a copy? | dropped as a copy | pairs | share |")
    print("|---|---|---:|---:|---:|")
    copies: dict[str, Callable[[str], bool]] = {"rewrite": lambda k: False,
                                                "stub": lambda k: False}
    for kind, got in kinds.items():
        dup = copies.get(kind.split()[0], lambda k: True)(kind)
        print(f"| {kind} | {'yes' if dup else 'no'} | {sum(got)} | {len(got)} | "
              f"{sum(got) / len(got):.1%} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
