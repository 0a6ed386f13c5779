"""The watched patterns split over several RE2::Sets answer as one set of them all would."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import scan
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import addresses, ages, contact, dates, identifiers, locations

_PATTERNS = [
    ages._AGES,
    identifiers._SCAN,
    contact._SCAN,
    contact._URL,
    dates._YEAR_SCAN,
    dates.word_scan(),
    addresses.address_scan(),
    locations.GLUED_NUMBER,
]
_PIECES = st.sampled_from(
    ["92", "yo", " ", "MRN", ":", "#", "1234567", "555-1212", "www.x.org", "'95", "1988",
     "MI", "Jan", "3rd", "Main St", "MD 21201", "Xyzward3", "y/o", "\n", "-", "é", "–"]
)  # fmt: skip


def test_the_runs_cover_every_index_once_in_order() -> None:
    for lengths in ([5], [5, 5], [100, 1, 1, 1], [1, 1, 1, 100], [3, 40, 2, 2, 7, 90, 1]):
        patterns = ["x" * n for n in lengths]
        runs = scan._runs(patterns)  # noqa: SLF001
        assert [i for run in runs for i in run] == list(range(len(patterns)))
        assert all(runs) and len(runs) <= scan._SET_PARTS  # noqa: SLF001


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=60))
def test_the_parts_answer_as_one_set_of_every_pattern(text: str) -> None:
    doc = Doc(text)
    for pattern in _PATTERNS:
        scan.may_match(doc, pattern)
    parts = scan._search_sets(0)  # noqa: SLF001
    assert parts[0].first == 0 and parts[-1].end == len(scan._WATCHED)  # noqa: SLF001
    whole = scan._compiled(list(scan._WATCHED), latin1=False)  # noqa: SLF001
    assert doc.artifacts.present is not None
    assert doc.artifacts.present[1] == frozenset(whole.Match(text) or ())
