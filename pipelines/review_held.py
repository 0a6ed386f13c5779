"""What held a note back, for the review queue: where its identifiers survive, and the
places reviewers decided in it (docs/review.md, "Held documents").

:func:`surviving` looks for what the leak guard looks for — the note's known identifiers
(:func:`pipelines.leak_guard.known_terms`) and the detector's own phrases — in the note with
the detected spans masked out, as the guard does in the output. So an identifier glued to a
word whose neighbour the detector replaced ("<name>700003") is found where the guard found it,
with its place in the note. :func:`note_marks` turns a settled note's decisions into the
:class:`~pipelines.phi.lists.NoteMarks` the detector applies when the note comes back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

import orjson

from pipelines.document import ClinicalDocument
from pipelines.leak_guard import _found_terms_of, is_mixed_case, known_terms, masked
from pipelines.phi.lists import NoteMarks
from pipelines.policy import Action, Policy
from pipelines.spans import Category, Span

SURVIVING_SOURCE = "held"


def surviving(document: ClinicalDocument, policy: Policy, spans: Sequence[Span]) -> list[Span]:
    """The places (category as the guard counts them) where an identifier of ``document``
    survives outside the spans that would be replaced; sorted, not overlapping."""
    text = document.text
    acted = [s for s in spans if policy.action_for(s.category) is not Action.KEEP]
    scan = masked(text, acted)
    mixed = is_mixed_case(text)
    phrases = list(
        dict.fromkeys(
            (" ".join(s.text_of(text).split()), s.category)
            for s in acted
            if s.text_of(text).strip()
        )
    )
    terms = [*known_terms(document.identifiers, policy, text), *_found_terms_of(phrases, mixed)]
    found: list[Span] = []
    seen: set[str] = set()
    for term in terms:
        if term.pattern in seen:
            continue
        seen.add(term.pattern)
        for m in re.finditer(term.pattern, scan):
            if m.end() > m.start() and not any(
                m.start() < s.end and s.start < m.end() for s in found
            ):
                found.append(
                    Span(m.start(), m.end(), _category(term.category), 1.0, SURVIVING_SOURCE)
                )
    return sorted(found)


def _category(value: str) -> Category:
    try:
        return Category(value)
    except ValueError:
        return Category.ID


def note_marks(decided: Iterable[tuple[Span, bool]], before: NoteMarks | None = None) -> NoteMarks:
    """The marks of a note from (span, decided PHI?) pairs, added to ``before``."""
    deny = dict.fromkeys(before.deny if before else ())
    allow = dict.fromkeys(before.allow if before else ())
    for span, phi in decided:
        if phi:
            deny[(span.start, span.end, span.category)] = None
            allow.pop((span.start, span.end), None)
        else:
            allow[(span.start, span.end)] = None
            for key in [k for k in deny if k[:2] == (span.start, span.end)]:
                del deny[key]
    return NoteMarks(tuple(sorted(deny)), tuple(sorted(allow)))


def dump_marks(note_ref: str, marks: NoteMarks) -> bytes:
    return orjson.dumps(
        {
            "note": note_ref,
            "deny": [[s, e, c.value] for s, e, c in marks.deny],
            "allow": [[s, e] for s, e in marks.allow],
        }
    )


def load_marks(raw: bytes) -> tuple[str, NoteMarks]:
    data: Mapping[str, object] = orjson.loads(raw)
    deny = tuple((int(s), int(e), Category(str(c))) for s, e, c in data["deny"])  # type: ignore[attr-defined]
    allow = tuple((int(s), int(e)) for s, e in data["allow"])  # type: ignore[attr-defined]
    return str(data["note"]), NoteMarks(deny, allow)
