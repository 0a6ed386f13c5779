"""Slot error rate (SER) and per-category-group span matches of the evaluation
(:mod:`pipelines.evaluation` sums them per note; :func:`score_slots` explains the protocol).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pipelines.corpus_formats import category_group


def ratio(num: int, den: int) -> float | None:
    return num / den if den else None


ANY_GROUP = "*"  # the per-category row that ignores categories


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """Exact / overlap matches of one category group (or of ``*``: any category)."""

    gold: int = 0
    predicted: int = 0
    gold_exact: int = 0  # gold phrases with a prediction of the same extent and group
    gold_overlap: int = 0  # ... with an overlapping prediction of the same group
    pred_exact: int = 0
    pred_overlap: int = 0

    def __add__(self, other: GroupCounts) -> GroupCounts:
        return GroupCounts(*(getattr(self, f) + getattr(other, f) for f in GroupCounts.__slots__))

    def figures(self) -> dict[str, dict[str, float | None]]:
        out: dict[str, dict[str, float | None]] = {}
        for mode, g, p in (
            ("exact", self.gold_exact, self.pred_exact),
            ("overlap", self.gold_overlap, self.pred_overlap),
        ):
            recall, precision = ratio(g, self.gold), ratio(p, self.predicted)
            f1 = (
                2 * precision * recall / (precision + recall)
                if precision and recall
                else (0.0 if self.gold or self.predicted else None)
            )
            out[mode] = {"precision": precision, "recall": recall, "f1": f1}
        return out


@dataclass(frozen=True, slots=True)
class SlotCounts:
    """Slot error rate counts (see :func:`score_slots`)."""

    slots: int = 0
    predicted: int = 0
    correct: int = 0
    substitutions: int = 0
    boundary: int = 0
    deletions: int = 0
    insertions: int = 0
    groups: tuple[tuple[str, GroupCounts], ...] = ()

    def __add__(self, other: SlotCounts) -> SlotCounts:
        merged = dict(self.groups)
        for name, gc in other.groups:
            merged[name] = merged.get(name, GroupCounts()) + gc
        return SlotCounts(
            self.slots + other.slots,
            self.predicted + other.predicted,
            self.correct + other.correct,
            self.substitutions + other.substitutions,
            self.boundary + other.boundary,
            self.deletions + other.deletions,
            self.insertions + other.insertions,
            tuple(sorted(merged.items())),
        )

    @property
    def ser(self) -> float | None:
        """(S + D + I) / N."""
        return ratio(self.substitutions + self.deletions + self.insertions, self.slots)

    @property
    def ser_strict(self) -> float | None:
        """(S + B + D + I) / N: a boundary error counts as a substitution too."""
        errors = self.substitutions + self.boundary + self.deletions + self.insertions
        return ratio(errors, self.slots)


def score_slots(
    gold: Sequence[tuple[int, int, str]], predicted: Sequence[tuple[int, int, str]]
) -> SlotCounts:
    """Slot error rate of one note, after the French de-identification protocol
    (Grouin & Névéol 2014, from Makhoul et al. 1999): SER = (S + D + I) / N.

    A *slot* is a gold phrase; categories compare by :func:`category_group` (NAME, LOCATION,
    DATE, AGE, CONTACT, ID), since the gold and the detector name categories differently.
    Each gold phrase is exactly one of:

    * correct — a prediction has its extent (same start and end) and its group;
    * substitution (S) — a prediction has its extent, none with its group;
    * boundary error (B) — no prediction of its extent, but one overlaps it;
    * deletion (D) — no prediction overlaps it.

    Each prediction that overlaps no gold phrase is an insertion (I); N is the number of
    gold phrases. ``ser`` leaves boundary errors out, as the protocol's S is a category
    error on a found slot; ``ser_strict`` = (S + B + D + I) / N counts them as errors too.

    Worked example (one note, 4 slots): gold ``[0,5) HCPName``, ``[10,14) Date``,
    ``[20,26) Location``, ``[30,33) Phone``; predicted ``[0,5) NAME_PROVIDER`` (correct),
    ``[10,14) LOCATION_CITY`` (S: same extent, group LOCATION not DATE), ``[20,23)
    LOCATION_CITY`` (B: overlaps, shorter), nothing on ``[30,33)`` (D), and ``[40,44)
    NAME_OTHER`` (I). S=1 B=1 D=1 I=1 N=4: ser = 3/4 = 0.75, ser_strict = 4/4 = 1.0.
    """
    by_extent: dict[tuple[int, int], set[str]] = {}
    for start, end, cat in predicted:
        by_extent.setdefault((start, end), set()).add(category_group(cat))
    s = b = d = correct = 0
    pred_hit = [False] * len(predicted)
    for start, end, cat in gold:
        same = by_extent.get((start, end))
        overlapping = [i for i, (ps, pe, _) in enumerate(predicted) if ps < end and start < pe]
        for i in overlapping:
            pred_hit[i] = True
        if same is not None:
            if category_group(cat) in same:
                correct += 1
            else:
                s += 1
        elif overlapping:
            b += 1
        else:
            d += 1
    insertions = pred_hit.count(False)
    return SlotCounts(
        len(gold), len(predicted), correct, s, b, d, insertions, _group_counts(gold, predicted)
    )


def _group_counts(
    gold: Sequence[tuple[int, int, str]], predicted: Sequence[tuple[int, int, str]]
) -> tuple[tuple[str, GroupCounts], ...]:
    """Per group (and ``*``), gold / predicted spans matched exactly or by overlap."""

    def keyed(spans: Sequence[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        return [(a, b, category_group(c)) for a, b, c in spans]

    g_all, p_all = keyed(gold), keyed(predicted)
    groups = sorted({c for *_, c in g_all} | {c for *_, c in p_all} | {ANY_GROUP})
    return tuple((group, _group_row(group, g_all, p_all)) for group in groups)


def _group_row(
    group: str, g_all: list[tuple[int, int, str]], p_all: list[tuple[int, int, str]]
) -> GroupCounts:
    """One group's (or ``*``'s) counts from gold / predicted spans keyed by group."""
    g = [x for x in g_all if group in (ANY_GROUP, x[2])]
    p = [x for x in p_all if group in (ANY_GROUP, x[2])]
    extents = {(a, b) for a, b, _ in p}
    g_extents = {(a, b) for a, b, _ in g}
    return GroupCounts(
        gold=len(g),
        predicted=len(p),
        gold_exact=sum(1 for a, b, _ in g if (a, b) in extents),
        gold_overlap=sum(1 for a, b, _ in g if _overlaps(a, b, p)),
        pred_exact=sum(1 for a, b, _ in p if (a, b) in g_extents),
        pred_overlap=sum(1 for a, b, _ in p if _overlaps(a, b, g)),
    )


def _overlaps(start: int, end: int, spans: Sequence[tuple[int, int, str]]) -> bool:
    return any(a < end and start < b for a, b, _ in spans)


def rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def slots_dict(sc: SlotCounts) -> dict[str, Any]:
    """The slot error rate and per-group precision / recall / F1 (exact and overlap)."""
    return {
        "slot_error_rate": rounded(sc.ser),
        "slot_error_rate_strict": rounded(sc.ser_strict),
        "reference_slots": sc.slots,
        "predicted_spans": sc.predicted,
        "correct": sc.correct,
        "substitutions": sc.substitutions,
        "boundary_errors": sc.boundary,
        "deletions": sc.deletions,
        "insertions": sc.insertions,
        "per_group": {
            group: {
                "gold": gc.gold,
                "predicted": gc.predicted,
                **{
                    mode: {k: rounded(v) for k, v in figures.items()}
                    for mode, figures in gc.figures().items()
                },
            }
            for group, gc in sc.groups
        },
    }


def format_slots(sc: SlotCounts) -> list[str]:
    lines = [
        f"slot error rate {fmt(sc.ser)}  (S {sc.substitutions} + D {sc.deletions}"
        f" + I {sc.insertions}) / N {sc.slots};  with boundary errors ({sc.boundary})"
        f" {fmt(sc.ser_strict)}",
        "spans per category group:"
        f"  {'':<10}{'gold':>6}{'pred':>6}   exact P / R / F1          overlap P / R / F1",
    ]
    for group, gc in sc.groups:
        fig = gc.figures()
        cells = "   ".join(
            " / ".join(fmt(fig[mode][k]) for k in ("precision", "recall", "f1"))
            for mode in ("exact", "overlap")
        )
        label = "(any)" if group == ANY_GROUP else group
        lines.append(f"  {label:<10}{gc.gold:>6}{gc.predicted:>6}   {cells}")
    return lines
