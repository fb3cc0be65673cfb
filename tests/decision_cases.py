"""The decision's cases, one per rule of docs/fingerprints.md, written once and run twice:
on memory stores without any server (tests/unit/test_decision.py) and through the Redis and
MongoDB adapters (tests/integration/test_decide_servers.py). Each module provides the
``world`` fixture: a :class:`World` on its stores.

Fingerprints are set by hand (distances exact); texts are generated words, so the text
check's containment is known: a copy keeps every sentence, a rewrite changes every sixth
word."""

from __future__ import annotations

import random
from typing import Protocol

from dedup.decide import (
    CHANGED,
    EXACT,
    NEAR,
    NEW,
    TEMPLATE_ONLY,
    UNCHANGED,
    Decision,
    Rules,
)
from dedup.deduplicator import Deduplicator
from dedup.page import Page
from dedup.reading import published_date
from dedup.simhash import fingerprint
from dedup.sketch import TextSketch, shingle_values

A = 0x0F0F0F0F0F0F0F0F


def far(n: int) -> int:
    """A fingerprint about 32 bits from ``A`` and from every other ``far(m)``."""
    return random.Random(f"far-{n}").getrandbits(64)


class World(Protocol):
    """Stores shared by every deduplicator a test makes (as by a crawl's processes)."""

    def deduplicator(self, rules: Rules | None = None, *, template_pages: int = 0
                     ) -> Deduplicator:
        """A deduplicator on the world's stores (rules: the crawl's by default)."""

    def store(self, page: Page, decision: Decision | None = None) -> None:
        """Write an admitted page as the crawl's storage pipeline does (``decision``: a
        match turned round, the page takes over its original's id)."""

    def indexed(self) -> int:
        """Fingerprints in the index."""

    def record_copy(self, page: Page, decision: Decision) -> None:
        """Write a copy's match record as the crawl's storage pipeline does."""


def words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
            for _ in range(n)]


def article(seed: int, n: int = 240) -> str:
    """An article of ``n`` generated words, twelve to a line."""
    w = words(n, seed)
    return "\n".join(" ".join(w[i:i + 12]) for i in range(0, n, 12))


def rewrite(text: str, seed: int) -> str:
    """Every sixth word replaced: the same topic and words, half of the three-word
    phrases (a heavy rewrite: containment about 0.5)."""
    fresh = iter(words(len(text.split()), seed))
    lines = []
    for line in text.split("\n"):
        lines.append(" ".join(next(fresh) if i % 6 == 1 else w
                              for i, w in enumerate(line.split())))
    return "\n".join(lines)


def page(url: str, fp: int, text: str, *, checksum: str | None = None,
         verify: int | None = None, canonical: str | None = None,
         short: bool = False, published: str | None = None) -> Page:
    checksum = checksum or fingerprint(text).checksum_hex
    return Page(url, url.split("/")[2], checksum, fp, short, verify=verify, text=text,
                canonical=canonical, published=published_date(published))


# ----------------------------------------------------------------------------- revisit

def test_a_stored_url_is_a_revisit_unchanged_or_changed_never_a_copy(world: World) -> None:
    crawl = world.deduplicator()
    first = page("http://a.example/story?x=1&y=2", A, article(1))
    assert crawl.decide([first])[0].kind == NEW
    world.store(first)
    same = page("http://a.example/story?y=2&x=1", A, article(1))  # canonically one URL
    edited = page("http://a.example/story?x=1&y=2", A ^ 1, article(2))
    got = crawl.decide([same]) + crawl.decide([edited])
    assert [(d.kind, d.page_id) for d in got] == [(UNCHANGED, first.page_id),
                                                   (CHANGED, first.page_id)]


# ---------------------------------------------------------------------- exact and short

