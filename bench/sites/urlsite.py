"""A news site whose pages are linked under many URLs, with the truth of which URLs are one
page: the URL conventions a crawl meets on the web (bench/quality_urlrules.py crawls it).

Built from the development articles (``http://urls.test``):

* **articles** ``/news/<slug>.html`` (every development article), linked from the home page, their section's listing
  and other articles, and under variants, each one the same page:
  - ``?utm_source=share`` (a share link on the article itself) and ``?ref=related`` (the
    related articles of another article), ``?ref=popular`` (the home page's sidebar):
    tracking parameters;
  - ``;jsessionid=<id>`` on the links of two sections' listings: a session id;
  - ``/print/news/<slug>.html`` and ``/amp/news/<slug>.html``: a print view and an AMP
    view, in layouts of their own (the same text);
* **section listings** ``/section/<name>/``, five articles a page, paginated with
  ``?page=2`` and on (a parameter that changes the page); ``?page=1`` and
  ``index.html`` are the first page again (a parameter and a directory alias);
* **search pages** ``/search?q=<tag>``: the articles of a tag (``q`` changes the page);
* **the archive** ``/archive/``, every title, and the same list ``?sort=title`` and
  ``?sort=date`` in other orders (one page: ``sort`` does not change what it shows);
* the first related article of each article is linked as an older CMS wrote it,
  ``/News/<Slug>.html``: the path's letter case;
* each article's breadcrumb links its section as ``/section/<name>``: a trailing slash
  left out;
* **the home page** ``/`` (the ten newest and five popular articles);
* **a mirror host** ``http://www.urls.test``: every page of the site again, the same
  bytes, linked from each article's "permalink" (its links, relative, stay on the mirror).

The truth: each URL's *group* (the URLs of one group are one page; the first requested is
its original) and its *kind*.
"""

from __future__ import annotations

import random

from sitegen import Article, Site, esc, paragraphs, slug

SECTIONS = ("science", "business", "living", "culture")
SESSION_SECTIONS = ("business", "living")  # their listings link articles with a session id
TAGS = ("health", "money", "home", "food", "work", "travel")
PER_PAGE = 5
HOST = "http://urls.test"
MIRROR = "http://www.urls.test"


def _page(title: str, main: str, aside: str = "") -> str:
    nav = " | ".join(f'<a href="/section/{s}/">{s.title()}</a>' for s in SECTIONS)
    search = " ".join(f'<a href="/search?q={t}">{t}</a>' for t in TAGS)
    return (f"<!doctype html><html><head><title>{esc(title)} | Urls Daily</title></head>"
            f'<body><header><a href="/">Urls Daily</a><nav>{nav}</nav></header>'
            f"<main>{main}</main><aside>{aside}</aside>"
            f'<footer><p>Topics: {search}</p><p><a href="/archive/">Archive</a> · '
            f'<a href="/section/science/index.html">Science front</a></p>'
            "<p>Urls Daily, an independent newsroom since 1999.</p></footer></body></html>")


