"""simcrawl's own reading of a page's main text (dedup/maintext.py): what it reads and
what it leaves, on pages built the ways real templates build them."""

from __future__ import annotations

import pytest

from dedup.config import DedupConfig
from dedup.maintext import main_text, parse
from dedup.reading import extract_main, fingerprint_params, read_html
from dedup.text import parse_html

STORY = [
    "The harbour wall reopened on Monday after three months of repairs to the storm damage.",
    "Fishing boats returned to the inner basin within hours, the harbour master said.",
    "The council spent about two million pounds on the work, a third of it from a grant.",
    "Residents had asked for the repairs for more than twenty years before the storm.",
]


def paragraphs(lines: list[str] = STORY) -> str:
    return "".join(f"<p>{line}</p>" for line in lines)


def read(html: str) -> str:
    return main_text(parse(html))


def test_the_article_is_read_and_the_pages_furniture_is_not() -> None:
    page = ("<html><body><header><a href=/>The Example Times</a><nav><ul><li><a href=/news>"
            "News</a></li><li><a href=/sport>Sport</a></li></ul></nav></header>"
            "<div class=breadcrumbs><a href=/>Home</a> › <a href=/news>News</a></div>"
            f"<div class=story><h1>Harbour reopens</h1>{paragraphs()}"
            "<div class=share-buttons><a href=/s>Share on social media</a></div></div>"
            "<aside><h3>Most read</h3><p>A long teaser of another story that is not this one "
            "and should not be read as part of it at all.</p></aside>"
            "<section id=comments><p>What a waste of money, in my opinion as a taxpayer.</p>"
            "</section><script>var tracking = 'the harbour wall';</script>"
            "<div style='display:none'>A hidden notice nobody sees on the page.</div>"
            "<footer>Copyright 2026 The Example Times. All rights reserved.</footer></body></html>")
    text = read(page)
    assert text.split("\n") == ["Harbour reopens", *STORY]


def test_a_template_naming_its_content_wrapper_like_furniture_loses_no_text() -> None:
    # WordPress's Genesis wraps the content and the sidebar in "content-sidebar-wrap"; a
    # site may call its post body "newsletter-email": furniture that holds most of the
    # page's text is its text
    page = (f"<body><div class='site-inner content-sidebar-wrap'><div class=newsletter-email>"
            f"<h1>Harbour reopens</h1>{paragraphs()}</div>"
            "<div class=sidebar><a href=/a>Archive</a> <a href=/b>About</a></div></div></body>")
    assert read(page).split("\n") == ["Harbour reopens", *STORY]


@pytest.mark.parametrize("footer", ["<footer class=globalfooter>", "<div role=contentinfo>"])
def test_a_sites_footer_is_never_the_text_of_a_page_with_text_of_its_own(footer: str) -> None:
    # Apple's footer holds two thousand words of legal footnotes; a short Q&A republished
    # in its template was read as them (more than half the page's text is no longer
    # furniture): a footer is the site's, whatever it holds, beside 200 characters of prose
    notes = "".join(f"<li>{n}. {line} Terms apply; see the offer's conditions for details "
                    "of eligibility, the credit limit and the final price.</li>"
                    for n, line in enumerate(STORY * 6))
    page = (f"<body><div class=page><h1>Harbour reopens</h1>{paragraphs(STORY[:3])}</div>"
            f"{footer}<ol class=footnotes>{notes}</ol>"
            f"<p>Copyright 2026 Example Inc.</p>{footer[:4].replace('<', '</')}></body>")
    assert read(page).split("\n") == ["Harbour reopens", *STORY[:3]]
    # a page all of whose text is in its footer (markup left open) is still read
    alone = f"<body>{footer}<h1>Harbour reopens</h1>{paragraphs()}</body>"
    assert read(alone).split("\n") == ["Harbour reopens", *STORY]


def test_a_short_marked_main_part_is_read_and_not_the_footer_after_it() -> None:
    # a museum's list of exhibitions (Squarespace): an image, a title and an artist each,
    # no sentence, in <main>; its footer below holds the address and a funder's sentence
    def block(inner: str) -> str:
        return f"<div class=block><div><div><div>{inner}</div></div></div></div>"

    shows = "".join(block(f"<a href=/show{n}><img src=/i{n}.jpg></a>")
                    + block(f"<h4><a href=/show{n}>{title}</a></h4><p>{artist}</p>")
                    for n, (title, artist) in enumerate([
                        ("The Golden Record", "RACHEL LIBESKIND"),
                        ("The Making of an Artist, Part III", "JOSEPH PLAVCAN"),
                        ("Reflections", "SARAH JACOBS")]))
    footer = ("<footer><p>Erie Art Museum, 20 E 5th St., Erie, PA 16507</p><p>Stay up to "
              "date on events, exhibitions, and more with our weekly newsletter!</p><p>The "
              "Erie Art Museum receives general support from the Pennsylvania Council on the "
              "Arts and is a partner of Erie Arts &amp; Culture.</p></footer>")
    text = read(f"<body><main><h1>Current Exhibitions</h1>{shows}</main>{footer}</body>")
    assert "newsletter" not in text and "Erie Art Museum" not in text
    assert {"Current Exhibitions", "RACHEL LIBESKIND", "SARAH JACOBS"} <= set(text.split("\n"))
    # the page's own text outside a short <main> is still read beside it, the footer not
    story = f"<body><main><h1>Harbour reopens</h1></main><div>{paragraphs()}</div>{footer}</body>"
    assert read(story).split("\n")[-len(STORY):] == STORY
    assert "newsletter" not in read(story)
    # a page whose <main> holds nothing read keeps what the body reads
    empty = f"<body><main><img src=/logo.png></main><div>{paragraphs()}</div>{footer}</body>"
    assert read(empty).split("\n")[:len(STORY)] == STORY