def test_an_exact_copy_names_the_admitted_page_that_owns_the_text(world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1))
    copy = page("http://b.example/1", A ^ 0xFFFF, article(1))  # same text, any simhash
    assert crawl.decide([original])[0].kind == NEW
    world.store(original)
    got = world.deduplicator().decide([copy])[0]  # another process
    assert (got.kind, got.original_id, got.distance, got.original_url) == (
        EXACT, original.page_id, 0, "http://a.example/1")


def test_short_texts_are_matched_by_checksum_only(world: World) -> None:
    crawl = world.deduplicator()
    short = page("http://a.example/s", A, "Page not found", short=True)
    twin = page("http://b.example/s", A ^ 0xFF00, "Page not found", short=True)
    near = page("http://c.example/s", A ^ 1, "Page gone", short=True)
    got = crawl.decide([short, twin, near])
    assert [d.kind for d in got] == [NEW, EXACT, NEW]
    assert got[1].original_id == short.page_id
    assert world.indexed() == 0  # short texts never enter the simhash tables


def test_a_dropped_copy_never_owns_its_text(world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1))
    crawl.decide([original])
    copy = page("http://b.example/1", A ^ 0b11, article(1) + "\nshare this story")
    again = page("http://c.example/1", A ^ 0b11, copy.text or "")  # the copy's exact text
    assert crawl.decide([copy])[0].kind == NEAR
    got = crawl.decide([again])[0]
    assert (got.kind, got.original_id) == (NEAR, original.page_id)  # never the copy


def test_a_recorded_copy_keeps_its_verdict_until_its_text_changes(world: World) -> None:
    """A re-crawl keeps every earlier verdict unless the page changed, whichever process
    meets it and whatever the index would say now."""
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1))
    assert crawl.decide([original])[0].kind == NEW
    world.store(original)
    copy = page("http://b.example/1", A ^ 0b11, article(1) + "\nshare this story")
    verdict = crawl.decide([copy])[0]
    assert (verdict.kind, verdict.original_id) == (NEAR, original.page_id)
    world.record_copy(copy, verdict)
    # fetched again, its text the same but its fingerprint now far from every page
    # indexed (say the host's template was learned since): still the same copy
    again = page("http://b.example/1", far(3), copy.text or "")
    got = world.deduplicator().decide([again])[0]
    assert (got.kind, got.original_id, got.distance, got.original_url) == (
        NEAR, original.page_id, verdict.distance, "http://a.example/1")
    assert got.dropped
    # its text changed: decided afresh
    changed = page("http://b.example/1", far(3), article(5))
    assert world.deduplicator().decide([changed])[0].kind == NEW


def test_pages_of_one_batch_with_one_text_follow_the_first(world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1))
    crawl.decide([original])
    copy = page("http://b.example/1", A ^ 1, article(1) + "\nmore")
    copy_again = page("http://c.example/1", A ^ 1, article(1) + "\nmore")
    fresh = page("http://d.example/1", far(1), article(9))
    fresh_again = page("http://e.example/1", far(1), article(9))
    got = crawl.decide([copy, copy_again, fresh, fresh_again])
    assert [(d.kind, d.original_id) for d in got] == [
        (NEAR, original.page_id), (NEAR, original.page_id), (NEW, None),
        (EXACT, fresh.page_id)]


def test_deciding_a_batch_again_admits_it_again(world: World) -> None:
    crawl = world.deduplicator()
    p = page("http://a.example/1", A, article(1))
    assert crawl.decide([p])[0].kind == NEW
    assert crawl.decide([p])[0].kind == NEW  # a retry after a failure: not its own copy


# ------------------------------------------------------------------- near: fingerprints

def test_without_texts_a_candidate_within_the_trust_distance_is_the_original(
        world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, "", checksum="1" * 32, verify=0)
    crawl.decide([original])
    copy = page("http://b.example/1", A ^ 0b111, "", checksum="2" * 32, verify=0b11)
    beyond = page("http://c.example/1", A ^ 0b1111, "", checksum="3" * 32, verify=0b11)
    got = crawl.decide([copy]) + crawl.decide([beyond])
    assert (got[0].kind, got[0].distance, got[0].containment) == (NEAR, 3, None)
    assert got[1].kind == NEW  # 4 bits: fingerprints alone never judge it a copy


