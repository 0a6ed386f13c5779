"""Phone / fax / pager, e-mail, URL and IP recognizers."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.recognizers.contact import (
    EmailRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    UrlRecognizer,
)
from pipelines.spans import Category

PHONE, EMAIL, URL, IP = PhoneRecognizer(), EmailRecognizer(), UrlRecognizer(), IpRecognizer()


def found(recognizer: object, text: str) -> list[tuple[str, Category]]:
    spans = recognizer.detect(Doc(text))  # type: ignore[attr-defined]
    return [(text[s.start : s.end], s.category) for s in spans if s.confidence >= 0.5]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("call (301) 555-0187 with updates", "(301) 555-0187"),
        ("son 301-555-0187", "301-555-0187"),
        ("tel 301.555.0187", "301.555.0187"),
        ("wife (201/555/0129) confirms", "201/555/0129"),
        ("dtr - 212- 476- 8356.", "212- 476- 8356"),
        ("reached at (240555-0148) today", "240555-0148"),
        ("home 555-0187", "555-0187"),
        ("call 410 392 0780 x37.", "410 392 0780 x37"),
        ("office 410-555-1234 ext. 221", "410-555-1234 ext. 221"),
        ("call 1-800-555-1212 now", "1-800-555-1212"),
        ("cell +1 301 555 0187", "+1 301 555 0187"),
        ("home (301)555-0187", "(301)555-0187"),
        ("visited today.(301 273 45166) both", "301 273 45166"),
        ("Pager #12345", "12345"),
        ("PG 23456", "23456"),
        ("beeper: 4-1234", "4-1234"),
    ],
)
def test_phones(text: str, expected: str) -> None:
    texts = [t for t, _ in found(PHONE, text)]
    assert any(expected in t or t in expected for t in texts), texts


def test_fax_cue_gives_fax() -> None:
    assert found(PHONE, "fax: 410-555-1234") == [("410-555-1234", Category.FAX)]


@pytest.mark.parametrize(
    "text",
    [
        "BP 120/80 HR 88",
        "voiding 575-1000 cc",
        "STV 500-1000, RR 9-20",
        "DTV 930-1130PM",
        "co/ci/svr 3.5-4/1.7-2/1200-1600",
        "K 3.9 PH 7.354",
        "gave 1000 ml",
        "abg 7.35/66/55",
        "tylenol #3 q6",
        "MR# 1234567",
        "21-800-555-1212",
    ],
)
def test_clinical_numbers_are_not_phones(text: str) -> None:
    assert found(PHONE, text) == []


def test_email_url_ip() -> None:
    text = "mail jane.doe@example.org or see https://example.org/x?y=1, www.foo.com; host 10.1.2.3"
    assert found(EMAIL, text) == [("jane.doe@example.org", Category.EMAIL)]
    urls = [t for t, _ in found(URL, text)]
    assert "https://example.org/x?y=1" in urls and "www.foo.com" in urls
    assert "example.org" not in urls  # the e-mail's domain is not a second URL
    assert found(IP, text) == [("10.1.2.3", Category.IP)]
    assert found(IP, "gw fe80::1ff:fe23:4567:890a up") == [
        ("fe80::1ff:fe23:4567:890a", Category.IP)
    ]


@pytest.mark.parametrize(
    "text",
    ["abg 7.35/66/55/28", "80/48/7.45.34.7", "version 1.2.3.4.5", "999.1.1.1", "at 10:30:45"],
)
def test_not_ip(text: str) -> None:
    assert found(IP, text) == []


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for recognizer in (PHONE, EMAIL, URL, IP):
        for span in recognizer.detect(Doc(text)):
            assert 0 <= span.start < span.end <= len(text)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "301",
                "-",
                " ",
                "944",
                "5032",
                "(",
                ")",
                "x37",
                "pager",
                "#",
                ".",
                "@",
                "a",
                "::",
                "1",
            ]
        ),
        max_size=30,
    )
)
def test_phone_like_soup_is_safe(parts: list[str]) -> None:
    text = "".join(parts)
    for recognizer in (PHONE, EMAIL, URL, IP):
        for span in recognizer.detect(Doc(text)):
            assert 0 <= span.start < span.end <= len(text)
