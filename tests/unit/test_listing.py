"""Listings: pages made of repeated items, read as such and decided as such.

The pages are written as real sites write them: a Jekyll blog with the minima theme (its
post list and its post layout), a quotes site in cards and in a table, and the bundled
example article."""

from __future__ import annotations

import html
from pathlib import Path

from decision_cases import article

from dedup.config import DedupConfig
from dedup.reading import decide_pages, fingerprint_params, read_html

ROOT = Path(__file__).resolve().parents[2]

HEAD = ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{title} | '
        'Field Notes</title></head><body><header class="site-header"><div class="wrapper">'
        '<a class="site-title" href="/">Field Notes</a><nav class="site-nav"><div '
        'class="trigger"><a class="page-link" href="/latest/">Latest</a><a class="page-link" '
        'href="/archive/">Archive</a><a class="page-link" href="/about/">About</a></div></nav>'
        '</div></header><main class="page-content"><div class="wrapper">')
FOOT = ('</div></main><footer class="site-footer"><div class="wrapper"><p>Field Notes. '
        'Articles, short notes and reposts from the field.</p></div></footer></body></html>')


def paragraphs(text: str) -> str:
    return "".join(f"<p>{html.escape(line)}</p>" for line in text.split("\n"))


def post_page(title: str, text: str) -> str:
    """minima's post layout."""
    return (HEAD.format(title=title) + '<article class="post h-entry"><header '
            f'class="post-header"><h1 class="post-title">{title}</h1><p class="post-meta">'
            '<time>Jan 3, 2026</time></p></header><div class="post-content e-content">'
            + paragraphs(text) + "</div></article>" + FOOT)


def home_page(posts: list[tuple[str, str]], full: bool) -> str:
    """A home page listing posts: their first paragraph (minima's excerpts), or whole."""
    items = "".join(
        f'<li><span class="post-meta">Jan {n + 1}, 2026</span><h3><a class="post-link" '
        f'href="/posts/{n}/">{title}</a></h3>'
        + (paragraphs(text) if full else paragraphs(text.split("\n")[0]))
        + f'<p class="tags">Tags: <a href="/tag/t{n % 3}/">t{n % 3}</a></p></li>'
        for n, (title, text) in enumerate(posts))
    return HEAD.format(title="Home") + f'<div class="home"><ul class="post-list">{items}</ul>' \
        '<nav class="pager"><a href="/page/2/">Older posts</a></nav></div>' + FOOT


def quotes_page(quotes: list[str], table: bool) -> str:
    if table:
        rows = "".join(f'<tr><td>{html.escape(q)}</td><td><a href="/author/{n}/">Author {n}'
                       f"</a></td><td>life</td></tr>" for n, q in enumerate(quotes))
        main = f"<table>{rows}</table>"
    else:
        main = "".join(f'<div class="quote"><span class="text">{html.escape(q)}</span><span>'
                       f'by <small class="author">Author {n}</small> <a href="/author/{n}/">'
                       '(about)</a></span><div class="tags">Tags: <a class="tag" '
                       'href="/tag/life/">life</a></div></div>' for n, q in enumerate(quotes))
    return ("<!DOCTYPE html><html><head><title>Quotes</title></head><body><header><a "
            'href="/">Quotes to Keep</a></header>' + main + "<footer>Quotes to Keep</footer>"
            "</body></html>")


def is_listing(html_text: str) -> bool:
    """Whether the crawl reads a page as a listing; and the same when the items are looked
    for in the whole body (the check of a page trafilatura reads), not where simcrawl's
    reading found the text."""
    from dedup import listing
    from dedup.reading import extract_main, parse_page

    got = read_html(html_text, "http://site.test/", fingerprint_params(DedupConfig())).listing
    tree = parse_page(html_text)
    read = extract_main(html_text, "http://site.test/", "simcrawl", tree)
    assert read.parents is not None
    assert listing.is_listing(tree, read.text, url="http://site.test/") == got
    return got


