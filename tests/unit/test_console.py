"""The console's pure parts: the side-by-side difference and the search filters."""

from __future__ import annotations

import datetime as dt

from crawler.console.diff import side_by_side, tokens
from crawler.console.browse import crawl_state
from crawler.console.app import is_loopback
from dedup.store.reads import Where, search


def test_tokens_give_the_text_back_and_cut_chinese_per_character() -> None:
    text = "Hello, world!  第一章 开始了\nok"
    assert "".join(tokens(text)) == text
    assert tokens("第一章") == ["第", "一", "章"]


def test_the_differing_passages_are_marked_on_their_side() -> None:
    shown = side_by_side("The council approved the plan on Monday.",
                         "The council rejected the plan on Monday. Share this story!")
    assert "<mark class='gone'>approved</mark>" in shown.original
    assert "<mark class='added'>rejected</mark>" in shown.copy
    assert "Share this story" in shown.copy.split("<mark class='added'>")[-1]
    assert shown.marked == 3 and 0.5 < shown.shared < 0.8


def test_a_page_cannot_inject_markup_into_the_console() -> None:
    shown = side_by_side("<script>alert(1)</script> same", "<b>bold</b> same")
    assert "<script" not in shown.original and "&lt;" in shown.original
    assert "<b>" not in shown.copy and "&lt;" in shown.copy


def test_identical_texts_share_everything() -> None:
    shown = side_by_side("一样的文字 same text", "一样的文字 same text")
    assert shown.marked == 0 and shown.shared == 1.0


def test_search_reads_hosts_and_url_prefixes() -> None:
    by_url, said = search("https://news.example.com/2026/")
    assert by_url == Where(url_prefixes=("https://news.example.com/2026/",))
    assert "starting with" in said
    schemes, _ = search("news.example.com/2026/")
    assert schemes.url_prefixes == ("http://news.example.com/2026/",
                                    "https://news.example.com/2026/")
    host, said = search(" News.Example.com ")
    assert host == Where(host="news.example.com", any_port=True)
    assert said == "host news.example.com"
    # a host with its port is that port's alone
    assert search("127.0.0.1:8080")[0] == Where(host="127.0.0.1:8080")
    # a URL that is a whole host is that host's search (an index range, not a URL scan)
    assert search("https://news.example.com/") == search("news.example.com")


def test_only_loopback_addresses_count_as_private() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    assert not is_loopback("example.com")


def test_a_running_crawl_that_stopped_updating_is_shown_as_not_reporting() -> None:
    import datetime as dt

    now = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.timezone.utc)
    fresh = {"state": "running", "updated_at": now - dt.timedelta(seconds=4)}
    stale = {"state": "running", "updated_at": now - dt.timedelta(minutes=5)}
    assert crawl_state(fresh, now) == "running"
    assert crawl_state(stale, now) == "not reporting"
    assert crawl_state({"state": "finished"}, now) == "finished"


def test_calibration_judges_pairs_by_the_crawls_own_text_check() -> None:
    # it counted a pair a copy when 60% of the shorter text's four-word shingles were in
    # the other; the crawl drops a page when 0.8 of its three-word shingles are in the
    # original's and half of the original's are its
    from decision_cases import article

    from crawler.console.calibration import judge_texts

    story = article(1, 480)
    assert judge_texts(story + "\nShare this story on social media today", story) >= 0.8
    assert judge_texts(story, article(2, 480)) is None
    # a page that holds the story and three times more of its own is not its copy (one
    # way), though the shorter text is all in it; two stored pages are asked both ways
    listing = story + "\n" + article(3, 1500)
    assert judge_texts(listing, story) is None and judge_texts(story, listing) is None
    assert judge_texts(listing, story, both_ways=True) is None
    # 70% of a story is in its copy: a copy by the old 60% rule, not by the crawl's 0.8
    kept = "\n".join(story.split("\n")[:28]) + "\n" + article(4, 144)
    assert judge_texts(kept, story) is None
    chinese = "".join(chr(0x4E00 + i * 7919 % 20000) for i in range(400))  # Han characters
    assert judge_texts("新闻：" + chinese + "（完）", chinese) is not None


def test_the_wilson_interval_brackets_the_share_and_narrows_with_more_pairs() -> None:
    from crawler.console.calibration import wilson

    low, high = wilson(9, 10)
    assert low < 0.9 < high
    low2, high2 = wilson(90, 100)
    assert low < low2 < 0.9 < high2 < high
    assert wilson(0, 0) == (0.0, 1.0)