def build_urls(articles: list[Article], seed: int = 7, count: int | None = None) -> Site:
    """The site (see the module docstring), of ``count`` articles (default: all)."""
    rng = random.Random(seed)
    site = Site("urls", HOST + "/")
    items = articles[:count]
    slugs = [slug(a.title, n) for n, a in enumerate(items)]
    section = [SECTIONS[n % len(SECTIONS)] for n in range(len(items))]
    tags = [rng.sample(TAGS, 2) for _ in items]
    url = [f"/news/{s}.html" for s in slugs]

    def link(n: int, suffix: str = "") -> str:
        return f'<a href="{url[n]}{suffix}">{esc(items[n].title)}</a>'

    for n, a in enumerate(items):
        group = f"article:{n}"
        related = rng.sample([m for m in range(len(items)) if m != n], 3)
        body = (f'<p class="crumbs"><a href="/section/{section[n]}">{section[n].title()}</a></p>'
                f"<article><h1>{esc(a.title)}</h1>{paragraphs(a.lines)}</article>"
                f'<p><a href="/print{url[n]}">Print</a> · <a href="/amp{url[n]}">AMP</a> · '
                f'<a href="{url[n]}?utm_source=share">Share</a> · '
                f'<a href="{MIRROR}{url[n]}">Permalink</a></p>')
        aside = "<h2>Related</h2><ul>" + "".join(
            f'<li><a href="{_cased(url[m])}">{esc(items[m].title)}</a></li>' if k == 0
            else f"<li>{link(m, '?ref=related')}</li>" for k, m in enumerate(related)) + \
            "</ul>"
        page = _page(a.title, body, aside)
        site.add(HOST + url[n], page, group, "article")
        for suffix, kind in (("?utm_source=share", "tracking"), ("?ref=related", "tracking"),
                             ("?ref=popular", "tracking")):
            site.add(HOST + url[n] + suffix, page, group, kind)
        site.add(HOST + _cased(url[n]), page, group, "letter case")
        if section[n] in SESSION_SECTIONS:
            site.add(f"{HOST}{url[n]};jsessionid={_session(n)}", page, group, "session id")
        site.add(f"{HOST}/print{url[n]}",
                 f"<html><head><title>{esc(a.title)}</title></head><body><h1>{esc(a.title)}"
                 f"</h1>{paragraphs(a.lines)}<p>Printed from Urls Daily</p></body></html>",
                 group, "print")
        site.add(f"{HOST}/amp{url[n]}",
                 f"<html amp><head><title>{esc(a.title)}</title></head><body><div "
                 f'class="amp-article"><h1>{esc(a.title)}</h1>{paragraphs(a.lines)}</div>'
                 '<a href="/">Urls Daily</a></body></html>', group, "amp")

    def teaser(n: int, suffix: str = "") -> str:
        words = " ".join(" ".join(items[n].lines).split()[:30])
        return f"<article><h2>{link(n, suffix)}</h2><p>{esc(words)}...</p></article>"

    for s in SECTIONS:
        members = [n for n in range(len(items)) if section[n] == s]
        pages = [members[i:i + PER_PAGE] for i in range(0, len(members), PER_PAGE)]
        for p, shown in enumerate(pages, 1):
            suffix = f";jsessionid={_session(p)}" if s in SESSION_SECTIONS else ""
            nav = " ".join(f'<a href="/section/{s}/?page={q}">{q}</a>'
                           for q in range(1, len(pages) + 1) if q != p)
            main = (f"<h1>{s.title()}, page {p}</h1>"
                    + "".join(teaser(n).replace(url[n] + '"', url[n] + suffix + '"')
                              for n in shown) + f"<nav>Pages: {nav}</nav>")
            page = _page(f"{s.title()} page {p}", main)
            group = f"section:{s}:{p}"
            if p == 1:
                for alias in (f"/section/{s}/", f"/section/{s}/?page=1",
                              f"/section/{s}/index.html"):
                    site.add(HOST + alias, page, group, "listing" if alias.endswith("/")
                             else "listing alias")
                site.add(f"{HOST}/section/{s}", page, group, "trailing slash")
            else:
                site.add(f"{HOST}/section/{s}/?page={p}", page, group, "listing")

    for t in TAGS:
        shown = [n for n in range(len(items)) if t in tags[n]]
        main = f"<h1>Search: {t}</h1>" + "".join(teaser(n) for n in shown)
        site.add(f"{HOST}/search?q={t}", _page(f"Search {t}", main), f"search:{t}", "listing")

    orders = {"": list(range(len(items))),
              "?sort=title": sorted(range(len(items)), key=lambda n: items[n].title),
              "?sort=date": list(reversed(range(len(items))))}
    for suffix, order in orders.items():
        main = "<h1>Archive</h1><ul>" + "".join(f"<li>{link(n)}</li>" for n in order) + \
            "</ul><p>Sort: <a href=\"/archive/?sort=title\">by title</a> · " \
            "<a href=\"/archive/?sort=date\">by date</a></p>"
        site.add(f"{HOST}/archive/{suffix}", _page("Archive", main), "archive",
                 "listing" if not suffix else "sort order")

    newest = list(range(len(items)))[-10:]
    popular = rng.sample(range(len(items)), 5)
    main = "<h1>Latest</h1>" + "".join(teaser(n) for n in reversed(newest))
    aside = "<h2>Popular</h2><ul>" + "".join(
        f"<li>{link(n, '?ref=popular')}</li>" for n in popular) + "</ul>"
    site.add(HOST + "/", _page("Urls Daily", main, aside), "home", "listing")
    for url_, body in list(site.pages.items()):
        site.add(MIRROR + url_[len(HOST):], body.decode("utf-8"), site.group[url_], "mirror")
    return site


def _cased(path: str) -> str:
    """An older CMS's spelling of an article's path: ``/News/<Slug>.html``."""
    return "/News/" + path.removeprefix("/news/").capitalize()


def _session(n: int) -> str:
    return f"{(n * 7919) % 100000:05d}AF3C"
