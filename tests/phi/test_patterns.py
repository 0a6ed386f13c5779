"""Pattern passes (``pipelines.phi.patterns``): declared, dispatched by scan group, stamped."""

from __future__ import annotations

from typing import Any

import pytest

from pipelines.phi.base import Doc
from pipelines.phi.passes import declared
from pipelines.phi.patterns import Found, PatternPass, PatternPasses
from pipelines.phi.recognizers.contact import PhoneRecognizer
from pipelines.phi.recognizers.dates import DateRecognizer
from pipelines.phi.recognizers.identifiers import IdentifierRecognizer
from pipelines.phi.recognizers.years import YearRecognizer
from pipelines.phi.scan import compile_words
from pipelines.spans import Category, Span

_SCAN = compile_words(r"(?P<word>[a-z]+)|(?P<num>\d+)")


def _word(note: str, m: Any) -> Found | None:
    """Words."""
    return (m.start(), m.end(), Category.ID, 0.5)


def _num(note: str, m: Any) -> Found | None:
    """Numbers over 10."""
    return (m.start(), m.end(), Category.DATE, 0.5) if int(m.group()) > 10 else None


PASSES = PatternPasses[str](
    "t", [PatternPass("t.word", _word, "word", "s"), PatternPass("t.num", _num, "", "s")]
)


def test_a_match_goes_to_the_first_pass_whose_group_took_part() -> None:
    text = "ab 7 12"
    table = PASSES.table("s", dict(_SCAN.groupindex))
    out: list[Span] = []
    for m in _SCAN.finditer(text):
        PASSES.judge(table, text, text, m, out)
    assert [(s.start, s.end, s.source) for s in out] == [(0, 2, "t.word"), (5, 7, "t.num")]


def test_declarations_are_checked() -> None:
    with pytest.raises(ValueError, match="recognizer"):
        PatternPass("nodot", _word)
    with pytest.raises(ValueError, match="share a name"):
        PatternPasses("t", [PatternPass("t.a", _word), PatternPass("t.a", _num)])
    with pytest.raises(ValueError, match="does not belong"):
        PatternPasses("t", [PatternPass("u.a", _word)])
    assert PASSES.describe()[1] == {
        "pass": "t.num",
        "scan": "s",
        "group": "*",
        "does": "Numbers over 10.",
    }


@pytest.mark.parametrize(
    ("recognizer", "text", "found", "source"),
    [
        (DateRecognizer, "Seen on 7/22 for pain.", "7/22", "dates.numeric"),
        (DateRecognizer, "Back on March 3, 2019.", "March 3, 2019", "dates.named_month"),
        (DateRecognizer, "Home for Thanksgiving.", "Thanksgiving", "dates.holiday"),
        (YearRecognizer, "CVA in 94 and 00 too", "00", "years.chain"),
        (YearRecognizer, "s/p MI '95.", "95", "years.apostrophe_before"),
        (PhoneRecognizer, "Son Rob 301-555-0187 is the proxy.", "301-555-0187", "phone.shaped"),
        (IdentifierRecognizer, "Card shows 123-45-6789.", "123-45-6789", "identifiers.ssn"),
        (IdentifierRecognizer, "Saw #7241983 today", "7241983", "identifiers.hash"),
    ],
)
def test_spans_name_the_pass_that_made_them(
    recognizer: Any, text: str, found: str, source: str
) -> None:
    spans = recognizer().detect(Doc(text))
    assert {text[s.start : s.end]: s.source for s in spans}[found] == source


def test_the_pattern_recognizers_declare_their_passes() -> None:
    names = {entry["pass"] for passes in declared() for entry in passes.describe()}
    assert {"dates.numeric", "years.four", "phone.shaped", "identifiers.cued", "ip.v4"} <= names
