"""Phones keep their format with a real area code; e-mails, URLs and IPs are reserved values."""

from __future__ import annotations

import ipaddress
import re

from hypothesis import given, settings
from hypothesis import strategies as st
from surrogate_helpers import FakeSpan, make_ctx, make_state, replace_one

from surrogates.contact import (
    EmailSurrogate,
    IpSurrogate,
    PhoneSurrogate,
    UrlSurrogate,
    us_area_codes,
)

PHONES = PhoneSurrogate()
phone_formats = st.sampled_from(
    [
        "({a}) {e}-{l}",
        "{a}-{e}-{l}",
        "{a}.{e}.{l}",
        "1-{a}-{e}-{l}",
        "{e}-{l}",
        "{a}{e}{l}",
        "{a}-{e}-{l} x12",
    ]
)
three = st.from_regex(r"[2-9][0-9]{2}", fullmatch=True)
four = st.from_regex(r"[0-9]{4}", fullmatch=True)


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(fmt=phone_formats, a=three, e=three, line=four, seed=st.binary(min_size=32, max_size=32))
def test_phone_format_kept_area_code_real_number_fictional(
    fmt: str, a: str, e: str, line: str, seed: bytes
) -> None:
    original = fmt.format(a=a, e=e, l=line)
    out = replace_one(PHONES, original, "PHONE", state=make_state(seed))
    assert re.sub(r"\d", "9", out) == re.sub(r"\d", "9", original)
    assert out != original
    digits = re.sub(r"\D", "", out.split(" x")[0])
    if digits.startswith("1") and len(digits) == 11:
        digits = digits[1:]
    if len(digits) == 10:
        assert digits[:3] in us_area_codes()
        digits = digits[3:]
    assert digits[:3] == "555" and digits[3:5] == "01"


def test_area_codes_are_a_real_list() -> None:
    codes = us_area_codes()
    assert 300 < len(codes) < 500
    assert "617" in codes and "212" in codes and "555" not in codes


def test_seven_digit_and_ten_digit_forms_of_one_number_agree() -> None:
    state = make_state()
    ctx = make_ctx("617-732-5500 or 732-5500", state)
    ten = PHONES.replace(FakeSpan(0, 12, "PHONE"), ctx)
    seven = PHONES.replace(FakeSpan(16, 24, "PHONE"), ctx)
    assert ten.endswith(seven)


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(
    local=st.from_regex(r"[a-z][a-z0-9._]{0,10}", fullmatch=True),
    host=st.from_regex(r"[a-z]{2,8}(\.[a-z]{2,8}){0,2}\.(com|org|edu|net)", fullmatch=True),
)
def test_emails_keep_shape_and_use_reserved_domains(local: str, host: str) -> None:
    original = f"{local}@{host}"
    out = replace_one(EmailSurrogate(), original, "EMAIL")
    new_local, new_host = out.split("@")
    # the letters become names (issue 15 item 12); digits and separators keep their places
    assert new_local != local
    assert re.sub(r"[a-z]+", "a", re.sub(r"\d", "0", new_local)) == re.sub(
        r"[a-z]+", "a", re.sub(r"\d", "0", local)
    )
    assert re.fullmatch(r"(.+\.)?example\.(com|org|net)", new_host)
    assert new_host.count(".") == max(host.count("."), 1)


def test_urls_keep_scheme_and_path_shape() -> None:
    out = replace_one(UrlSurrogate(), "https://www.stjude.org/pt/4411?x=1", "URL")
    assert re.fullmatch(r"https://www\.example\.org/[a-z]{2}/\d{4}\?[a-z]=\d", out)


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(value=st.ip_addresses(v=4))
def test_ipv4_goes_to_documentation_ranges(value: ipaddress.IPv4Address) -> None:
    out = replace_one(IpSurrogate(), str(value), "IP")
    nets = [ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")]
    assert any(ipaddress.ip_address(out) in n for n in nets)


@settings(deadline=None)  # CI machines are shared: no per-example deadline
@given(value=st.ip_addresses(v=6))
def test_ipv6_goes_to_the_documentation_prefix(value: ipaddress.IPv6Address) -> None:
    out = replace_one(IpSurrogate(), str(value), "IP")
    assert ipaddress.ip_address(out) in ipaddress.ip_network("2001:db8::/32")
