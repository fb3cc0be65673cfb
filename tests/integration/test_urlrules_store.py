"""URL rules in Redis (dedup/adapters/redis_url_rules.py), on a real redis-server and on a
real three-node Redis Cluster: learning from decided pages, prediction of links before
they are requested, links held for an undecided claimant, exploration, and a wrong rule
dropped with every request it kept sent again."""

from __future__ import annotations

import pytest

from dedup.adapters.redis_url_rules import RedisUrlRules
from dedup.adapters.servers.services import connect_redis
from dedup.url_rules import Rule, explores
from store_cleanup import drop_test_database

H = "news.test"


def story(n: int) -> str:
    return f"http://{H}/story-{n}.html"


def taught(rules: RedisUrlRules, pairs: int = 3) -> None:
    """Stored stories 0-9, and ``pairs`` copies under ``?ref=`` decided as their copies."""
    rules.decided([(story(n), f"id{n}") for n in range(10)], [])
    rules.decided([], [(f"{story(n)}?ref=home", story(n), f"id{n}") for n in range(pairs)])


@pytest.fixture
def rules(redis_client, namespace: str):  # type: ignore[no-untyped-def]
    store = RedisUrlRules(redis_client, namespace, explore=0.0)
    yield store
    store.clear()


def test_links_are_predicted_once_a_rule_holds(rules: RedisUrlRules) -> None:
    taught(rules, pairs=2)
    assert rules.screen([(f"{story(5)}?ref=rss", 1)]) == [None]  # two pairs: not yet
    assert rules.unruled(f"{story(5)}?ref=rss")  # a request is sent without asking now
    rules.decided([], [(f"{story(2)}?ref=feed", story(2), "id2")])
    assert not rules.unruled(f"{story(5)}?ref=rss")  # what it learned, it knows at once
    held = rules.screen([(f"{story(5)}?ref=rss", 1), (story(6), 1),
                         (f"http://{H}/new.html?ref=rss", 1), (f"http://{H}/x?page=2", 1)])
    assert held[1:] == [None, None, None]  # stored, not stored, no rule for it
    assert held[0] is not None and held[0].decided
    assert (held[0].claimant, held[0].original_url, held[0].original_id) == (
        story(5), story(5), "id5")
    assert held[0].rules == [Rule(H, "drop_param", "ref")]
    row = next(r for r in rules.rows() if r.rule.arg == "ref")
    assert (row.support, row.against, row.saved, row.holds) == (3, 0, 1, True)


def test_a_link_waits_for_its_claimant_and_is_decided_with_it(rules: RedisUrlRules) -> None:
    """Two links of one new page: the first is sent (it claims the key), the second is
    held; when the first is stored the second is decided as its copy; a link held for a
    claimant never decided is released to be sent."""
    taught(rules)
    new = f"http://{H}/fresh.html"
    first, second = rules.screen([(new, 2), (f"{new}?ref=nav", 2)])
    assert first is None and second is not None and not second.decided
    assert rules.screen([(f"{new}?ref=side", 2)])[0].claimant == new  # type: ignore[union-attr]
    done = rules.decided([(new, "idF")], [])
    assert sorted(h.url for h in done) == [f"{new}?ref=nav", f"{new}?ref=side"]
    assert {(h.original_url, h.original_id, h.depth) for h in done} == {(new, "idF", 2)}
    gone = f"http://{H}/gone.html"
    rules.screen([(gone, 1), (f"{gone}?ref=nav", 1)])
    assert rules.release() == [(f"{gone}?ref=nav", 1, "")]
    assert rules.release() == []


def test_a_link_sent_again_keeps_what_its_request_carried(rules: RedisUrlRules) -> None:
    """What a request carries (its callback, its data: the crawl's serialized request) comes
    back with it when it is sent again: held and released, or kept by a rule dropped."""
    taught(rules)
    gone = f"http://{H}/gone.html"
    rules.screen([(gone, 1, ""), (f"{gone}?ref=nav", 1, '{"callback":"parse_item"}')])
    assert rules.release() == [(f"{gone}?ref=nav", 1, '{"callback":"parse_item"}')]
    kept = rules.screen([(f"{story(5)}?ref=rss", 3, '{"cb_kwargs":{"a":1}}')])[0]
    assert kept is not None and kept.decided
    rules.decided([(f"{story(8)}?ref=print", "id8p")], [])  # the rule is dropped
    assert rules.take_resend() == [(f"{story(5)}?ref=rss", 3, '{"cb_kwargs":{"a":1}}')]


