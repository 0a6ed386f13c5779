"""Street addresses, PO boxes and ZIP codes (ZIPs only where context supports them)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.recognizers.addresses import AddressRecognizer
from pipelines.spans import Category

ADDR = AddressRecognizer()


def found(text: str) -> list[tuple[str, Category]]:
    return [
        (text[s.start : s.end], s.category) for s in ADDR.detect(Doc(text)) if s.confidence >= 0.5
    ]


@pytest.mark.parametrize(
    ("text", "value", "category"),
    [
        ("lives at 12 Main Street with wife", "12 Main Street", Category.LOCATION_STREET),
        ("4410 N. Charles Street Apt 4", "4410 N. Charles Street Apt 4", Category.LOCATION_STREET),
        ("address 77 MASSACHUSETTS AVENUE", "77 MASSACHUSETTS AVENUE", Category.LOCATION_STREET),
        ("12 Oak Ln, Elkbridge", "12 Oak Ln", Category.LOCATION_STREET),
        ("mail to PO Box 123", "PO Box 123", Category.LOCATION_STREET),
        ("Boston, MA 02115", "02115", Category.LOCATION_ZIP),
        ("Baltimore, Maryland 21201-1234", "21201-1234", Category.LOCATION_ZIP),
        ("zip code: 21201", "21201", Category.LOCATION_ZIP),
    ],
)
def test_addresses(text: str, value: str, category: Category) -> None:
    assert (value, category) in found(text)


@pytest.mark.parametrize(
    "text",
    [
        "GU: 3 WAY FOLEY IN PLACE",
        "HR 90-110 SR TO ST WITH PACS",
        "MG SULFATE 2 GMS GIVEN IVP PER DR SMITH",
        "heparin 25000 units",
        "given 12345 units",
        "IN 12345 units",
        "3L CORDIS STILL IN PLACE",
    ],
)
def test_not_addresses(text: str) -> None:
    assert found(text) == []


def test_zip_needs_a_real_code_for_full_confidence() -> None:
    real = ADDR.detect(Doc("Boston, MA 02115"))
    fake = ADDR.detect(Doc("Boston, MA 00000"))
    assert real[0].confidence > fake[0].confidence


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for span in ADDR.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)
