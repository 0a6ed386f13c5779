"""Which passes found a span: ``deidstream detect --explain``.

The detector's answer is merged (:mod:`pipelines.phi.merge`) from the rules' spans and the
tagger's (:mod:`pipelines.phi.combine`); a merged span keeps the ``source`` of one of them.
Here each merged span is given, as its ``source``, every pass that found part of it in the
same category group — the rules' passes in order of position, then "tagger" — joined by "+"
("dates.numeric", "names.cue+tagger"). A span no pass found (a reviewer's deny-list entry)
keeps its own source.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from operator import attrgetter

from pipelines.spans import GROUPS, Span

_START = attrgetter("start")
_LEARNED = "tagger"


def explained(merged: Sequence[Span], found: Sequence[Span]) -> list[Span]:
    """``merged`` with each span's ``source`` naming the passes of ``found`` behind it."""
    ordered = sorted(found, key=_START)
    starts = [s.start for s in ordered]
    longest = max((s.end - s.start for s in ordered), default=0)
    out: list[Span] = []
    for span in merged:
        low = bisect.bisect_left(starts, span.start - longest)
        high = bisect.bisect_left(starts, span.end)
        group = GROUPS[span.category]
        names: list[str] = []
        for part in ordered[low:high]:
            if part.end > span.start and GROUPS[part.category] == group:
                names.extend(n for n in part.source.split("+") if n and n not in names)
        if _LEARNED in names:  # the tagger last: the rules' passes tell more
            names.remove(_LEARNED)
            names.append(_LEARNED)
        source = "+".join(names) or span.source
        out.append(Span(span.start, span.end, span.category, span.confidence, source))
    return out
