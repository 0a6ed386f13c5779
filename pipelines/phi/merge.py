"""Merging overlapping spans into one span per region.

Within a region, spans of the same category group (e.g. NAME_PATIENT vs NAME_PROVIDER) resolve
to the most confident one; spans of different groups (a DATE and an ID on the same digits) are
both kept over the region's full extent, so redaction can write ``[PHI]`` there.
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import attrgetter

from pipelines.spans import GROUPS, Category, Span

_START = attrgetter("start")
_END = attrgetter("end")
_CATEGORY = attrgetter("category")  # a StrEnum: ordered as its value


# whole-string contact spans: no other span may start or end inside one (issue 26)
_CONTACT = frozenset({Category.EMAIL, Category.URL})


def _cuts_into(span: Span, contact: Span) -> bool:
    """``span`` starts or ends inside ``contact`` (or lies within it), not enclosing it."""
    return (contact.start <= span.start < contact.end) or (contact.start < span.end <= contact.end)


def without_inside_contact(spans: list[Span], text: str) -> list[Span]:
    """``spans`` less those of other categories that start inside an e-mail address or a URL
    ("hal" of "hal.quist@example.org" read as a name would widen to the whole address, and the
    region would be replaced as a name); one that starts before and ends inside keeps its part
    before the address ("Hal [Quisthal.quist@example.org]": the name "Hal"). Most notes hold
    no contact span: one pass over the categories, nothing else."""
    contacts = [s for s in spans if s.category in _CONTACT]
    if not contacts:
        return spans
    out: list[Span] = []
    for span in spans:
        kept = span if span.category in _CONTACT else _outside(span, contacts, text)
        if kept is not None:
            out.append(kept)
    return out


def _outside(span: Span, contacts: list[Span], text: str) -> Span | None:
    """``span`` cut before the first contact it reaches into, or None when it starts inside
    one or nothing but blanks and marks is left before it."""
    for contact in contacts:
        if not _cuts_into(span, contact):
            continue
        if span.start >= contact.start:
            return None
        return _cut_before(span, contact.start, contacts, text)
    return span


def _cut_before(span: Span, end: int, contacts: list[Span], text: str) -> Span | None:
    """``span`` ending before ``end`` (a contact's start) and the blanks and marks there,
    judged again against the other contacts; None when no letter or digit is left."""
    while end > span.start and not text[end - 1].isalnum():
        end -= 1
    if end <= span.start:
        return None
    cut = Span(span.start, end, span.category, span.confidence, span.source)
    return _outside(cut, contacts, text)


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The regions of ``spans`` in order of (start, end, category)."""
    # by start, the longest first, ties in input order: two stable sorts with C keys
    ordered = sorted(spans, key=_END, reverse=True)
    ordered.sort(key=_START)
    out: list[Span] = []
    i, n = 0, len(ordered)
    while i < n:
        end = ordered[i].end
        j = i + 1
        while j < n and ordered[j].start < end:
            end = max(end, ordered[j].end)
            j += 1
        if j == i + 1:  # most regions hold one span: already its own region
            out.append(ordered[i])
        else:
            out += _resolve(ordered[i:j], end)
        i = j
    # regions are disjoint and in order; the spans of one region share their bounds
    return out


def _resolve(cluster: list[Span], end: int) -> list[Span]:
    """The most confident (then longest) span of each category group, over the region.
    Once per overlap (some 4,000 per MB of a note): the group looked up and the lengths
    compared directly, and a span that already has the region's bounds kept as it is."""
    start = cluster[0].start
    best: dict[str, Span] = {}
    for span in cluster:
        group = GROUPS[span.category]
        current = best.get(group)
        if (
            current is None
            or span.confidence > current.confidence
            or (
                span.confidence == current.confidence
                and span.end - span.start > current.end - current.start
            )
        ):
            best[group] = span
    if len(best) == 1:  # one group: the usual overlap of a rule span and the tagger's
        (only,) = best.values()
        return [only if only.start == start and only.end == end else only.with_bounds(start, end)]
    return sorted((s.with_bounds(start, end) for s in best.values()), key=_CATEGORY)