def test_a_forums_threads_are_listed_with_their_titles_whatever_their_ids() -> None:
    # XenForo's list of threads: each item's class names its thread's number too
    # (js-threadListItem-8162); the items are alike all the same, each titled by its link
    titles = [f"{beer} recipe, try {n}" for n, beer in enumerate(
        ["India Pale Lager", "Russian Imperial Stout", "Summer beer", "SMaSH", "House Ale",
         "Mild", "Bitter", "Porter", "Saison", "Dubbel", "Tripel", "Kölsch", "Bock", "Gose"])]
    items = "".join(
        f"<div class='structItem structItem--thread js-threadListItem-{8100 + n}'>"
        f"<div class='structItem-cell structItem-cell--main'><div class=structItem-title>"
        f"<a href=/t/{n}>{title}</a></div><div class=structItem-minor><a href=/m/{n}>"
        f"member{n}</a></div></div><div class='structItem-cell structItem-cell--meta'>"
        f"<dl class=pairs><dt>Replies</dt><dd>{n + 3}</dd></dl><dl class=pairs><dt>Views</dt>"
        f"<dd>{n + 2}K views</dd></dl></div></div>" for n, title in enumerate(titles))
    page = (f"<body><nav><a href=/>Forums</a> <a href=/new>New posts</a></nav><h1>Recipes</h1>"
            f"<div class=structItemContainer>{items}</div></body>")
    assert [line for line in read(page).split("\n") if line in titles] == titles


def test_a_tabs_panels_are_read_shown_or_not() -> None:
    # a documentation page's code sample in tabs, one a language (Twilio): the panels
    # not shown are hidden until their tab is clicked, as a closed <details> is
    samples = [("Python", "client.messages.create(to=number, body=text)"),
               ("Node.js", "await client.messages.create({to: number, body: text});"),
               ("PHP", "$client->messages->create($number, ['body' => $text]);")]
    panels = "".join(f"<div role=tabpanel{'' if n == 0 else ' hidden style=display:none'}>"
                     f"<pre>{code}</pre></div>" for n, (_lang, code) in enumerate(samples))
    page = (f"<body><nav><a href=/>Docs</a> <a href=/api>API</a></nav><main><h1>Send a "
            f"message</h1>{paragraphs(STORY * 2)}<div role=tablist>"
            + "".join(f"<button role=tab>{lang}</button>" for lang, _code in samples)
            + f"</div>{panels}</main><div hidden><p>{STORY[0]} A hidden note.</p></div></body>")
    text = read(page)
    assert all(code in text for _lang, code in samples)
    assert "A hidden note" not in text  # what is hidden and no tab's stays unread


def test_the_readers_comments_stay_out_when_several_times_the_article() -> None:
    comments = "".join(f"<div class=comment><p>{line} I could not agree more with this, "
                       "it is exactly what I have been saying for years.</p></div>"
                       for line in STORY * 3)
    page = (f"<body><div class=post><h1>Harbour reopens</h1>{paragraphs()}</div>"
            f"<div class=comments-area>{comments}</div></body>")
    assert read(page).split("\n") == ["Harbour reopens", *STORY]


@pytest.mark.parametrize("first_post_inside", [True, False])
def test_a_threads_replies_are_its_text(first_post_inside: bool) -> None:
    # bbPress lists a topic's first post among its replies (ul.bbp-replies), Vanilla its
    # discussion in "MessageList Discussion": the readers' part is the whole page's text,
    # each reply a comment of its own
    replies = "".join(f"<li class='reply comment'><div class=comment-author><a href=/u{n}>"
                      f"user{n}</a></div><div class=comment-content><p>{line} I could not "
                      "agree more with this, it is what I have said for years.</p></div></li>"
                      for n, line in enumerate(STORY * 3))
    first = f"<li class='reply comment'><p>{STORY[0]}</p></li>"
    page = ("<body><nav><a href=/>Forums</a> <a href=/f>Boats</a></nav><h1>Harbour wall</h1>"
            "<div class=notice>You must be logged in to reply to this topic.</div>"
            + ("" if first_post_inside else f"<div class=topic><p>{STORY[0]}</p></div>")
            + f"<ul class='forums bbp-replies'>{first if first_post_inside else ''}{replies}"
            "</ul><footer>Copyright 2026 The Harbour Forum</footer></body>")
    text = read(page)
    assert all(line in text for line in STORY) and text.count("I could not agree") == 12
    assert "Boats" not in text and "Copyright" not in text


def test_a_short_article_above_a_long_disclaimer_is_read() -> None:
    disclaimer = " ".join(["The content of this blog is for general information only and "
                           "is not legal, tax or investment advice."] * 6)
    page = (f"<body><main><h1>Harbour reopens</h1>{paragraphs(STORY[:2])}"
            "<h4>Be current.</h4><div class=newsletter><p>Get insights in your inbox.</p>"
            f"<input name=email></div><p>{disclaimer}</p></main></body>")
    text = read(page)
    assert text.startswith("Harbour reopens\n" + STORY[0]) and STORY[1] in text


def test_one_article_under_two_templates_reads_as_one_text() -> None:
    article = (f"<html><body><header><h1>Daily</h1></header><main><article>"
               f"<h1>Harbour reopens</h1><p class=byline>By A. Writer, 1 March</p>"
               f"{paragraphs()}</article><aside><a href=/m>Also at the Mirror</a></aside>"
               "</main><footer>© Daily</footer></body></html>")
    mirror = ("<html><body><ul class=menu><li><a href=/>Front page</a></li><li>World</li>"
              "</ul><div class=ad>Advertisement: cheap flights from 19 pounds!</div>"
              f"<div id=content><h2>Harbour reopens</h2>{paragraphs()}</div>"
              "<section class=responses><div><b>reader1</b>: Great news.</div></section>"
              "</body></html>")
    printed = f"<html><body><h1>Harbour reopens</h1>{paragraphs()}<p><a href=/p>Print</a></p>"
    assert read(article) == read(mirror) == read(printed) == "\n".join(
        ["Harbour reopens", *STORY])