def test_the_reports_time_axes_span_the_crawl_not_years(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a one-minute crawl and one day of copies of a source: the axes cover minutes and
    # days around them (matplotlib's default for a single point spans years)
    import matplotlib.figure

    from crawler.console.report_file import Findings, figures

    spans: dict[str, float] = {}
    save = matplotlib.figure.Figure.savefig

    def capture(fig, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        lo, hi = fig.axes[0].get_xlim()  # in days
        spans[str(path).rsplit("/", 1)[-1].split(".")[0]] = hi - lo
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    found = Findings(admitted_per_minute={"2026-11-25T10:00": 5},
                     copies_per_source_day={"novels": {"2026-11-25": 3}})
    figures(found, 6, tmp_path)
    assert spans["minutes"] <= 3 / (24 * 60)  # three minutes at most
    assert spans["sources"] <= 3  # three days at most


def test_the_copies_per_original_chart_has_one_bar_and_one_label_per_original(
        tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # three registered chapters in one long folder: cut at the end, their labels were one,
    # and matplotlib drew their three bars as one
    import matplotlib.figure

    from crawler.console.report_file import Findings, figures, unique_labels

    folder = "file:///home/someone/Documents/novels/the-long-road-home/"
    urls = [f"{folder}chapter-{n}.txt" for n in (1, 2, 3)]
    labels = unique_labels(urls)
    assert len(set(labels)) == 3 and all(len(x) <= 48 for x in labels)
    assert all(x.endswith(f"chapter-{n}.txt") for x, n in zip(labels, (1, 2, 3), strict=True))
    assert len(set(unique_labels(["a" * 60, "a" * 60]))) == 2  # alike even whole

    drawn: dict[str, tuple[int, list[str]]] = {}
    save = matplotlib.figure.Figure.savefig

    def capture(fig, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        ax = fig.axes[0]
        drawn[str(path).rsplit("/", 1)[-1].split(".")[0]] = (
            len(ax.patches), [t.get_text() for t in ax.get_yticklabels()])
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    found = Findings(copies_per_original=[{"original_url": u, "copies": 4 - n}
                                          for n, u in enumerate(urls)])
    figures(found, 3, tmp_path)
    bars, ticks = drawn["originals"]
    assert bars == 3 and len(set(ticks)) == 3


def test_a_short_crawls_chart_is_drawn_in_seconds_not_one_dot_a_minute(
        tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # a 50-second crawl: per minute it was one or two dots; by the second, a line
    import matplotlib.figure

    from crawler.console.report_file import Findings, bin_seconds, figures

    assert bin_seconds(dt.timedelta(seconds=50)) == 1
    assert bin_seconds(dt.timedelta(minutes=10)) == 10
    assert bin_seconds(dt.timedelta(hours=3)) == 60
    drawn: dict[str, tuple[int, str]] = {}
    save = matplotlib.figure.Figure.savefig

    def capture(fig, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        ax = fig.axes[0]
        drawn[str(path).rsplit("/", 1)[-1].split(".")[0]] = (
            max(len(line.get_xdata()) for line in ax.get_lines()), ax.get_ylabel())
        return save(fig, path, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", capture)
    start = dt.datetime(2026, 11, 27, 10, 0, 30)
    seconds = {(start + dt.timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%S"): 3
               for s in range(50)}
    found = Findings(admitted_per_minute={"2026-11-27T10:00": 90, "2026-11-27T10:01": 60},
                     admitted_per_second=seconds)
    figures(found, 3, tmp_path)
    points, label = drawn["minutes"]
    assert points == 50 and label == "pages per second"


def test_the_reports_captions_say_what_the_figures_show(tmp_path):
    """The distances' caption said copies at distance <= k are dropped, while copies over k
    are dropped too (by their texts' anchors); the host chart said "the 1 hosts"; the log
    axis read "3x10^0"."""
    from crawler.console.report_file import Findings, figures

    found = Findings(distances={1: 3, 2: 1, 5: 7}, copies_per_host={"a.example": 4},
                     pages_per_host={"a.example": 10})
    drawn = {title: caption for title, _, caption in figures(found, 3, tmp_path)}
    said = drawn["Hamming distances of near matches"]
    assert said.startswith("11 near copies by the distance of their fingerprints; those "
                           "over k = 3 were found by their texts' anchors") and "≤ k" not in said
    assert drawn["Duplicate share per host"] == "the host with copies"
