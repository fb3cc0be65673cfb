"""Whole sites built from the development articles, with the truth they imply.

Four sites, each a mapping of URL -> HTML and, per URL, its *group* (the pages of a
group are one document: the first met is the original, every other a true copy) and its
*kind*:

* **blog** (``http://blog.test``): Jekyll with the minima theme (Debian's ``jekyll``,
  ``jekyll-theme-minima`` and ``ruby-jekyll-paginate-v2``; the site's own files are in
  ``bench/sites/blog``). Posts (the articles), short notes, reposts of posts under titles
  of their own (copies), print and AMP versions of posts (copies under other layouts),
  the home page with summaries and pagination, the same listing again under ``/blog/``
  (copies: the same items under another URL), a home with the latest posts in full
  (``/latest/``, paginated), section and tag listings with pagination, an archive and an
  about page.
* **quotes** (``http://quotes.test``): listings of ten quotes (sentences of the
  articles, with their authors and tags) under pages and tags, author pages, and the same
  page listings in a table layout (copies: the same items in other markup).
* **news** (``http://news.test``): 1,500 pages titled "Article N", a fifth of them the
  body of another with 3 of its 250 words changed (copies under titles of their own), an
  archive of summaries in pages of 25 and a home page with the ten newest.
* **shop** (``http://shop.test``): products (two paragraphs of an article each) and
  their colour variants under titles of their own (copies), category listings of product
  cards with pagination, empty search pages and empty event-calendar months (copies of
  each other: the same text under titles of their own).

Listings are grouped by the items they show: two listings are one group exactly when
they show the same items.
"""

from __future__ import annotations

import html
import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

BLOG_SOURCE = Path(__file__).resolve().parent / "blog"
#: The links of a blog listing's summaries (bench/sites/blog/_includes/summaries.html).
POST_LINK = re.compile(r'<a class="post-link" href="([^"]+)"')
JEKYLL_PACKAGES = ("jekyll", "jekyll-theme-minima", "ruby-jekyll-paginate-v2",
                   "ruby-jekyll-seo-tag")


@dataclass
class Article:
    """A development article: its title and the lines of its text."""

    title: str
    lines: list[str]


@dataclass
class Site:
    """A built site: its pages, each page's group and kind, and where a crawl starts."""

    name: str
    start: str
    pages: dict[str, bytes] = field(default_factory=dict)
    group: dict[str, str] = field(default_factory=dict)
    kind: dict[str, str] = field(default_factory=dict)

    def add(self, url: str, body: str, group: str, kind: str) -> None:
        self.pages[url] = body.encode("utf-8")
        self.group[url] = group
        self.kind[url] = kind


def short_title(title: str) -> str:
    """A page's title without its site's name (``Story | Site`` -> ``Story``)."""
    return re.split(r"\s+[|–—-]\s+", title)[0].strip() or title


def slug(text: str, n: int) -> str:
    words = re.findall(r"[a-z0-9]+", text.lower())[:6]
    return "-".join(words) + f"-{n}" if words else f"item-{n}"


def esc(text: str) -> str:
    return html.escape(text, quote=True)


# ------------------------------------------------------------------------------ blog

SECTIONS = ("science", "business", "living", "culture")
TAGS = ("health", "money", "home", "food", "work", "travel", "family", "tech", "nature",
        "learning")


