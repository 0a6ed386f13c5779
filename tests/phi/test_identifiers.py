"""Identifying numbers by cue word and by shape; gauges, tube sizes and doses are kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.recognizers.identifiers import IdentifierRecognizer
from pipelines.spans import Category

IDS = IdentifierRecognizer()


def found(text: str) -> list[tuple[str, Category]]:
    return [
        (text[s.start : s.end], s.category) for s in IDS.detect(Doc(text)) if s.confidence >= 0.5
    ]


@pytest.mark.parametrize(
    ("text", "value", "category"),
    [
        ("SSN 123-45-6789 on file", "123-45-6789", Category.SSN),
        ("MRN: 1234567", "1234567", Category.MRN),
        ("medical record number 00451234", "00451234", Category.MRN),
        ("unit no. 882", "882", Category.MRN),
        ("acct # 55-1234", "55-1234", Category.ACCOUNT),
        ("member id XQZ123456", "XQZ123456", Category.HEALTH_PLAN),
        ("license number D1234567", "D1234567", Category.LICENSE),
        ("pacemaker serial # PJN443211", "PJN443211", Category.DEVICE),
        ("VIN 1HGCM82633A004352", "1HGCM82633A004352", Category.VEHICLE),
        ("ref # 7241983 for transport", "7241983", Category.ID),
        ("per hospital policy #kq42, at 1400", "kq42", Category.ID),
        ("protocol no. 2004-117", "2004-117", Category.ID),
        ("id band 48812345", "48812345", Category.ID),
        ("see form no. 44719", "44719", Category.ID),
    ],
)
def test_identifiers(text: str, value: str, category: Category) -> None:
    assert (value, category) in found(text)


def test_compact_timestamps_are_dates() -> None:
    assert found("msg 20190423113910 sent") == [("20190423113910", Category.DATE)]
    assert found("dob 19720227") == [("19720227", Category.DATE)]
    assert found("acct 20191399") == [("20191399", Category.ACCOUNT)]


def test_one_reading_per_value() -> None:
    assert found("MRN: 1234567") == [("1234567", Category.MRN)]


@pytest.mark.parametrize(
    "text",
    [
        "#20 IV in L arm",
        "#8 ETT 22 at lip",
        "intubated #7.5",
        "foley #20fr 3 way",
        "tylenol #3 x2",
        "2 units prbc",
        "unit 3",
        "ID: 98.9 po",
        "group B strep",
        "heparin per protocol at 1100",
        "666-12-3456",
        "000-12-3456",
        "heparin 25000 units",
        "plt 1234567 mcg",
        "no. 3 foley",
        "no 4 drains",
    ],
)
def test_clinical_numbers_are_not_ids(text: str) -> None:
    assert found(text) == []


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for span in IDS.detect(Doc(text)):
        assert 0 <= span.start < span.end <= len(text)
