"""The detection rules on real pages of the development set (``near-dup-dev``), decided
by the crawl's own code: the crawler's extraction and fingerprints, and the
:class:`~dedup.deduplicator.Deduplicator` with the crawl's default settings, on real Redis and
MongoDB. Skipped, saying why, where the development data is not on the machine."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawler.extraction import extract_and_fingerprint, fingerprint_params
from dedup.adapters.on_servers import on_servers
from dedup.adapters.index import RedisStore
from dedup.config import DedupConfig
from dedup.decide import NEAR, NEW, Rules
from dedup.deduplicator import Deduplicator
from dedup.index import NearDuplicateIndex
from dedup.page import Page
from dedup.simhash import hamming
from dedup.store.records import page_record

pytestmark = pytest.mark.integration

CONFIG = DedupConfig()
#: The reading some rules are tested on (see :func:`page`).
TRAFILATURA = "trafilatura"


@pytest.fixture(scope="module")
def dev_pages(dev_data: Path) -> dict[str, dict]:
    """The pages of both development sets, by name (``near-dup-dev-2``'s start with its
    folder: ``near-dup-dev-2/NAME``)."""
    out = {}
    for folder in ("near-dup-dev", "near-dup-dev-2"):
        for row in map(json.loads, (dev_data / folder / "pages.jsonl").open()):
            name = row["page"] if folder == "near-dup-dev" else f"{folder}/{row['page']}"
            out[name] = {**row, "file": dev_data / folder / "pages" / f"{row['page']}.html.gz"}
    return out


def page(dev_data: Path, dev_pages: dict[str, dict], name: str, *, text: bool = True,
         canonical: str | None = None, extractor: str = "simcrawl") -> Page:
    """A development page as the crawl sees it (``text=False``: without its text;
    ``canonical``: with its ``rel=canonical`` and ``og:url`` pointing there instead, as a
    syndicated copy names its source; ``extractor``: ``DEDUP_EXTRACTOR``, ``trafilatura``
    where a rule is tested on a reading that trafilatura gives and simcrawl's does not:
    a stub read as its site's furniture, a footer line read as text)."""
    url = dev_pages[name]["url"]
    body = gzip.decompress(dev_pages[name]["file"].read_bytes())
    if canonical is not None:
        assert url.encode() in body  # the page declares itself canonical
        body = body.replace(f'href="{url}"'.encode(), f'href="{canonical}"'.encode()) \
            .replace(f'content="{url}"'.encode(), f'content="{canonical}"'.encode())
    config = CONFIG if extractor == CONFIG.extractor else DedupConfig(extractor=extractor)
    read = extract_and_fingerprint(body, url, fingerprint_params(config), "utf-8")
    assert canonical is None or read.canonical == canonical
    if not text:
        read.text = ""
    return read


def crawl_deduplicator(redis_client, pages, namespace: str,  # type: ignore[no-untyped-def]
                       k: int = CONFIG.max_distance) -> Deduplicator:
    """A deduplicator set up as the crawl sets it up (crawler/wiring.py), defaults (``k``:
    another ``DEDUP_MAX_DISTANCE``)."""
    index = NearDuplicateIndex(RedisStore(redis_client, namespace), k=k, capacity=1000)
    return on_servers(index, redis_client, pages, namespace, Rules.from_config(CONFIG))


@pytest.fixture
def crawl(redis_client, pages, namespace: str) -> Iterator[Deduplicator]:  # type: ignore[no-untyped-def]
    yield crawl_deduplicator(redis_client, pages, namespace)
    RedisStore(redis_client, namespace).clear()


def test_a_copy_under_other_boilerplate_is_found_by_its_text(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages, redis_client, pages, namespace) -> None:
    # The same RT story with comments and teasers added: 6 bits from the original, which a
    # fingerprint alone would not trust; the text check sees the story is all there.
    original = page(dev_data, dev_pages, "4a44ab3e4c-P")
    copy = page(dev_data, dev_pages, "4a44ab3e4c-AB")
    assert hamming(original.simhash, copy.simhash) > CONFIG.trust_distance
    assert crawl.decide([original])[0].kind == NEW
    got = crawl.decide([copy])[0]
    assert (got.kind, got.original_id, got.original_url) == (NEAR, original.page_id,
                                                              original.url)
    assert got.distance == hamming(original.simhash, copy.simhash)
    assert got.containment is not None and got.containment >= CONFIG.verify_containment

    # Another process, whose recent admissions do not include the original, reads its
    # text from the store.
    pages.save_pages([page_record(original)])
    other = crawl_deduplicator(redis_client, pages, namespace)
    again = other.decide([page(dev_data, dev_pages, "4a44ab3e4c-AB")])[0]
    assert (again.kind, again.original_id) == (NEAR, original.page_id)

    # Without its text the same page is judged by fingerprints, and kept.
    blind = other.decide([page(dev_data, dev_pages, "4a44ab3e4c-AB", text=False)])[0]
    assert blind.kind == NEW


def test_a_heavy_rewrite_in_the_same_words_is_kept(crawl, dev_data, dev_pages) -> None:  # type: ignore[no-untyped-def]
    # Rewrites of two articles that keep their vocabulary: 0 and 2 bits from the
    # originals as the crawl reads them, closer than many true copies; their phrasing is
    # not the original's.
    for article in ("833caf3bdb", "65408257db"):
        original = page(dev_data, dev_pages, f"{article}-P")
        rewrite = page(dev_data, dev_pages, f"{article}-E")
        assert hamming(original.simhash, rewrite.simhash) <= CONFIG.trust_distance
        assert crawl.decide([original])[0].kind == NEW
        got = crawl.decide([rewrite])[0]
        assert got.kind == NEW, f"{article}-E was dropped as a copy of {got.original_url}"


def test_a_rewrite_at_zero_bits_is_kept(crawl, dev_data, dev_pages) -> None:  # type: ignore[no-untyped-def]
    # A heavy rewrite (about 40% of the words edited in spans) with the same fingerprint
    # as its original: only the text can tell, and it is not a copy.
    original = page(dev_data, dev_pages, "near-dup-dev-2/2f76fe0b4d-P")
    rewrite = page(dev_data, dev_pages, "near-dup-dev-2/2f76fe0b4d-E")
    assert hamming(original.simhash, rewrite.simhash) == 0
    assert crawl.decide([original])[0].kind == NEW
    assert crawl.decide([rewrite])[0].kind == NEW


def test_a_republication_under_another_sites_template_is_found(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages) -> None:
    original = page(dev_data, dev_pages, "near-dup-dev-2/5f06dd39ff-P")
    republished = page(dev_data, dev_pages, "near-dup-dev-2/5f06dd39ff-X")
    assert original.host != republished.host
    assert crawl.decide([original])[0].kind == NEW
    got = crawl.decide([republished])[0]
    assert (got.kind, got.original_id) == (NEAR, original.page_id)


def test_two_stubs_of_one_site_are_not_copies_of_each_other(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages) -> None:
    # Two stub pages of bhf.org.uk (a title and a sentence each in the full site
    # template): the extractor finds the same "More useful information" list on both.
    # A thin text is read with its page's title and description, which tell them apart.
    one = page(dev_data, dev_pages, "near-dup-dev-2/0d69f8ce45-F1")
    two = page(dev_data, dev_pages, "near-dup-dev-2/0d69f8ce45-F2")
    assert one.text.split("\n", 2)[2] == two.text.split("\n", 2)[2]  # the same list
    assert one.text != two.text and one.title != two.title
    assert [d.kind for d in crawl.decide([one]) + crawl.decide([two])] == [NEW, NEW]


def test_two_stubs_under_one_title_are_told_apart_by_their_descriptions(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages) -> None:
    # Two stub pages of coffeechronicler.com under one title: the extractor misses their
    # own sentences and finds the same author box on both, so the texts are equal. The
    # site describes each page with its own sentences.
    one = page(dev_data, dev_pages, "near-dup-dev-2/96e418bda2-F1", extractor=TRAFILATURA)
    two = page(dev_data, dev_pages, "near-dup-dev-2/96e418bda2-F2", extractor=TRAFILATURA)
    assert one.title == two.title and one.description != two.description
    assert one.text.split("\n", 2)[2] == two.text.split("\n", 2)[2]
    assert [d.kind for d in crawl.decide([one]) + crawl.decide([two])] == [NEW, NEW]
    # and a long stub of modernfarmer.com (30 words of its own in 750 of the site's
    # republishing guidelines) is not a copy of another under the same title
    one = page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-F1", extractor=TRAFILATURA)
    two = page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-F2", extractor=TRAFILATURA)
    assert one.title == two.title and len(two.text.split()) > 700
    assert [d.kind for d in crawl.decide([one]) + crawl.decide([two])] == [NEW, NEW]


def test_a_rewrite_lifted_by_its_sites_furniture_is_kept(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages) -> None:
    # A heavy rewrite on modernfarmer.com: half of each text is the site's furniture,
    # which lifts the containment of the rewritten half to the threshold; the site's
    # description of the page is its own, so it is another document.
    original = page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-B1")
    rewrite = page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-E")
    assert original.title == rewrite.title
    assert crawl.decide([original])[0].kind == NEW
    assert crawl.decide([rewrite])[0].kind == NEW


def test_an_article_is_not_a_copy_of_a_stub_of_its_site_fetched_before_it(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages) -> None:
    # modernfarmer.com: a stub page whose extracted text is the site's republishing
    # guidelines (854 tokens), all of which every article page of the site repeats: by
    # its text alone the article contains the stub. Its title names another document.
    stub = page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-F1", extractor=TRAFILATURA)
    story = page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-P", extractor=TRAFILATURA)
    assert crawl.decide([stub])[0].kind == NEW
    assert crawl.decide([story])[0].kind == NEW
    copy = crawl.decide([page(dev_data, dev_pages, "near-dup-dev-2/e2bd38f9d9-A1",
                              extractor=TRAFILATURA)])[0]
    assert (copy.kind, copy.original_id) == (NEAR, story.page_id)


def test_a_copy_of_a_copy_names_the_true_original(crawl, dev_data, dev_pages) -> None:  # type: ignore[no-untyped-def]
    # A dropped copy never becomes an original: later copies name the first page.
    original, first, second = (page(dev_data, dev_pages, f"4a44ab3e4c-{v}")
                               for v in ("P", "B1", "AB"))
    assert crawl.decide([original])[0].kind == NEW
    one = crawl.decide([first])[0]
    two = crawl.decide([second])[0]
    assert one.kind == two.kind == NEAR
    assert one.original_id == two.original_id == original.page_id
    assert two.original_id != first.page_id


def test_a_copy_is_recorded_against_the_page_it_declares_canonical(  # type: ignore[no-untyped-def]
        redis_client, dev_data, dev_pages, pages, namespace) -> None:
    # Two admitted versions of one RT story: the original, and the version with comments
    # and teasers, admitted here because its text was not at hand then (it is stored
    # with it). A syndicated copy that names the second as its source is recorded against
    # it, though the first is closer. Without its text the second has no text anchors, so
    # it is a candidate only within k: an index with k = 6 (DEDUP_MAX_DISTANCE).
    crawl = crawl_deduplicator(redis_client, pages, namespace, k=6)
    original = page(dev_data, dev_pages, "4a44ab3e4c-P")
    other = page(dev_data, dev_pages, "4a44ab3e4c-AB", text=False)
    assert [d.kind for d in crawl.decide([original])] == [NEW]
    assert [d.kind for d in crawl.decide([other])] == [NEW]
    pages.save_pages([page_record(other, text=page(dev_data, dev_pages,
                                                     "4a44ab3e4c-AB").text)])
    copy = page(dev_data, dev_pages, "4a44ab3e4c-B2", canonical=other.url)
    assert hamming(copy.simhash, original.simhash) < hamming(copy.simhash, other.simhash)
    got = crawl.decide([copy])[0]
    assert (got.kind, got.original_id, got.canonical_link) == (NEAR, other.page_id, "declared")
    plain = crawl.decide([page(dev_data, dev_pages, "4a44ab3e4c-B1")])[0]  # names nobody
    assert (plain.original_id, plain.canonical_link) == (original.page_id, None)


def test_a_copy_fetched_before_its_original_is_turned_round_when_it_names_it_canonical(  # type: ignore[no-untyped-def]
        crawl, dev_data, dev_pages) -> None:
    original_url = dev_pages["4a44ab3e4c-P"]["url"]
    copy = page(dev_data, dev_pages, "4a44ab3e4c-B1", canonical=original_url)
    assert crawl.decide([copy])[0].kind == NEW  # fetched first: nothing to copy yet
    got = crawl.decide([page(dev_data, dev_pages, "4a44ab3e4c-P")])[0]
    # the stored page names this one canonical: this one is the original, under its id
    assert (got.kind, got.page_id) == (NEW, copy.page_id)
    assert got.turn is not None and (got.turn.reason, got.turn.url) == ("canonical", copy.url)


# ---------------------------------------------------------------- template text per host

def test_a_line_on_every_page_of_a_site_is_learned_and_left_out(  # type: ignore[no-untyped-def]
        dev_data, dev_pages, redis_client, pages, namespace) -> None:
    from dedup.adapters.redis_templates import HostTemplates
    from dedup.simhash import fingerprint
    from dedup.templates import block_key

    templates = HostTemplates(redis_client, namespace, min_pages=3, refresh=0)
    crawl = crawl_deduplicator(redis_client, pages, namespace)
    crawl.templates = templates
    copyright_line = block_key("copyright Inexhibit 2019 - ISSN: 2283-5474")
    # three different admitted pages of inexhibit.com, each ending with that line
    for name in ("33fe2471fd-P", "94fbcc2677-P", "33fe2471fd-E"):
        got = crawl.decide([page(dev_data, dev_pages, name, extractor=TRAFILATURA)])[0]
        assert got.kind == NEW, name
    assert copyright_line in templates.known(["www.inexhibit.com"])["www.inexhibit.com"]
    later = page(dev_data, dev_pages, "94fbcc2677-E", extractor=TRAFILATURA)
    full_text = later.text
    assert crawl.decide([later])[0].kind == NEW
    assert later.template_lines == 1 and "Inexhibit 2019" not in (later.rest or "")
    assert later.text == full_text  # stored whole
    without = "\n".join(line for line in full_text.split("\n") if "ISSN: 2283-5474" not in line)
    assert later.simhash == fingerprint(without).simhash  # what the index holds
    # another site's pages are not touched by it
    assert not templates.known(["www.rt.com"])["www.rt.com"]
    RedisStore(redis_client, namespace).clear()


def test_a_page_of_nothing_but_template_text_is_skipped_and_never_an_original(  # type: ignore[no-untyped-def]
        dev_data, dev_pages, redis_client, pages, namespace) -> None:
    from dedup.adapters.redis_templates import HostTemplates
    from dedup.decide import TEMPLATE_ONLY
    from dedup.templates import lesson

    # nypost.com's "Trending Now" and "Popular Shopping" lists, as every page of the
    # site shows them (five admitted pages taught them)
    stub = page(dev_data, dev_pages, "a1fca19b88-F2", extractor=TRAFILATURA)
    sidebar = "\n".join((stub.text or "").split("\n")[2:])
    templates = HostTemplates(redis_client, namespace, refresh=0)
    templates.learn(lesson(stub.host, " ".join(f"own{n}x{i}" for i in range(40)) + "\n" + sidebar)
                    for n in range(templates.min_pages))  # pages with texts of their own
    crawl = crawl_deduplicator(redis_client, pages, namespace)
    crawl.templates = templates
    from dedup.simhash import fingerprint

    fp = fingerprint(sidebar)
    assert not fp.short  # long enough to be fingerprinted, were it not the site's own
    first, second = (Page(f"https://nypost.com/stub/{n}", "nypost.com", fp.checksum_hex,
                               fp.simhash, False, text=sidebar) for n in (1, 2))
    assert [d.kind for d in crawl.decide([first])] == [TEMPLATE_ONLY]
    assert [d.kind for d in crawl.decide([second])] == [TEMPLATE_ONLY]  # not its copy
    assert len(crawl.index) == 0  # nothing was indexed
    RedisStore(redis_client, namespace).clear()


# ---------------------------------------------------------------- Chinese: quotation or copy

@pytest.fixture
def registered(dev_data: Path, redis_client, pages, namespace: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Three zh-dev essays registered as originals (``simcrawl register``), and a
    crawl-like deduplicator with the pinyin window index."""
    from dedup.adapters.redis_windows import open_window_index
    from dedup.adapters.registered_originals import register

    essays = sorted((dev_data / "zh-dev").glob("*.txt"))[:3]
    config = DedupConfig(namespace=namespace)
    index = NearDuplicateIndex(RedisStore(redis_client, namespace), k=CONFIG.max_distance,
                               capacity=1000)
    windows, _ = open_window_index(config, redis_client, capacity=1000)
    assert windows is not None
    assert register(essays, "essays", pages, index, windows, redis_client, config).added == 3
    ids = {d["url"]: str(d["_id"]) for d in pages.pages.find({}, {"url": 1})}
    crawl = on_servers(index, redis_client, pages, namespace, Rules.from_config(CONFIG),
                       windows=windows)
    yield crawl, [(e.read_text(encoding="utf-8"), ids[e.resolve().as_uri()]) for e in essays]
    RedisStore(redis_client, namespace).clear()


def chinese_page(text: str, url: str) -> Page:
    from dedup.pinyin import PinyinFingerprinter
    from dedup.simhash import fingerprint

    fp = fingerprint(text)
    return Page(url, url.split("/")[2], fp.checksum_hex, fp.simhash, fp.short,
                     PinyinFingerprinter.from_config(CONFIG).fingerprint(text), text=text)


def test_a_quotation_of_a_registered_original_is_kept_with_an_excerpt_record(  # type: ignore[no-untyped-def]
        registered, dev_data) -> None:
    crawl, originals = registered
    quoted_text, quoted_id = originals[0]
    essay = max((dev_data / "zh-dev").glob("*.txt")).read_text(encoding="utf-8")
    at = len(quoted_text) // 2
    passage = quoted_text[at:at + 220]
    paragraphs = essay.split("\n")
    page = "\n".join([*paragraphs[:2], f"正如作者所写：“{passage}”", *paragraphs[2:]])
    got = crawl.decide([chinese_page(page, "https://blog.example/post/1")])[0]
    assert got.kind == NEW and not got.dropped  # kept: the page and its links
    assert got.excerpt is not None and got.excerpt.original_id == quoted_id
    assert got.excerpt.source == "essays" and got.excerpt.original_url.startswith("file://")
    assert 190 <= got.excerpt.characters <= 230  # the quoted passage, give or take its ends
    start, end = got.excerpt.span
    assert end - start >= got.excerpt.characters and got.excerpt.share < 0.5
    # the original's shingles are kept for its next quotations
    other = sorted((dev_data / "zh-dev").glob("*.txt"))[-2].read_text(encoding="utf-8")
    second = f"“{passage}”\n{other}"
    again = crawl.decide([chinese_page(second, "https://blog.example/post/2")])[0]
    assert again.kind == NEW and again.excerpt.original_id == quoted_id


def test_a_copy_with_a_tenth_of_its_words_replaced_is_dropped(registered) -> None:  # type: ignore[no-untyped-def]
    import random
    import re

    crawl, originals = registered
    text, original_id = originals[1]
    rng = random.Random(7)
    han = [m.start() for m in re.finditer(r"[\u4e00-\u9fff]{2}", text)]
    chars = list(text)
    for at in rng.sample(han, len(han) // 10):  # two-character words: about 10% of the text
        chars[at:at + 2] = rng.sample("山水风云花草树木日月星辰江河湖海", 2)
    copy = "".join(chars)
    got = crawl.decide([chinese_page(copy, "https://pirate.example/book/2")])[0]
    assert got.dropped and got.original_id == original_id and got.source == "essays"
    assert got.containment is not None and got.containment >= CONFIG.main_content