def test_with_texts_the_text_decides_at_every_distance(world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1), verify=0)
    crawl.decide([original])
    unlike = page("http://b.example/1", A ^ 0b1, article(5), verify=0b11)  # texts unlike
    reworded = page("http://c.example/1", A, rewrite(article(1), 3), verify=0)
    got = crawl.decide([unlike]) + crawl.decide([reworded])
    assert [d.kind for d in got] == [NEW, NEW]  # 1 bit and 0 bits: no text evidence


def test_a_disagreeing_second_opinion_sends_the_candidate_to_the_text_check(
        world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1), verify=0)
    crawl.decide([original])
    reworded = page("http://b.example/1", A ^ 0b1, rewrite(article(1), 7),
                    verify=(1 << 20) - 1)  # 20 bits from the original's
    same_words = page("http://c.example/1", A ^ 0b1, article(1) + "\ncomments",
                      verify=(1 << 40) - (1 << 20))  # 20 bits from it, 40 from the rewrite's
    got = crawl.decide([reworded]) + crawl.decide([same_words])
    assert got[0].kind == NEW
    assert (got[1].kind, got[1].original_id) == (NEAR, original.page_id)
    # the copy's own text in the original's: all but the shingles of the line it adds
    assert got[1].containment is not None and 0.98 <= got[1].containment < 1.0


# ----------------------------------------------------------------------- near: texts

def test_beyond_the_trust_distance_the_texts_decide(world: World) -> None:
    crawl = world.deduplicator()
    original = page("http://a.example/1", A, article(1))
    crawl.decide([original])
    world.store(original)
    copy = page("http://b.example/1", A ^ 0b11111, article(1) + "\n" + article(3, 36))
    rewritten = page("http://c.example/1", A ^ 0b111110, rewrite(article(1), 4))
    other = world.deduplicator()  # another process: the original's text from the store
    got = other.decide([copy]) + other.decide([rewritten])
    assert (got[0].kind, got[0].distance) == (NEAR, 5)
    assert got[0].containment is not None and got[0].containment >= 0.8
    assert got[1].kind == NEW  # a rewrite keeps the words, not the phrasing
    assert world.indexed() == 2  # the rewrite was admitted into the index


def test_a_candidate_another_process_admitted_and_did_not_store_is_judged_on_its_text(
        world: World) -> None:
    first = world.deduplicator()
    original = page("http://a.example/1", A, article(1))
    assert first.decide([original])[0].kind == NEW  # admitted, not stored (yet)
    copy = page("http://b.example/1", A ^ 0b11111, article(1) + "\n" + article(3, 36))
    rewritten = page("http://c.example/1", A ^ 0b111110, rewrite(article(1), 4))
    other = world.deduplicator()  # another process: the text sketch came with the index
    got = other.decide([copy]) + other.decide([rewritten])
    assert (got[0].kind, got[0].original_id) == (NEAR, original.page_id)
    assert got[0].containment is not None and got[0].containment >= 0.8
    assert got[1].kind == NEW


def test_a_page_admitted_after_its_text_check_never_stands_beside_its_copy(
        world: World) -> None:
    # R is admitted; X and Y (a copy of X) both have R for their only candidate at their
    # probe, a rewrite, so neither is its copy. Admitting X and Y then is one atomic step
    # each that sees what was admitted since: Y meets X and is its copy.
    crawl = world.deduplicator()
    reworded = page("http://r.example/1", A, rewrite(article(1), 5))
    assert crawl.decide([reworded])[0].kind == NEW
    x = page("http://x.example/1", A ^ 0b1, article(1))
    y = page("http://y.example/1", A ^ 0b11, article(1) + "\nshared from x")
    got = crawl.decide([x, y])
    assert [(d.kind, d.original_id) for d in got] == [(NEW, None), (NEAR, x.page_id)]
    assert world.indexed() == 2  # R and X


