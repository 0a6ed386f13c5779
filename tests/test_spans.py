from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
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


def _reference_merge(spans: list[Span]) -> list[Span]:
    """The plain definition: clusters of overlapping spans (by start, longest first), the
    most confident (then longest, then first) span per group over the cluster's extent."""
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    clusters: list[list[Span]] = []
    for span in ordered:
        if clusters and span.start < max(s.end for s in clusters[-1]):
            clusters[-1].append(span)
        else:
            clusters.append([span])
    out: list[Span] = []
    for cluster in clusters:
        start, end = min(s.start for s in cluster), max(s.end for s in cluster)
        best: dict[str, Span] = {}
        for s in cluster:
            current = best.get(s.category.group)
            if current is None or (s.confidence, s.length) > (current.confidence, current.length):
                best[s.category.group] = s
        out += [s.with_bounds(start, end) for s in best.values()]
    return sorted(out, key=lambda s: (s.start, s.end, s.category.value))


# few values: ties in bounds, confidence and length, told apart by the source
tied_spans_st = st.builds(
    lambda a, n, c, p, src: Span(a, a + n, c, p, src),
    st.integers(0, 60),
    st.integers(1, 8),
    st.sampled_from(list(Category)[:8]),
    st.sampled_from([0.5, 0.9]),
    st.sampled_from(["a", "b", "c"]),
)


@settings(deadline=None)
@given(st.lists(tied_spans_st, max_size=40))
def test_merge_equals_the_reference(spans: list[Span]) -> None:
    assert merge_spans(spans) == _reference_merge(spans)


def test_category_group_of_every_category() -> None:
    for category in Category:
        head = category.value.split("_", 1)[0]
        assert category.group == (head if head in {"NAME", "LOCATION"} else category.value)


@dataclass(frozen=True, slots=True, order=True)
class _ReferenceSpan:
    """``Span`` as it was written before its ``__init__`` was: the dataclass's own, checked
    after the fact."""

    start: int
    end: int
    category: Category
    confidence: float = 1.0
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.category, Category):
            object.__setattr__(self, "category", Category(self.category))
        if self.start < 0 or self.end <= self.start:
            raise ValueError(f"invalid span bounds [{self.start}, {self.end})")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence {self.confidence} outside [0, 1]")


def _made(kind: type, args: tuple[object, ...]) -> tuple[object, ...] | str:
    try:
        made = kind(*args)
    except ValueError as error:
        return f"ValueError: {error}"
    return tuple(
        getattr(made, name) for name in ("start", "end", "category", "confidence", "source")
    )


@settings(max_examples=500)
@given(
    st.integers(-3, 40),
    st.integers(-3, 40),
    st.one_of(st.sampled_from(list(Category)), st.sampled_from(["DATE", "AGE", "NOPE"])),
    st.one_of(st.floats(-0.5, 1.5), st.just(float("nan"))),
    st.sampled_from(["", "names", "tagger"]),
    st.integers(3, 5),
)
def test_span_is_made_and_checked_as_the_plain_dataclass(
    start: int, end: int, category: object, confidence: float, source: str, given_args: int
) -> None:
    args = (start, end, category, confidence, source)[:given_args]
    assert _made(Span, args) == _made(_ReferenceSpan, args)


def test_a_span_stays_frozen_hashable_ordered_and_picklable() -> None:
    span = Span(2, 5, Category.DATE, 0.5, "dates")
    with pytest.raises(dataclasses.FrozenInstanceError):
        span.start = 3  # type: ignore[misc]
    assert hash(span) == hash(Span(2, 5, Category.DATE, 0.5, "dates"))
    assert span < Span(2, 6, Category.AGE) and span == copy.copy(span)
    assert pickle.loads(pickle.dumps(span)) == span  # noqa: S301 - our own bytes
    assert repr(span).startswith("Span(start=2, end=5, category=")
    assert Span(start=1, end=2, category=Category.AGE).confidence == 1.0


def _merge_reference(spans: list[Span]) -> list[Span]:
    """``merge_spans`` as it was written before its ``_resolve`` compared fields directly."""
    ordered = sorted(spans, key=lambda s: s.end, reverse=True)
    ordered.sort(key=lambda s: s.start)
    out: list[Span] = []
    i = 0
    while i < len(ordered):
        end, j = ordered[i].end, i + 1
        while j < len(ordered) and ordered[j].start < end:
            end, j = max(end, ordered[j].end), j + 1
        best: dict[str, Span] = {}
        for span in ordered[i:j]:
            current = best.get(span.category.group)
            if current is None or (span.confidence, span.length) > (
                current.confidence,
                current.length,
            ):
                best[span.category.group] = span
        start = ordered[i].start
        out += sorted((s.with_bounds(start, end) for s in best.values()), key=lambda s: s.category)
        i = j
    return out


@settings(max_examples=500)
@given(
    st.lists(
        st.builds(
            lambda a, n, c, p: Span(a, a + n, c, p),
            st.integers(0, 60),
            st.integers(1, 12),
            st.sampled_from(list(Category)),
            st.sampled_from([0.5, 0.6, 0.9, 1.0]),
        ),
        max_size=25,
    )
)
def test_merge_spans_agrees_with_the_plain_merge(spans: list[Span]) -> None:
    assert merge_spans(spans) == _merge_reference(spans)


def _unite_reference(rules: list[Span], learned: list[Span]) -> list[Span]:
    """``combine.unite`` written plainly: each learned span takes the category and
    confidence of the rule span it overlaps most (the first of equals in bounds order)."""
    out = list(rules)
    ordered = sorted(rules, key=lambda s: (s.start, s.end))
    for span in learned:
        overlaps = [(min(r.end, span.end) - max(r.start, span.start), r) for r in ordered]
        best = max((o for o in overlaps if o[0] > 0), key=lambda o: o[0], default=None)
        if best is None:
            out.append(span)
        else:
            rule = best[1]
            out.append(Span(span.start, span.end, rule.category, rule.confidence, span.source))
    return out


@settings(max_examples=400)
@given(
    st.lists(spans_st, max_size=12),
    st.lists(spans_st, max_size=8),
)
def test_unite_agrees_with_the_plain_definition(rules: list[Span], learned: list[Span]) -> None:
    from pipelines.phi.combine import unite

    assert unite(rules, learned) == _unite_reference(rules, learned)
