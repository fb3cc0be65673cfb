"""URL rules learned from match records (dedup/url_rules.py): what a pair of URLs teaches,
when a rule holds, and which requested URLs it predicts to be stored pages."""

from __future__ import annotations

from dedup.url_rules import Rule, UrlRules, apply, explain

H = "news.test"


def test_a_pair_is_explained_by_the_transformations_its_urls_differ_by() -> None:
    def kinds(copy: str, original: str) -> list[tuple[str, str]] | None:
        rules = explain(copy, original)
        return None if rules is None else [(r.kind, r.arg) for r in rules]

    base = f"http://{H}/2026/harbour.html"
    assert kinds(base + "?utm_source=x&utm_medium=y", base) == [
        ("drop_param", "utm_medium"), ("drop_param", "utm_source")]
    assert kinds(f"http://{H}/list?sort=date&cat=3", f"http://{H}/list?sort=title&cat=3") \
        == [("any_value", "sort")]
    assert kinds(f"http://{H}/a;jsessionid=F00/b", f"http://{H}/a/b") == [
        ("path_param", "jsessionid")]
    assert kinds(f"http://{H}/amp/2026/harbour.html", base) == [("drop_prefix", "amp")]
    assert kinds(f"http://{H}/docs/index.html", f"http://{H}/docs/") == [
        ("drop_suffix", "index.html")]
    assert kinds(f"http://{H}/docs", f"http://{H}/docs/") == [("slash", "")]
    assert kinds(f"http://{H}/2026/Harbour.html", base) == [("lower_case", "")]
    assert kinds(f"http://www.{H}/2026/harbour.html", base) == [("host_alias", H)]
    assert explain(base, base) is None
    assert explain(f"http://{H}/2026/other.html", base) is None  # another page
    assert explain(f"http://{H}/list?cat=3", f"http://{H}/list?cat=3&lang=en") is None
    assert [str(r) for r in explain(base + "?ref=rss", base) or []] == [
        f"{H}: drop_param ref"]


def test_a_rule_holds_with_support_and_predicts_the_stored_page() -> None:
    """Three copies under ?ref= teach the rule; a fourth URL with it is predicted to be the
    stored page it names, before it is fetched; a stored URL or one no rule changes is
    not predicted."""
    rules = UrlRules()
    pages = [f"http://{H}/story-{n}.html" for n in range(5)]
    for url in pages:
        rules.add_original(url)
    for n in range(2):
        rules.learn(f"{pages[n]}?ref=home", pages[n])
    assert rules.holding(H) == [] and rules.predict(f"{pages[3]}?ref=rss") is None
    rules.learn(f"{pages[2]}?ref=feed", pages[2])
    assert rules.holding(H) == [Rule(H, "drop_param", "ref")]
    got = rules.predict(f"{pages[3]}?ref=rss")
    assert got is not None and got.original == pages[3]
    assert [str(r) for r in got.rules] == [f"{H}: drop_param ref"]
    assert rules.predict(pages[4]) is None  # stored: a revisit
    assert rules.predict(f"http://{H}/story-9.html?ref=rss") is None  # no such page
    assert rules.predict(f"http://{H}/story-3.html?page=2") is None  # no rule for it


def test_a_part_that_changes_the_page_never_holds() -> None:
    """Pairs that seem to say ``id`` does not matter (pages that happened to be copies)
    do not make a rule while two stored pages differ only in it; nor does a rule hold
    that would take one stored page for another."""
    rules = UrlRules()
    for n in range(3):
        rules.add_original(f"http://{H}/item?id={n}")
    for n in range(3, 7):
        rules.learn(f"http://{H}/item?id={n}&x=1", f"http://{H}/item?x=1")
    assert Rule(H, "drop_param", "id") not in rules.holding(H)
    assert rules.against[Rule(H, "drop_param", "id")] > 0
    assert rules.predict(f"http://{H}/item?id=8&x=1") is None
    # evidence that comes after the rule held takes it back
    other = UrlRules()
    for n in range(3):
        other.learn(f"http://{H}/p/{n}?session=a", f"http://{H}/p/{n}")
    assert other.holding(H) == [Rule(H, "drop_param", "session")]
    other.add_original(f"http://{H}/cart")
    other.add_original(f"http://{H}/cart?session=b")  # a page of its own: it changes it
    assert other.holding(H) == []


def test_a_mirror_host_and_a_print_view_are_predicted() -> None:
    rules = UrlRules()
    for n in range(6):
        rules.add_original(f"http://{H}/a/{n}.html")
    for n in range(3):
        rules.learn(f"http://www.{H}/a/{n}.html", f"http://{H}/a/{n}.html")
        rules.learn(f"http://{H}/print/a/{n}.html", f"http://{H}/a/{n}.html")
    got = rules.predict(f"http://www.{H}/a/4.html")
    assert got is not None and got.original == f"http://{H}/a/4.html"
    got = rules.predict(f"http://{H}/print/a/5.html")
    assert got is not None and got.original == f"http://{H}/a/5.html"
    # a mirror host with a page of its own under a path its host has too: not a mirror
    rules.add_original(f"http://www.{H}/a/0.html")
    assert rules.predict(f"http://www.{H}/a/4.html") is None
    assert apply([Rule(H, "any_value", "sort")], f"http://{H}/l?sort=a") \
        == apply([Rule(H, "any_value", "sort")], f"http://{H}/l?sort=b")


def test_a_key_names_the_rules_that_took_the_url_there() -> None:
    """The rules a match record of a link not requested names: those that changed its URL,
    not every rule of its host."""
    host = "news.test"
    rules = [Rule(host, "drop_prefix", "print"), Rule(host, "drop_suffix", "index.html"),
             Rule(host, "slash"), Rule(host, "drop_param", "ref"), Rule(host, "any_value", "sort"),
             Rule(host, "path_param", "jsessionid")]
    fired: list[Rule] = []
    key = apply(rules, "http://news.test/print/a/b;jsessionid=9/index.html?ref=x&id=3", fired)
    assert key == apply(rules, "http://news.test/a/b?id=3")
    assert set(fired) == {rules[0], rules[1], rules[2], rules[3], rules[5]}
    fired.clear()
    assert apply(rules, "http://news.test/a/b?id=3", fired) == "http://news.test/a/b?id=3"
    assert fired == []