def test_links_inside_the_article_are_its_text_and_a_link_alone_is_not() -> None:
    books = "".join(f"<li><a href=/b{n}>{title}</a> by {who}</li>" for n, (title, who) in
                    enumerate([("The Harbour", "Ann Lee, 2019"), ("Walls of the Sea",
                               "Tom Okafor, 2021"), ("Storm Season", "Lucy Chen, 2024")]))
    page = (f"<body><div class=entry><h1>Harbour reading list</h1>{paragraphs()}"
            f"<p>The three books <a href=/b>we recommend</a> are these:</p><ul>{books}</ul>"
            "<p><a href=/more>More stories</a></p></div>"
            "<ul><li><a href=/a>Archive</a></li><li><a href=/b>About us</a></li></ul></body>")
    text = read(page)
    # short list items after the article's paragraphs are read as its text (they are
    # in its element), the navigation after it is not, nor a paragraph of a link alone
    assert "we recommend" in text and "Walls of the Sea by Tom Okafor, 2021" in text
    assert "More stories" not in text and "Archive" not in text


def test_nothing_to_read_gives_no_text_and_the_crawl_falls_back() -> None:
    assert read("<html><body><img src=a.png></body></html>") == ""
    assert main_text(None) == ""
    got = extract_main("<html><body><img src=a.png></body></html>", "http://a.test/",
                       "simcrawl", parse_html("<html><body><img src=a.png></body></html>"))
    assert got.method != "simcrawl"  # read by the trafilatura path and its last resorts


def test_a_page_nested_deeper_than_the_walk_keeps_its_text() -> None:
    from lxml import etree

    page = etree.Element("html")
    element = etree.SubElement(page, "body")
    for _ in range(2000):  # deeper than the walk recurses (MAX_DEPTH) and Python allows
        element = etree.SubElement(element, "div")
    element.text = "The innermost words of a deeply nested page."
    assert main_text(page) == "The innermost words of a deeply nested page."
    # deeper than lxml's parser goes: the crawl's reading falls back to trafilatura's path
    html = "<html><body>" + "<div>" * 3000 + "The innermost words." + "</div>" * 3000
    assert "innermost words" in extract_main(html, "http://a.test/", "simcrawl",
                                             parse_html(html)).text



def test_the_crawls_reading_is_simcrawls_and_trafilatura_is_a_setting() -> None:
    html = f"<html><body><main><h1>Harbour reopens</h1>{paragraphs()}</main></body></html>"
    assert read_html(html, "http://a.test/1", fingerprint_params(DedupConfig())).method \
        == "simcrawl"
    other = read_html(html, "http://a.test/1",
                      fingerprint_params(DedupConfig(extractor="trafilatura")))
    assert other.method == "trafilatura" and STORY[0] in other.text
    with pytest.raises(ValueError, match="DEDUP_EXTRACTOR"):
        DedupConfig(extractor="readability")


def test_the_crawls_parse_reads_as_trafilaturas_and_takes_odd_documents() -> None:
    page = ("<!DOCTYPE html PUBLIC \"-//W3C//DTD XHTML 1.0 Strict//EN\" "
            "\"http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd\">"
            "<html><head><title>Harbour reopens | The Example Times</title>"
            "<link rel=canonical href=/news/harbour></head><body><nav><a href=/>Home</a></nav>"
            f"<article><h1>Harbour reopens</h1>{paragraphs()}</article></body></html>")
    assert read(page) == main_text(parse_html(page)) and STORY[3] in read(page)
    params = fingerprint_params(DedupConfig())
    got = read_html(page, "http://a.test/news/harbour?ref=home", params)
    assert (got.title, got.canonical) == ("Harbour reopens | The Example Times",
                                          "http://a.test/news/harbour")
    # a str lxml will not parse (an XML declaration naming an encoding) is parsed the way
    # trafilatura parses it, and read the same
    declared = '<?xml version="1.0" encoding="iso-8859-1"?>\n' + page
    assert read_html(declared, "http://a.test/2", params).text == got.text


# ------------------------------------------------------------- the compiled walk
def _blocks_agree(root) -> None:  # type: ignore[no-untyped-def]
    """The compiled walk (dedup._walk) gives its definition's blocks (dedup.maintext
    _Blocks): the same texts, link characters, tags, elements opened and furniture, the
    very same elements named, the same furniture counts and listing parents."""
    from dedup import maintext

    want, got = maintext._Blocks(root), maintext._walk(root)
    assert [b[:5] for b in got.blocks] == [b[:5] for b in want.blocks]
    assert all(g[5] is w[5] for g, w in zip(got.blocks, want.blocks))
    assert (got.containers, got.not_text, got.footers) == \
        (want.containers, want.not_text, want.footers)
    assert len(got.parents) == len(want.parents)
    assert all(g is w for g, w in zip(got.parents, want.parents))


_TAGS = ["div", "p", "span", "a", "li", "ul", "section", "nav", "footer", "h1", "td", "tr",
         "table", "b", "em", "script", "br", "main", "article", "aside", "fb:like", "o:p",
         "dialog"]
_ATTRS = ["", " class=share", " id=comments", " class='post-body'", " hidden",
          " aria-hidden=true", " style='display: none'", " style='color:red'",
          " class='a&amp;b &#x3c;nav&#x3e;'", " id=''", " class=ad", " CLASS=Sidebar",
          " aria-modal=true", " open", " aria-modal=false", " role=contentinfo", " popover",
          " popover=manual"]
_TEXTS = ["", "word ", "  two words  ", "链接文字", "&amp; &lt;b&gt;", "<!-- a comment -->",
          "<![CDATA[cdata]]>", "<?pi x?>", "\u00a0nbsp\u2003", "tail text. "]


def _random_html(rng, depth: int = 0) -> str:  # type: ignore[no-untyped-def]
    if depth > 6 or rng.random() < 0.25:
        return rng.choice(_TEXTS)
    tag = rng.choice(_TAGS)
    inner = "".join(_random_html(rng, depth + 1) for _ in range(rng.randint(0, 5)))
    return f"<{tag}{rng.choice(_ATTRS)}>{rng.choice(_TEXTS)}{inner}</{tag}>{rng.choice(_TEXTS)}"


