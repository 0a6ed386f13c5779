"""The exclusion vocabulary and its vetoes (issue 26, false alarms): what the lists hold after
the census and place filters, and the vetoes on spans the detector is handed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

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


# Words the specialty and formula tests draw from: pieces of specialties, names, elements.
_PIECES = ("Family practice", "primary  care", "MENTAL-HEALTH", "Family", "practice", "care",
           "Oakdale", "NaCl", "KCl", "Smith", "SMITH", "nahco3", "Smith3", "ſ", "K", " on",
           " clinic", " ", "\n", ", ")  # fmt: skip


def _specialty_plain(text: str, span: Span, vocab: exclusions.Vocabulary) -> bool:
    """``_specialty`` without its test of the window's words (the regex at every span)."""
    low = max(0, span.start - exclusions._WINDOW)
    high = min(len(text), span.end + exclusions._WINDOW)
    found = [
        m.span()
        for m in vocab.specialty.finditer(text, low, high)
        if m.start() < span.end and span.start < m.end()
    ]
    if not found or exclusions._named_before(text, found[0][0]):
        return False
    outside = (
        w.group().lower()
        for w in exclusions._WORD.finditer(text, span.start, span.end)
        if not any(a <= w.start() and w.end() <= b for a, b in found)
    )
    return all(exclusions._runs_on(w, vocab) for w in outside)


def _formula_plain(text: str, span: Span, vocab: exclusions.Vocabulary) -> bool:
    """``_formula`` counting every word's capitals, small letters and digits."""
    word = exclusions._alnum_run(text, span)
    if any(c.isdigit() for c in word):
        return vocab.formula_any_case.fullmatch(word) is not None
    return (
        sum(c.isupper() for c in word) >= 2
        and any(c.islower() for c in word)
        and vocab.formula.fullmatch(word) is not None
    )


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=12),
    st.integers(0, 11),
    st.integers(1, 4),
)
def test_the_cheap_tests_first_keep_the_specialty_and_formula_answers(
    pieces: list[str], first: int, count: int
) -> None:
    """The words looked for in a window before the specialty regex runs, and the capitals
    counted only of a word that may be a formula, change no answer (non-ASCII included).
    The span covers whole pieces."""
    first = min(first, len(pieces) - 1)
    last = min(len(pieces), first + count)
    start = len("".join(pieces[:first]))
    end = len("".join(pieces[:last]))
    text = "".join(pieces)
    span = Span(start, end, Category.LOCATION_OTHER, 0.9, "test")
    vocab = exclusions.vocabulary()
    assert exclusions._specialty(text, span, vocab) == _specialty_plain(text, span, vocab)
    assert exclusions._formula(text, span, vocab) == _formula_plain(text, span, vocab)


def test_a_specialty_is_still_found_in_its_window() -> None:
    text = "PCP: Family Practice on Monday"
    span = _span(text, "Practice on Monday", Category.LOCATION_OTHER)
    assert exclusions.vetoed(text, span)
    assert exclusions._formula(*_word_span("gave NaHCO3 now", "NaHCO3"), exclusions.vocabulary())


def _word_span(text: str, word: str) -> tuple[str, Span]:
    return text, _span(text, word, Category.NAME_OTHER)
