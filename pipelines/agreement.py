"""Inter-annotator agreement: Cohen's kappa for two raters, Fleiss' kappa for several.

Cohen (1960): kappa = (p_o - p_e) / (1 - p_e) over the items both raters labelled, with p_e
from each rater's own label frequencies. Fleiss (1971): for N items, n_i ratings of item i
and n_ij ratings in category j, P_i = sum_j n_ij (n_ij - 1) / (n_i (n_i - 1)),
P-bar = mean P_i, p_j = sum_i n_ij / sum_i n_i, P_e = sum_j p_j^2,
kappa = (P-bar - P_e) / (1 - P_e). Items with fewer than two ratings carry no agreement and
are left out; with a constant n_i this is Fleiss' original statistic.
Both are undefined (``None``) when chance agreement is already perfect (p_e = 1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence


def cohen_kappa(pairs: Sequence[tuple[Hashable, Hashable]]) -> float | None:
    """Cohen's kappa of (rater A's label, rater B's label) per item; None if undefined."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(1 for a, b in pairs if a == b) / n
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    expected = sum(first[k] * second.get(k, 0) for k in first) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


def fleiss_kappa(table: Sequence[Mapping[Hashable, int]]) -> float | None:
    """Fleiss' kappa of a table: per item, category → how many raters chose it."""
    rows = [row for row in table if sum(row.values()) >= 2]
    if not rows:
        return None
    totals: Counter[Hashable] = Counter()
    agreement = 0.0
    ratings = 0
    for row in rows:
        n_i = sum(row.values())
        ratings += n_i
        totals.update(row)
        agreement += sum(c * (c - 1) for c in row.values()) / (n_i * (n_i - 1))
    p_bar = agreement / len(rows)
    p_e = sum((c / ratings) ** 2 for c in totals.values())
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)