def test_the_compiled_walk_reads_every_page_as_its_definition() -> None:
    import random

    from dedup import maintext

    if maintext.KERNEL != "cython":
        pytest.skip("dedup._walk is not built (SIMCRAWL_PURE_PYTHON, or no lxml at build)")
    rng = random.Random(7)
    pages = [_random_html(rng) for _ in range(400)]
    pages += [
              "<html><body><p>one</p>" + "<span>x</span>" * 3 + "</body></html>",
              "<body><main><p>only <a href=/>a link</a> and words</p></main></body>"]
    for html in pages:
        for tree in (parse(html), parse_html(html)):
            if tree is None:
                continue
            for root in (tree, tree.find("body"), *tree.iter("div", "main", "td")):
                if root is not None:
                    _blocks_agree(root)
    # libxml2 nests a parsed page 255 deep at most; a tree built deeper than the walk
    # recurses (maintext.MAX_DEPTH) is read whole below it, by both
    from lxml.etree import Element, SubElement

    root = Element("body")
    at = root
    for depth in range(maintext.MAX_DEPTH + 5):
        at = SubElement(at, "div" if depth % 3 else "span")
        at.text, at.tail = f"text {depth}", f"tail {depth}"
        SubElement(at, "p").text = f"a paragraph {depth}"
    _blocks_agree(root)


# Pages that are not plain articles (issue 54): each is read whole, never as one of its
# blocks, and never as its sidebar. bench/quality_reading.py measures the same on sites
# built by Sphinx, MkDocs and Pelican.

QUOTES = [
    "The world as we have created it is a process of our thinking. It cannot be changed "
    "without changing our thinking, said the physicist in a letter to a friend in 1931.",
    "It is our choices that show what we truly are, far more than our abilities.",
    "A day without sunshine is like, you know, night.",
]
SIDEBAR = ("<div class=sphinxsidebar role=navigation><h1 class=logo><a href=/>Proj</a></h1>"
           "<p class=blurb>A library that does one thing well, for everyone who needs it.</p>"
           "<h3>Navigation</h3><ul><li><a href=/a>Guide</a></li><li><a href=/b>API</a></li>"
           "</ul><h3>Related Topics</h3><ul><li><a href=/>Documentation overview</a></li>"
           "</ul></div>")


def quote_page(quotes: list[str]) -> str:
    items = "".join(
        f"<div class=quote><span class=text>{q}</span><span>by <small class=author>Author "
        f"{n}</small> <a href=/author/{n}>(about)</a></span><div class=tags>Tags: "
        f"<a class=tag href=/tag/life>life</a> <a class=tag href=/tag/books>books</a></div>"
        "</div>" for n, q in enumerate(quotes))
    return (f"<html><body><div class=container><div class=header><h1><a href=/>Quotes to "
            f"Scrape</a></h1></div><div class=row><div class=col-md-8>{items}"
            "<nav><ul class=pager><li class=next><a href=/page/2>Next</a></li></ul></nav>"
            "</div><div class=col-md-4 tags-box><h2>Top Ten tags</h2><span class=tag-item>"
            "<a class=tag href=/tag/love>love</a></span></div></div></div>"
            "<footer class=footer>Quotes by GoodReads.com</footer></body></html>")


@pytest.mark.parametrize("quotes", [QUOTES, QUOTES[:2], QUOTES[1:], QUOTES[:1]])
def test_every_item_of_a_listing_is_read_whatever_its_length(quotes: list[str]) -> None:
    text = read(quote_page(quotes))
    for quote in quotes:
        assert quote in text
    assert "Top Ten tags" not in text
    # two tag pages showing other quotes are never one text
    others = [q for q in QUOTES if q not in quotes]
    if others:
        assert read(quote_page(others)) != text


def test_a_question_is_read_with_all_its_answers_and_not_their_votes_and_cards() -> None:
    # each post with its votes and its author's card, in a Q&A site's markup: what the
    # readers did with the post and who wrote it, not what it says
    def post(kind: str, n: int, body: str) -> str:
        return (f"<div class='{kind}'><div class=votecell><button>Up vote</button>"
                f"<div class=js-vote-count>{n}</div></div><div class=postcell>"
                f"<div class=s-prose>{body}</div><div class=post-menu><a href=#>Share</a> "
                f"<a href=#>Follow</a></div><div class=post-signature><div class=user-info>"
                f"answered Nov 3 <a href=/u/{n}>user{n}</a> "
                f"<span class=reputation-score>{n * 100}</span></div></div></div></div>")

    question = "<p>How do I keep a crawler from fetching the same page twice?</p>"
    long_answer = ("<table><tr><th>setting</th><th>meaning</th></tr>" + "".join(
        f"<tr><td>SETTING_{i}</td><td>{STORY[i]}</td></tr>" for i in range(4)) + "</table>")
    short_answer = "<p>Use a request fingerprint filter.</p>"
    page = (f"<html><body><nav><a href=/>Home</a></nav><div id=content><h1>Same page twice"
            f"</h1>{post('question', 12, question)}<div id=answers><h2>2 Answers</h2>"
            f"{post('answer', 6, long_answer)}{post('answer', 3, short_answer)}</div></div>"
            "<footer>Site design / logo 2026</footer></body></html>")
    text = read(page)
    assert "How do I keep a crawler from fetching the same page twice?" in text
    assert "Use a request fingerprint filter." in text
    for line in STORY:
        assert line in text
    assert "answered Nov 3" not in text
    assert not {"12", "6", "3"} & set(text.splitlines())  # the votes