def test_a_batch_of_pages_that_meet_each_other_is_admitted_one_by_one_to_its_end(
        world: World) -> None:
    # R is admitted; seven articles, each within k of R and of one another, arrive in one
    # batch with a copy of the last. None copies R, so each is admitted unless it meets a
    # page admitted since its probe: the batch's first is admitted, the rest meet it and
    # are judged against it, and so on, one a round. The copy meets its article only in
    # the seventh round, and is its copy, never admitted beside it.
    crawl = world.deduplicator()
    assert crawl.decide([page("http://r.example/1", A, article(100))])[0].kind == NEW
    articles = [page(f"http://p.example/{j}", A ^ 1 << j, article(j)) for j in range(7)]
    copy = page("http://c.example/6", A ^ 1 << 6 ^ 1 << 20, article(6) + "\nshared from p")
    got = crawl.decide([*articles, copy])
    assert [d.kind for d in got[:7]] == [NEW] * 7
    assert (got[7].kind, got[7].original_id) == (NEAR, articles[6].page_id)
    assert world.indexed() == 8  # R and the seven articles


def order_case(seed: int, base: int) -> tuple[Page, Page, Page]:
    """S holds an article beside much more of its own; X is the article, near S alone and
    not its copy (S is mostly other text); Y is the article and a line, near X alone (6
    bits from S, and fewer than two text anchors shared with it)."""
    holder = page(f"http://s.example/{seed}", base,
                  "\n".join(article(n) for n in (seed, *range(seed + 100, seed + 104))))
    x = page(f"http://x.example/{seed}", base ^ 0b111, article(seed))
    y = page(f"http://y.example/{seed}", base ^ 0b111 ^ 0b111 << 8,
             article(seed) + "\nshared from x")
    assert len(set(TextSketch.of_text(holder.text).anchors)
               & set(TextSketch.of_text(y.text).anchors)) < 2
    return holder, x, y


def test_in_order_a_page_is_admitted_before_a_later_page_of_its_batch_is_probed(
        world: World) -> None:
    # In one batch, X has S for its only candidate and waits for its text check; Y comes
    # after X. In order (simcrawl warc: the files' order is the record's), X is judged
    # and admitted before Y is probed, and Y is X's copy. (A crawl's batch may admit Y at
    # its probe, and X then meets it as a page admitted since: tests/unit/test_decision.py.)
    holder, x, y = order_case(4, far(7))
    crawl = world.deduplicator()
    crawl.in_order = True
    assert crawl.decide([holder])[0].kind == NEW
    world.store(holder)
    got = [(d.kind, d.original_id) for d in crawl.decide([x, y])]
    assert got == [(NEW, None), (NEAR, x.page_id)]


def taught(crawl: Deduplicator, host: str, seed: int) -> str:
    """Two pages of ``host`` admitted, each an article and the site's furniture (four
    lines of twelve words), which they teach: the furniture."""
    furniture = "\n".join(" ".join(words(12, seed * 10 + i)) for i in range(4))
    for n in (1, 2):
        crawl.decide([page(f"http://{host}/{n}", far(seed + n), article(seed + n) + "\n"
                           + furniture)])
    return furniture


def test_a_page_with_a_short_text_of_its_own_beside_the_template_is_kept(
        world: World) -> None:
    # A stub: the site's template around a line of its own too short to fingerprint. It
    # is not skipped as the template (its line is its own text): it is judged as a short
    # text, by its whole text, so another stub is not its copy and the same page is.
    crawl = world.deduplicator(template_pages=2)
    furniture = taught(crawl, "s.example", 30)
    stubs = [page(f"http://s.example/stub/{n}", far(40 + n),
                  " ".join(words(12, 40 + n)) + "\n" + furniture) for n in (1, 2)]
    again = page("http://s.example/stub/1-again", far(41), stubs[0].text or "")
    got = [crawl.decide([p])[0] for p in [*stubs, again]]
    assert [d.kind for d in got] == [NEW, NEW, EXACT]
    assert got[2].original_id == stubs[0].page_id
    assert [p.template_lines for p in stubs] == [4, 4]


