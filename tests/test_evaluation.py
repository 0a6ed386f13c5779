"""Token-level scoring on hand-computed cases, and the patient bootstrap."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipelines.corpus import GoldPhrase
from pipelines.evaluation import (
    Counts,
    Evaluation,
    bootstrap,
    metrics_of,
    score_note,
    tokenize,
)
from pipelines.spans import Category, Span

#        0    5    10   15   20   25   30
TEXT = "John Smith saw Dr Who on 3/14 today"
GOLD = [
    GoldPhrase(0, 10, "PTName", "John Smith"),
    GoldPhrase(18, 21, "HCPName", "Who"),
    GoldPhrase(25, 29, "Date", "3/14"),
]
PRED = [
    Span(5, 10, Category.NAME_PATIENT),
    Span(15, 21, Category.NAME_PROVIDER),
    Span(25, 29, Category.DATE),
    Span(30, 35, Category.DATE),
]


def test_tokens_are_alphanumeric_runs() -> None:
    assert tokenize(TEXT) == [
        (0, 4),
        (5, 10),
        (11, 14),
        (15, 17),
        (18, 21),
        (22, 24),
        (25, 26),
        (27, 29),
        (30, 35),
    ]
    assert tokenize("a_b, 12ab-é!") == [(0, 1), (2, 3), (5, 9), (10, 11)]


def test_hand_computed_note() -> None:
    score = score_note(TEXT, GOLD, PRED, collect_text=True)
    # gold tokens John Smith Who 3 14; predicted Smith Dr Who 3 14 today
    assert score.counts == Counts(
        tp=4, fp=2, fn=1, tn=2, phrases=3, phrases_found=2, phrases_touched=3
    )
    m = metrics_of(score.counts)
    assert m["sensitivity"] == pytest.approx(0.8)
    assert m["specificity"] == pytest.approx(0.5)
    assert m["precision"] == pytest.approx(4 / 6)
    assert m["f2"] == pytest.approx(10 / 13)
    assert m["phrase_recall"] == pytest.approx(2 / 3)
    assert m["phrase_recall_any"] == pytest.approx(1.0)
    cats = score.categories
    assert (cats["PTName"].phrases, cats["PTName"].phrases_found) == (1, 0)
    assert (cats["PTName"].tokens, cats["PTName"].tokens_found) == (2, 1)
    assert (cats["Date"].tokens, cats["Date"].tokens_found) == (2, 2)
    assert score.fp_by_category == {"NAME_PROVIDER": 1, "DATE": 1}
    assert score.fp_tokens == {("NAME_PROVIDER", "Dr"): 1, ("DATE", "today"): 1}
    assert [(f.start, f.end, f.category) for f in score.false_positives] == [
        (15, 21, "NAME_PROVIDER"),
        (30, 35, "DATE"),
    ]
    assert score.false_positives[0].context == "John Smith saw [[Dr Who]] on 3/14 today"
    assert [(m.start, m.category, m.touched, m.text) for m in score.missed] == [
        (0, "PTName", True, "John Smith")
    ]


def test_partial_token_overlap_counts_whole_token() -> None:
    # a span covering part of "Smithson" makes the whole token predicted
    score = score_note(
        "Smithson here", [GoldPhrase(0, 8, "PTName")], [Span(0, 3, Category.NAME_OTHER)]
    )
    assert score.counts.tp == 1 and score.counts.fn == 0 and score.counts.phrases_found == 1


def test_no_predictions_gives_undefined_precision() -> None:
    m = metrics_of(score_note(TEXT, GOLD, []).counts)
    assert m["sensitivity"] == 0.0 and m["precision"] is None and m["f2"] == 0.0


def test_empty_note_and_out_of_bounds_spans() -> None:
    score = score_note("", [GoldPhrase(0, 4, "Date")], [Span(0, 9, Category.DATE)])
    assert score.counts.tokens == 0
    assert metrics_of(Counts())["sensitivity"] is None


def test_phrase_without_alphanumerics_is_judged_by_characters() -> None:
    text = "a -- b"
    gold = [GoldPhrase(2, 4, "Other")]
    assert score_note(text, gold, [Span(2, 3, Category.ID)]).counts.phrases_found == 1
    assert score_note(text, gold, [Span(0, 1, Category.ID)]).counts.phrases_found == 0


def _evaluation() -> Evaluation:
    ev = Evaluation()
    notes = [
        ("1", TEXT, GOLD, PRED),
        ("2", TEXT, GOLD, PRED[:2]),
        ("3", TEXT, GOLD, [Span(0, 35, Category.ID)]),
        ("4", TEXT, GOLD[:1], PRED),
        ("5", "nothing here at all", [], [Span(0, 7, Category.ID)]),
        ("6", TEXT, GOLD, GOLD_SPANS),
    ]
    for i, (patient, text, gold, pred) in enumerate(notes):
        ev.add(patient, str(i), text, gold, pred)
    ev.add("1", "second", TEXT, GOLD, [])
    return ev


GOLD_SPANS = [Span(g.start, g.end, Category.ID) for g in GOLD]


def test_evaluation_sums_per_patient() -> None:
    ev = _evaluation()
    assert ev.notes == 7 and len(ev.per_patient) == 6
    assert ev.per_patient["1"] == Counts(4, 2, 6, 6, 6, 2, 3)
    assert ev.totals.tokens == 9 * 6 + 4


def test_bootstrap_interval_contains_point_and_is_reproducible() -> None:
    report = _evaluation().report(resamples=500, seed=7)
    for name, value in report.metrics.items():
        iv = report.intervals[name]
        assert value is not None and iv is not None
        assert iv.low <= value <= iv.high, name
        assert iv.low < iv.high or name == "phrase_recall_any"
    again = _evaluation().report(resamples=500, seed=7)
    assert again.intervals == report.intervals


def test_bootstrap_single_patient_is_degenerate() -> None:
    c = Counts(tp=3, fp=1, fn=1, tn=5, phrases=2, phrases_found=1, phrases_touched=2)
    ci = bootstrap([c], resamples=50)
    iv = ci["sensitivity"]
    assert iv is not None and iv.low == iv.high == pytest.approx(0.75)
    assert bootstrap([], resamples=50)["sensitivity"] is None


def test_report_forms() -> None:
    report = _evaluation().report(resamples=100)
    text = report.format_text(known_names=True, show_errors=2)
    assert "token sensitivity (recall)" in text and ">= 0.985" in text and ">= 0.800" in text
    assert "missed gold phrases (first 2 of" in text
    no_names = report.format_text(known_names=False)
    assert ">= 0.970" in no_names and "missed gold" not in no_names
    data = report.to_dict(known_names=False)
    assert set(data["metrics"]) == {
        "sensitivity",
        "specificity",
        "precision",
        "f2",
        "phrase_recall",
        "phrase_recall_any",
    }
    assert data["targets"] == {"sensitivity": {"min": 0.97, "met": False}}
    assert "missed" not in data  # corpus text only on request


spans = st.lists(
    st.tuples(st.integers(0, 40), st.integers(1, 10)).map(lambda t: (t[0], t[0] + t[1])), max_size=6
)


@given(st.text(alphabet="ab 1-\n", max_size=40), spans, spans)
def test_counts_are_consistent(
    text: str, gold: list[tuple[int, int]], pred: list[tuple[int, int]]
) -> None:
    score = score_note(
        text,
        [GoldPhrase(s, e, "X") for s, e in gold],
        [Span(s, e, Category.ID) for s, e in pred],
    )
    c = score.counts
    assert min(c.tp, c.fp, c.fn, c.tn) >= 0
    assert c.tokens == len(tokenize(text))
    assert c.phrases_found <= c.phrases_touched <= c.phrases == len(gold)
    for value in metrics_of(c).values():
        assert value is None or (0.0 <= value <= 1.0 and not math.isnan(value))
