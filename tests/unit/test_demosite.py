"""The demo site keeps its contract: copies within k of their original, originals apart,
every request logged, GBK pages decodable."""

from __future__ import annotations

import itertools
import urllib.error
import urllib.request

import pytest

import dedup
from crawler.examples.demosite import DemoSite, build


@pytest.fixture(scope="module")
def fingerprints() -> dict[str, dedup.Fingerprint]:
    content = build()
    out = {}
    for host, pages in content.pages.items():
        for path, page in pages.items():
            if page.status == 200 and page.content_type.startswith("text/html") \
                    and path != "/big.html" and not page.body.startswith(b"\x89PNG"):
                text = dedup.extract_text(page.body.replace(b"{", b"").replace(b"}", b"")).text
                out[host + path] = dedup.fingerprint(text)
    return out


def test_every_copy_is_within_k_of_its_original(fingerprints) -> None:  # type: ignore[no-untyped-def]
    for first, *copies in build().expected.clusters:
        for copy in copies:
            a, b = fingerprints[first], fingerprints[copy]
            assert a.checksum == b.checksum or (
                not a.short and dedup.hamming(a.simhash, b.simhash) <= 3), (first, copy)


def test_originals_are_far_apart(fingerprints) -> None:  # type: ignore[no-untyped-def]
    exp = build().expected
    firsts = [c[0] for c in exp.clusters] + exp.unique
    for a, b in itertools.combinations(firsts, 2):
        fa, fb = fingerprints[a], fingerprints[b]
        assert fa.checksum != fb.checksum, (a, b)
        if not (fa.short or fb.short):
            assert dedup.hamming(fa.simhash, fb.simhash) > 5, (a, b)


def test_the_server_logs_requests_and_serves_gbk(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with DemoSite(log_path=tmp_path / "requests.jsonl") as site:
        page = urllib.request.urlopen(site.url("zh") + "/zh/0.html", timeout=10)
        assert page.headers.get_content_charset() == "gbk"
        assert build().expected.zh_titles[0] in page.read().decode("gbk")
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(site.url("news") + "/missing.html", timeout=10)
        assert err.value.code == 404
        home = urllib.request.urlopen(site.url("news") + "/", timeout=10).read().decode()
        assert site.url("zh") + "/" in home  # cross-host links are absolute
        assert site.requests == ["zh/zh/0.html", "news/missing.html", "news/"]
        assert len((tmp_path / "requests.jsonl").read_text().splitlines()) == 3