def test_a_claimant_stored_as_a_copy_names_its_original(rules: RedisUrlRules) -> None:
    taught(rules)
    syndicated = f"http://{H}/syndicated.html"
    rules.screen([(syndicated, 1), (f"{syndicated}?ref=a", 1)])
    done = rules.decided([], [(syndicated, story(7), "id7")])
    assert [(h.url, h.original_url, h.claimant) for h in done] == [
        (f"{syndicated}?ref=a", story(7), syndicated)]


def test_a_parameter_that_changes_the_page_never_holds(rules: RedisUrlRules) -> None:
    """Copies that seem to say ``id`` does not matter make no rule while two stored pages
    differ in it only; a rule that held is dropped by the page that contradicts it."""
    rules.decided([(f"http://{H}/item?id={n}", f"i{n}") for n in range(3)], [])
    rules.decided([], [(f"http://{H}/item?id={n}&x=1", f"http://{H}/item?x=1", "ix")
                       for n in range(3, 7)])
    assert rules.screen([(f"http://{H}/item?id=9&x=1", 1)]) == [None]
    assert not next(r for r in rules.rows() if r.rule.arg == "id").holds


def test_a_wrong_rule_is_dropped_and_its_urls_sent_again(rules: RedisUrlRules) -> None:
    """``?ref=`` held, and kept two links from being requested; then a page under ``ref``
    is stored as an original of its own (the site's ``ref`` did change this page): the rule
    is dropped at once, both links are to be sent again, and no link is predicted by it."""
    taught(rules)
    kept = [(f"{story(n)}?ref=rss", 3) for n in (5, 6)]
    assert all(h is not None and h.decided for h in rules.screen(kept))
    rules.decided([(f"{story(8)}?ref=print", "id8p")], [])  # stored: two originals, one key
    assert sorted(rules.take_resend()) == [(u, d, "") for u, d in kept]
    assert rules.take_resend() == []
    assert rules.screen([(f"{story(9)}?ref=rss", 1)]) == [None]
    row = next(r for r in rules.rows() if r.rule.arg == "ref")
    assert row.against >= 1 and not row.holds


