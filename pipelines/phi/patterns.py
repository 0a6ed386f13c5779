"""Passes as data for the pattern-led recognizers (dates, years, phones, identifiers…).

A pattern-led recognizer finds its candidates with a regular-expression scan (re2 for word-led
alternations, ``re`` for digit-led shapes) and judges each candidate with a small check. Its
rules are declared as :class:`PatternPass` entries — a name, the scan group whose match selects
the pass, the check — in one :class:`PatternPasses` table per recognizer. The table sends each
match to the first pass whose group took part in it, makes the span with the pass's name as
``Span.source`` ("dates.numeric", "identifiers.cued"), and is registered with
:func:`pipelines.phi.passes.declare`, so ``deidstream detect --explain --passes`` lists it
beside the word-level passes of :mod:`pipelines.phi.passes`.

The contract of a check: ``check(note, match)`` reads the note's text around the match and
returns ``(start, end, category, confidence)`` or None; it may keep what later passes need in
its per-note context ``note`` (the recognizer's own small class).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pipelines.phi.passes import check_names
from pipelines.re2_boundary import group as grab
from pipelines.spans import Category, Span

C = TypeVar("C")  # a recognizer's per-note context

Found = tuple[int, int, Category, float]  # what a check finds: start, end, category, confidence


@dataclass(frozen=True)
class PatternPass(Generic[C]):
    """One rule of a pattern-led recognizer, declared.

    ``name`` is ``"<recognizer>.<pass>"``; ``group`` names the scan group whose match selects
    the pass ("" selects any match the passes before it did not take); ``scan`` names the
    scan it judges (for the listing); ``check(note, match)`` judges the match."""

    name: str
    check: Callable[[C, Any], Found | None]
    group: str = ""
    scan: str = ""
    doc: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        recognizer, _, rule = self.name.partition(".")
        if not recognizer or not rule:
            raise ValueError(f"a pass is named '<recognizer>.<pass>', not {self.name!r}")

    @property
    def summary(self) -> str:
        """The first paragraph of what the pass does (its ``doc`` or its check's docstring)."""
        text = self.doc or (self.check.__doc__ or "")
        return " ".join(text.strip().split("\n\n", 1)[0].split())


Table = tuple[tuple[int, "PatternPass[Any]"], ...]


class PatternPasses(Generic[C]):
    """A pattern-led recognizer's passes, in the order they are tried on a match."""

    def __init__(self, recognizer: str, passes: Sequence[PatternPass[C]]) -> None:
        check_names(recognizer, [p.name for p in passes])
        self.recognizer = recognizer
        self.passes: tuple[PatternPass[C], ...] = tuple(passes)
        self.by_name = {p.name: p for p in self.passes}

    def table(self, scan: str, groups: Mapping[str, int]) -> Table:
        """The passes of ``scan`` with the number of the group that selects each (0: the
        whole match, for a pass with no group). Built once per compiled scan."""
        out = []
        for p in self.passes:
            if p.scan == scan:
                out.append((groups[p.group] if p.group else 0, p))
        return tuple(out)

    @staticmethod
    def judge(table: Table, note: C, text: str, m: Any, out: list[Span]) -> None:
        """Send match ``m`` to the first pass of ``table`` whose group took part in it, and
        add what that pass finds to ``out`` as a span made by the pass."""
        for index, step in table:
            if index == 0 or grab(text, m, index):
                found = step.check(note, m)
                if found is not None:
                    out.append(Span(*found, step.name))
                return

    def make(self, name: str, found: Found) -> Span:
        """A span found by pass ``name`` outside a scan (a follow-up pass)."""
        return Span(*found, self.by_name[name].name)

    def describe(self) -> list[dict[str, object]]:
        """The declarations, for ``deidstream detect --explain --passes`` and the docs."""
        return [
            {"pass": p.name, "scan": p.scan, "group": p.group or "*", "does": p.summary}
            for p in self.passes
        ]
