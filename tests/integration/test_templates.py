"""Template text per host in Redis: bounded memory and expiry."""

from __future__ import annotations

import pytest

from dedup.adapters.redis_templates import HostTemplates
from dedup.templates import block_keys, strip

pytestmark = pytest.mark.integration


def test_each_host_keeps_its_most_frequent_blocks_and_expires(redis_client, namespace) -> None:  # type: ignore[no-untyped-def]
    templates = HostTemplates(redis_client, namespace, min_pages=2, keep=10, ttl=3600,
                              refresh=0)
    footer = block_keys("All rights reserved.\nSubscribe to our newsletter")
    for n in range(30):  # 30 pages, each with 3 lines of its own and the site's footer
        own = block_keys(f"story {n} line one\nstory {n} line two\nstory {n} line three")
        templates.learn([("a.example", own + footer)])
    key = templates.key("a.example")
    assert redis_client.zcard(key) <= 2 * 10  # trimmed whenever it outgrew 2 * keep
    assert 0 < redis_client.ttl(key) <= 3600
    assert templates.known(["a.example"])["a.example"] == {k for k in footer if k}
    assert templates.known(["b.example"])["b.example"] == frozenset()
    text = "A story about the harbour.\nAll rights reserved.\nSubscribe to our newsletter"
    assert strip(text, block_keys(text), templates.known(["a.example"])["a.example"]) == \
        ("A story about the harbour.", 2)
    redis_client.delete(key)


def test_a_batch_of_pages_counts_as_its_pages_one_by_one(redis_client, namespace) -> None:  # type: ignore[no-untyped-def]
    footer = block_keys("All rights reserved.\nSubscribe to our newsletter")
    pages = [(host, block_keys(f"story {n} of {host}\nrepeated line\nrepeated line") + footer)
             for n in range(6) for host in ("a.example", "b.example")] + [("c.example", [None])]
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
    footer = block_keys("All rights reserved.")
    note = block_keys("At 20% replaced, too few windows survive to find the original.")
    for n in range(40):
        own = block_keys(f"listing {n} of the site")
        templates.learn([("a.example", own + footer + (note if n % 8 == 0 else []))])
    known = templates.known(["a.example"])["a.example"]
    assert set(footer) <= known
    assert not set(note) & known
    redis_client.delete(templates.key("a.example"))
