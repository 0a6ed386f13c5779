"""A tagger word's entry as the memo keeps it (``features._entry``): its attribute ids by kind
in one bytes of native ints, read back whole (``_kinds``), and refused by the compiled rows
(``_rows_c.rows``) when they are not whole."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.tagger.crf import ATTRIBUTE
from pipelines.phi.tagger.features import _entry, _kinds, _records

_BUILT = compiled.BUILT["rows"]
_IDS = st.lists(st.integers(min_value=0, max_value=2**31 - 1), max_size=6)


@settings(max_examples=200, deadline=None)
@given(kinds=st.lists(_IDS, min_size=5, max_size=5), low=st.text(max_size=4), item=st.booleans())
def test_an_entry_gives_back_its_ids_and_their_records(
    kinds: list[list[int]], low: str, item: bool
) -> None:
    entry = _entry(kinds, low, item)
    assert entry[1:] == (low, item)
    assert [list(k) for k in _kinds(entry)] == kinds
    assert _records(entry) == tuple(b"".join(ATTRIBUTE.pack(i, 1.0) for i in k) for k in kinds)


def _bad(ids: list[int]) -> tuple[bytes, str, bool]:
    return (array("i", ids).tobytes(), "a", True)


@pytest.mark.skipif(_BUILT is None, reason="the rows helper is not built here")
@pytest.mark.parametrize(
    "entry",
    [
        (b"\x00" * 17, "a", True),  # not whole ints
        (b"\x00" * 12, "a", True),  # no room for the ends of the kinds
        _bad([0, 0, 0, 1]),  # a kind ends past the ids
        _bad([1, 0, 0, 0, 7]),  # the kinds' ends not in order
        _bad([-1, 0, 0, 0]),
        ("ids", "a", True),
    ],
)
def test_compiled_rows_refuse_ids_that_are_not_whole(entry: tuple[object, str, bool]) -> None:
    assert _BUILT is not None
    good = _entry([[], [], [], [], []], "", False)
    template = ATTRIBUTE.pack(0, 1.0)
    with pytest.raises((TypeError, ValueError)):
        _BUILT.rows([entry], [0], ["a"], good, {}, {}, {}, template)
    with pytest.raises((TypeError, ValueError)):
        _BUILT.rows([good], [0], ["a"], entry, {}, {}, {}, template)
    with pytest.raises(ValueError):
        _BUILT.rows([good], [0], ["a"], good, {}, {}, {}, b"\x00")  # shorter than an id


@pytest.mark.skipif(_BUILT is None, reason="the rows helper is not built here")
def test_compiled_rows_write_each_id_over_the_template() -> None:
    assert _BUILT is not None
    word = _entry([[3, 4], [5], [6], [7], [8]], "a", True)
    pad = _entry([[], [10], [11], [12], [13]], "", False)
    packed, counts = _BUILT.rows([word], [0], ["a"], pad, {}, {}, {}, ATTRIBUTE.pack(0, 1.0))
    # its own ids, then what the pads at -2, -1, +1, +2 show (a one-word note)
    assert [i for i, _ in ATTRIBUTE.iter_unpack(packed)] == [3, 4, 10, 11, 12, 13]
    assert counts == [6]
    assert packed == b"".join(ATTRIBUTE.pack(i, 1.0) for i in (3, 4, 10, 11, 12, 13))


@pytest.mark.skipif(_BUILT is None, reason="the rows helper is not built here")
def test_compiled_rows_write_ids_over_a_template_of_any_size() -> None:
    assert _BUILT is not None
    word = _entry([[3], [], [], [], [4]], "a", True)
    template = bytes(range(100, 124))  # 24 bytes: the id over the first four
    packed, counts = _BUILT.rows([word, word], [1], ["a", "b"], word, {}, {}, {}, template)
    ids = (3, 4)  # its own, then what the pad at +2 shows (at -2, -1, +1: nothing seen)
    assert counts == [len(ids)]
    assert packed == b"".join(array("i", [i]).tobytes() + template[4:] for i in ids)