def test_a_page_read_as_its_sites_template_alone_is_judged_on_its_whole_text(
        world: World) -> None:
    # Two stubs whose own line the reading missed, so both read as the site's template
    # alone: they are not exact copies of one another (their whole visible texts
    # differ); the same page again is its copy. A page not read so is skipped as before.
    crawl = world.deduplicator(template_pages=2)
    furniture = taught(crawl, "w.example", 50)
    stubs = [page(f"http://w.example/stub/{n}", far(60), furniture) for n in (1, 2)]
    stubs[0].whole, stubs[1].whole = "1" * 32, "2" * 32
    again = page("http://w.example/stub/1-again", far(60), furniture)
    again.whole = stubs[0].whole
    got = [crawl.decide([p])[0] for p in [*stubs, again]]
    assert [d.kind for d in got] == [NEW, NEW, EXACT]
    assert got[2].original_id == stubs[0].page_id
    unread = page("http://w.example/stub/3", far(60), furniture)  # whole not known
    assert crawl.decide([unread])[0].kind == TEMPLATE_ONLY


def test_in_order_a_batch_gives_what_its_pages_one_at_a_time_give(world: World) -> None:
    # simcrawl warc's batches are made by the timing of the reading: in order, a page's
    # evidence is read after every earlier page of its batch was applied, so the record
    # does not depend on it. Here the third page of a site meets the template its first
    # two taught, and a stub of nothing but that template is skipped, in one batch as
    # when each page is a batch of its own.
    def site(host: str, seed: int) -> list[Page]:
        furniture = "\n".join(" ".join(words(12, seed + 50 + i)) for i in range(4))
        return [*(page(f"http://{host}/{n}", far(seed + n), article(seed + n) + "\n" + furniture)
                  for n in (1, 2, 3)), page(f"http://{host}/tag/1", far(seed + 9), furniture)]

    alone = world.deduplicator(template_pages=2)
    alone.in_order = True
    pages = site("t.example", 200)
    one_by_one = [alone.decide([p])[0].kind for p in pages]
    assert one_by_one == [NEW, NEW, NEW, TEMPLATE_ONLY]
    assert [p.template_lines for p in pages[:3]] == [0, 0, 4]
    batched = world.deduplicator(template_pages=2)
    batched.in_order = True
    pages = site("u.example", 300)
    assert [d.kind for d in batched.decide(pages)] == one_by_one
    assert [p.template_lines for p in pages[:3]] == [0, 0, 4]  # the article's own text left


def test_pages_with_one_fingerprint_are_each_a_candidate(world: World) -> None:
    # A rewrite admitted first; its article arrives with the very same fingerprint (a
    # rewrite keeps the vocabulary), is not its copy and is admitted, indexed under the
    # rewrite's entry. A copy of the article is the article's copy, not admitted beside it.
    crawl = world.deduplicator()
    reworded = page("http://r.example/1", A, rewrite(article(1), 5))
    original = page("http://a.example/1", A, article(1))
    copy = page("http://b.example/1", A ^ 0b1, article(1) + "\nshared from a")
    got = [crawl.decide([p])[0] for p in (reworded, original, copy)]
    assert [(d.kind, d.original_id) for d in got] == [
        (NEW, None), (NEW, None), (NEAR, original.page_id)]
    assert world.indexed() == 1  # one fingerprint, two pages