def test_a_long_question_is_read_with_its_short_answers() -> None:
    # the question is the heart; the thread's stats line after the headline is too short
    # to be read beside it, and the answers after it are read all the same
    def answer(n: int, body: str) -> str:
        return (f"<div class='answer js-answer'><div class=votecell><div class=js-vote-count>"
                f"{n}</div></div><div class=answercell><div class=s-prose><p>{body}</p></div>"
                f"<div class=post-signature><div class=user-info>answered Nov 3 "
                f"<a href=/u/{n}>user{n}</a></div></div></div></div>")

    answers = ["Use a request fingerprint filter.", "Read the settings page first."]
    page = ("<html><body><div id=content><div id=question-header><h1>Same page twice</h1>"
            "<div class=question-stats>Asked Nov 2 · Viewed 1,204 times</div></div>"
            "<div class=question><div class=votecell><div class=js-vote-count>12</div></div>"
            f"<div class=postcell><div class=s-prose><p>{' '.join(STORY)}</p></div></div></div>"
            "<div id=answers><h2>2 Answers</h2>"
            + answer(6, answers[0]) + answer(3, answers[1]) + "</div></div></body></html>")
    lines = read(page).splitlines()
    assert " ".join(STORY) in lines
    assert all(a in lines for a in answers)


def test_a_short_note_is_read_without_the_blogroll_beside_it() -> None:
    # the note is short, so the reading reads more than its element; a blogroll (links
    # to other sites, under its own heading) is furniture, as Pelican's themes name it
    page = ("<html><body><header><h1><a href=/>Field notes</a></h1></header>"
            "<section id=content><article><h1>Note 17</h1><div class=entry-content>"
            "<p>Each fault above has its own test.</p></div></article></section>"
            "<section id=extras><div class=blogroll><h2>links</h2><ul>"
            "<li><a href=https://getpelican.com/>Pelican</a></li>"
            "<li><a href=https://www.python.org/>Python</a></li></ul></div></section>"
            "<footer>Proudly powered by Pelican</footer></body></html>")
    lines = read(page).splitlines()
    assert "Each fault above has its own test." in lines
    assert "links" not in lines


def test_a_page_of_links_is_read_as_its_links_not_as_its_sidebar() -> None:
    def index(names: list[str]) -> str:
        entries = "".join(f"<li><a href=/api#{n}>{n}() (in module proj.core)</a></li>"
                          for n in names)
        return (f"<html><body><div class=document><div class=body role=main><h1>Index</h1>"
                f"<table><tr><td><ul>{entries}</ul></td></tr></table></div>{SIDEBAR}</div>"
                "<div class=footer>©2026. Powered by Sphinx</div></body></html>")

    names = [f"function_{n}" for n in range(12)]
    text = read(index(names))
    assert all(f"{n}() (in module proj.core)" in text for n in names)
    assert "A library that does one thing well" not in text
    assert read(index(names[:6])) != text


def test_an_index_with_a_jump_bar_and_letter_headings_is_read_as_its_links() -> None:
    """Sphinx's general index: a bar of links to each letter between separators
    ("A | B | C"), a heading a letter, and the entries under them, links but for each
    module's name (its one link, "module", under it). The bar's separators once made the
    text outside links 200 characters: the page was not a page of links, its entries
    were left out as navigation, and it read as its headings and its modules' names."""
    letters = "ABCDEFGHIKLMNOPRSTUVW"
    bar = " | ".join(f"<a href=#{c}><strong>{c}</strong></a>" for c in letters)
    modules = "".join(f"<li>proj.module_{n}<ul><li><a href=/api/m{n}>module</a></li></ul></li>"
                      for n in range(12))
    sections = "".join(
        f"<h2 id={c}>{c}</h2><table><tr><td><ul>"
        + "".join(f"<li><a href=/api#{c}{n}>{c.lower()}{n}_step() (in module proj.core)</a></li>"
                  for n in range(3))
        + (modules if c == "M" else "") + "</ul></td></tr></table>" for c in letters)
    page = (f"<html><body><div class=document><div class=body role=main><h1>Index</h1>"
            f"<div class=genindex-jumpbox>{bar}</div>{sections}</div>{SIDEBAR}</div>"
            "</body></html>")
    text = read(page)
    assert all(f"{c.lower()}{n}_step() (in module proj.core)" in text
               for c in letters for n in range(3))
    assert "A library that does one thing well" not in text


def test_a_short_index_of_links_is_read_as_its_links_however_long_the_sidebar() -> None:
    """Sphinx's module index of a small project: ten links, fewer characters than the
    sidebar's table of contents and its line about the project. The sidebar once held
    more than half the page's text, stopped being furniture and was read alone, the same
    on every such page (its module index and its source index were "copies" of its search
    page)."""
    toc = "".join(f"<li><a href=/g{n}>Guide chapter {n}: its long and telling title</a></li>"
                  for n in range(20))
    sidebar = SIDEBAR.replace("<li><a href=/a>Guide</a></li>", toc)

    def index(heading: str, names: list[str]) -> str:
        rows = "".join(f"<tr><td></td><td><a href=/api/{n}><code>{n}</code></a></td></tr>"
                       for n in names)
        return (f"<html><body><div class=document><div class=body role=main><h1>{heading}"
                f"</h1><table>{rows}</table></div>{sidebar}</div></body></html>")

    names = [f"proj.part{n}" for n in range(10)]
    text = read(index("Python Module Index", names))
    assert all(n in text for n in names)
    assert "A library that does one thing well" not in text and "Guide chapter" not in text
    search = ("<html><body><div class=document><div class=body role=main><h1>Search</h1>"
              f"<p>Searching for several words finds pages with all of them.</p></div>{sidebar}"
              "</div></body></html>")
    assert "Guide chapter" not in read(search)