def entries_page(entries: list[tuple[str, str]], href: str | None, tags: int = 1) -> str:
    """A page of ``<article>`` entries as Pelican's notmyidea theme writes a tag page: each
    headed by its title, linked to ``href`` (``{n}``: the entry's number) or not linked,
    with a byline of ``tags`` tags in its ``<footer>``."""
    def heading(n: int, title: str) -> str:
        return f'<a href="{href.format(n=n)}" rel="bookmark">{title}</a>' if href else title

    byline = ('<footer class="post-info">Published: Sun 04 January 2026 By <a '
              'href="/author/ada/">Ada</a> tags: '
              + " ".join(f'<a href="/tag/t{t}/">topic{t}</a>' for t in range(tags))
              + "</footer>")
    items = "".join(
        f'<li><article class="hentry"><header><h1 class="entry-title">{heading(n, title)}'
        f'</h1></header><div class="entry-content">{byline}{paragraphs(text)}'
        '<a class="readmore" href="/more/">read more</a></div></article></li>'
        for n, (title, text) in enumerate(entries))
    return HEAD.format(title="Tag") + f'<ol id="posts-list" class="hfeed">{items}</ol>' + FOOT


def test_one_or_two_entries_of_other_pages_are_a_listing() -> None:
    """A tag's last page of one or two posts is a listing: a listing is never a copy of a
    page with fewer or other items. An article's own ``<article>``, its heading linked to
    itself or not at all, is not one."""
    one = [("Story 1", article(41, 120))]
    assert is_listing(entries_page(one, "/posts/{n}/"))
    assert is_listing(entries_page([*one, ("Story 2", article(42, 30))], "/posts/{n}/"))
    assert not is_listing(entries_page(one, "http://site.test/"))  # the page itself
    assert not is_listing(entries_page(one, "#top"))
    assert not is_listing(entries_page(one, None))
    # an entry is judged read on its text outside its header and footer (its title and
    # byline), which a reading leaves out: a short summary under a long byline
    short = [("Story 3", article(43, 12)), ("Story 4", article(44, 12))]
    assert is_listing(entries_page(short, "/posts/{n}/", tags=20))


def test_listings_are_read_as_listings_and_articles_are_not() -> None:
    posts = [(f"Story {n}", article(40 + n, 120)) for n in range(6)]
    assert is_listing(home_page(posts, full=False))
    assert is_listing(home_page(posts[:3], full=True))
    quotes = [" ".join(article(60 + n, 24).split()) for n in range(10)]
    assert is_listing(quotes_page(quotes, table=False))
    assert is_listing(quotes_page(quotes, table=True))
    # an article: its paragraphs are not items, its navigation is furniture
    assert not is_listing(post_page("Story", article(1, 600)))
    example = (ROOT / "crawler" / "examples" / "harbour-original.html").read_text(encoding="utf-8")
    assert not is_listing(example)
    # a page's header, main part and footer are not items of a listing
    layout = ('<html><body><div class="b"><a href="/">Home</a> news</div><div class="b"><p>'
              + article(2, 400) + '</p><a href="/x">more</a></div><div class="b"><a href="/c">'
              "Contact</a></div></body></html>")
    assert not is_listing(layout)


def test_the_rows_of_an_articles_grid_are_not_a_listing() -> None:
    """A Bootstrap article page: its title, its text, its related posts and "More in"
    links are rows of one class, each with a link and of some size, and its reading keeps
    all four. One row holds the page's own title (an ``<h1>`` leading nowhere else), so
    they are its layout; the same rows headed by titles linked to other pages are a
    listing's entries."""
    def grid(title: str) -> str:
        related = "".join(f'<h3><a href="/r{n}/">Related story {n} of the season</a></h3>'
                          for n in range(4))
        text = paragraphs(article(3, 180)).replace("</p>", ' <a href="/x/">x</a></p>', 1)
        rows = [(f'<h1>{title}</h1><p>By <a href="/a/">Ada Byron</a> - 2019-04-10, '
                 "photographs and words from the showroom</p>"), text,
                f"<p>You may also be interested in...</p>{related}",
                ('<h2>More in Milan</h2><a href="/m/">Milan</a> and the design week\'s other '
                 "showrooms, streets and talks")]
        return ('<html><body><div class="container">'
                + "".join(f'<div class="row-fluid"><div class="span12">{row}</div></div>'
                          for row in rows) + "</div></body></html>")

    assert not is_listing(grid("Light installation for the showroom"))
    assert not is_listing(grid('<a href="http://site.test/">Light installation</a>'))
    entries = grid('<a href="/posts/1/">Light installation</a>').replace(
        "<p>You may", '<h1><a href="/posts/2/">A second post</a></h1><p>You may').replace(
        "<h2>More in Milan</h2>", '<h1><a href="/posts/3/">A third post</a></h1>')
    assert is_listing(entries)
    # rows of stories, each headed by its linked title, below the page's title in a row of
    # the same shape: the title row is not an item, the stories are
    stories = [f'<h1>Latest stories</h1><p>{article(8, 12)} <a href="/about/">about</a></p>'] + [
        f'<h3><a href="/posts/{n}/">Story {n} of the week</a></h3><p>{article(60 + n, 40)}</p>'
        for n in range(5)]
    assert is_listing('<html><body><div class="container">' + "".join(
        f'<div class="row-fluid"><div class="span12">{row}</div></div>' for row in stories)
        + "</div></body></html>")