def test_the_text_check_off_leaves_such_candidates_new(world: World) -> None:
    crawl = world.deduplicator(Rules(verify_containment=None))
    crawl.decide([page("http://a.example/1", A, article(1))])
    got = crawl.decide([page("http://b.example/1", A ^ 0b11111, article(1) + "\nmore")])
    assert got[0].kind == NEW


# --------------------------------------------------------------- near: one way

def test_a_page_holding_another_whole_and_more_of_its_own_is_not_its_copy(
        world: World) -> None:
    """One way: a page is a copy when its own text is almost all in the candidate. A
    listing or a home page that shows an article whole beside other items, and an
    article fetched after such a listing, are each other's text plus much more: neither
    is the other's copy, whichever comes first (docs/fingerprints.md, "One way")."""
    crawl = world.deduplicator()
    for n, listing_first in enumerate((True, False)):  # other texts, other sites each time
        story = article(10 * n + 1, 240)
        listing = page(f"http://home{n}.example/", A ^ n << 8,
                       "\n".join((article(10 * n + 2, 120), story, article(10 * n + 3, 120),
                                  article(10 * n + 4, 120))))
        post = page(f"http://home{n}.example/story", A ^ n << 8 ^ 0b11, story)
        order = (listing, post) if listing_first else (post, listing)
        got = [crawl.decide([p])[0].kind for p in order]
        assert got == [NEW, NEW], (listing_first, got)


def test_a_copy_with_a_little_of_its_own_is_a_copy_of_the_page_it_repeats(
        world: World) -> None:
    """The page's own text in the candidate's, and the candidate not mostly other text:
    a republication that adds a credit line and a teaser is a copy; the original, met
    after such a republication, is a copy of it too (its text is all there, and the
    republication is mostly the original's)."""
    crawl = world.deduplicator()
    story = article(1, 240)
    republished = page("http://b.example/1", A, story + "\n" + article(2, 30))
    original = page("http://a.example/1", A ^ 0b1, story)
    got = [crawl.decide([p])[0] for p in (republished, original)]
    assert [(d.kind, d.original_id) for d in got] == [(NEW, None),
                                                       (NEAR, republished.page_id)]
    assert got[1].containment == 1.0  # all of the original's text is in the republication


def test_pages_of_one_site_under_other_titles_are_other_documents(world: World) -> None:
    crawl = world.deduplicator()
    furniture = article(2, 200)  # a site's sidebar, on every page
    stub = page("http://a.example/stub", A, furniture + "\n" + article(3, 12))
    stub.title = "15 Best Online Tutoring Platforms"
    story = page("http://a.example/story", A ^ 0b11, furniture + "\n" + article(4, 60))
    story.title = "6 Gardening Shows to Watch"
    mirror = page("http://a.example/story?print", A ^ 0b1, story.text + "\nprint")
    mirror.title = "6 Gardening Shows to Watch (print)"
    elsewhere = page("http://b.example/stub", A, stub.text + "\nvia a")
    elsewhere.title = "Tutoring platforms, reviewed"
    got = [crawl.decide([p])[0] for p in (stub, story, mirror, elsewhere)]
    assert [d.kind for d in got] == [NEW, NEW, NEAR, NEAR]
    assert got[2].original_id == story.page_id  # the same title: the same document
    assert got[3].original_id == stub.page_id  # another site: its title says nothing


def test_pages_of_one_site_under_one_title_with_other_descriptions_are_other_documents(
        world: World) -> None:
    # A site whose pages all carry the site's name as their title: its descriptions (the
    # site's summary of each page) name its documents; a page without one says nothing.
    crawl = world.deduplicator()
    furniture = article(2, 200)
    first = page("http://a.example/1", A, furniture + "\n" + article(3, 12))
    second = page("http://a.example/2", A ^ 0b11, furniture + "\n" + article(4, 12))
    again = page("http://a.example/1?ref=home", A ^ 0b1, first.text + "\nshare")
    undescribed = page("http://a.example/1?print", A ^ 0b100, first.text + "\nprint")
    for p in (first, second, again, undescribed):
        p.title = "Coffee Chronicler"
    first.description = again.description = "Light roasts for the espresso machine at home."
    second.description = "How a grinder's burrs shape the taste of the cup."
    got = [crawl.decide([p])[0] for p in (first, second, again, undescribed)]
    assert [d.kind for d in got] == [NEW, NEW, NEAR, NEAR]
    assert got[2].original_id == got[3].original_id == first.page_id


