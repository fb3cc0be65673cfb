"""Same-site copies under titles of their own, and different documents under one title,
on pages as a Jekyll blog with the minima theme writes them (tests/unit/test_listing.py
has the markup)."""

from __future__ import annotations

import html
import random

from decision_cases import article
from test_listing import home_page, kinds, post_page

from dedup.config import DedupConfig
from dedup.reading import decide_pages


def edited(text: str, words: int, seed: int) -> str:
    """``text`` with ``words`` of its words changed, one at a time, on separate lines."""
    lines = text.split("\n")
    rng = random.Random(seed)
    for n in rng.sample(range(len(lines)), words):
        line = lines[n].split()
        line[rng.randrange(len(line))] = "changed"
        lines[n] = " ".join(line)
    return "\n".join(lines)


def test_a_repost_under_a_title_of_its_own_is_a_copy() -> None:
    """The same post again under a title of its own (a repost, a doorway page): the
    heading that repeats the title is the title's, not the text's, so the two have one
    text and the repost is an exact copy, whatever the titles say."""
    body = article(1, 480)
    got = decide_pages([("http://blog.test/posts/harbour/", post_page("The harbour wall", body)),
                        ("http://blog.test/posts/repost-1/",
                         post_page("From the archive, number 1", body))], DedupConfig())
    assert [v.kind for v in got] == ["new", "exact"]
    assert got[1].original_url == "http://blog.test/posts/harbour/"


def test_pages_of_a_site_titled_article_n_that_repeat_a_body_with_edits_are_copies() -> None:
    """"Article 17" and "Article 342" with one body, 3 of its 240 words changed: one text
    with edits here and there, a copy whatever the titles; a page of the site with a body
    of its own under the same kind of title is not."""
    body = article(2, 240)
    got = kinds([("http://site.test/a/17", post_page("Article 17", body)),
                 ("http://site.test/a/342", post_page("Article 342", edited(body, 3, 7))),
                 ("http://site.test/a/343", post_page("Article 343", article(3, 240)))])
    assert got == ["new", "simhash", "new"]


def test_stubs_of_a_site_under_titles_of_their_own_stay_apart() -> None:
    """Two stubs of a site: its long furniture with a sentence of their own each. Where
    the texts leave it open (the sentences may not be in the candidate's sample), the
    titles settle it: other titles, other documents."""
    furniture = article(5, 360)
    pages = [(f"http://site.test/stub/{n}",
              post_page(f"Stub number {n} about {topic}", furniture + "\n" + article(20 + n, 12)))
             for n, topic in enumerate(("gardens", "bridges", "ferries", "kites"))]
    assert kinds(pages) == ["new"] * 4


def test_different_items_under_one_title_are_not_copies() -> None:
    """A site whose listing pages all carry one title (page 1, page 2 of its home): they
    show different posts, so neither is the other's copy; the same page again under
    another URL is."""
    posts = [(f"Story {n}", article(40 + n, 90)) for n in range(12)]
    first, second = home_page(posts[:6], full=False), home_page(posts[6:], full=False)
    assert kinds([("http://site.test/", first), ("http://site.test/page/2/", second),
                  ("http://site.test/index.html?ref=nav", first)]) == ["new", "new", "exact"]


def described(page: str, description: str) -> str:
    """``page`` with a ``<meta name="description">``."""
    meta = f'<meta name="description" content="{html.escape(description)}">'
    return page.replace("</head>", meta + "</head>", 1)


def shop_page(title: str, main: str) -> str:
    """A shop's page: its header, its categories and its footer around ``main``."""
    return (f"<!DOCTYPE html><html><head><title>{html.escape(title)} | Tidewater Goods</title>"
            '</head><body><header><a href="/">Tidewater Goods</a><nav><a href="/c/home/">Home'
            '</a> <a href="/c/trail/">Trail</a></nav></header><main>' + main + "</main><footer>"
            "<p>Free returns within 30 days. Tidewater Goods, est. 2009.</p></footer></body>"
            "</html>")


def test_thin_pages_of_a_site_with_one_text_under_titles_of_their_own_are_copies() -> None:
    """Empty search pages ("Search results for clearance", "... for bundle") and a
    product's colour variants ("Field Lamp in Red"): a few lines each, the same text under
    titles of their own. A thin text is read with its description, not its title, so
    each is an exact copy of the first; another product is not."""
    empty = ("<h1>Search</h1><p>No products match your search. Check the spelling, use "
             "fewer words, or browse our categories.</p>")
    lamp = article(7, 30).replace("\n", " ")

    def product(name: str, text: str) -> str:
        return shop_page(name, f"<h1>{name}</h1><p>$19.00</p><p>{text}</p>"
                               "<p>Also available in: Red Blue</p>")

    got = kinds([("http://shop.test/search/clearance/", shop_page("Search results for clearance",
                                                                   empty)),
                 ("http://shop.test/search/bundle/", shop_page("Search results for bundle", empty)),
                 ("http://shop.test/p/lamp/", product("Field Lamp", lamp)),
                 ("http://shop.test/p/lamp-red/", product("Field Lamp in Red", lamp)),
                 ("http://shop.test/p/lamp-blue/", product("Field Lamp in Blue", lamp)),
                 ("http://shop.test/p/mug/", product("Trail Mug", article(8, 30).replace("\n",
                                                                                        " ")))])
    assert got == ["new", "exact", "new", "exact", "exact", "new"]


def test_stubs_whose_text_is_only_the_sites_furniture_are_told_apart_by_descriptions(
        ) -> None:
    """Stub pages where the extractor finds only the site's furniture (an author box, the
    site's list of recent posts) and a line too short to be a passage: one text both
    ways. What each page says it is about, its description, tells them apart, thin or
    long; the same stub again is a copy."""
    for furniture in (article(9, 40), article(10, 600)):
        pages = [(f"http://site.test/stub/{n}",
                  described(post_page(title, f"{furniture}\nFiled under {topic}"),
                            " ".join(article(30 + n, 25).split())))
                 for n, (title, topic) in enumerate((("Tips for selecting motors", "robots"),
                                                     ("Ten nutrition myths", "health")))]
        assert kinds(pages + [("http://site.test/stub/0?ref=feed", pages[0][1])]) \
            == ["new", "new", "exact"]


def test_a_repost_with_the_posts_own_heading_under_its_title_is_a_copy() -> None:
    """A repost titled "From the archive, number 5" whose text starts with the post's own
    heading, described as the post is (a blog draws the description from the post's
    first paragraph): one text both ways (the heading is a line too short to be a passage
    of its own), so a copy whatever the titles."""
    body = article(11, 480)
    about = " ".join(body.split("\n")[0].split()[:30])
    got = kinds([("http://blog.test/posts/repost-5/",
                  described(post_page("From the archive, number 5",
                                      "Hibernating astronauts\n" + body), about)),
                 ("http://blog.test/posts/hibernating/",
                  described(post_page("Hibernating astronauts", body), about))])
    assert got == ["new", "simhash"]