def test_an_api_page_reads_every_definition_whatever_its_kind() -> None:
    """Sphinx's API page of a module: a class and, after it, a shorter function, each a
    ``<dl>`` of its kind (``py class``, ``py function``). The function was left out as a
    notice after the class (a quarter of the page's text): definitions with a class word
    in common are like siblings, read together."""
    methods = "".join(
        f'<dl class="py method"><dt class="sig">step_{n}(page) → int</dt><dd><p>'
        f"{STORY[n % 4]}</p></dd></dl>" for n in range(6))
    # autodoc's signature: each parameter in spans of its parts, then links to the source
    # and to the definition (what a run pays for: the elements opened, the links)
    params = ", ".join(f'<em class=sig-param><span class=n><span class=pre>{p}</span></span>'
                       '<span class=p><span class=pre>:</span></span> <span class=n>'
                       '<span class=pre>str</span></span></em>' for p in ("n", "one", "many"))
    def signature(name: str) -> str:
        return (f'<span class=sig-name><span class=pre>{name}</span></span>({params}) → '
                f'<span class=pre>str</span><a href=/_modules/proj#{name}><span '
                'class=viewcode-link><span class=pre>[source]</span></span></a><a '
                f'class=headerlink href=#{name}>¶</a>')
    page = ('<html><body><div class=document><div class=body role=main><section id=module>'
            "<h1>proj.progress</h1><p>A progress line for long commands.</p>"
            f'<dl class="py class"><dt class="sig">class {signature("Progress")}</dt><dd><p>'
            f"Report progress of total steps to a stream.</p>{methods}</dd></dl>"
            f'<dl class="py function"><dt class="sig">{signature("counted")}</dt><dd><p>'
            "The count and the noun for it: one page, two pages, one copy, three copies "
            f"(many: the plural when it is not one).</p></dd></dl></section></div>{SIDEBAR}"
            "</div></body></html>")
    text = read(page)
    assert "Report progress of total steps" in text
    assert "The count and the noun for it" in text
    assert "A library that does one thing well" not in text


def test_a_page_of_code_is_read_as_its_code() -> None:
    code = "\n".join(f"def step_{n}(page):\n    return page.links[{n}]" for n in range(20))
    page = (f"<html><body><div class=document><div class=body role=main><h1>Source code for "
            f"proj.core</h1><div class=highlight><pre><span class=k>import</span> os\n{code}"
            f"</pre></div></div>{SIDEBAR}</div></body></html>")
    text = read(page)
    assert "def step_19(page): return page.links[19]" in " ".join(text.split())
    assert "A library that does one thing well" not in text


def test_a_thin_page_is_not_read_as_its_sidebar() -> None:
    page = ("<html><body><header><h1><a href=/>Field notes</a></h1><nav><a href=/a>a</a>"
            "</nav></header><aside id=featured><article><h1><a href=/n>Note 1</a></h1>"
            "<footer class=post-info>Published: Sat 07 March 2026 By <a href=/au>Ben</a>"
            "</footer><p>The Spark engine is an extra and needs Java 17 or newer.</p>"
            "</article></aside><section id=extras><div class=blogroll><h2>links</h2><ul><li>"
            "<a href=https://getpelican.com/>Pelican</a></li></ul></div></section>"
            "<footer id=contentinfo>Proudly powered by <a href=/p>Pelican</a></footer>"
            "</body></html>")
    assert "The Spark engine is an extra and needs Java 17 or newer." in read(page)


def test_a_home_page_reads_its_featured_post_and_the_list_of_the_others() -> None:
    def item(n: int) -> str:
        return (f"<li><article class=hentry><header><h2><a href=/p{n}>Post {n}</a></h2>"
                f"</header><footer class=post-info>Published by <a href=/a>Ben</a></footer>"
                f"<p>{STORY[n]}</p><a class=readmore href=/p{n}>read more</a></article></li>")

    featured = "".join(f"<p>{line} {line}</p>" for line in STORY)
    page = (f"<html><body><header><h1><a href=/>Field notes</a></h1><nav><a href=/a>a</a>"
            f"</nav></header><aside id=featured><article><h1><a href=/p0>Post 0</a></h1>"
            f"{featured}</article></aside><section id=content><h1>Other articles</h1>"
            f"<ol id=posts-list>{''.join(item(n) for n in (1, 2, 3))}</ol></section>"
            "<footer id=contentinfo>Proudly powered by <a href=/p>Pelican</a></footer>"
            "</body></html>")
    text = read(page)
    assert f"{STORY[0]} {STORY[0]}" in text
    for n in (1, 2, 3):
        assert STORY[n] in text.replace(f"{STORY[n]} {STORY[n]}", "")


def test_an_article_is_text_wherever_it_sits() -> None:
    # a tag page of two notes: the newer "featured" in an <aside>, the other in the list;
    # two tag pages sharing one note are not one text
    def tag_page(featured: str, other: str) -> str:
        return ("<html><body><header><h1><a href=/>Field notes</a></h1></header>"
                f"<aside id=featured><article><h1><a href=/n1>Note</a></h1><p>{featured}</p>"
                "</article></aside><section id=content><h1>Other articles</h1><ol><li>"
                f"<article class=hentry><h2><a href=/n2>Note</a></h2><p>{other}</p>"
                "</article></li></ol></section><footer>Powered by Pelican</footer>"
                "</body></html>")

    text = read(tag_page(STORY[0], STORY[1]))
    assert STORY[0] in text and STORY[1] in text
    assert read(tag_page(STORY[2], STORY[1])) != text


NOTICE = ("<div class=bx><p>This website uses small files to count visitors anonymously.</p>"
          "<p>If you go on without changing your settings, we take it that you agree.</p>"
          "</div>")
LEGAL_TEXT = ("The content of this post is for general information only and is not advice "
              "of any kind. Consult a qualified professional about your own situation. Past "
              "results are no guide to what may come.")
LEGAL = f"<p>{LEGAL_TEXT}</p>"


@pytest.mark.parametrize("box,words", [(NOTICE, "small files"),
                                       (LEGAL, "general information")])
def test_a_notice_in_a_box_of_its_own_after_an_article_is_not_read(box: str,
                                                                  words: str) -> None:
    # another part of the page is read beside the article only when it holds as much text
    # as the article (a second body of text) or is a list of items: neither a cookie
    # notice a third as long nor a republishing site's disclaimer more than half as long
    # (at half, on near-dup-dev-2, the rule read cookie notices, "enable JavaScript" lines
    # and lists of other stories, and lost a republished pair)
    links = "".join(f"<li><a href=/s{n}>Another story from the coast, part {n}</a></li>"
                    for n in range(6))
    page = (f"<html><body><nav><a href=/>Home</a></nav><div class=story><h1>Harbour</h1>"
            f"{paragraphs()}</div><ul class=more>{links}</ul><div class=box>{box}</div>"
            "<footer>Copyright 2026 The Example Times</footer></body></html>")
    if box == LEGAL:
        assert 0.5 * len(" ".join(STORY)) < len(LEGAL_TEXT) < len(" ".join(STORY))
    text = read(page)
    assert STORY[0] in text and STORY[3] in text
    assert words not in text


