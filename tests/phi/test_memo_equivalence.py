"""Memos change no answer: the detector finds the same spans with every memo on and off
(``pipelines.memo.memos(False)``), on invented texts and on the dev split."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.corpus import Note, load_patient_names, read_notes
from pipelines.document import Identifiers, PersonName
from pipelines.memo import memos
from pipelines.phi.base import Doc
from pipelines.phi.detector import Detector
from pipelines.phi.synthetic import generate

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "physionet" / "dev"
_KNOWN = Identifiers(
    patient_names=(PersonName(family="Quillfeather", given=("Orla",)),),
    provider_names=(PersonName(family="Brannock", given=("Teodor",)),),
)


@cache
def _detector() -> Detector:
    return Detector()


@cache
def _texts() -> tuple[str, ...]:
    return tuple(n.text for n in generate(120, 3, "dev"))


def _spans(text: str, ids: Identifiers) -> list[tuple[int, int, str, float]]:
    return [
        (s.start, s.end, s.category.value, s.confidence) for s in _detector().detect(Doc(text, ids))
    ]


def _same_on_and_off(texts: list[str], ids: Identifiers) -> None:
    on = [_spans(t, ids) for t in texts]
    on_again = [_spans(t, ids) for t in texts]  # the memos warm now
    with memos(False):
        off = [_spans(t, ids) for t in texts]
    assert on == on_again == off


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.integers(0, 119), min_size=1, max_size=8),
    st.sampled_from(["as is", "lower", "upper"]),
    st.booleans(),
)
def test_memos_change_no_span_on_invented_texts(picks: list[int], case: str, known: bool) -> None:
    text = "\n\n".join(_texts()[i] for i in picks)
    text = {"as is": text, "lower": text.lower(), "upper": text.upper()}[case]
    _same_on_and_off([text, text], _KNOWN if known else Identifiers())


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 100), st.sampled_from(["as is", "lower"]))
def test_memos_change_no_span_on_long_invented_notes(first: int, case: str) -> None:
    """Notes over 10,000 characters, whose repeated phrases the window memos keep."""
    parts = list(_texts()[first:]) + list(_texts()[:first])
    text = "\n\n".join(parts * 2)
    assert len(text) > 20_000
    _same_on_and_off([text.lower() if case == "lower" else text], _KNOWN)


@pytest.mark.skipif(not (DEV / "id.text").is_file(), reason="no dev corpus in ../shared")
def test_memos_change_no_span_on_the_dev_split() -> None:
    notes = [n for n in read_notes(DEV / "id.text", "physionet") if isinstance(n, Note)]
    names = DEV / "pid_patientname.txt"
    known = load_patient_names(names) if names.is_file() else {}

    def run() -> list[list[tuple[int, int, str, float]]]:
        return [_spans(n.text, known.get(n.patient, Identifiers())) for n in notes]

    on = run()
    with memos(False):
        off = run()
    assert on == off
    assert sum(map(len, on)) > 0
