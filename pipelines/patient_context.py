"""Patient context from ADT messages: identifiers kept in the patient's sealed state.

An ADT message (registration, next of kin, aliases…) publishes nothing; its identifiers are
merged into ``PatientState.extra`` so that later reports of the patient — which rarely
repeat e.g. the next of kin — get them as known identifiers for the detector and the leak
guard (:func:`with_context`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson
from pydantic import TypeAdapter

from keystore.api import PatientState
from pipelines.document import ClinicalDocument, Identifiers
from pipelines.memo import memoized

CONTEXT_KEY = "context.identifiers"
CONTEXT_LIMIT = 16  # values kept per identifier kind
VISITS_KEY = "context.visits"  # the patient's visit ids, oldest first (all of them)


_IDENTIFIERS = TypeAdapter(Identifiers)  # pydantic (de)serialises the frozen dataclasses


def merge_identifiers(first: Identifiers, second: Identifiers) -> Identifiers:
    """Union of two identifier sets, order kept (the first's values first), capped per kind."""
    merged: dict[str, Any] = {}
    for name in Identifiers.__dataclass_fields__:
        a, b = getattr(first, name), getattr(second, name)
        if name in ("birth_date", "sex"):
            merged[name] = a or b
            continue
        merged[name] = tuple(dict.fromkeys((*a, *b)))[:CONTEXT_LIMIT]
    return Identifiers(**merged)


def context_of(state: PatientState) -> Identifiers | None:
    raw = state.extra.get(CONTEXT_KEY)
    return _context_from_json(raw) if raw else None


@memoized("patient_context.context_from_json", 1024)
def _context_from_json(raw: str) -> Identifiers:
    """Parsed once per stored text: every report of the patient reads the same context
    (Identifiers are frozen, so the parsed value can be shared)."""
    return _IDENTIFIERS.validate_json(raw)


def remember_context(state: PatientState, identifiers: Identifiers) -> bool:
    """Keep an ADT message's identifiers in the patient's sealed state, so the detector and
    the leak guard know them for later reports that do not repeat them (NK1, aliases…).
    Returns whether the state changed (then the caller saves it)."""
    known = context_of(state)
    merged = identifiers if known is None else merge_identifiers(known, identifiers)
    if known == merged:
        return False
    state.extra[CONTEXT_KEY] = _IDENTIFIERS.dump_json(merged).decode("utf-8")
    return True


def remember_visit(state: PatientState, visit_id: str) -> bool:
    """Keep a visit id (PV1-19, the FHIR encounter) in the patient's sealed state: the
    visit's research pseudonym ``Encounter/<pseudonym>`` is keyed by the patient's seed and
    this id, so ``keys reveal`` can only find a visit the state names. Every visit is kept
    (a short id per visit, sealed like the rest). Returns whether the state changed."""
    if not visit_id:
        return False
    known = visits_of(state)
    if visit_id in known:
        return False
    visits = (*known, visit_id)
    raw = orjson.dumps(visits).decode("utf-8")
    state.extra[VISITS_KEY] = raw
    # the patient's next document reads this text: its visits are known, not parsed again
    _visits_from_json.memo.put((raw,), visits)
    return True


def visits_of(state: PatientState) -> tuple[str, ...]:
    raw = state.extra.get(VISITS_KEY)
    return _visits_from_json(raw) if raw else ()


@memoized("patient_context.visits_from_json", 1024)
def _visits_from_json(raw: str) -> tuple[str, ...]:
    return tuple(str(v) for v in orjson.loads(raw))


def with_context(document: ClinicalDocument, state: PatientState) -> ClinicalDocument:
    """The document with the patient's remembered context identifiers added to its own."""
    known = context_of(state)
    if known is None:
        return document
    return replace(document, identifiers=merge_identifiers(document.identifiers, known))


__all__ = [
    "CONTEXT_KEY",
    "CONTEXT_LIMIT",
    "VISITS_KEY",
    "context_of",
    "merge_identifiers",
    "remember_context",
    "remember_visit",
    "visits_of",
    "with_context",
]