def test_the_readers_part_does_not_outweigh_a_pages_own_text() -> None:
    # a stub whose one text of its own sits in a marked region beside a long comment
    # thread: the comments are never the page's text, so they do not make that region
    # furniture (read as nothing, the page would go to trafilatura)
    comments = "".join(f"<div class=comment><p>{line} {line}</p></div>" for line in STORY)
    page = ("<html><body><div role=complementary><p>Pick your free workshop topic and let us "
            f"take the next step together.</p></div><section id=comments>{comments}"
            "</section></body></html>")
    assert read(page) == ("Pick your free workshop topic and let us take the next step "
                          "together.")


@pytest.mark.parametrize("holder", ["<noscript>{}</noscript>", "<div hidden>{}</div>"])
def test_a_page_whose_text_is_held_back_from_view_is_read(holder: str) -> None:
    # Discourse serves a topic's posts in <noscript> for readers without scripts; Next.js
    # streams a body into <div hidden> for a script to move into place
    page = ("<html><body><nav><a href=/>Home</a> <a href=/t>Topics</a></nav>"
            "<div id=app><div class=spinner>Loading</div></div>"
            + holder.format(f"<div class=post><h1>Harbour reopens</h1>{paragraphs(STORY * 2)}"
                            "</div>")
            + "<footer>Copyright 2026 The Harbour Forum</footer></body></html>")
    text = read(page)
    assert text.split("\n") == ["Harbour reopens", *STORY * 2]


def test_a_notice_held_back_from_view_is_not_read_beside_a_page_of_text() -> None:
    page = (f"<body><main><h1>Harbour reopens</h1>{paragraphs(STORY * 2)}</main>"
            "<noscript><p>Please enable JavaScript to see the comments.</p></noscript>"
            "<div hidden><p>Sign in to your account to save this story.</p></div></body>")
    assert read(page).split("\n") == ["Harbour reopens", *STORY * 2]


def test_the_titles_of_a_listings_items_are_read_with_their_text() -> None:
    # a shop's category page: each card's name is a link, its price and stock are text;
    # the menu's items are links alone and stay navigation
    cards = "".join(f"<li class='product card'><h3><a href=/p{n}>Harbour lamp model {n}</a>"
                    f"</h3><span class=price>{n}9,00 EUR</span><p>In stock, sent within "
                    "two days from our harbour warehouse.</p></li>" for n in range(8))
    page = ("<body><ul class=menu><li class=item><a href=/a>Lamps</a></li><li class=item>"
            "<a href=/b>Chairs</a></li><li class=item><a href=/c>Tables</a></li></ul>"
            f"<h1>Harbour lamps</h1><ul class=products>{cards}</ul></body>")
    text = read(page)
    assert all(f"Harbour lamp model {n}" in text for n in range(8))
    assert "Chairs" not in text


def test_a_link_that_every_item_repeats_is_a_label_not_a_title() -> None:
    # Pelican's notes have no titles, each ends in "read more"; a card may show its title
    # twice (a link over the card and the heading): the one is a label, the other a title
    notes = "".join(f"<article class=note><p>{line}</p><a href=/n{n}>read more</a></article>"
                    for n, line in enumerate(STORY))
    page = f"<body><h1>Notes tagged harbour</h1><section>{notes}</section></body>"
    assert read(page).split("\n") == ["Notes tagged harbour", *STORY]
    cards = "".join(f"<li class=card><a href=/p{n}>Harbour lamp model {n}</a><h3><a href=/p{n}>"
                    f"Harbour lamp model {n}</a></h3><p>In stock, sent within two days from "
                    "our harbour warehouse.</p></li>" for n in range(5))
    text = read(f"<body><h1>Harbour lamps</h1><ul>{cards}</ul></body>")
    assert all(f"Harbour lamp model {n}" in text for n in range(5))


def test_a_cookie_policys_own_page_is_read_as_its_policy() -> None:
    # a real archive's cookie policy sat in <div id="cookies-policy">: read as the site's
    # 14-token menu, it was an exact copy of the contact page
    policy = "".join(f"<p>We use cookies to {verb} the site. Each cookie is kept for thirty "
                     "days and can be removed in your browser's settings at any time.</p>"
                     for verb in ("run", "measure", "improve", "secure", "remember"))
    page = ("<body><nav><a href=/>Home</a> <a href=/contact>Contact</a></nav>"
            "<ul class=menu><li><a href=/a>Products</a></li><li><a href=/b>Services</a></li>"
            f"</ul><div id=cookies-policy><h1>Cookie policy</h1>{policy}</div>"
            "<footer>Copyright 2026 Example Ltd</footer></body>")
    text = read(page)
    assert text.startswith("Cookie policy\nWe use cookies to run the site.")
    assert text.count("We use cookies") == 5 and "Products" not in text


# A shop's template carries a trade-in offer in a modal dialog on every page: 2,000
# characters a stub page of one line of its own was read as, so that every such page of
# the site was an exact copy of the first (near-dup-dev-3, irobot.com)
TRADE_IN = "".join(f"<p>{line}</p>" for line in [
    "With the trade-in programme, it is easy to get credit for your eligible old vacuum.",
    "Send your robot to us and we will confirm the model we received matches the model.",
    "Once confirmed, you will receive the credit back to your method of payment.",
    "While it does not qualify, here are ways you can still recycle your current product.",
] * 3)


def shop_page(own: str, modal: str) -> str:
    return ("<html><head><title>Robots</title></head><body><nav><a href=/>Home</a> "
            f"<a href=/shop>Shop</a></nav><main><h1>Robots</h1><p>{own}</p></main>"
            + modal.format(f"<h2>Get a credit for your new robot</h2>{TRADE_IN}")
            + "<footer>Copyright 2026 Robots Inc.</footer></body></html>")


