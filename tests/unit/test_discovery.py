"""What a crawl finds beside its pages' links and which found URLs it requests: the
sitemaps of its start hosts (crawler/sitemaps.py) and the URL patterns of ``--include`` /
``--exclude`` (crawler/scope.py)."""

from __future__ import annotations

import gzip

import pytest

from crawler.scope import UrlPatterns, patterns_of
from crawler.sitemaps import origins, read_sitemap, sitemap_body, sitemaps_in_robots

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def test_a_link_is_requested_when_an_include_finds_it_and_no_exclude_does() -> None:
    patterns = UrlPatterns(include=[r"/articles/", r"/news/\d+"], exclude=[r"[?&]print="])
    assert patterns.wanted("https://a.org/articles/x.html")
    assert patterns.wanted("https://a.org/news/2024/x")
    assert not patterns.wanted("https://a.org/tag/x")  # no include finds it
    assert not patterns.wanted("https://a.org/articles/x.html?print=1")  # exclude wins
    assert list(UrlPatterns(exclude=["/tag/"]).keep(["https://a/x", "https://a/tag/y"])) \
        == ["https://a/x"]
    assert not UrlPatterns() and UrlPatterns().wanted("https://a.org/anything")


def test_pattern_settings_are_read_as_a_list_a_json_list_or_one_expression() -> None:
    assert patterns_of(["/a/", "/b/"], "SIMCRAWL_INCLUDE") == ["/a/", "/b/"]
    assert patterns_of('["x{1,3}", "/y/"]', "SIMCRAWL_INCLUDE") == ["x{1,3}", "/y/"]
    # one expression is not split at its commas
    assert patterns_of("/p/(a|b){1,2}", "SIMCRAWL_EXCLUDE") == ["/p/(a|b){1,2}"]
    assert patterns_of(None, "SIMCRAWL_EXCLUDE") == [] == patterns_of("", "X")
    with pytest.raises(ValueError, match="SIMCRAWL_EXCLUDE: not a JSON list"):
        patterns_of('["/a/", ', "SIMCRAWL_EXCLUDE")
    with pytest.raises(ValueError, match="non-empty regular expression"):
        patterns_of('["/a/", 3]', "SIMCRAWL_INCLUDE")
    with pytest.raises(ValueError, match=r"SIMCRAWL_INCLUDE: '\[a' is not a regular expr"):
        UrlPatterns(include=["[a"])


def test_a_sitemap_and_a_sitemap_index_are_read_for_their_locations() -> None:
    urlset = (f'<?xml version="1.0"?><urlset {NS}><url><loc> https://a.org/x </loc>'
              "<lastmod>2024-01-01</lastmod></url><url><loc>https://a.org/y</loc></url>"
              "<url><priority>1</priority></url></urlset>").encode()
    listing = read_sitemap(urlset)
    assert (listing.kind, listing.pages, listing.sitemaps) == (
        "urlset", ["https://a.org/x", "https://a.org/y"], [])
    index = (f'<sitemapindex {NS}><sitemap><loc>https://a.org/s1.xml.gz</loc></sitemap>'
             "</sitemapindex>").encode()
    assert read_sitemap(index).sitemaps == ["https://a.org/s1.xml.gz"]
    # what is not a sitemap lists nothing and says what it was
    assert read_sitemap(b"<html><body><p>Not found</p></body></html>").kind == "html"
    assert read_sitemap(b"User-agent: *").kind == "" == read_sitemap(b"").kind
    # no entity is expanded (the billion laughs): the file is read as it stands
    bomb = (b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY a "aaaaaaaaaa">'
            b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
            b"<urlset><url><loc>https://a.org/&b;</loc></url></urlset>")
    assert all(len(u) < 40 for u in read_sitemap(bomb).pages)


def test_a_gzipped_sitemap_is_read_within_the_size_cap() -> None:
    xml = f"<urlset {NS}><url><loc>https://a.org/x</loc></url></urlset>".encode()
    assert sitemap_body(gzip.compress(xml), 0) == xml
    assert sitemap_body(xml, 10) == xml  # served already unpacked
    assert sitemap_body(gzip.compress(b" " * 100_000), 50_000) is None  # past the cap
    assert sitemap_body(b"\x1f\x8b" + b"broken", 0) is None


def test_the_sitemaps_of_a_robots_txt_and_the_hosts_of_start_urls() -> None:
    robots = b"User-agent: *\nDisallow: /private/\nSitemap: /maps/a.xml\nsitemap: https://cdn.org/b.xml\n"
    assert sitemaps_in_robots(robots, "https://a.org:8443/robots.txt") == [
        "https://a.org:8443/maps/a.xml", "https://cdn.org/b.xml"]
    assert origins(["https://a.org/x", "http://b.org:81/y?z", "https://a.org/w"]) == [
        "https://a.org", "http://b.org:81"]


def test_a_start_file_keeps_each_url_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``simcrawl crawl`` hands its start URLs to the crawl processes in a file: a URL with
    a comma stays one URL (``start_urls=`` is split at commas), comments are skipped."""
    from crawler.spiders.site import SiteSpider

    listed = tmp_path / "start.txt"
    listed.write_text("  # the list\nhttps://a.example/x?ids=1,2\n\n  https://b.example/ \n")
    spider = SiteSpider(start_file=str(listed))
    assert spider.start_urls == ["https://a.example/x?ids=1,2", "https://b.example/"]
    assert spider.allowed_domains == ["a.example", "b.example"]
