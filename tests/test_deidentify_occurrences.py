"""A string detected as PHI is replaced wherever the note writes it again (issue 26).

Invented notes; spans are given (no detector), so each case shows what one detector miss of
a found string becomes: the same surrogate, not a leak and not a held note — except strings
too short or too common to be evidence of themselves, which the leak guard still holds.
"""

from __future__ import annotations

from keystore.api import PatientState
from pipelines.deidentify import Deidentifier, occurrences
from pipelines.document import ClinicalDocument, Identifiers
from pipelines.phi.detector import Detector
from pipelines.policy import Action, Policy
from pipelines.spans import Category as C
from pipelines.spans import Span


def _deid(actions: dict[C, Action] | None = None) -> Deidentifier:
    policy = Policy(actions=actions or {})
    return Deidentifier(policy, Detector(policy))


def _state() -> PatientState:
    return PatientState(shift_days=-20, pseudonym="p", seed=b"o" * 32)


def _run(text: str, *found: tuple[str, C], actions: dict[C, Action] | None = None):  # type: ignore[no-untyped-def]
    spans = []
    for phrase, category in found:
        at = text.index(phrase)
        spans.append(Span(at, at + len(phrase), category))
    doc = ClinicalDocument(text=text, identifiers=Identifiers())
    return _deid(actions).deidentify(doc, _state(), spans=spans)


def _out(result, span: Span) -> str:  # type: ignore[no-untyped-def]
    return str(result.text[span.start : span.end])


def test_a_name_part_found_once_is_replaced_where_the_detector_missed_it() -> None:
    text = "Seen by Dr. Orvand Quillfeather. Plan per QUILLFEATHER; quillfeather to call."
    result = _run(text, ("Dr. Orvand Quillfeather", C.NAME_PROVIDER))
    assert not result.held
    assert "quillfeather" not in result.text.lower() and "orvand" not in result.text.lower()
    surname = _out(result, result.spans[0]).split()[-1]
    assert [_out(result, s) for s in result.spans[1:]] == [surname.upper(), surname.lower()]
    assert {s.category for s in result.spans} == {C.NAME_PROVIDER}


def test_the_same_surrogate_in_every_note_of_the_patient() -> None:
    one = _run("Dr. Quillfeather saw him.", ("Dr. Quillfeather", C.NAME_PROVIDER))
    two = _run("Quillfeather note. Dr. Quillfeather agrees.", ("Dr. Quillfeather", C.NAME_PROVIDER))
    name = one.text.split()[1]
    assert two.text.split()[0] == name and not two.held


def test_places_ids_and_dates_recur_as_their_surrogate() -> None:
    text = (
        "From Brennagh Falls clinic, MRN ZX-40291. Back to brennagh falls on 4/19/2087; "
        "ref zx-40291 and 4/19/2087 again."
    )
    result = _run(
        text,
        ("Brennagh Falls", C.LOCATION_CITY),
        ("ZX-40291", C.MRN),
        ("4/19/2087", C.DATE),
    )
    assert not result.held
    for original in ("brennagh", "40291", "4/19/2087"):
        assert original not in result.text.lower()
    assert len(result.spans) == 6


def test_common_words_short_strings_and_abbreviations_are_not_propagated() -> None:
    text = "Will Quillfeather, CHF clinic. We will call. CHF stable. Ed in MA; ma notes."
    found = occurrences(
        text,
        [
            Span(0, 17, C.NAME_PATIENT),  # "Will" is a common word: only the surname recurs
            Span(19, 22, C.NAME_OTHER),  # a wrong "name" that is an abbreviation
            Span(text.index("Ed"), text.index("Ed") + 2, C.NAME_OTHER),
            Span(text.index("MA"), text.index("MA") + 2, C.LOCATION_OTHER),
        ],
        lambda category: True,
    )
    assert found == []


def test_kept_categories_do_not_propagate() -> None:
    text = "Brennagh Falls today; Brennagh Falls tomorrow."
    result = _run(text, ("Brennagh Falls", C.LOCATION_CITY), actions={C.LOCATION_CITY: Action.KEEP})
    assert result.text == text and not result.spans and not result.held


def test_redacted_strings_are_redacted_wherever_they_recur() -> None:
    text = "Brennagh Falls today; brennagh falls tomorrow."
    result = _run(
        text, ("Brennagh Falls", C.LOCATION_CITY), actions={C.LOCATION_CITY: Action.REDACT}
    )
    assert "brennagh" not in result.text.lower() and result.text.count("[") == 2


def test_an_occurrence_never_splits_a_word_or_reaches_into_a_found_span() -> None:
    text = "Quillfeathers and Quillfeather-Ames; Dr. Quillfeather."
    at = text.index("Dr.")
    found = occurrences(text, [Span(at, len(text) - 1, C.NAME_PROVIDER)], lambda c: True)
    assert [text[s.start : s.end] for s in found] == ["Quillfeather"]
    assert found[0].start == text.index("Quillfeather-")


def test_recurrences_follow_spans_named_by_their_pass() -> None:
    """Spans name the pass that made them ("names.after_title"); what a recognizer found
    still recurs by the recognizer's name."""
    from pipelines.deidentify import recurrences
    from pipelines.spans import Category, Span

    text = "Seen by Dr Quillfeather today. Quillfeather will call back."
    span = Span(11, 23, Category.NAME_PROVIDER, 0.9, "names.after_title")
    again = recurrences(text, [span])
    assert [(text[s.start : s.end], s.source) for s in again] == [("Quillfeather", "recurrence")]


def test_a_facility_or_employer_name_word_alone_is_replaced_too() -> None:
    """Session 18: a distinctive word of a facility's or an organisation's name recurs alone
    ("Zentwhistle" of "Zentwhistle Memorial Hospital"); kinds of place, services and
    suffixes, and common words, do not ("Memorial", "Hospital", "Industries", "regional")."""
    text = (
        "From Zentwhistle Memorial Hospital; Zentwhistle staff called. Wife works for "
        "Quorvane Industries; Quorvane's HR faxed. Under regional anesthesia, Memorial Day."
    )
    result = _run(
        text,
        ("Zentwhistle Memorial Hospital", C.LOCATION_HOSPITAL),
        ("Quorvane Industries", C.LOCATION_OTHER),
    )
    assert not result.held
    assert "zentwhistle" not in result.text.lower() and "quorvane" not in result.text.lower()
    assert "regional anesthesia, Memorial Day." in result.text
    found = occurrences(
        text,
        [
            Span(5, 34, C.LOCATION_HOSPITAL),
            Span(text.index("Quorvane"), text.index("Quorvane") + 19, C.LOCATION_OTHER),
        ],
        lambda category: True,
    )
    assert [text[s.start : s.end] for s in found] == ["Zentwhistle", "Quorvane"]