@pytest.mark.parametrize("modal", [
    "<div class=offer role=dialog aria-modal=true>{}</div>",
    "<dialog>{}</dialog>",
    # HTML's popover: shown only when a button or a script opens it (a forum's "install
    # this app" card on every page, near-dup-dev-3's Kerbal forum)
    "<i-card popover id=install>{}</i-card>",
    '<div popover="manual">{}</div>',
])
def test_a_dialog_kept_closed_is_not_read_as_the_pages_text(modal: str) -> None:
    from dedup.reading import decide_pages

    own = ["Aura rated first for a reason, with one remark on its battery and its noise.",
           "Office furniture for the home, chairs and desks delivered within the week."]
    assert read(shop_page(own[0], modal)) == f"Robots\n{own[0]}"
    verdicts = decide_pages([(f"https://robots.test/p/{n}", shop_page(line, modal))
                             for n, line in enumerate(own)])
    assert [v.kind for v in verdicts] == ["new", "new"]
    # a dialog the page shows open is read as any other part of it
    assert "get credit" in read(shop_page(own[0], "<dialog open>{}</dialog>"))


# A shop's category page marks its grid of products as <main> and writes its guide to the
# category below it (WCXB's collection pages: the guide is the page's text); an article's
# page marks its article, and the site's blurb beside it stays out
GUIDE = [
    "A charcoal barbecue stays the choice of most cooks for one reason: nothing matches the "
    "taste that the embers of real wood charcoal give to the meat and the vegetables.",
    "Choose it by the number of guests: a grill of fifty-seven centimetres feeds eight to "
    "twelve people, and one of forty-seven suits four to six on a small terrace.",
    "A lid turns the barbecue into an oven outside, so that roasts stay tender and the cook "
    "controls the heat instead of watching the flames all evening long.",
]


def category_page(guide: list[str], card: str = "In stock, sent in two days") -> str:
    cards = "".join(f"<article class=card><h3><a href=/p{n}>Kettle grill {n}</a></h3>"
                    f"<span class=price>{n}49,00 €</span> <span>{card}</span></article>"
                    for n in range(30))
    return ("<html><body><nav><a href=/>Home</a> <a href=/grills>Grills</a></nav>"
            f"<main><h1>Charcoal barbecues</h1><div class=grid>{cards}</div></main>"
            f"<div class=category-bottom>{paragraphs(guide)}</div>"
            "<footer>Copyright 2026 Grill Shop</footer></body></html>")


def test_a_categorys_guide_is_read_beside_its_grid_of_products() -> None:
    text = read(category_page(GUIDE))
    assert all(line in text for line in GUIDE)
    assert "2949,00 € In stock" in text and "Copyright" not in text
    # two categories of one shop with one grid and their own guides read as two texts
    other = [line.replace("charcoal", "gas").replace("embers of real wood charcoal",
                                                     "steady flame of a burner")
             for line in GUIDE[:1]] + ["A gas grill is lit in a second and is ready to "
                                       "cook five minutes later, on any evening of the week."]
    assert read(category_page(other)) != text


def test_a_products_long_name_is_not_a_sentence_that_hides_the_guide() -> None:
    # twelve spaces, nine words: "Pack kettle grill PRO 57 cm on cart + spit - Acme"
    text = read(category_page(GUIDE, "Pack kettle grill PRO 57 cm on cart + spit - Acme"))
    assert all(line in text for line in GUIDE)


def test_a_marked_article_is_read_without_the_sites_blurb_after_it() -> None:
    page = (f"<html><body><main><h1>Harbour reopens</h1>{paragraphs(STORY * 2)}</main>"
            f"<div class=about>{paragraphs(GUIDE)}</div></body></html>")
    assert read(page).split("\n") == ["Harbour reopens", *STORY * 2]


@pytest.mark.parametrize("marked", [False, True])
def test_the_whole_visible_text_is_checksummed_read_or_not(marked: bool) -> None:
    # A stub's own line that the reading leaves out (a short paragraph beside a longer
    # block) still tells two pages apart: the page's whole visible text is its own.
    def page(stub: str, hidden: str = "") -> str:
        body = (f"<div class=story>{paragraphs()}</div><div class=teaser><p>{stub}</p></div>"
                f"<div hidden>{hidden}</div><footer>Copyright 2026 Example.</footer>")
        return f"<html><body>{'<main>' + body + '</main>' if marked else body}</body></html>"

    params = fingerprint_params(DedupConfig())
    one, other = (read_html(page(stub), "http://a.example/p", params)
                  for stub in ("A stub.", "Another stub."))
    assert one.text == other.text and len(one.whole) == 32
    assert one.whole != other.whole
    assert read_html(page("A stub."), "http://a.example/q", params).whole == one.whole
    assert read_html(page("A stub.", "unseen"), "http://a.example/p", params).whole == one.whole


# A card: a link that wraps its title and its summary (a news search's results, teasers of
# other stories). Read as prose where they outweigh a page's prose, such cards were read
# on near-dup-dev's stubs too, and lost a copy (docs/benchmarks.md): beside an article's
# own text they stay links
def _card(n: int) -> str:
    return (f'<section class=result><a href="/story/{n}"><h3>Story number {n} of the search'
            f'</h3><p>The summary of story {n} says what happened in the town this week and '
            f'why the council met again on Monday evening.</p></a></section>')


def test_teaser_cards_beside_an_article_stay_links() -> None:
    story = "".join(f"<p>The harbour wall reopened on Monday after {n} months of repairs "
                    f"that the storm of the winter had made necessary for the town.</p>"
                    for n in range(12))
    page = (f"<html><body><article><h1>Harbour</h1>{story}</article>"
            f"<div class=more>{''.join(_card(n) for n in range(3))}</div></body></html>")
    text = read(page)
    assert text.count("The harbour wall reopened") == 12
    assert "The summary of story" not in text
