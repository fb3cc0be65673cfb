"""A local demo site with a known outcome: originals, their copies, and traps.

Four "hosts" (ports on 127.0.0.1), generated deterministically from a seed:

``news``
    The originals: a home page, articles, print versions of some articles (the same
    text under a print template), tag pages (little text), a redirect, a 404 link, a PDF,
    an oversized page, a page of broken HTML, a binary file served as HTML, and a
    ``robots.txt`` that disallows ``/private/`` (linked from the home page).
``mirror``
    Every article again, under another template with ads, menus, a timestamp and a
    comment block. Reached only through the "also published at" link of its original.
``wire``
    Syndicated copies of half the articles with a few words edited and a credit line.
``zh``
    Chinese articles served in GBK, each linking to a copy under another template.

Every copy links to a trap page (``/trap/...``). A copy is reachable only through its
original, so the original is always decided first: a crawler that drops near duplicates
before it follows their links never requests a trap. The server logs every request
(:attr:`DemoSite.requests`, and a JSON-lines file when asked).

    python -m crawler.examples.demosite            # serve until Ctrl-C, print the URLs
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SEED = 2007
HOSTS = ("news", "mirror", "wire", "zh")
#: Han characters of the demo's short quotation of a registered chapter (``zh/forum/2``):
#: the smallest quotation the crawl records (docs/chinese.md, "Quotation or copy").
QUOTE_CHARS = 60

_PLACES = ["Harbourside", "Millbrook", "Eastfield", "Ravenscourt", "Kingsbridge", "Ashdown",
           "Northgate", "Willowmere", "Stonehaven", "Fairhaven", "Oakridge", "Lowmoor"]
_BODIES = ["the town council", "the port authority", "the regional health board",
           "the county library service", "the water company", "the chamber of commerce",
           "the school trust", "the rail operator", "the housing association",
           "the fire and rescue service", "the university", "the weather service"]
_PEOPLE = ["Maria Alvarez", "Tom Okafor", "Helen Brandt", "Samir Haddad", "Lucy Chen",
           "Peter Novak", "Grace Mensah", "David Lindqvist", "Aisha Rahman", "Owen Pryce",
           "Nadia Petrova", "James Whitfield"]
_ROLES = ["the council leader", "a spokesperson", "the project manager", "a local resident",
          "the chief engineer", "the head teacher", "a shop owner", "the harbour master",
          "an independent auditor", "the finance director"]
_TOPICS = [
    ("harbour", "the harbour wall repairs", "storm damage", "fishing boats"),
    ("budget", "the annual budget", "spending cuts", "council tax"),
    ("railway", "the new railway timetable", "evening services", "commuters"),
    ("library", "the library reopening", "longer opening hours", "reading groups"),
    ("festival", "the summer festival", "ticket sales", "street performers"),
    ("hospital", "the hospital extension", "waiting times", "night shifts"),
    ("bridge", "the river bridge closure", "traffic diversions", "cyclists"),
    ("market", "the covered market", "rent increases", "stallholders"),
    ("school", "the school building plan", "classroom places", "parents"),
    ("flood", "the flood defence scheme", "river levels", "homeowners"),
    ("housing", "the housing development", "affordable homes", "planning objections"),
    ("energy", "the solar farm proposal", "electricity prices", "landowners"),
]
_SENTENCES = [
    "{Body} said on {day} that {topic} would go ahead after months of delay.",
    "According to {person}, {role}, the work on {topic} will cost about {money} pounds.",
    "Residents of {place} have raised concerns about {issue} for more than {n} years.",
    "{Person} told reporters that {group} in {place} would see the first changes by {month}.",
    "The plan was approved by {n} votes to {m} at a meeting that lasted {hours} hours.",
    "Critics argue that {issue} has been ignored while {group} carried the cost.",
    "A report published in {month} found that {pct} per cent of {group} were affected.",
    "{Body} has promised a public consultation before any decision on {issue}.",
    "Work is expected to start in {month} and to last around {n} weeks, weather permitting.",
    "{Person}, {role}, described the decision as long overdue but welcome.",
    "Figures released this week show that {issue} rose by {pct} per cent over {n} years.",
    "Local businesses in {place} said {issue} had already changed how they plan ahead.",
    "The scheme is partly funded by a grant of {money} pounds from the national government.",
    "Opposition members asked why {topic} had not been discussed with {group} earlier.",
    "{Person} said the team had learned from similar projects in {place2} and {place3}.",
    "A further update on {topic} is due at the next meeting of {body} in {month}.",
]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "September",
           "October", "November"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]

_ZH_TOPICS = ["春天的小镇", "老街的早市", "河边的茶馆", "山村的小学", "城市的夜班车", "外婆的菜园"]
_ZH_SENTENCES = [
    "清晨的阳光照在{place}的石板路上，街道两旁的{thing}已经开始忙碌起来。",
    "{person}说，这些年{place}变化很大，但是{thing}的味道一直没有变。",
    "每到{season}，附近的居民都会带着孩子来这里散步，看{thing}。",
    "据当地人介绍，{place}已经有{n}多年的历史，最早是一个小小的渡口。",
    "{person}在这里工作了{n}年，他记得每一位老顾客的名字和习惯。",
    "傍晚时分，{thing}的灯一盏一盏亮起来，整条街都变得温暖而安静。",
    "有人担心新的规划会让{place}失去原来的样子，也有人觉得这是难得的机会。",
    "孩子们最喜欢的是{thing}，放学以后总要在门口停留一会儿。",
    "{season}的雨水很多，{place}的青苔长得特别茂盛，空气里有泥土的清香。",
    "{person}笑着说，只要大家还愿意回来，{place}就永远不会冷清。",
]
_ZH_PLACES = ["小镇", "老街", "河岸", "山村", "车站", "菜市场"]
_ZH_THINGS = ["早点铺", "杂货店", "茶馆", "书摊", "花店", "面馆"]
_ZH_PEOPLE = ["王师傅", "李阿姨", "陈老师", "张大爷", "刘奶奶", "赵叔叔"]
_ZH_SEASONS = ["春天", "夏天", "秋天", "冬天"]


@dataclass
class Page:
    """One page of the site: body, content type, charset, status, redirect target, other
    headers, seconds the server waits before it answers (a slow page), and seconds
    between two bytes of its body (a body that drips in)."""

    body: bytes
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    location: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    drip: float = 0.0


@dataclass
class Expected:
    """What a correct crawl of the site finds.

    Attributes:
        clusters: groups of page paths (``host/path``) with the same main text; a crawl
            admits exactly one of each group (the first listed is the one reachable first)
            and drops the others as its copies.
        unique: pages that are admitted and are nobody's copy.
        traps: paths that must never be requested.
        skipped: paths that are fetched but not stored (binary, oversized, not found).
        zh_titles: Chinese titles, to check GBK decoding.
        registered: the originals a content owner registers before the crawl (file name
            → text; the demo registers them under the source ``demo-novels``).
        pirated: pages that copy a registered original (path → file name): one with 10%
            of its characters swapped for homophones per chapter. Each links to a trap.
        quoted: pages that quote a registered original (a forum post quoting 150
            characters of a chapter): kept (they are among ``unique``), with an excerpt
            record naming the original.
    """

    clusters: list[list[str]] = field(default_factory=list)
    unique: list[str] = field(default_factory=list)
    traps: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    zh_titles: list[str] = field(default_factory=list)
    registered: dict[str, str] = field(default_factory=dict)
    pirated: dict[str, str] = field(default_factory=dict)
    quoted: dict[str, str] = field(default_factory=dict)


_SYLLABLES = ["ka", "lo", "ren", "mi", "dor", "sa", "vel", "tun", "bri", "os", "ham", "quin",
              "ter", "ula", "gar", "nes", "pol", "vik", "zan", "eth", "mor", "ria", "cal", "du"]


def _name(rng: random.Random) -> str:
    """A made-up proper name (places and people of the large generated sites)."""
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()


def _article(rng: random.Random, topic: tuple[str, str, str, str], sentences: int,
             invented: bool = False) -> list[str]:
    """Paragraphs of a news article. ``invented``: people, places and bodies get made-up
    names, so that thousands of articles stay far apart (the large generated sites)."""
    _, subject, issue, group = topic
    place = _name(rng) if invented else rng.choice(_PLACES)
    cast = [f"{_name(rng)} {_name(rng)}" for _ in range(4)] if invented else _PEOPLE
    bodies = [f"the {_name(rng)} {b.split()[-1]}" for b in _BODIES] if invented else _BODIES
    lexicon = [_name(rng).lower() for _ in range(80)] if invented else []
    out = []
    for _ in range(sentences):
        fields: dict[str, Any] = {
            "body": rng.choice(bodies), "topic": subject, "issue": issue, "group": group,
            "person": rng.choice(cast), "role": rng.choice(_ROLES), "place": place,
            "place2": _name(rng) if invented else rng.choice(_PLACES),
            "place3": _name(rng) if invented else rng.choice(_PLACES),
            "month": rng.choice(_MONTHS), "day": rng.choice(_DAYS),
            "n": rng.randint(2, 40), "m": rng.randint(1, 20), "hours": rng.randint(2, 7),
            "pct": rng.randint(3, 68), "money": f"{rng.randint(2, 95) * 100_000:,}"}
        fields["Body"] = fields["body"][0].upper() + fields["body"][1:]
        fields["Person"] = fields["person"]
        sentence = rng.choice(_SENTENCES).format(**fields)
        if invented:  # a clause in the article's own words
            sentence = sentence[:-1] + ", near " + " ".join(
                rng.choice(lexicon) for _ in range(10)) + "."
        out.append(sentence)
    return [" ".join(out[i:i + 4]) for i in range(0, len(out), 4)]


def _zh_chars() -> list[str]:
    """The 3,755 level-1 characters of GB2312 (row 0xB0 to 0xD7), decoded by code."""
    out = []
    for row in range(0xB0, 0xD8):
        for cell in range(0xA1, 0xFF):
            try:
                out.append(bytes((row, cell)).decode("gb2312"))
            except UnicodeDecodeError:
                continue
    return out


def _zh_article(rng: random.Random, sentences: int, invented: bool = False) -> list[str]:
    """Paragraphs of a Chinese article. ``invented``: each sentence gains a clause of the
    article's own made-up words, so that many articles stay far apart."""
    lexicon = ["".join(rng.sample(_ZH_CHARS, 2)) for _ in range(40)] if invented else []
    out = []
    for _ in range(sentences):
        sentence = rng.choice(_ZH_SENTENCES).format(
            place=rng.choice(_ZH_PLACES), thing=rng.choice(_ZH_THINGS),
            person=rng.choice(_ZH_PEOPLE), season=rng.choice(_ZH_SEASONS),
            n=rng.randint(3, 90))
        if invented:
            sentence = sentence[:-1] + "，" + "".join(rng.choice(lexicon) for _ in range(6)) \
                + sentence[-1]
        out.append(sentence)
    return ["".join(out[i:i + 3]) for i in range(0, len(out), 3)]