def jekyll() -> str:
    """The ``jekyll`` command, installed from Debian when missing and run as root."""
    found = shutil.which("jekyll")
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for step in (["apt-get", "update", "-qq"],
                     ["apt-get", "install", "-y", "-qq", *JEKYLL_PACKAGES]):
            subprocess.run(step, check=False, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        found = shutil.which("jekyll")
        if found:
            return found
    raise SystemExit("jekyll is not installed: the development blog is built with Debian's "
                     f"jekyll and the minima theme (apt-get install {' '.join(JEKYLL_PACKAGES)})")


def paragraphs(lines: list[str]) -> str:
    return "\n\n".join(f"<p>{esc(line)}</p>" for line in lines)


def build_blog(articles: list[Article], work: Path, seed: int = 7) -> Site:
    """The blog (see the module docstring), built with Jekyll in ``work``."""
    rng = random.Random(seed)
    source, out = work / "blog-src", work / "blog-site"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(BLOG_SOURCE, source)
    (source / "_posts").mkdir()
    (source / "print").mkdir()
    (source / "amp").mkdir()
    posts, rest = articles[:60], articles[60:]
    truth: dict[str, tuple[str, str]] = {}
    day = 0

    def post(title: str, lines: list[str], url_slug: str, group: str, kind: str,
             section: str, tags: list[str], extra: str = "") -> None:
        nonlocal day
        day += 1
        date = f"2025-{1 + day // 28:02d}-{1 + day % 28:02d}"
        url = f"/posts/{url_slug}/"
        front = (f"---\nlayout: post\ntitle: {title!r}\ncategories: [{section}]\n"
                 f"tags: [{', '.join(tags)}]\npermalink: {url}\n---\n")
        body = paragraphs(lines) + extra
        (source / "_posts" / f"{date}-{url_slug}.html").write_text(front + body + "\n")
        truth[url] = (group, kind)

    for n, a in enumerate(posts):
        name = slug(a.title, n)
        versions = ""
        if n % 4 == 0:  # a print and an AMP version of every fourth post
            versions = (f'\n\n<p class="versions"><a href="/print/{name}/">Print</a> · '
                        f'<a href="/amp/{name}/">Mobile version</a></p>')
            for layout in ("print", "amp"):
                (source / layout / f"{name}.html").write_text(
                    f"---\nlayout: {layout}\ntitle: {short_title(a.title)!r}\n"
                    f"permalink: /{layout}/{name}/\noriginal: /posts/{name}/\n---\n"
                    + paragraphs(a.lines) + "\n")
                truth[f"/{layout}/{name}/"] = (f"post-{n}", layout)
        post(short_title(a.title), a.lines, name, f"post-{n}", "post", SECTIONS[n % 4],
             rng.sample(TAGS, 2), versions)
    for n, a in enumerate(rest[:20]):  # short notes: a line or two of an article
        words = " ".join(a.lines).split()[:rng.randint(25, 60)]
        post(f"Note: {short_title(a.title)}", [" ".join(words)], f"note-{n}", f"note-{n}",
             "note", "notes", rng.sample(TAGS, 1))
    for n in range(0, 40, 5):  # reposts under titles of their own
        a = posts[n]
        post(f"From the archive, number {n // 5 + 1}", a.lines, f"repost-{n}", f"post-{n}",
             "repost", SECTIONS[(n + 1) % 4], rng.sample(TAGS, 2))
    subprocess.run([jekyll(), "build", "-q", "-s", str(source), "-d", str(out)], check=True,
                   stdout=subprocess.DEVNULL)
    site = Site("blog", "http://blog.test/")
    for path in sorted(out.rglob("*.html")):
        rel = "/" + path.relative_to(out).as_posix()
        url = rel[:-len("index.html")] if rel.endswith("/index.html") else rel
        group, kind = truth.get(url, (f"listing:{url}", "page" if url == "/about/"
                                      else "listing"))
        body = path.read_text(encoding="utf-8")
        if url.startswith("/blog/"):  # the home page's listing again, under /blog/
            group, kind = f"listing:{url[len('/blog'):]}", "listing alias"
        if kind != "page" and (shown := POST_LINK.findall(body)):  # a list of summaries
            group = "items:" + ",".join(sorted(shown))
        site.add("http://blog.test" + url, body, group, kind)
    return site


# ---------------------------------------------------------------------------- quotes

AUTHORS = ("Ada Lindgren", "Bram Okoye", "Carla Mendes", "Dmitri Sokol", "Esther Hale",
           "Farid Nasser", "Greta Holm", "Hugo Barros", "Ines Kowal", "Jonah Reyes",
           "Kira Tanaka", "Leo Marchetti")
QUOTE_TAGS = ("life", "work", "change", "truth", "courage", "learning", "love", "time",
              "nature", "money", "health", "hope")


def sentences(articles: list[Article], low: int = 10, high: int = 40) -> list[str]:
    out = []
    for a in articles:
        for line in a.lines:
            for s in re.split(r"(?<=[.!?])\s+", line):
                if low <= len(s.split()) <= high:
                    out.append(s)
    return out


def quotes_page(title: str, main: str, nav: str = "") -> str:
    tags = " ".join(f'<a class="tag" href="/tag/{t}/page/1/">{t}</a>' for t in QUOTE_TAGS)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)} | Quotes to Keep</title></head><body>"
            f"<header><h1><a href=\"/\">Quotes to Keep</a></h1>"
            f"<p>Words worth carrying around, collected by readers.</p>"
            f"<a href=\"/table/page/1/\">Table view</a> <a href=\"/login\">Login</a></header>"
            f"<div class=\"row\"><div class=\"col-md-8\">{main}{nav}</div>"
            f"<div class=\"col-md-4 tags-box\"><h2>Top Ten tags</h2>{tags}</div></div>"
            f"<footer><p>Quotes to Keep, a collection of quotations. Made with care.</p>"
            f"</footer></body></html>")