def test_an_articles_sections_and_its_related_posts_are_not_a_listing() -> None:
    """A listicle whose sections are alike blocks, each headed by a heading that leads
    nowhere ("1. The first company") with links in its text, is an article; the same
    blocks headed by titles linked to other pages are a listing. And an article page whose
    own ``<article>`` (its title an ``<h1>`` leading nowhere else) sits beside three
    related posts' cards is not a listing of four."""
    def listicle(linked: bool) -> str:
        def title(n: int) -> str:
            name = f"{n}. Company number {n}: the best for its price"
            return f'<a href="/company/{n}/">{name}</a>' if linked else name
        blocks = "".join(
            f'<div class="article__block"><h2>{title(n)}</h2><p>{article(20 + n, 40)}</p>'
            f'<p>{article(50 + n, 30)} <a href="https://company{n}.test/">Visit the site</a>'
            "</p></div>"
            for n in range(1, 7))
        return (HEAD.format(title="The best companies") + "<article><h1>The best companies "
                f"of 2026</h1>{blocks}</article>" + FOOT)

    assert not is_listing(listicle(linked=False))
    assert is_listing(listicle(linked=True))
    # Bootstrap's cards: a title that leads nowhere, a summary, a "stretched" link beside
    cards_grid = "".join(
        f'<div class="card"><div class="card-body"><h5 class="card-title">Story {n}</h5>'
        f'<p class="card-text">{article(40 + n, 30)}</p><a href="/posts/{n}/" '
        'class="stretched-link">Read the story</a></div></div>' for n in range(6))
    assert is_listing(HEAD.format(title="Stories") + f'<div class="cards">{cards_grid}</div>'
                      + FOOT)
    cards = "".join(f'<article class="post-box"><h3><a href="/posts/{n}/">Another post {n}'
                    f'</a></h3><p>{article(30 + n, 40)}</p></article>' for n in range(3))
    page = (HEAD.format(title="Story") + '<article class="content"><h1>Story</h1>'
            f'<a href="/about/">About</a>{paragraphs(article(5, 60))}</article>{cards}' + FOOT)
    assert not is_listing(page)
    assert is_listing(page.replace("<h1>Story</h1>", '<h1><a href="/posts/9/">Story</a></h1>'))


def test_a_threads_answers_are_not_a_listing() -> None:
    """A question and its answers, in a question-and-answer site's markup: the answers are
    alike, linked (to their authors, to share them) and hold most of the page's text, but
    they are the page's own posts, named so, not other pages' entries."""
    def answer(n: int) -> str:
        return (f'<div id="answer-{n}" class="answer js-answer"><div class="post-layout">'
                f'<div class="answercell"><div class="s-prose">{paragraphs(article(70 + n, 50))}'
                f'</div><div class="post-menu"><a href="/a/{n}">Share</a></div>'
                f'<div class="post-signature"><a href="/users/{n}/">User {n}</a></div></div>'
                "</div></div>")

    page = (HEAD.format(title="Question") + "<h1>How do I keep a crawler polite?</h1>"
            f'<div class="question">{paragraphs(article(69, 30))}</div><div id="answers">'
            + "".join(answer(n) for n in range(4)) + "</div>" + FOOT)
    assert not is_listing(page)
    assert is_listing(page.replace("answer js-answer", "entry").replace('id="answer-', 'id="e-'))


def kinds(pages: list[tuple[str, str]]) -> list[str]:
    return [v.kind for v in decide_pages(pages, DedupConfig())]