def test_a_copy_beyond_k_is_found_by_its_text_anchors(world: World) -> None:
    """A republication under another template may land far from its original's
    fingerprint; the pages filed under its text anchors are its candidates all the same,
    and only the text decides (a page sharing a phrase of it is not a copy)."""
    crawl = world.deduplicator()
    first = page("http://a.example/1", A, article(1))
    crawl.decide([first])
    far = page("http://b.example/1", A ^ 0xFFFF_FFFF, article(1) + "\nmore")  # 32 bits
    got = crawl.decide([far])[0]
    assert (got.kind, got.original_id, got.distance) == (NEAR, first.page_id, 32)
    quoting = page("http://c.example/1", A ^ 0xFFFF_FFFF_0000,
                   article(1, 24) + "\n" + article(5, 240))  # 32 bits, shares a passage
    assert crawl.decide([quoting])[0].kind == NEW


def test_a_copy_of_a_dropped_copy_is_recorded_against_the_original(world: World) -> None:
    """A ~ B and B ~ C but A !~ C: with A admitted and B dropped as its copy, C (which
    copies B, not A) is recorded as a copy of A, not admitted beside it: B's text stays
    with A in the index."""
    crawl = world.deduplicator()
    s1, s2, s3, s4, s5 = (article(n, size) for n, size in
                          ((1, 36), (2, 96), (3, 108), (4, 36), (5, 24)))
    a = page("http://a.example/1", A, f"{s1}\n{s2}\n{s3}")
    b = page("http://b.example/1", A ^ 0b1, f"{s2}\n{s3}\n{s4}")  # A's last 5/6 and more
    c = page("http://c.example/1", A ^ 0b11, f"{s3}\n{s4}\n{s5}")  # B's last half and more
    got = [crawl.decide([p])[0] for p in (a, b, c)]
    assert [(d.kind, d.original_id) for d in got] == [
        (NEW, None), (NEAR, a.page_id), (NEAR, a.page_id)]
    assert got[2].containment is not None and got[2].containment >= 0.8  # C in B's text
    # against A alone, C is no copy: a third of C's text is not A's
    assert TextSketch.of_text(a.text).shares(shingle_values(c.text))[0] < 0.7


# ----------------------------------------------------------------- the right original

def test_the_declared_canonical_is_asked_first(world: World) -> None:
    crawl = world.deduplicator()
    first = page("http://a.example/1", A, article(1))
    second = page("http://b.example/1", A ^ 0b111111, article(1) + "\n" + article(8, 60))
    assert [d.kind for d in crawl.decide([first])] == [NEW]
    second_got = world.deduplicator(Rules(verify_containment=None)).decide([second])
    assert second_got[0].kind == NEW  # two versions admitted
    world.store(first)
    world.store(second)
    copy = page("http://c.example/1", A ^ 0b1, article(1) + "\nvia b",
                canonical="http://b.example/1")
    got = crawl.decide([copy])[0]
    assert (got.original_id, got.canonical_link) == (second.page_id, "declared")