def test_an_explored_prediction_checks_its_rule(redis_client, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """Every prediction is explored at a share of 1: none is recorded; a page that is the
    claimant's copy confirms the rule, one stored as an original drops it."""
    rules = RedisUrlRules(redis_client, namespace, explore=1.0)
    try:
        taught(rules)
        held = rules.screen([(f"{story(5)}?ref=rss", 1)])[0]
        assert held is not None and held.explore
        assert rules.check(held.url, held.claimant, held.rules, (story(5), None)) is True
        assert rules.check(held.url, held.claimant, held.rules, (None, "id5")) is True
        assert rules.check(held.url, held.claimant, held.rules, None) is False
        assert not next(r for r in rules.rows() if r.rule.arg == "ref").holds
    finally:
        rules.clear()
    assert sum(explores(f"{story(n)}?ref={n}") for n in range(4000)) in range(140, 260)


def test_processes_share_the_rules(redis_client, namespace: str) -> None:  # type: ignore[no-untyped-def]
    """What one process learned, another predicts with (the state is in Redis only)."""
    one = RedisUrlRules(redis_client, namespace, explore=0.0)
    two = RedisUrlRules(redis_client, namespace, explore=0.0)
    try:
        taught(one)
        held = two.screen([(f"{story(4)}?ref=x", 1)])[0]
        assert held is not None and held.original_url == story(4)
    finally:
        one.clear()


def test_a_mirror_hosts_links_are_held_recorded_and_sent_again(rules: RedisUrlRules) -> None:
    """A mirror's link claims the key on the host it mirrors, so the host's own link of
    the page waits for it (a claimant of another host: held, released when it is never
    decided); a link recorded through the mirror's rule is sent again when a page
    contradicts that rule."""
    taught(rules)
    mirror = f"http://www.{H}"
    rules.decided([], [(f"{mirror}/story-{n}.html", story(n), f"id{n}") for n in range(3)])
    fresh = "/fresh.html"
    first, second = rules.screen([(mirror + fresh, 1), (f"http://{H}{fresh}", 1)])
    assert first is None and second is not None and second.claimant == mirror + fresh
    assert not second.decided and rules.waiting() == 1
    assert rules.release() == [(f"http://{H}{fresh}", 1, "")] and rules.waiting() == 0
    kept = rules.screen([(f"{mirror}/story-6.html", 2)])[0]
    assert kept is not None and kept.original_url == story(6)
    assert Rule(f"www.{H}", "host_alias", H) in kept.rules
    rules.decided([(f"{mirror}/story-7.html", "id7w")], [])  # the mirror has its own page
    assert (f"{mirror}/story-6.html", 2, "") in rules.take_resend()


def test_a_mirror_rule_is_judged_by_the_host_it_names(rules: RedisUrlRules) -> None:
    """The mirror stored a page as an original of its own while the host it names had
    none under that path; when the host stores one there too, the mirror's rule holds no
    more (two originals under one key), judged from the named host's side."""
    taught(rules)
    mirror = f"http://www.{H}"
    rules.decided([], [(f"{mirror}/story-{n}.html", story(n), f"id{n}") for n in range(3)])
    rules.decided([(f"{mirror}/about.html", "mirror-about")], [])
    alias = Rule(f"www.{H}", "host_alias", H)
    assert next(r for r in rules.rows() if r.rule == alias).holds
    rules.decided([(f"http://{H}/about.html", "about")], [])
    assert not next(r for r in rules.rows() if r.rule == alias).holds
    assert rules.screen([(f"{mirror}/story-5.html", 1)]) == [None]


def test_a_cluster_keeps_a_hosts_rules_on_one_node(redis_cluster: str) -> None:
    client = connect_redis(redis_cluster)
    rules = RedisUrlRules(client, "urlrules-cluster", explore=0.0)
    try:
        taught(rules)
        mirror = "http://www.news.test/story-3.html"
        rules.decided([], [(mirror.replace("-3", f"-{n}"), story(n), f"id{n}") for n in range(3)])
        got = rules.screen([(f"{story(6)}?ref=z", 1), (mirror.replace("-3", "-8"), 1)])
        assert [h.original_url if h else None for h in got] == [story(6), story(8)]
        slots = {client.keyslot(k) for k in client.scan_iter(match="urlrules-cluster:ur:{news.test}*")}
        assert len(slots) == 1
    finally:
        rules.clear()


def test_the_report_names_the_rules_and_the_requests_they_saved(mongo_client, namespace: str,  # type: ignore[no-untyped-def]
                                                                 tmp_path) -> None:
    from crawler.console.report_file import write_report
    from dedup.adapters.mongo import PageStore
    from dedup.adapters.mongo.reads import MongoReads
    from dedup.store.records import MatchRecord

    store = PageStore(mongo_client, namespace.replace("-", "_"))
    try:
        store.save_matches([MatchRecord(url=f"{story(n)}?ref=rss", host=H,
                                        original_id="6b0b12d8c1bb49a0e3dc801b",
                                        original_url=story(n), original_host=H, distance=None,
                                        kind="url_rule", rules=[f"{H}: drop_param ref"],
                                        claimant=story(n)).row(crawl_id=None) for n in range(4)])
        found = write_report(MongoReads(store.db), tmp_path, k=3)
        html = (tmp_path / "report.html").read_text()
    finally:
        drop_test_database(mongo_client, store.db.name)
    assert found.url_rules == {f"{H}: drop_param ref": 4}
    assert "Requests not sent (URL rules)" in html and "4 copies" in html
