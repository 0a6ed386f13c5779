"""Spans that reach into an e-mail address or a URL (``merge.without_inside_contact``)."""

from __future__ import annotations

from pipelines.phi.merge import without_inside_contact
from pipelines.spans import Category, Span

TEXT = "email Hal Quisthal.quist@example.org today"
EMAIL = Span(TEXT.index("Quist"), TEXT.index(" today"), Category.EMAIL, 0.95, "email")


def _name(start: int, end: int) -> Span:
    return Span(start, end, Category.NAME_OTHER, 0.6, "names")


def test_a_span_crossing_into_the_address_keeps_its_part_before_it() -> None:
    crossing = _name(TEXT.index("Hal"), TEXT.index(".quist"))
    kept = without_inside_contact([crossing, EMAIL], TEXT)
    assert [(TEXT[s.start : s.end], s.category) for s in kept] == [
        ("Hal", Category.NAME_OTHER),
        ("Quisthal.quist@example.org", Category.EMAIL),
    ]


def test_a_span_inside_the_address_is_dropped() -> None:
    inside = _name(TEXT.index("quist@"), TEXT.index("@"))
    assert without_inside_contact([inside, EMAIL], TEXT) == [EMAIL]


def test_a_span_with_only_blanks_before_the_address_is_dropped() -> None:
    crossing = _name(EMAIL.start - 1, EMAIL.start + 4)
    assert without_inside_contact([crossing, EMAIL], TEXT) == [EMAIL]


def test_spans_elsewhere_and_enclosing_spans_stay() -> None:
    before = _name(0, 5)
    enclosing = Span(0, len(TEXT), Category.NAME_OTHER, 0.5, "x")
    spans = [before, enclosing, EMAIL]
    assert without_inside_contact(spans, TEXT) == spans
    assert without_inside_contact([before], TEXT) == [before]
