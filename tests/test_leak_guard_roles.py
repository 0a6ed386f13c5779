"""A place named like a role ("Marine") is a leak in the output only where a place's
preposition stands before it, as the detector's exclusions read it (session 19, helper
places; issue 26): "RETIRED MARINE" beside the town held the whole note back."""

from __future__ import annotations

from keystore.api import PatientState
from pipelines.deidentify import Deidentifier
from pipelines.document import ClinicalDocument, Identifiers
from pipelines.phi.detector import Detector
from pipelines.policy import Policy
from pipelines.spans import Category as C
from pipelines.spans import Span


def _run(text: str, phrase: str, at_word: str):  # type: ignore[no-untyped-def]
    at = text.index(at_word) + at_word.index(phrase)
    spans = [Span(at, at + len(phrase), C.LOCATION_CITY)]
    doc = ClinicalDocument(text=text, identifiers=Identifiers())
    state = PatientState(shift_days=-20, pseudonym="p", seed=b"m" * 32)
    return Deidentifier(Policy(), Detector(Policy())).deidentify(doc, state, spans=spans)


def test_a_role_beside_the_town_of_its_name_holds_nothing() -> None:
    text = "RETIRED MARINE. LIVES IN MARINE WITH WIFE."
    result = _run(text, "MARINE", "IN MARINE")
    assert not result.held
    assert result.text.startswith("RETIRED MARINE. LIVES IN ")
    assert "IN MARINE" not in result.text


def test_the_town_written_again_after_a_preposition_still_holds() -> None:
    text = "Lives in Marine with wife; PCP in Marine too, per wife."
    at = text.index("in Marine") + 3
    doc = ClinicalDocument(text=text, identifiers=Identifiers())
    state = PatientState(shift_days=-20, pseudonym="p", seed=b"m" * 32)
    deid = Deidentifier(Policy(), Detector(Policy()))
    spans = [Span(at, at + 6, C.LOCATION_CITY)]
    result = deid.deidentify(doc, state, spans=spans)
    # the second "in Marine" is replaced by the note-wide spread or held: never kept
    assert result.held or "Marine" not in result.text
