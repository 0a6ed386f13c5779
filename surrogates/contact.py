"""Phone / fax numbers, e-mail addresses, URLs and IP addresses that look right but are not real.

- Phones keep their format; the area code is a real geographic US one of the original's
  state (from Google's libphonenumber geocoding data, the ``phonenumbers`` package), the exchange is 555 and the line 0100-0199, the
  range the North American Numbering Plan reserves for fiction, so no surrogate rings anyone.
- E-mail and URL hosts become ``example.com`` / ``.org`` / ``.net`` (RFC 2606) with the
  other labels and the path reshaped; an e-mail's local part is built from the patient's
  name surrogates ("john.smith77" → "peter.hale41", "jsmith" → "phale"); IPs come from the documentation ranges 192.0.2.0/24,
  198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32 (RFC 5737, RFC 3849).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from functools import lru_cache
from urllib.parse import urlsplit

from surrogates.base import SpanLike, Surrogate
from surrogates.choice import Chooser, reshape
from surrogates.context import ReplaceContext
from surrogates.identifiers import normalise_id, surrogate_chars
from surrogates.names import case_like, census, letter_map, surrogate_part

RESERVED_TLDS = ("com", "org", "net")
TEST_NETS = ("192.0.2", "198.51.100", "203.0.113")
FICTIONAL_EXCHANGE = "555"


@lru_cache(maxsize=1)
def area_codes_by_state() -> dict[str, tuple[str, ...]]:
    """Geographic US area codes by state, from libphonenumber's geocoding data (a copy:
    :mod:`surrogates.areadata`). Non-geographic codes (500, 800…) have no place and are never
    drawn."""
    from surrogates import areadata

    return areadata.by_state()


@lru_cache(maxsize=1)
def us_area_codes() -> tuple[str, ...]:
    """Every geographic US area code libphonenumber places in a state (about 300)."""
    return tuple(sorted(c for codes in area_codes_by_state().values() for c in codes))


@lru_cache(maxsize=1)
def state_of_area_code() -> dict[str, str]:
    return {code: state for state, codes in area_codes_by_state().items() for code in codes}


def area_code(ctx: ReplaceContext, original: str) -> str:
    """A real area code of the original's state (the policy keeps states), another one where
    the state has several; of any state when the original is not a geographic US code."""
    state = state_of_area_code().get(original)
    pool = area_codes_by_state()[state] if state else us_area_codes()
    others = tuple(c for c in pool if c != original) or pool
    return ctx.chooser("phone-area", original).pick(others)


def _phone_digits(ctx: ReplaceContext, digits: str) -> str:
    """New digits for the digit string of a phone number (same count)."""
    n = len(digits)
    lead = ""
    core = digits
    if n == 11 and digits[0] == "1":
        lead, core = "1", digits[1:]
    if len(core) not in (7, 10):
        return surrogate_chars(ctx, "phone", digits)
    local = core[-7:]
    chooser = ctx.chooser("phone-line", local)
    line = "01" + chooser.digit() + chooser.digit()
    if FICTIONAL_EXCHANGE + line == local:
        line = "01" + f"{(int(line[2:]) + 1) % 100:02d}"
    new_local = FICTIONAL_EXCHANGE + line
    if len(core) == 7:
        return lead + new_local
    return lead + area_code(ctx, core[:3]) + new_local


class PhoneSurrogate(Surrogate):
    categories = frozenset({"PHONE", "FAX"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        digits = "".join(c for c in text if c.isdigit())
        if not digits:  # no number to keep the format of: reshape, never keep
            return surrogate_chars(ctx, "phone-text", text) if normalise_id(text) else text
        main_len = 11 if len(digits) >= 11 and digits[0] == "1" else 10
        if len(digits) < 10:
            main_len = 7 if len(digits) >= 7 else len(digits)
        main, rest = digits[:main_len], digits[main_len:]
        new_main = ctx.mapped(ctx.state.id_map, f"PHONE:{main}", lambda: _phone_digits(ctx, main))
        new_rest = surrogate_chars(ctx, "phone-ext", rest) if rest else ""
        return apply_digits(text, new_main + new_rest)


def apply_digits(template: str, digits: str) -> str:
    """Write ``digits`` into the digit positions of ``template``; letters ("x", "ext") stay."""
    it = iter(digits)
    return "".join(next(it, ch) if ch.isdigit() else ch for ch in template)


def _host(ctx: ReplaceContext, host: str) -> str:
    labels = host.split(".")
    tld = labels[-1].lower() if len(labels) > 1 else ""
    chooser = ctx.chooser("host", host.lower())
    new_tld = tld if tld in RESERVED_TLDS else chooser.pick(RESERVED_TLDS)
    keep = [reshape(chooser, label) if label.lower() != "www" else label for label in labels[:-2]]
    out = ".".join([*keep, "example", new_tld])
    return out.upper() if host.isupper() else out


class EmailSurrogate(Surrogate):
    categories = frozenset({"EMAIL"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        local, at, domain = text.partition("@")
        if not at:
            return ctx.mapped(ctx.state.id_map, f"EMAIL:{text.lower()}", lambda: _host(ctx, text))

        def make() -> str:
            chooser = ctx.chooser("email", text.lower())
            new_local = email_local(ctx, chooser, local)
            if new_local.lower() == local.lower():  # never the original: another first letter
                new_local = ("y" if local[:1].lower() == "x" else "x") + new_local[1:]
            return f"{new_local}@{_host(ctx, domain)}"

        return ctx.mapped(ctx.state.id_map, f"EMAIL:{text.lower()}", make)


_LETTERS = re.compile(r"([A-Za-z]+)")


def _is_name(low: str) -> bool:
    c = census()
    return low in c.male or low in c.female or low in c.last


def _two_names(low: str, known: Callable[[str], bool], shortest: int) -> tuple[str, str] | None:
    for i in range(shortest, len(low) - shortest + 1):
        if known(low[:i]) and known(low[i:]):
            return low[:i], low[i:]
    return None


def _initial(ctx: ReplaceContext, letter: str) -> str:
    """The initial of the surrogate of the patient's name with this initial ("r" of
    "Ronnie" → "j" of "Jeffrey"), else the patient's letter map's image."""
    for original, surrogate in ctx.state.name_map.items():
        if original[:1] == letter and surrogate:
            return surrogate[0]
    return letter_map(ctx.state.seed).get(letter, letter)


def _name_word(ctx: ReplaceContext, low: str) -> str:
    """A local-part word's surrogate: a name's is the patient's surrogate of that name; an
    initial and a name run together ("jsmith") or two names ("jamessmith") keep that shape,
    the patient's own names tried before the census lists; other words become names."""
    if len(low) == 1:
        return _initial(ctx, low)
    for known in (ctx.state.name_map.__contains__, _is_name):
        if known(low):
            return surrogate_part(ctx, low, "family", "")
        pair = _two_names(low, known, 2 if known is not _is_name else 3)
        if pair is not None:
            return "".join(surrogate_part(ctx, part, "family", "") for part in pair)
        if known(low[1:]):
            return _initial(ctx, low[0]) + surrogate_part(ctx, low[1:], "family", "")
    return surrogate_part(ctx, low, "family", "")


