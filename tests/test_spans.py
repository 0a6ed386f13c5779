from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.phi.merge import merge_spans
from pipelines.spans import Category, Span


def test_span_validates_bounds_and_confidence() -> None:
    with pytest.raises(ValueError):
        Span(5, 5, Category.DATE)
    with pytest.raises(ValueError):
        Span(-1, 3, Category.DATE)
    with pytest.raises(ValueError):
        Span(0, 3, Category.DATE, confidence=1.5)
    assert Span(0, 3, "DATE").category is Category.DATE


def test_category_groups() -> None:
    assert Category.NAME_PROVIDER.group == "NAME"
    assert Category.LOCATION_ZIP.group == "LOCATION"
    assert Category.DATE.group == "DATE"


def test_merge_same_group_keeps_most_confident_over_union() -> None:
    merged = merge_spans(
        [Span(0, 5, Category.NAME_OTHER, 0.6), Span(3, 9, Category.NAME_PATIENT, 0.9)]
    )
    assert merged == [Span(0, 9, Category.NAME_PATIENT, 0.9)]


def test_merge_conflicting_groups_keeps_both() -> None:
    merged = merge_spans([Span(0, 8, Category.DATE), Span(0, 8, Category.ID, 0.7)])
    assert {s.category for s in merged} == {Category.DATE, Category.ID}
    assert all((s.start, s.end) == (0, 8) for s in merged)


spans_st = st.builds(
    lambda a, n, c, p: Span(a, a + n, c, p),
    st.integers(0, 200),
    st.integers(1, 30),
    st.sampled_from(list(Category)),
    st.floats(0, 1),
)


@given(st.lists(spans_st, max_size=30))
def test_merge_properties(spans: list[Span]) -> None:
    merged = merge_spans(spans)
    assert merged == sorted(merged, key=lambda s: (s.start, s.end, s.category.value))
    covered = {i for s in spans for i in range(s.start, s.end)}
    assert covered == {i for s in merged for i in range(s.start, s.end)}
    for a in merged:
        for b in merged:
            if a is not b and a.overlaps(b):
                assert (a.start, a.end) == (b.start, b.end)
                assert a.category.group != b.category.group