_ZH_CHARS = _zh_chars()


@lru_cache(maxsize=1)
def homophone_groups() -> dict[str, list[str]]:
    """Toneless pinyin → the GB2312 characters whose first reading it is (pypinyin)."""
    from pypinyin import Style, lazy_pinyin

    groups: dict[str, list[str]] = {}
    for row in range(0xB0, 0xF8):
        for cell in range(0xA1, 0xFF):
            try:
                ch = bytes((row, cell)).decode("gb2312")
            except UnicodeDecodeError:
                continue
            groups.setdefault(lazy_pinyin(ch, style=Style.NORMAL)[0], []).append(ch)
    return groups


def swap_homophones(text: str, rate: float, rng: random.Random,
                    groups: dict[str, list[str]]) -> str:
    """``text`` with ``rate`` of its Han characters (those that have one) replaced by
    another character of the same toneless pinyin, as pirate sites do."""
    reading = {c: p for p, cs in groups.items() for c in cs}
    chars = list(text)
    han = [i for i, c in enumerate(chars) if c in reading and len(groups[reading[c]]) > 1]
    for i in sorted(rng.sample(han, min(len(han), round(rate * len(han))))):
        chars[i] = rng.choice([c for c in groups[reading[chars[i]]] if c != chars[i]])
    return "".join(chars)