def build_quotes(articles: list[Article], seed: int = 7, count: int = 100) -> Site:
    """The quotes site (see the module docstring)."""
    rng = random.Random(seed)
    pool = sentences(articles)
    rng.shuffle(pool)
    passages = [" ".join(pool[i:i + rng.randint(3, 6)])
                for i in range(count, count + 40 * 6, 6)]  # long quotes, 3-6 sentences
    weights = [1 + 6 * (t in QUOTE_TAGS[:4]) for t in QUOTE_TAGS]  # few common tags
    quotes = []
    for i in range(count):
        tags = sorted(set(rng.choices(QUOTE_TAGS, weights, k=rng.randint(1, 3))))
        text = passages[i % len(passages)] if rng.random() < 0.15 else pool[i]
        quotes.append((text, AUTHORS[rng.randrange(len(AUTHORS))], tags))
    site = Site("quotes", "http://quotes.test/")
    author_slug = {a: re.sub(r"\W+", "-", a.lower()) for a in AUTHORS}

    def card(i: int) -> str:
        text, author, tags = quotes[i]
        links = " ".join(f'<a class="tag" href="/tag/{t}/page/1/">{t}</a>' for t in tags)
        return (f'<div class="quote"><span class="text">“{esc(text)}”</span>'
                f'<span>by <small class="author">{esc(author)}</small> '
                f'<a href="/author/{author_slug[author]}/">(about)</a></span>'
                f'<div class="tags">Tags: {links}</div></div>')

    def row(i: int) -> str:
        text, author, tags = quotes[i]
        return (f"<tr><td>{esc(text)}</td><td><a href=\"/author/{author_slug[author]}/\">"
                f"{esc(author)}</a></td><td>{', '.join(tags)}</td></tr>")

    def listing(prefix: str, items: list[int], title: str, table: bool = False,
                alias: str | None = None) -> None:
        pages = [items[i:i + 10] for i in range(0, len(items), 10)]
        for n, chunk in enumerate(pages, 1):
            nav = '<nav class="pager">'
            if n > 1:
                nav += f'<a href="{prefix}/page/{n - 1}/">Previous</a> '
            if n < len(pages):
                nav += f'<a href="{prefix}/page/{n + 1}/">Next</a>'
            nav += "</nav>"
            main = (f"<table><tr><th>Quote</th><th>Author</th><th>Tags</th></tr>"
                    f"{''.join(row(i) for i in chunk)}</table>" if table
                    else "".join(card(i) for i in chunk))
            group = "items:" + ",".join(map(str, sorted(chunk)))
            body = quotes_page(f"{title}, page {n}", main, nav)
            site.add(f"http://quotes.test{prefix}/page/{n}/", body, group,
                     "table listing" if table else "listing")
            if alias is not None and n == 1:
                site.add(f"http://quotes.test{alias}", body, group, "listing alias")

    listing("", list(range(count)), "Quotes", alias="/")
    listing("/table", list(range(count)), "Quotes (table)", table=True)
    for t in QUOTE_TAGS:
        listing(f"/tag/{t}", [i for i in range(count) if t in quotes[i][2]], f"Tagged {t}")
    bios = sentences(articles[60:], 12, 60)
    for n, author in enumerate(AUTHORS):
        bio = " ".join(bios[4 * n:4 * n + 4])
        main = (f'<div class="author-details"><h3 class="author-title">{esc(author)}</h3>'
                f'<p>Born: {1900 + 7 * n}</p><div class="author-description">{esc(bio)}'
                f"</div></div>")
        site.add(f"http://quotes.test/author/{author_slug[author]}/",
                 quotes_page(author, main), f"author-{n}", "author")
    return site


# ------------------------------------------------------------------------------ shop

COLOURS = ("Red", "Blue", "Green", "Black")
NOUNS = ("Lamp", "Kettle", "Backpack", "Chair", "Notebook", "Scarf", "Mug", "Planter",
         "Blanket", "Clock")
ADJECTIVES = ("Classic", "Compact", "Field", "Harbour", "Nordic", "Studio", "Trail",
              "Urban")
CATEGORIES = ("home", "outdoor", "office")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
SEARCHES = ("gift card", "refurbished", "clearance", "bundle", "wholesale", "engraving")


def blurb(line: str, words: int = 24) -> str:
    """A product card's blurb: the first sentence of its description, cut at ``words``
    words as a shop's card cuts it."""
    first = line.split(". ")[0].split()
    return " ".join(first[:words]) + ("…" if len(first) > words else ".")


