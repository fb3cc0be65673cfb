"""Template text per host in Redis: bounded memory and expiry."""

from __future__ import annotations

import pytest

from dedup.adapters.redis_templates import HostTemplates
from dedup.templates import MemoryTemplates, block_keys, lesson, strip

pytestmark = pytest.mark.integration


def test_each_host_keeps_its_most_frequent_blocks_and_expires(redis_client, namespace) -> None:  # type: ignore[no-untyped-def]
    templates = HostTemplates(redis_client, namespace, min_pages=2, keep=10, ttl=3600,
                              refresh=0)
    footer = "All rights reserved.\nSubscribe to our newsletter"
    for n in range(30):  # 30 pages, each with 3 lines of its own and the site's footer
        own = f"story {n} line one\nstory {n} line two\nstory {n} line three"
        templates.learn([lesson("a.example", own + "\n" + footer)])
    key = templates.key("a.example")
    assert redis_client.zcard(key) <= 2 * 10  # trimmed whenever it outgrew 2 * keep
    assert 0 < redis_client.ttl(key) <= 3600
    assert templates.known(["a.example"])["a.example"] == {k for k in block_keys(footer) if k}
    assert templates.known(["b.example"])["b.example"] == frozenset()
    text = "A story about the harbour.\nAll rights reserved.\nSubscribe to our newsletter"
    assert strip(text, block_keys(text), templates.known(["a.example"])["a.example"]) == \
        ("A story about the harbour.", 2)
    redis_client.delete(key)


def test_a_batch_of_pages_counts_as_its_pages_one_by_one(redis_client, namespace) -> None:  # type: ignore[no-untyped-def]
    footer = "All rights reserved.\nSubscribe to our newsletter"
    pages = [lesson(host, f"story {n} of {host}, told in a line of its own, long enough to "
                          f"be a text\nrepeated line\nrepeated line\n{footer}")
             for n in range(6) for host in ("a.example", "b.example")] + [
        ("c.example", [None], [0])]
    together = HostTemplates(redis_client, namespace + "-together", min_pages=2, keep=100,
                             ttl=3600, refresh=0)
    apart = HostTemplates(redis_client, namespace + "-apart", min_pages=2, keep=100,
                          ttl=3600, refresh=0)
    together.learn(pages)  # one batch
    for page in pages:
        apart.learn([page])
    for host in ("a.example", "b.example"):
        got = redis_client.zrange(together.key(host), 0, -1, withscores=True)
        assert got == redis_client.zrange(apart.key(host), 0, -1, withscores=True)
        assert max(score for _, score in got) == 6  # the footer, once a page
        redis_client.delete(together.key(host), apart.key(host))
    assert not redis_client.exists(together.key("c.example"))


def test_a_line_on_a_few_pages_of_a_large_site_is_not_its_template(  # type: ignore[no-untyped-def]
        redis_client, namespace) -> None:
    # a note's sentence shows on its tag, category, author and index pages: five of a
    # site's forty pages; the footer is on all of them
    templates = HostTemplates(redis_client, namespace, min_pages=5, refresh=0)
    footer = "All rights reserved."
    note = "At 20% replaced, too few windows survive to find the original."
    for n in range(40):
        own = f"listing {n} of the site, with the summaries of its posts"
        templates.learn([lesson("a.example", "\n".join(
            [own, footer] + ([note] if n % 8 == 0 else [])))])
    known = templates.known(["a.example"])["a.example"]
    assert set(block_keys(footer)) <= known
    assert not set(block_keys(note)) & known
    redis_client.delete(templates.key("a.example"))


def test_copies_of_one_page_teach_as_in_one_process(redis_client, namespace) -> None:  # type: ignore[no-untyped-def]
    # A page, four copies the decision missed (a line dropped, a price edited) and pages
    # with texts of their own, learned in one batch: Redis counts what the process's own
    # store counts, and the copied page's lines are not its host's template.
    page = "Glossier You Duo 88 114\nMini Cloud Paint Trio 26\nHand Cream 20\nBalm Dotcom 16"
    footer = "Limited Edition\nSearch products"
    texts = [page, page.split("\n", 1)[1], page.replace("20", "200"), page, page] + [
        f"product {n} " + " ".join(f"word{n}x{i}" for i in range(30)) for n in range(5)]
    lessons = [lesson("shop.example", f"{text}\n{footer}") for text in texts]
    redis_store = HostTemplates(redis_client, namespace, min_pages=5, refresh=0)
    memory = MemoryTemplates(min_pages=5)
    redis_store.learn(lessons)
    memory.learn(lessons)
    got = redis_client.zrange(redis_store.key("shop.example"), 0, -1, withscores=True)
    assert {m.decode(): n for m, n in got} == {
        **{str(k): n for k, n in memory.counts["shop.example"].items()}, "pages": 6.0}
    assert redis_store.known(["shop.example"]) == memory.known(["shop.example"]) == {
        "shop.example": frozenset(block_keys(footer))}
    redis_client.delete(redis_store.key("shop.example"))


def test_a_redis_cluster_counts_what_one_node_counts(redis_cluster, redis_client,  # type: ignore[no-untyped-def]
                                                     namespace) -> None:
    # Each host's pages are taught by one script on its key, which a cluster routes to
    # the key's node (a pipeline of a cluster loads no script: it is sent whole).
    from dedup.adapters.servers.services import connect_redis

    cluster = connect_redis(redis_cluster)
    footer = "All rights reserved.\nSubscribe to our newsletter"
    lessons = [lesson(f"{host}.example", f"story {n} of {host}, told in a line of its own, "
                                         f"long enough to be a text\n{footer}")
               for n in range(6) for host in ("a", "b", "c")]
    on_cluster = HostTemplates(cluster, namespace, min_pages=2, refresh=0)
    on_node = HostTemplates(redis_client, namespace, min_pages=2, refresh=0)
    on_cluster.learn(lessons)
    on_node.learn(lessons)
    hosts = ["a.example", "b.example", "c.example"]
    assert on_cluster.known(hosts) == on_node.known(hosts) == {
        h: frozenset(block_keys(footer)) for h in hosts}
    cluster.delete(*(on_cluster.key(h) for h in hosts))
    redis_client.delete(*(on_node.key(h) for h in hosts))
