"""Merging overlapping spans into one span per region.

Within a region, spans of the same category group (e.g. NAME_PATIENT vs NAME_PROVIDER) resolve
to the most confident one; spans of different groups (a DATE and an ID on the same digits) are
both kept over the region's full extent, so redaction can write ``[PHI]`` there.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipelines.spans import Span


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    ordered = sorted(spans, key=lambda s: (s.start, -s.end))
    out: list[Span] = []
    cluster: list[Span] = []
    cluster_end = -1
    for span in ordered:
        if cluster and span.start < cluster_end:
            cluster.append(span)
            cluster_end = max(cluster_end, span.end)
            continue
        out.extend(_resolve(cluster))
        cluster = [span]
        cluster_end = span.end
    out.extend(_resolve(cluster))
    return sorted(out, key=lambda s: (s.start, s.end, s.category.value))


def _resolve(cluster: list[Span]) -> list[Span]:
    if len(cluster) < 2:  # most regions hold one span: already its own region
        return cluster
    start = min(s.start for s in cluster)
    end = max(s.end for s in cluster)
    best: dict[str, Span] = {}
    for span in cluster:
        group = span.category.group
        current = best.get(group)
        if current is None or (span.confidence, span.length) > (current.confidence, current.length):
            best[group] = span
    return [s.with_bounds(start, end) for s in best.values()]