def test_a_home_page_showing_a_post_whole_and_the_post_are_not_copies_of_each_other() -> None:
    """The latest post shown whole on a home page beside five summaries (here an
    aggregator's, on another site, so that no title tells them apart): the post is most
    of the home page's text, yet neither is the other's copy, whichever the crawl meets
    first; a post's print version is still the post's copy."""
    long_post = ("The harbour story", article(1, 900))
    others = [(f"Story {n}", article(50 + n, 60)) for n in range(5)]
    home = home_page([long_post, *others], full=True)
    post = post_page(*long_post)
    assert kinds([("http://aggregator.test/", home), ("http://blog.test/posts/0/", post)]) \
        == ["new", "new"]
    assert kinds([("http://blog.test/posts/0/", post), ("http://aggregator.test/", home)]) \
        == ["new", "new"]
    printed = (f"<html><head><title>{long_post[0]} (print)</title></head><body><h1>"
               f"{long_post[0]}</h1>{paragraphs(long_post[1])}<p>Printed from Field Notes."
               "</p></body></html>")
    got = decide_pages([("http://blog.test/", home), ("http://blog.test/posts/0/", post),
                        ("http://blog.test/print/0/", printed)], DedupConfig())
    assert [v.kind for v in got] == ["new", "new", "simhash"]
    assert got[2].original_url == "http://blog.test/posts/0/"


def test_one_listing_in_two_layouts_is_one_listing_and_other_items_are_not() -> None:
    """The same ten quotes in cards and in a table are one listing; a listing of other
    quotes is not its copy, nor is a tag page showing four of them and a long quote of its
    own (mostly that quote), in either order."""
    quotes = [" ".join(article(60 + n, 30).split()) for n in range(10)]
    others = [" ".join(article(80 + n, 30).split()) for n in range(10)]
    cards = quotes_page(quotes, table=False)
    tag = quotes_page(quotes[:4] + [" ".join(article(99, 200).split())], table=False)
    got = kinds([("http://quotes.test/page/1/", cards),
                 ("http://mirror.test/table/page/1/", quotes_page(quotes, table=True)),
                 ("http://quotes.test/page/2/", quotes_page(others, table=False)),
                 ("http://quotes.test/tag/life/", tag)])
    assert got == ["new", "simhash", "new", "new"]
    assert kinds([("http://a.test/tag/life/", tag), ("http://b.test/page/1/", cards)]) \
        == ["new", "new"]


def test_the_text_sketch_says_whether_its_page_is_a_listing() -> None:
    """Every process reads the candidate's kind with its sketch: a bit of the sketch,
    which costs no byte, and a listing's number of items (two bytes); sketches written
    before the bit read as pages."""
    from dedup.sketch import TextSketch

    text = article(3, 600)
    listing = TextSketch.of_text(text, host="q.test", title="Quotes", listing=True)
    page = TextSketch.of_text(text, host="q.test", title="Quotes")
    assert len(listing.to_bytes()) == len(page.to_bytes()) == 230
    assert TextSketch.from_bytes(listing.to_bytes()).listing
    counted = TextSketch.of_text(text, host="q.test", title="Quotes", listing=True, items=10)
    assert TextSketch.from_bytes(counted.to_bytes()).items == 10
    back = TextSketch.from_bytes(page.to_bytes())
    assert not back.listing and back.anchors == listing.anchors


def test_the_principles_on_a_real_article() -> None:
    """The bundled harbour article's own text (crawler/examples/harbour-original.html, a real
    news page's): a home page showing it whole beside summaries of other posts and the
    article are not copies of each other, in either order; the article under a title of
    its own on its site is a copy; its site's tag listing showing it and a listing of
    other items are not copies of each other."""
    source = (ROOT / "crawler" / "examples" / "harbour-original.html").read_bytes()
    real = read_html(source, "http://news.test/harbour", fingerprint_params(DedupConfig()))
    body = "\n".join(line for line in real.text.split("\n") if len(line.split()) >= 8)
    assert len(body.split()) >= 150, "the example's text is the test's article"
    story = ("Harbour wall to be rebuilt", body)
    others = [(f"Story {n}", article(70 + n, 60)) for n in range(4)]
    post = post_page(*story)
    home = home_page([story, *others], full=True)
    assert kinds([("http://blog.test/", home), ("http://blog.test/posts/harbour/", post)]) \
        == ["new", "new"]
    assert kinds([("http://blog.test/posts/harbour/", post), ("http://blog.test/", home)]) \
        == ["new", "new"]
    assert kinds([("http://blog.test/posts/harbour/", post),
                  ("http://blog.test/posts/from-the-archive-7/",
                   post_page("From the archive, number 7", body))]) == ["new", "exact"]
    tag = home_page([story, *others[:2]], full=False)
    other_tag = home_page(others[2:] + [("Story 9", article(90, 60))], full=False)
    assert kinds([("http://blog.test/tag/harbour/", tag),
                  ("http://blog.test/tag/ferries/", other_tag)]) == ["new", "new"]


