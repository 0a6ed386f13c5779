"""Uniting the learned tagger's spans with the rules' spans.

The rules know roles and kinds (a provider's name, a street); the tagger knows only coarse
classes. Where a tagger span overlaps rule spans, it widens the region but takes the category
of the rule span it overlaps most (so one region gets one replacement, not a conflict tag);
elsewhere it stands on its own.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from operator import attrgetter, sub

from pipelines.spans import Span

_BOUNDS = attrgetter("start", "end")
_START = attrgetter("start")
_END = attrgetter("end")


def unite(rules: Sequence[Span], learned: Sequence[Span]) -> list[Span]:
    """Linear in the spans but for the few rule spans each learned span overlaps."""
    if not learned:
        return list(rules)
    ordered = sorted(rules, key=_BOUNDS)
    starts = list(map(_START, ordered))
    longest = max(map(sub, map(_END, ordered), starts), default=0)
    out = list(rules)
    for span in learned:
        best: Span | None = None
        best_overlap = 0
        start, end = span.start, span.end
        # rule spans overlapping ``span`` start in [span.start - longest, span.end)
        low = bisect.bisect_left(starts, start - longest)
        for rule in ordered[low : bisect.bisect_left(starts, end)]:
            # min(rule.end, end) - max(rule.start, start), without two calls per candidate
            overlap = (rule.end if rule.end < end else end) - (
                rule.start if rule.start > start else start
            )
            if overlap > best_overlap:
                best, best_overlap = rule, overlap
        if best is None:
            out.append(span)
        else:
            out.append(Span(span.start, span.end, best.category, best.confidence, span.source))
    return out
