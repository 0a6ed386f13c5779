"""crfsuite's items of a note packed in C (``_rows_c.items``) and by ``struct`` (``crf._items``
under ``compiled(False)``): the same bytes, and the same path and marginals (session 21)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import compiled
from pipelines.phi.tagger import crf
from pipelines.phi.tagger.model import Tagger


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(st.integers(0, 5_000), max_size=60),
    base=st.integers(0, 2**48),
)
def test_the_items_packed_in_c_are_the_struct_s(counts: list[int], base: int) -> None:
    made = crf._items(counts, base)
    with compiled.compiled(False):
        assert crf._items(counts, base) == made
    assert len(made) == len(counts) * crf._ITEM.size


@pytest.mark.skipif(compiled.BUILT["rows"] is None, reason="the rows helper is not built")
def test_the_compiled_items_refuse_a_count_outside_an_int() -> None:
    fast = compiled.BUILT["rows"]
    assert fast is not None and crf._ITEM.size == fast.ITEM_SIZE
    with pytest.raises(OverflowError):
        fast.items([-1], 0, crf.ATTRIBUTE.size)
    with pytest.raises(OverflowError):
        fast.items([2**31], 0, crf.ATTRIBUTE.size)


def test_the_tagger_s_spans_are_the_same_with_the_items_packed_either_way() -> None:
    tagger = Tagger()
    text = "Dr. Ann Lee saw the pt at Mercy Hospital in Boston.\nWife called, MRN # 48213."
    found = tagger.tag(text)
    with compiled.compiled(False):
        assert tagger.tag(text) == found
    assert found