def shop_page(title: str, main: str) -> str:
    searches = " ".join(f'<a href="/search/{s.replace(" ", "-")}/">{s}</a>' for s in SEARCHES)
    cats = " ".join(f'<a href="/category/{c}/page/1/">{c.title()}</a>' for c in CATEGORIES)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)} | Tidewater Goods</title></head><body>"
            f"<header><a href=\"/\">Tidewater Goods</a><nav>{cats}</nav>"
            f"<form action=\"/search/\"><input name=\"q\"></form></header>"
            f"<main>{main}</main><aside><h4>Popular searches</h4>{searches}</aside>"
            f"<footer><a href=\"/events/2026/01/\">Events</a> <a href=\"/about/\">About</a>"
            f"<p>Free returns within 30 days. Tidewater Goods, est. 2009.</p></footer>"
            f"</body></html>")


def build_shop(articles: list[Article], seed: int = 7, count: int = 30) -> Site:
    """The shop (see the module docstring; ``seed`` is not used: the shop is fixed)."""
    site = Site("shop", "http://shop.test/")
    products = []
    for n in range(count):
        a = articles[n % len(articles)]
        name = f"{ADJECTIVES[n % len(ADJECTIVES)]} {NOUNS[n % len(NOUNS)]} {n + 1}"
        lines = [line for line in a.lines if len(line.split()) >= 12][:2] or a.lines[:2]
        products.append((name, lines, f"{19 + 7 * n}.00", CATEGORIES[n % 3]))
    for n, (name, lines, price, _cat) in enumerate(products):
        base = f"/product/{slug(name, n)}"
        colours = COLOURS[:3] if n % 2 == 0 else ()
        also = " ".join(f'<a href="{base}-{c.lower()}/">{c}</a>' for c in colours)
        for colour in (None, *colours):
            title = name if colour is None else f"{name} in {colour}"
            main = (f"<h1>{esc(title)}</h1><p class=\"price\">${price}</p>"
                    + "".join(f"<p>{esc(line)}</p>" for line in lines)
                    + (f"<p>Also available in: {also}</p>" if also else "")
                    + "<button>Add to basket</button>")
            url = base + ("/" if colour is None else f"-{colour.lower()}/")
            site.add("http://shop.test" + url, shop_page(title, main), f"product-{n}",
                     "product" if colour is None else "variant")
    for cat in CATEGORIES:
        items = [n for n, p in enumerate(products) if p[3] == cat]
        chunks = [items[i:i + 4] for i in range(0, len(items), 4)]
        for k, chunk in enumerate(chunks, 1):
            cards = "".join(
                f'<div class="card"><a href="/product/{slug(products[n][0], n)}/">'
                f"{esc(products[n][0])}</a><span>${products[n][2]}</span>"
                f"<p>{esc(blurb(products[n][1][0]))}</p></div>" for n in chunk)
            nav = (f'<a href="/category/{cat}/page/{k + 1}/">Next page</a>'
                   if k < len(chunks) else "")
            site.add(f"http://shop.test/category/{cat}/page/{k}/",
                     shop_page(f"{cat.title()}, page {k}", f"<h1>{cat.title()}</h1>{cards}{nav}"),
                     "items:" + ",".join(map(str, chunk)), "listing")
    home = "".join(f'<a href="/category/{c}/page/1/">Shop {c}</a> ' for c in CATEGORIES)
    site.add("http://shop.test/", shop_page("Welcome", f"<h1>Tidewater Goods</h1>"
                                            f"<p>Useful things for house and trail.</p>{home}"),
             "home", "page")
    about = " ".join(sentences(articles[80:], 12, 40)[:6])
    site.add("http://shop.test/about/", shop_page("About us", f"<h1>About us</h1>"
                                                  f"<p>{esc(about)}</p>"), "about", "page")
    for s in SEARCHES:
        site.add(f"http://shop.test/search/{s.replace(' ', '-')}/",
                 shop_page(f"Search results for {s}",
                           "<h1>Search</h1><p>No products match your search. Check the "
                           "spelling, use fewer words, or browse our categories.</p>"),
                 "empty-search", "empty search")
    for m, month in enumerate(MONTHS, 1):
        prev = f'<a href="/events/2026/{m - 1:02d}/">Previous month</a> ' if m > 1 else ""
        nxt = f'<a href="/events/2026/{m + 1:02d}/">Next month</a>' if m < 12 else ""
        site.add(f"http://shop.test/events/2026/{m:02d}/",
                 shop_page(f"Events in {month} 2026",
                           f"<h1>Events calendar</h1><p>There are no events scheduled for "
                           f"this month. Sign up to our newsletter to hear about workshops "
                           f"and store openings first.</p>{prev}{nxt}"),
                 "empty-calendar", "empty calendar")
    return site