def _html(title: str, body: str, lang: str = "en", charset: str = "utf-8",
          head: str = "") -> str:
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="{charset}">'
            f"<title>{title}</title>{head}</head>\n<body>\n{body}\n</body></html>\n")


def _news_template(title: str, paragraphs: list[str], links: str, stamp: str) -> str:
    nav = ('<nav><a href="/">Home</a> | <a href="/tag/council.html">Council</a> | '
           '<a href="/tag/transport.html">Transport</a></nav>')
    text = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return _html(title, f"<header><h1>The Daily Harbour</h1>{nav}</header>\n<main><article>"
                 f"<h1>{title}</h1><p class=\"byline\">Published {stamp}</p>\n{text}\n"
                 f"</article>\n<aside>{links}</aside></main>\n<footer>© The Daily Harbour. "
                 "All rights reserved.</footer>")


def _mirror_template(title: str, paragraphs: list[str], links: str, stamp: str,
                     rng: random.Random) -> str:
    ads = ('<div class="ad">Advertisement: cheap flights to the sun from 19 pounds. Book '
           'today!</div>')
    menu = ("<ul class=\"menu\"><li><a href=\"/\">Front page</a></li><li>World</li>"
            "<li>Sport</li><li>Weather</li><li>Puzzles</li></ul>")
    comments = "".join(f'<div class="comment"><b>reader{rng.randint(1, 999)}</b>: '
                       f"{c}</div>" for c in rng.sample(
                           ["Interesting.", "About time!", "Who pays for this?",
                            "Great news for the town.", "Not again."], 3))
    text = "\n".join(f"<p>{p}</p>" for p in paragraphs)
    return _html(f"{title} | Regional Mirror", f"{menu}{ads}<div id=\"content\"><h2>{title}"
                 f"</h2><span class=\"time\">Updated {stamp}</span>\n{text}</div>"
                 f"<section class=\"comments\"><h3>Comments</h3>{comments}</section>"
                 f"{ads}<div class=\"related\">{links}</div>")


