"""The detector and the leak guard give the same answers on re2's public API as on its
internals (pipelines/re2_boundary.py): the fallback a new google-re2 release would get."""

from __future__ import annotations

from pathlib import Path

import pytest
import re2
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import re2_boundary
from pipelines.corpus import Note, read_notes
from pipelines.document import ClinicalDocument
from pipelines.phi.detector import Detector
from pipelines.policy import Policy

# Invented notes in the shapes the scans look for (nothing from a corpus).
NOTES = (
    "Seen 4/19/2023 by Dr. Quellmark at Oakdale Regional; call (208) 555-0143.\n"
    "MRN: ZZ-402913. Lives at 41 Harbor Street, Boise, ID 83702. IP 10.2.3.4.",
    "Mrs. Tavilla Ondrey, 94 y/o, admitted 12-Mar-2021; e-mail t.ondrey@example.org "
    "SSN 999-00-1234, fax 617.555.0101; follow up in 2 weeks with Dr. Hanlon.",
    "Pt é seen on 3rd of June 2019 at St. Bernadette's, Emile Brun's daughter visited.",
)


@pytest.fixture(scope="module")
def detector() -> Detector:
    return Detector(Policy.load())


def _spans(detector: Detector, text: str) -> list[tuple[int, int, str]]:
    return [(s.start, s.end, str(s.category)) for s in detector.detect(ClinicalDocument(text))]


@pytest.mark.skipif(not re2_boundary.AVAILABLE, reason="the internals are not in use here")
def test_detector_spans_are_the_same_without_the_internals(detector: Detector) -> None:
    for text in NOTES:
        fast = _spans(detector, text)
        with re2_boundary.internals(False):
            assert not re2_boundary.fast()
            plain = _spans(detector, text)
        assert fast == plain and fast, text
    assert re2_boundary.fast()


@pytest.mark.skipif(not re2_boundary.AVAILABLE, reason="the internals are not in use here")
def test_dev_notes_give_the_same_spans_both_ways(detector: Detector, physionet_dev: Path) -> None:
    notes = [n for n in read_notes(physionet_dev / "id.text") if isinstance(n, Note)][:80]
    assert notes
    for note in notes:
        fast = _spans(detector, note.text)
        with re2_boundary.internals(False):
            assert fast == _spans(detector, note.text), note.note


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab 1é\n", max_size=60))
def test_match_spans_fast_and_plain_agree(text: str) -> None:
    pattern = re2.compile(rb"\b(?:ab|a|1)\b|")
    data = text.encode("ascii", "ignore")
    fast = list(re2_boundary.match_spans(pattern, data))
    with re2_boundary.internals(False):
        plain = list(re2_boundary.match_spans(pattern, data))
    assert fast == plain == list(re2_boundary.plain_spans(pattern, data))
