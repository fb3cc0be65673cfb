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