def featured_page(title: str, posts: list[tuple[str, str]], featured: bool = True) -> str:
    """A blog's listing as Pelican's notmyidea theme writes it: on a first page the latest
    post whole in a "featured" ``<aside>``, the others below it in a list of ``<article>``
    (here each whole: a summary of its own)."""
    first, rest = (posts[0], posts[1:]) if featured else (None, posts)
    items = "".join(f'<li><article class="hentry"><header><h1><a href="/{n}.html" '
                    f'rel="bookmark">{t}</a></h1></header><div class="entry-content">'
                    f'{paragraphs(s)}<a class="readmore" href="/{n}.html">read more</a>'
                    "</div></article></li>" for n, (t, s) in enumerate(rest))
    aside = "" if first is None else (
        '<aside id="featured" class="body"><article><h1 class="entry-title"><a '
        f'href="/first.html">{first[0]}</a></h1>{paragraphs(first[1])}</article></aside>')
    return (HEAD.format(title=title) + aside + '<section id="content" class="body"><h1>'
            f'Other articles</h1><ol id="posts-list" class="hfeed">{items}</ol></section>'
            + FOOT)


def test_articles_wherever_they_sit_are_a_listings_items() -> None:
    """A tag page of three posts, one featured in an ``<aside>`` and two listed below it,
    is a listing (its ``<article>`` items, read wherever they sit); a post followed by
    teasers of related posts, each an ``<article>`` too, is not: the teasers are not what
    its reading keeps."""
    posts = [(f"Story {n}", article(40 + n, 120 if n else 300)) for n in range(3)]
    assert is_listing(featured_page("Tag trio", posts))
    related = "".join(f'<article class="teaser"><h3><a href="/r/{n}/">Related {n}</a></h3>'
                      f"<p>{' '.join(article(70 + n, 16).split())}</p></article>"
                      for n in range(3))
    post = post_page("Story", article(1, 600)).replace(
        "</article>", f'</article><section class="related">{related}</section>', 1)
    assert not is_listing(post)


def test_listings_that_share_most_of_their_items_are_not_copies() -> None:
    """A blog's second index page and its category's second page, one showing a short
    note and four posts, the other the same four posts: other listings, in either order,
    though the index page's text is nine tenths the category page's. A listing is a copy
    only of a listing of the same items; the same listing under another URL is still its
    copy."""
    note = ("A short note", " ".join(article(30, 14).split()))
    posts = [(f"Story {n}", article(40 + n, 60)) for n in range(4)]
    index = featured_page("Field Notes", [note, *posts], featured=False)
    category = featured_page("Field Notes - notes", posts, featured=False)
    assert kinds([("http://blog.test/category/notes2.html", category),
                  ("http://blog.test/index2.html", index)]) == ["new", "new"]
    assert kinds([("http://blog.test/index2.html", index),
                  ("http://blog.test/category/notes2.html", category)]) == ["new", "new"]
    assert kinds([("http://blog.test/index2.html", index),
                  ("http://blog.test/page/2/", index)]) == ["new", "exact"]


def test_a_card_without_words_is_not_read_and_warns_of_nothing() -> None:
    """A listing's card with no text of its own (an image link) is not read as one of the
    articles it shows, without numpy's "Mean of empty slice" in the crawl's log."""
    import warnings

    import lxml.html

    from dedup.listing import items_share

    cards = "".join(f"<article><h2><a href='/p/{i}'>Post number {i} about the river</a></h2>"
                    f"<p>{'the river runs past the mill and the bridge ' * 3}{i}</p></article>"
                    for i in range(4)) + "<article><a href='/img'><img src='x.png'></a></article>"
    tree = lxml.html.fromstring(f"<html><body><main>{cards}</main></body></html>")
    text = " ".join(tree.itertext())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert items_share(tree, text) > 0.5