def email_local(ctx: ReplaceContext, chooser: Chooser, local: str) -> str:
    """The local part of an address, built from name surrogates; digits reshaped, the
    separators (. _ - +) kept."""
    out: list[str] = []
    for i, piece in enumerate(_LETTERS.split(local)):
        if not piece:
            continue
        if i % 2:  # a letter run
            out.append(case_like(_name_word(ctx, piece.lower()), piece))
        else:
            out.append(reshape(chooser, piece))
    return "".join(out)


class UrlSurrogate(Surrogate):
    categories = frozenset({"URL"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)

        def make() -> str:
            has_scheme = "://" in text
            try:
                parts = urlsplit(text if has_scheme else "//" + text)
                host = parts.hostname or ""
            except ValueError:  # "http://[…": no readable host, so no host to keep the shape of
                return surrogate_chars(ctx, "url", text)
            if not host:
                return surrogate_chars(ctx, "url", text) if normalise_id(text) else text
            netloc = parts.netloc
            start = netloc.lower().find(host)
            new_netloc = (
                netloc[:start]
                + _host(ctx, netloc[start : start + len(host)])
                + netloc[start + len(host) :]
            )
            rest = text[text.find(netloc) + len(netloc) :]
            chooser = ctx.chooser("url-path", text)
            new_rest = reshape(chooser, rest)
            prefix = text[: text.find(netloc)]
            return prefix + new_netloc + new_rest

        return ctx.mapped(ctx.state.id_map, f"URL:{text}", make)


_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])")


class IpSurrogate(Surrogate):
    categories = frozenset({"IP"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        stripped = text.strip()
        try:
            address = ipaddress.ip_address(stripped)
        except ValueError:
            address = None
        if isinstance(address, ipaddress.IPv6Address):
            new = ctx.mapped(
                ctx.state.id_map, f"IP:{address.compressed}", lambda: self._v6(ctx, stripped)
            )
            return text.replace(stripped, new.upper() if stripped.isupper() else new)
        if not _IPV4.search(text):
            return surrogate_chars(ctx, "ip", text) if normalise_id(text) else text
        return _IPV4.sub(
            lambda m: ctx.mapped(
                ctx.state.id_map, f"IP:{m.group()}", lambda: self._v4(ctx, m.group())
            ),
            text,
        )

    @staticmethod
    def _v4(ctx: ReplaceContext, original: str) -> str:
        chooser = ctx.chooser("ipv4", original)
        return f"{chooser.pick(TEST_NETS)}.{1 + chooser.below(254)}"

    @staticmethod
    def _v6(ctx: ReplaceContext, original: str) -> str:
        chooser = ctx.chooser("ipv6", original.lower())
        groups = [f"{chooser.below(0x10000):x}" for _ in range(2)]
        return str(ipaddress.IPv6Address(f"2001:db8::{groups[0]}:{groups[1]}"))
