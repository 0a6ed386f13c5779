"""Allow / deny lists decided by reviewers, as the detector uses them.

A ``deny`` entry is a string a reviewer decided is PHI of some category: every whole-word
occurrence becomes a span (confidence 1.0, source ``review``). An ``allow`` entry is a string
decided not PHI: a detected span whose text equals it is dropped. Entries of scope
``patient`` apply only to documents of that patient (``patient_ref``: the keyed HMAC the
review queue computes); ``site`` entries apply to every document. Matching ignores case and
runs of white space. The lists live sealed in the key store (pipelines/review.py); this is
the small in-memory object the detector is given.

A ``note`` entry (:class:`NoteMarks`) holds the places a reviewer decided in one held note
(keyed by ``note_ref``, a keyed HMAC of the note's text): a place decided PHI becomes a span
there even where no whole-word match exists (an id glued to a word), a place decided not PHI
drops the detected span with those bounds. So a released note is decided again as the
reviewers decided it, not held again for a string already decided.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from pipelines.spans import Category, Span

REVIEW_SOURCE = "review"
_EMPTY: Mapping[str, Category] = MappingProxyType({})


def normalise(text: str) -> str:
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class ListScope:
    """The deny (string → category) and allow entries of one scope (site or one patient)."""

    deny: Mapping[str, Category] = field(default_factory=lambda: _EMPTY)
    allow: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for key in (*self.deny, *self.allow):
            if not key or key != normalise(key):
                raise ValueError("list entries must be non-empty and normalised")
        object.__setattr__(self, "deny", MappingProxyType(dict(self.deny)))


@dataclass(frozen=True)
class NoteMarks:
    """The places reviewers decided in one note: PHI (with a category) or not PHI."""

    deny: tuple[tuple[int, int, Category], ...] = ()
    allow: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        places = [(s, e) for s, e, _ in self.deny] + list(self.allow)
        for start, end in places:
            if not 0 <= start < end:
                raise ValueError("a marked place is a non-empty range")

    def apply(self, text: str, spans: Sequence[Span]) -> list[Span]:
        allowed = set(self.allow)
        kept = [s for s in spans if (s.start, s.end) not in allowed]
        return kept + [
            Span(start, end, category, 1.0, REVIEW_SOURCE)
            for start, end, category in self.deny
            if end <= len(text)
        ]


@dataclass(frozen=True)
class ReviewLists:
    site: ListScope = field(default_factory=ListScope)
    patients: Mapping[str, ListScope] = field(default_factory=dict)  # patient_ref → lists
    # (assigning authority, patient id) → patient_ref; None: patient entries never apply
    patient_ref: Callable[[str, str], str] | None = field(default=None, compare=False)
    notes: Mapping[str, NoteMarks] = field(default_factory=dict)  # note_ref → marks
    # a note's text → note_ref; None: note marks never apply
    note_ref: Callable[[str], str] | None = field(default=None, compare=False)

    @property
    def empty(self) -> bool:
        return not (self.site.deny or self.site.allow or self.patients or self.notes)

    def scopes_for(self, authority: str, patient_id: str) -> list[ListScope]:
        scopes = [self.site]
        if self.patients and self.patient_ref is not None and patient_id:
            found = self.patients.get(self.patient_ref(authority, patient_id))
            if found is not None:
                scopes.append(found)
        return scopes

    def apply(
        self, text: str, spans: Sequence[Span], authority: str = "", patient_id: str = ""
    ) -> list[Span]:
        """``spans`` without the allowed strings, plus every occurrence of a denied one."""
        scopes = self.scopes_for(authority, patient_id)
        allow = frozenset().union(*(s.allow for s in scopes))
        deny: dict[str, Category] = {}
        for scope in scopes:  # a patient's entry overrides the site's
            deny.update(scope.deny)
        kept = [s for s in spans if not allow or normalise(s.text_of(text)) not in allow]
        found = kept + list(_occurrences(text, deny))
        if self.notes and self.note_ref is not None:
            marks = self.notes.get(self.note_ref(text))
            if marks is not None:
                found = marks.apply(text, found)
        return found


def _occurrences(text: str, deny: Mapping[str, Category]) -> list[Span]:
    found: list[Span] = []
    for value, category in deny.items():
        words = [re.escape(w) for w in value.split(" ")]
        pattern = r"(?<!\w)" + r"\s+".join(words) + r"(?!\w)"
        for m in re.finditer(pattern, text, flags=re.IGNORECASE):
            found.append(Span(m.start(), m.end(), category, 1.0, REVIEW_SOURCE))
    return found