def test_a_copy_fetched_first_that_names_the_later_page_canonical_is_turned_round(
        world: World) -> None:
    crawl = world.deduplicator()
    syndicated = page("http://b.example/1", A, article(1) + "\nvia a",
                      canonical="http://a.example/1")
    crawl.decide([syndicated])
    world.store(syndicated)
    source = page("http://a.example/1", A ^ 1, article(1))
    got = world.deduplicator().decide([source])[0]
    # the source is kept, under the id the syndicated copy had: its copies are the source's
    assert (got.kind, got.page_id) == (NEW, syndicated.page_id)
    assert got.turn is not None
    assert (got.turn.reason, got.turn.url, got.turn.kind, got.turn.distance) == (
        "canonical", "http://b.example/1", NEAR, 1)
    world.store(source, got)
    mirror = page("http://c.example/1", A ^ 1, article(1))  # the source's text: found
    later = world.deduplicator().decide([mirror])[0]
    assert (later.kind, later.original_id, later.original_url) == (
        EXACT, syndicated.page_id, "http://a.example/1")


def test_a_copy_that_says_it_was_published_earlier_is_turned_round(world: World) -> None:
    crawl = world.deduplicator()
    reprint = page("http://b.example/1", A, article(2) + "\nreprinted",
                   published="2024-05-03T08:00:00Z")
    crawl.decide([reprint])
    world.store(reprint)
    same_day = page("http://c.example/1", A ^ 1, article(2), published="2024-05-03T08:00:00Z")
    undated = page("http://d.example/1", A ^ 2, article(2))
    # a date without its time is its midnight: the same day, either way round
    day = page("http://e.example/1", A ^ 4, article(2), published="2024-05-03")
    first = page("http://a.example/1", A ^ 3, article(2), published="2024-05-02T08:00:00Z")
    got = crawl.decide([same_day])[0]
    assert (got.kind, got.original_id, got.turn) == (NEAR, reprint.page_id, None)
    assert crawl.decide([undated])[0].turn is None  # the pages do not say: crawl order
    assert crawl.decide([day])[0].turn is None
    got = crawl.decide([first])[0]
    assert (got.kind, got.page_id, got.turn.reason if got.turn else None) == (
        NEW, reprint.page_id, "published")


def test_a_copy_that_names_its_original_canonical_is_never_turned_round(world: World) -> None:
    crawl = world.deduplicator()
    source = page("http://a.example/1", A, article(3), published="2024-05-03")
    crawl.decide([source])
    world.store(source)
    # earlier by its date, but it says the stored page is the canonical one: it is not
    copy = page("http://b.example/1", A ^ 1, article(3) + "\nvia a",
                canonical="http://a.example/1", published="2024-05-01")
    got = world.deduplicator().decide([copy])[0]
    assert (got.kind, got.original_id, got.canonical_link, got.turn) == (
        NEAR, source.page_id, "declared", None)


# ------------------------------------------------------------------- template text

def test_a_hosts_learned_template_lines_are_left_out_and_a_page_of_nothing_else_skipped(
        world: World) -> None:
    crawl = world.deduplicator(template_pages=2)
    furniture = "\n".join(" ".join(words(12, 100 + i)) for i in range(4))  # 48 tokens
    for n in (1, 2):
        assert crawl.decide([page(f"http://a.example/{n}", far(n),
                                  article(n) + "\n" + furniture)])[0].kind == NEW
    later = page("http://a.example/3", far(3), article(3) + "\n" + furniture)
    assert crawl.decide([later])[0].kind == NEW
    assert later.template_lines == 4 and later.rest == article(3)  # what the check reads
    assert later.text == article(3) + "\n" + furniture  # stored whole
    assert later.simhash == fingerprint(article(3)).simhash  # what the index holds
    stubs = [page(f"http://a.example/tag/{n}", far(10 + n), furniture) for n in (1, 2)]
    assert [d.kind for d in crawl.decide(stubs[:1]) + crawl.decide(stubs[1:])] == [
        TEMPLATE_ONLY, TEMPLATE_ONLY]  # skipped, and never one another's copy
    elsewhere = page("http://b.example/1", far(20), article(4) + "\n" + furniture)
    crawl.decide([elsewhere])
    assert elsewhere.template_lines == 0  # another host's template is its own
