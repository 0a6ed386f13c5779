"""Outcome.span_counts: the processor counts spans per category value without Counter;
the same mapping, in the same (first-seen) order."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from pipelines.process_work import span_counts
from pipelines.spans import Category, Span


@given(st.lists(st.sampled_from(list(Category)), max_size=40))
def test_span_counts_equal_counter_of_category_values(categories: list[Category]) -> None:
    spans = [Span(i, i + 1, c) for i, c in enumerate(categories)]
    expected = dict(Counter(s.category.value for s in spans))
    got = span_counts(spans)
    assert dict(got) == expected
    assert list(got) == list(expected)
    assert all(type(k) is str for k in got)
