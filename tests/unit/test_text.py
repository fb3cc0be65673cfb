"""Main-text extraction and its fall-back."""

from pathlib import Path

from dedup import extract_text, fingerprint

EXAMPLES = Path(__file__).resolve().parents[2] / "crawler" / "examples"


def test_article_main_text_leaves_out_navigation_and_footer():
    got = extract_text((EXAMPLES / "harbour-mirror.html").read_bytes())
    assert got.method == "trafilatura"
    assert "harbour wall" in got.text
    assert "Winter sale" not in got.text and "All rights reserved" not in got.text


def test_mirror_under_another_template_has_the_same_text():
    a = extract_text((EXAMPLES / "harbour-original.html").read_bytes())
    b = extract_text((EXAMPLES / "harbour-mirror.html").read_bytes())
    assert fingerprint(a.text).checksum == fingerprint(b.text).checksum


def test_gbk_page_is_decoded_from_its_meta_charset():
    got = extract_text((EXAMPLES / "spring-town-copy.gbk.html").read_bytes())
    assert "卖豆浆的老人" in got.text


def test_fallback_to_visible_body_text():
    html = ("<html><head><style>p {}</style></head><body><div>Menu</div>"
            "<script>var x = 'hidden';</script><span>Hi</span></body></html>")
    got = extract_text(html, min_chars=100)  # trafilatura's few characters are not useful
    assert got.method == "body" and got.reason
    assert got.text == "Menu Hi"


def test_page_without_text_is_empty_with_a_reason():
    got = extract_text("<html><head><title>T</title></head><body><img src=a.png></body></html>")
    assert got.method == "empty" and got.text == "" and "no visible body text" in got.reason


def test_bad_documents_get_a_defined_result():
    for html in ("", b"", "   ", b"\x00\x01\x02\xff", "<html><body></body></html>",
                 "<<<>>><p>unclosed <b>tags", b"<html>\xff\xfe broken \x00 bytes</html>"):
        got = extract_text(html)
        assert got.method in ("trafilatura", "body", "empty")
        assert isinstance(got.text, str)
        if got.method == "empty":
            assert got.text == "" and got.reason


def test_deeply_nested_pages_keep_their_text() -> None:
    words = "Deep text about the harbour wall repairs and the council budget. " * 30
    divs = "<html><body>" + "<div>" * 10_000 + f"<p>{words}</p>" + "</div>" * 10_000 + \
        "</body></html>"
    fonts = "<html><body>" + "<font>" * 254 + f"<p>{words}</p></body></html>"
    for html in (divs, fonts):
        got = extract_text(html.encode())
        assert got.method in ("trafilatura", "body")
        assert "harbour wall repairs" in got.text and len(got.text) > 1000