@dataclass
class SiteContent:
    """The generated pages per host and the expected outcome."""

    pages: dict[str, dict[str, Page]]
    expected: Expected
    big_size: int


def build(articles: int = 12, zh_articles: int = 4, seed: int = SEED,
          big_size: int = 12 * 1024 * 1024, novel_chapters: int = 3) -> SiteContent:
    """Generate the site. Paths in :class:`Expected` are ``host/path``."""
    rng = random.Random(seed)
    pages: dict[str, dict[str, Page]] = {h: {} for h in HOSTS}
    exp = Expected()
    topics = (_TOPICS * (articles // len(_TOPICS) + 1))[:articles]
    home_links = []
    for i, topic in enumerate(topics):
        slug = f"{topic[0]}-{i}"
        title = f"{topic[1].capitalize()} in {rng.choice(_PLACES)}"
        paragraphs = _article(rng, topic, rng.randint(24, 32), invented=articles > 40)
        stamp = f"2026-10-{1 + i % 28:02d} {8 + i % 10:02d}:15"
        cluster = [f"news/articles/{slug}.html"]
        links = [f'<a href="{{mirror}}/story/{slug}.html">Also at Regional Mirror</a>']
        if i % 2 == 0:
            links.append(f'<a href="{{wire}}/wire/{slug}.html">Wire copy</a>')
            edited = list(paragraphs)  # one word changed, a two-word credit added
            edited[0] = edited[0].replace(" the ", " this ", 1)
            edited[-1] += " (Harbour Wire)"
            pages["wire"][f"/wire/{slug}.html"] = Page(_html(
                title, f"<div class=\"wire\"><h1>{title}</h1><p>WIRE — {stamp}</p>"
                + "".join(f"<p>{p}</p>" for p in edited)
                + f'<p><a href="/trap/{slug}.html">More wire stories</a></p></div>').encode())
            cluster.append(f"wire/wire/{slug}.html")
            exp.traps.append(f"wire/trap/{slug}.html")
        if i % 3 == 0:
            links.append(f'<a href="/print/{slug}.html">Print this article</a>')
            pages["news"][f"/print/{slug}.html"] = Page(_html(
                f"{title} (print)", f"<h1>{title}</h1>"
                + "".join(f"<p>{p}</p>" for p in paragraphs)
                + f'<p class="noprint"><a href="/trap/print-{slug}.html">Printer settings'
                "</a></p>").encode())
            cluster.append(f"news/print/{slug}.html")
            exp.traps.append(f"news/trap/print-{slug}.html")
        pages["news"][f"/articles/{slug}.html"] = Page(_news_template(
            title, paragraphs, " ".join(links), stamp).encode())
        pages["mirror"][f"/story/{slug}.html"] = Page(_mirror_template(
            title, paragraphs, f'<a href="/trap/{slug}.html">Sponsored links</a>',
            f"2026-11-{1 + i % 20:02d} 12:{i % 60:02d}", rng).encode())
        cluster.append(f"mirror/story/{slug}.html")
        exp.traps.append(f"mirror/trap/{slug}.html")
        exp.clusters.append(cluster)
        home_links.append(f'<li><a href="/articles/{slug}.html">{title}</a></li>')
    for tag in ("council", "transport"):
        pages["news"][f"/tag/{tag}.html"] = Page(_html(
            f"Tag: {tag}", f"<h1>Stories tagged {tag}</h1><p>No new stories.</p>"
            '<a href="/">Home</a>').encode())
        exp.unique.append(f"news/tag/{tag}.html")
    # bad input and faults
    pages["news"]["/old/harbour.html"] = Page(b"", status=301,
                                              location="/articles/harbour-0.html")
    pages["news"]["/files/annual-report.pdf"] = Page(b"%PDF-1.4\n" + bytes(range(256)) * 64,
                                                     content_type="application/pdf")
    pages["news"]["/files/photo.html"] = Page(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 32)
    pages["news"]["/big.html"] = Page(b"")  # generated on request (big_size bytes)
    broken_text = " ".join(_article(rng, _TOPICS[3], 10))
    pages["news"]["/broken.html"] = Page(
        (f"<html><head><title>Letters</title><body><div><p>{broken_text}<p><table><tr><td>"
         "unclosed cell<div></span></b></i><p>More letters &amp c &#xZZ; &bogus;</html"
         ).encode())
    exp.unique.append("news/broken.html")
    exp.skipped.update({"news/files/annual-report.pdf": "not_html",
                        "news/files/photo.html": "binary",
                        "news/big.html": "too_big", "news/missing.html": "http_404"})
    exp.traps.append("news/private/secret.html")
    pages["news"]["/private/secret.html"] = Page(_html("Private", "<p>private</p>").encode())
    pages["news"]["/robots.txt"] = Page(b"User-agent: *\nDisallow: /private/\n",
                                        content_type="text/plain")
    extra = ('<li><a href="/old/harbour.html">Harbour (old link)</a></li>'
             '<li><a href="/files/annual-report.pdf">Annual report (PDF)</a></li>'
             '<li><a href="/files/photo.html">Photo</a></li><li><a href="/big.html">'
             'Archive</a></li><li><a href="/broken.html">Letters</a></li>'
             '<li><a href="/missing.html">Gone</a></li><li><a href="/private/secret.html">'
             'Staff</a></li><li><a href="/tag/council.html">Council</a></li>'
             '<li><a href="/tag/transport.html">Transport</a></li>'
             '<li><a href="{zh}/">中文</a></li>')
    pages["news"]["/"] = Page(_html("The Daily Harbour", "<h1>The Daily Harbour</h1><ul>"
                                    + "".join(home_links) + extra + "</ul>").encode())
    exp.unique.append("news/")
    # Chinese, GBK
    zh_links = []
    for n in range(zh_articles):
        title = _ZH_TOPICS[n % len(_ZH_TOPICS)]
        paragraphs = _zh_article(rng, rng.randint(12, 16), invented=zh_articles > 8)
        body = "".join(f"<p>{p}</p>" for p in paragraphs)
        pages["zh"][f"/zh/{n}.html"] = Page(_html(
            title, f"<article><h1>{title}</h1>{body}</article><p><a href=\"/zh/copy-{n}.html\">"
            "转载</a></p>", lang="zh", charset="gbk").encode("gbk"),
            content_type="text/html; charset=gbk")
        pages["zh"][f"/zh/copy-{n}.html"] = Page(_html(
            f"{title}（转载）", f"<div class=\"nav\">首页 | 新闻 | 文化</div><div class=\"main\">"
            f"<h2>{title}</h2>{body}</div><div class=\"ad\">广告：特价机票</div>"
            f'<a href="/trap/zh-{n}.html">更多</a>', lang="zh", charset="gbk").encode("gbk"),
            content_type="text/html; charset=gbk")
        exp.clusters.append([f"zh/zh/{n}.html", f"zh/zh/copy-{n}.html"])
        exp.traps.append(f"zh/trap/zh-{n}.html")
        exp.zh_titles.append(title)
        zh_links.append(f'<li><a href="/zh/{n}.html">{title}</a></li>')
    # A novelist's registered chapters, and pirated copies of them (GBK pages).
    groups = homophone_groups() if novel_chapters else {}
    for n in range(novel_chapters):
        name = f"chapter-{n + 1}.txt"
        text = "\n".join(_zh_article(rng, rng.randint(20, 24), invented=True))
        exp.registered[name] = f"第{n + 1}章\n{text}\n"
        pirated = swap_homophones(text, 0.10, rng, groups)
        body = "".join(f"<p>{p}</p>" for p in pirated.split("\n"))
        pages["zh"][f"/novel/{n + 1}.html"] = Page(_html(
            f"第{n + 1}章 免费阅读", f"<div class=\"nav\">首页 | 小说 | 排行</div><article>"
            f"<h1>第{n + 1}章</h1>{body}</article><div class=\"ad\">广告：充值送书币</div>"
            f'<a href="/trap/novel-{n + 1}.html">下一章</a>', lang="zh", charset="gbk"
            ).encode("gbk", errors="xmlcharrefreplace"), content_type="text/html; charset=gbk")
        exp.pirated[f"zh/novel/{n + 1}.html"] = name
        exp.traps.append(f"zh/trap/novel-{n + 1}.html")
        zh_links.append(f'<li><a href="/novel/{n + 1}.html">第{n + 1}章 免费阅读</a></li>')
    # forum posts quoting registered chapters: 150 characters, and 60 (the smallest
    # quotation the crawl records): (where in the chapter, in thirds, characters, how it
    # is quoted, paragraphs before it, the post's title)
    quotations = [(1, 3, 150, "<blockquote>{}</blockquote>", 2, "好书分享"),
                  (2, 3, QUOTE_CHARS, "<p>书中写道：“{}”</p>", 3, "摘抄一段")]
    for n, (thirds, of, length, form, before, title) in enumerate(
            quotations[:novel_chapters], 1):
        name = f"chapter-{n}.txt"
        chapter = "".join(exp.registered[name].split("\n")[1:])
        at = len(chapter) * thirds // of
        post = _zh_article(rng, 16, invented=True)
        body = "".join(f"<p>{p}</p>" for p in post[:before]) \
            + form.format(chapter[at:at + length]) \
            + "".join(f"<p>{p}</p>" for p in post[before:])
        pages["zh"][f"/forum/{n}.html"] = Page(_html(
            f"读书论坛：{title}", f"<h1>{title}</h1>{body}", lang="zh", charset="gbk"
            ).encode("gbk", errors="xmlcharrefreplace"), content_type="text/html; charset=gbk")
        exp.quoted[f"zh/forum/{n}.html"] = name
        exp.unique.append(f"zh/forum/{n}.html")
        zh_links.append(f'<li><a href="/forum/{n}.html">读书论坛：{title}</a></li>')
    pages["zh"]["/"] = Page(_html("中文新闻", "<h1>中文新闻</h1><ul>" + "".join(zh_links)
                                  + "</ul>", lang="zh", charset="gbk").encode("gbk"),
                            content_type="text/html; charset=gbk")
    exp.unique.append("zh/")
    for host in ("mirror", "wire"):
        pages[host]["/"] = Page(_html(host, "<p>Nothing here.</p>").encode())
    return SiteContent(pages, exp, big_size)


def _near_edit(title: str, paragraphs: list[str], most: int = 2) -> list[str]:
    """The paragraphs with one word changed, the first such edit (from the end) that
    keeps the text's simhash within ``most`` bits of the original's: a near copy, not
    an exact one, and surely within k of every other member of its group."""
    import dedup

    def simhash(paras: list[str]) -> int:
        return dedup.fingerprint("\n".join([title, *paras])).simhash

    original = simhash(paragraphs)
    for n in range(len(paragraphs) - 1, -1, -1):
        for old, new in ((" the ", " this "), (" a ", " one "), (" and ", " as well as ")):
            if old not in paragraphs[n]:
                continue
            edited = [*paragraphs[:n], paragraphs[n].replace(old, new, 1), *paragraphs[n + 1:]]
            if dedup.hamming(original, simhash(edited)) <= most:
                return edited
    return [*paragraphs[:-1], paragraphs[-1] + " (Harbour Wire)"]


def build_groups(groups: int = 1000, per_page: int = 50, seed: int = SEED) -> SiteContent:
    """A large site of copy groups, for crawls on several processes and their benchmark.

    Every group is an article on ``news`` (reached from paginated list pages, ``per_page``
    articles each) and its copies: a mirror under another template with ads and comments
    (every group), a syndicated copy on ``wire`` (every second group) and a print version
    (every third). The copies carry the article's text unchanged, so the members of a
    group are pairwise within any k: exactly one of them must be stored, whichever a
    crawl on several processes decides first (near duplication is not transitive, so a
    group of copies that were only each within k of the original could rightly keep two).

    The article links to its copies. The mirror and the wire copy are reached only that
    way and link to a trap, which no crawl may request. The print version is also linked
    from the list page, so it races its article across processes (either may be stored;
    it links to no trap). The list pages, two tag pages and the home page are unique.
    """
    rng = random.Random(seed)
    pages: dict[str, dict[str, Page]] = {h: {} for h in HOSTS}
    exp = Expected()
    lists: list[list[str]] = []
    for i in range(groups):
        topic = _TOPICS[i % len(_TOPICS)]
        slug = f"{topic[0]}-{i}"
        title = f"{topic[1].capitalize()} in {_name(rng)}"
        paragraphs = _article(rng, topic, rng.randint(16, 24), invented=True)
        stamp = f"2026-10-{1 + i % 28:02d} {8 + i % 10:02d}:15"
        story = "".join(f"<p>{p}</p>" for p in paragraphs)
        cluster = [f"news/articles/{slug}.html", f"mirror/story/{slug}.html"]
        links = [f'<a href="{{mirror}}/story/{slug}.html">Also at Regional Mirror</a>']
        mirror = _mirror_template(title, paragraphs, f'<a href="/trap/{slug}.html">Sponsored '
                                  "links</a>", "", rng)  # same text: no timestamp
        pages["mirror"][f"/story/{slug}.html"] = Page(mirror.replace(
            '<span class="time">Updated </span>', "").encode())
        exp.traps.append(f"mirror/trap/{slug}.html")
        if i % 2 == 0:
            links.append(f'<a href="{{wire}}/wire/{slug}.html">Wire copy</a>')
            edited = "".join(f"<p>{p}</p>" for p in _near_edit(title, paragraphs))
            pages["wire"][f"/wire/{slug}.html"] = Page(_html(
                f"{title} - Harbour Wire", f"<div class=\"top\">Harbour Wire | Latest</div>"
                f"<article><h1>{title}</h1>{edited}</article><p><a href=\"/trap/{slug}.html\">"
                "More wire stories</a></p>").encode())
            cluster.append(f"wire/wire/{slug}.html")
            exp.traps.append(f"wire/trap/{slug}.html")
        if i % 3 == 0:
            links.append(f'<a href="/print/{slug}.html">Print this article</a>')
            pages["news"][f"/print/{slug}.html"] = Page(_html(
                f"{title} (print)", f"<article><h1>{title}</h1>{story}</article>").encode())
            cluster.append(f"news/print/{slug}.html")
        pages["news"][f"/articles/{slug}.html"] = Page(_news_template(
            title, paragraphs, " ".join(links), stamp).encode())
        exp.clusters.append(cluster)
        if i % per_page == 0:
            lists.append([])
        teaser = paragraphs[0].split(". ")[0]  # list pages differ as their articles do
        lists[-1].append(f'<li><a href="/articles/{slug}.html">{title}</a>' + (
            f' (<a href="/print/{slug}.html">print</a>)' if i % 3 == 0 else "")
            + f"<p>{teaser}.</p></li>")
    for n, items in enumerate(lists, 1):
        nav = "".join(f'<a href="/list/{k}.html">{k}</a> ' for k in range(
            max(1, n - 2), min(len(lists), n + 2) + 1))
        pages["news"][f"/list/{n}.html"] = Page(_html(
            f"Stories, page {n}", f"<h1>Stories, page {n}</h1><ul>{''.join(items)}</ul>"
            f"<nav>{nav}</nav>").encode())
        exp.unique.append(f"news/list/{n}.html")
    for tag in ("council", "transport"):  # the article template's menu links here
        pages["news"][f"/tag/{tag}.html"] = Page(_html(
            f"Tag: {tag}", f"<h1>Stories tagged {tag}</h1><p>No new stories.</p>").encode())
        exp.unique.append(f"news/tag/{tag}.html")
    pages["news"]["/"] = Page(_html("The Daily Harbour", "<h1>The Daily Harbour</h1><ul>" + "".join(
        f'<li><a href="/list/{n}.html">Stories, page {n}</a></li>'
        for n in range(1, len(lists) + 1)) + "</ul>").encode())
    exp.unique.append("news/")
    pages["news"]["/robots.txt"] = Page(b"User-agent: *\nDisallow: /private/\n",
                                        content_type="text/plain")
    for host in ("mirror", "wire", "zh"):
        pages[host]["/"] = Page(_html(host, "<p>Nothing here.</p>").encode())
    return SiteContent(pages, exp, 0)


def export(content: SiteContent, folder: Path, urls: dict[str, str]) -> None:
    """Write a site as static files for another web server: ``folder/<host>/<path>``
    (``/`` as ``index.html``), with links to the other hosts pointing at ``urls``
    (host name -> base URL, e.g. ``http://127.0.0.1:8081``). Only pages with status 200
    and a body are written."""
    for host, host_pages in content.pages.items():
        for path, page in host_pages.items():
            if page.status != 200 or not page.body:
                continue
            body = page.body
            for name, base in urls.items():
                body = body.replace(b"{" + name.encode() + b"}", base.encode())
            target = folder / host / (path.lstrip("/") or "index.html")
            if path.endswith("/"):
                target = target / "index.html"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(body)


class _Server(ThreadingHTTPServer):
    """The site's server for one host: a client that goes away mid-request (a crawl
    process killed or stopped) is no error of the site's, so it is not printed."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class DemoSite:
    """Serve the generated site on loopback, one port per host, logging every request.

    Args:
        content: from :func:`build` (default: the standard site).
        log_path: also append each request as a JSON line here.
    """

    def __init__(self, content: SiteContent | None = None, log_path: str | Path | None = None
                 ) -> None:
        self.content = content or build()
        self.log_path = Path(log_path) if log_path else None
        self.requests: list[str] = []
        #: when each of :attr:`requests` came (``time.monotonic()``)
        self.times: list[float] = []
        self._lock = threading.Lock()
        self._servers: dict[str, ThreadingHTTPServer] = {}
        self._threads: list[threading.Thread] = []

    def url(self, host: str) -> str:
        """Base URL of a host, e.g. ``http://127.0.0.1:41234``."""
        return f"http://127.0.0.1:{self._servers[host].server_address[1]}"

    def host_of(self, url: str) -> str:
        """The demo host name (``news``...) of a URL of this site."""
        for name in self._servers:
            if url.startswith(self.url(name)):
                return name
        raise KeyError(url)

    def path_url(self, key: str) -> str:
        """``news/articles/x.html`` -> its full URL."""
        host, _, path = key.partition("/")
        return f"{self.url(host)}/{path}"

    def forget_requests(self) -> None:
        """Start :attr:`requests` and :attr:`times` again (between crawls of one site)."""
        with self._lock:
            self.requests.clear()
            self.times.clear()

    def _record(self, host: str, path: str, status: int) -> None:
        with self._lock:
            self.requests.append(f"{host}{path}")
            self.times.append(time.monotonic())
            if self.log_path:
                with self.log_path.open("a") as fh:
                    fh.write(json.dumps({"host": host, "path": path, "status": status,
                                         "time": time.time()}) + "\n")

    def _handler(self, host: str) -> type[BaseHTTPRequestHandler]:
        site = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "simcrawl-demo/1"
            protocol_version = "HTTP/1.1"  # keep-alive, as real sites serve

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                page = site.content.pages[host].get(path)
                if path == "/big.html" and host == "news":
                    body = (b"<html><body>" + b"<p>archive</p>" * (
                        site.content.big_size // 14 + 1) + b"</body></html>")
                    page = Page(body)
                if page is None:
                    site._record(host, path, 404)
                    self.send_response(404)
                    body = b"<html><body><h1>Not found</h1></body></html>"
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                site._record(host, path, page.status)
                if page.delay:
                    time.sleep(page.delay)
                self.send_response(page.status)
                if page.location:
                    self.send_header("Location", page.location)
                body = site._links(page.body)
                self.send_header("Content-Type", page.content_type)
                for name, value in page.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    if page.drip:
                        for i in range(len(body)):
                            self.wfile.write(body[i:i + 1])
                            self.wfile.flush()
                            time.sleep(page.drip)
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a crawler's size cap, say)

        return Handler

    def _links(self, body: bytes) -> bytes:
        for name in HOSTS:
            body = body.replace(b"{" + name.encode() + b"}", self.url(name).encode())
        return body

    def start(self) -> DemoSite:
        """Bind every host to a free port and serve in background threads."""
        for host in HOSTS:
            server = _Server(("127.0.0.1", 0), self._handler(host))
            server.daemon_threads = True
            self._servers[host] = server
        for server in self._servers.values():
            thread = threading.Thread(target=server.serve_forever, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        """Stop serving."""
        for server in self._servers.values():
            server.shutdown()
            server.server_close()

    def __enter__(self) -> DemoSite:  # noqa: PYI034
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start_urls(self) -> list[str]:
        """Where a crawl of the demo starts: the news home page."""
        return [self.url("news") + "/"]

    def allowed_domains(self) -> list[str]:
        """Domains to allow (all hosts share 127.0.0.1)."""
        return ["127.0.0.1"]

    def iter_expected_urls(self) -> Iterator[str]:
        """Every page URL the expected outcome names."""
        for cluster in self.content.expected.clusters:
            yield from (self.path_url(p) for p in cluster)
        yield from (self.path_url(p) for p in self.content.expected.unique)


def main() -> None:
    parser = argparse.ArgumentParser(description="Serve simcrawl's demo site on loopback.")
    parser.add_argument("--log", help="append every request to this JSON-lines file")
    args = parser.parse_args()
    with DemoSite(log_path=args.log) as site:
        for host in HOSTS:
            print(f"{host:7} {site.url(host)}/")
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