# ------------------------------------------------------------------------------ news

#: A news site's body: about this many words, in paragraphs of three sentences.
NEWS_WORDS = 250


def news_page(title: str, main: str, popular: str) -> str:
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)} - The Harbour Post</title></head><body>"
            f"<header><a href=\"/\">The Harbour Post</a><nav><a href=\"/archive/page/1/\">"
            f"Archive</a> <a href=\"/about/\">About</a></nav></header>"
            f"<main>{main}</main><aside><h3>Most read</h3>{popular}</aside>"
            f"<footer><p>The Harbour Post. Local news since 1998. All rights reserved.</p>"
            f"</footer></body></html>")


def build_news(articles: list[Article], seed: int = 7, count: int = 1500,
               copies: float = 0.2, per_page: int = 25) -> Site:
    """The news site: ``count`` pages titled "Article N" (their title and their heading),
    each a body of about :data:`NEWS_WORDS` words drawn from the articles' sentences;
    ``copies`` of them repeat another page's body with 3 of its words changed, under
    their own "Article N" (copies of it: a site's re-titled reposts); an archive of them
    in pages of ``per_page`` summaries (title and first words), newest first, and a home
    page with the ten newest."""
    rng = random.Random(seed)
    pool = sentences(articles, 8, 40)
    bodies: list[list[str]] = []
    order: list[str] = []
    originals = count - int(count * copies)
    while len(bodies) < originals:
        if not order:
            order = pool[:]
            rng.shuffle(order)
        body: list[str] = []
        while sum(len(s.split()) for s in body) < NEWS_WORDS and order:
            body.append(order.pop())
        bodies.append(body)
    source = list(range(originals)) + [rng.randrange(originals)
                                       for _ in range(count - originals)]
    rng.shuffle(source)
    site = Site("news", "http://news.test/")
    popular = " ".join(f'<a href="/article/{n}/">Article {n}</a>'
                       for n in rng.sample(range(1, count + 1), 5))
    first_words: dict[int, str] = {}
    used: set[int] = set()
    for n, body_of in enumerate(source, 1):
        words = " ".join(bodies[body_of]).split()
        copy = body_of in used  # the first page with the body is its own
        used.add(body_of)
        if copy:
            for at in rng.sample(range(len(words)), 3):
                other = rng.choice(words)
                words[at] = other if other != words[at] else other + "s"
        text = " ".join(words)
        parts = re.split(r"(?<=[.!?])\s+", text)
        paras = [" ".join(parts[i:i + 3]) for i in range(0, len(parts), 3)]
        first_words[n] = " ".join(words[:20]) + "…"
        main = (f"<article><h1>Article {n}</h1><p class=\"byline\">By the news desk</p>"
                + paragraphs(paras) + "</article>")
        site.add(f"http://news.test/article/{n}/", news_page(f"Article {n}", main, popular),
                 f"body-{body_of}", "retitled edit" if copy else "article")
    newest = list(range(count, 0, -1))
    pages = [newest[i:i + per_page] for i in range(0, count, per_page)]

    def summaries(items: list[int]) -> str:
        return "".join(f'<div class="summary"><h2><a href="/article/{n}/">Article {n}</a>'
                       f"</h2><p>{esc(first_words[n])}</p></div>" for n in items)

    for k, items in enumerate(pages, 1):
        near = [j for j in (1, k - 2, k - 1, k + 1, k + 2, len(pages)) if 1 <= j <= len(pages)]
        nav = " ".join(f'<a href="/archive/page/{j}/">{j}</a>' for j in sorted(set(near)))
        site.add(f"http://news.test/archive/page/{k}/",
                 news_page(f"Archive, page {k}", f"<h1>Archive</h1>{summaries(items)}"
                           f"<nav class=\"pages\">{nav}</nav>", popular),
                 "items:" + ",".join(map(str, items)), "listing")
    site.add("http://news.test/", news_page("The Harbour Post", "<h1>Latest</h1>"
                                            + summaries(newest[:10]), popular),
             "items:" + ",".join(map(str, newest[:10])), "listing")
    about = " ".join(sentences(articles[40:], 12, 40)[:5])
    site.add("http://news.test/about/", news_page("About the Post", f"<h1>About</h1>"
                                                  f"<p>{esc(about)}</p>", popular),
             "about", "page")
    return site
