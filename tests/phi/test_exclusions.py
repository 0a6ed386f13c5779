"""The exclusion vocabulary and its vetoes (issue 26, false alarms): what the lists hold after
the census and place filters, and the vetoes on spans the detector is handed."""

from __future__ import annotations

from pipelines.phi import exclusions
from pipelines.phi import lexicons as lx
from pipelines.spans import Category, Span


def _span(text: str, word: str, category: Category) -> Span:
    start = text.index(word)
    return Span(start, start + len(word), category, 0.9, "test")


def test_no_census_name_can_veto_a_name_span_alone() -> None:
    vocab = exclusions.vocabulary()
    assert vocab.name_words, "empty exclusion vocabulary"
    assert not [w for w in vocab.name_words if lx.is_name(w)]
    assert "greenfield" not in vocab.name_words  # an eponym and a surname
    assert "tegaderm" in vocab.name_words


def test_no_place_can_veto_a_place_span_alone() -> None:
    vocab = exclusions.vocabulary()
    places = lx.us_cities() | lx.countries()
    assert not vocab.place_words & places
    assert "portuguese" in vocab.place_words and "lle" in vocab.place_words


def test_unit_slips_are_made_from_the_units() -> None:
    vocab = exclusions.vocabulary()
    assert {"sicu", "sciu", "mciu"} <= vocab.place_words


def test_an_eponym_surname_is_vetoed_before_a_device_head_only() -> None:
    text = "Greenfield filter placed; discussed with Greenfield family."
    device = _span(text, "Greenfield", Category.NAME_OTHER)
    person = Span(
        text.rindex("Greenfield"), text.rindex("Greenfield") + 10, Category.NAME_OTHER, 0.9, "test"
    )
    assert exclusions.veto(text, [device, person]) == [person]


def test_a_title_keeps_a_device_word() -> None:
    text = "Dr. Tegaderm aware."
    span = _span(text, "Tegaderm", Category.NAME_PROVIDER)
    assert exclusions.veto(text, [span]) == [span]


def test_formula_needs_element_symbols() -> None:
    text = "Given KCl, seen by Kim; NaHCO3 drip."
    salt, name = _span(text, "KCl", Category.NAME_OTHER), _span(text, "Kim", Category.NAME_OTHER)
    bicarbonate = _span(text, "NaHCO", Category.LOCATION_HOSPITAL)
    assert exclusions.veto(text, [salt, name, bicarbonate]) == [name]


def test_other_categories_pass_through() -> None:
    text = "Seen 4/19 in the TSICU."
    date = _span(text, "4/19", Category.DATE)
    assert exclusions.veto(text, [date]) == [date]
