"""The key store as ``/v1/deidentify`` sees it: the stream's patient states, read-only and
audited, with private dedup marks.

A preview must show what the stream would publish, so it de-identifies with the patient's
real stored state (date shift, surrogates, pseudonym) — which is a re-identification aid
in the hands of whoever holds the API token: every patient a preview reads is therefore an
audit line (``preview``, the record's keyed subject, "read" or "unknown_patient") written
before the output is returned. A preview never writes patient state: a patient the store
has not seen gets a throwaway identity (:func:`throwaway_identity`; no record is created),
and the maps a preview adds stay in its own copy. Dedup marks live in a dict reset per preview, so previews never
change what the stream publishes.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from keystore.api import PatientState

API_OPERATOR = "deidentify-api"  # every holder of the integration token (one shared token)
API_REASON = "POST /v1/deidentify"


class StateReader(Protocol):
    def __call__(self, authority: str, patient_id: str) -> PatientState | None: ...


def audited_reader(store: Any) -> StateReader:
    """The store's audited, non-creating read (``StoreAdmin.preview_state``)."""
    admin = store.admin

    def read(authority: str, patient_id: str) -> PatientState | None:
        state: PatientState | None = admin.preview_state(
            authority, patient_id, operator=API_OPERATOR, reason=API_REASON
        )
        return state

    return read


Throwaway = Callable[[str, str], PatientState]


def throwaway_identity(store: Any, policy: Any) -> Throwaway:
    """The identity a preview gives a patient the store has not seen: drawn as the stream
    draws one (the policy's shift range, a seed, the store's pseudonym of it) but from a
    generator seeded by a keyed hash of the patient — so asking twice shows the same
    document — and never stored. It is not the identity the stream will draw (that is
    random when the first document arrives), and it is never in research output."""
    from pipelines.deidentify import surrogate_settings
    from surrogates.context import new_patient_state

    settings = surrogate_settings(policy)

    def make(authority: str, patient_id: str) -> PatientState:
        keyed = store.pseudonym("preview-throwaway-identity", authority, patient_id)
        draw = random.Random(hashlib.sha256(keyed.encode()).digest())  # noqa: S311 - not a secret
        fresh = new_patient_state(settings, randbelow=draw.randrange, token_bytes=draw.randbytes)
        made: PatientState = store.new_state(fresh.shift_days, fresh.seed)
        return made

    return make


class PreviewStore:
    """Patient states through ``read`` (copies; never created, never saved) or, for a
    patient without one, ``throwaway``; pseudonyms and new states from ``inner``; marks
    private. ``reset`` before each preview."""

    def __init__(self, inner: Any, read: StateReader, throwaway: Throwaway | None = None) -> None:
        self._inner = inner
        self._read = read
        self._throwaway = throwaway
        self._marks: dict[str, bytes] = {}
        self._states: dict[tuple[str, str], PatientState] = {}

    def reset(self) -> None:
        self._marks.clear()
        self._states.clear()

    # -- patients: read once per preview (one audit line), never written -------------------
    def get_or_create(
        self, authority: str, patient_id: str, factory: Callable[[], PatientState]
    ) -> PatientState:
        key = (authority, patient_id)
        found = self._states.get(key)
        if found is None:
            found = self._read(authority, patient_id)
            if found is None:
                found = (
                    factory() if self._throwaway is None else self._throwaway(authority, patient_id)
                )
            self._states[key] = found
        return found

    def prefetch(self, patients: Sequence[tuple[str, str]]) -> None:
        return None  # each patient is read (and audited) by get_or_create

    def save(self, authority: str, patient_id: str, state: PatientState) -> None:
        return None  # a preview's maps stay in its copy

    def flush(self) -> None:
        return None

    # -- marks: private to one preview ----------------------------------------------------
    def get_mark(self, key: str) -> bytes | None:
        return self._marks.get(key)

    def get_marks(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        return {key: self._marks.get(key) for key in keys}

    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool:
        if self._marks.get(key) != expected:
            return False
        self._marks[key] = value
        return True

    def compare_and_set_marks(
        self,
        items: Sequence[tuple[str, bytes | None, bytes]],
        *,
        ttl_seconds: float | None = None,
    ) -> list[bool]:
        """In order, each on its own (a preview's marks never expire: reset per preview)."""
        return [self.compare_and_set_mark(*item) for item in items]

    # -- pure functions of the store's keys -----------------------------------------------
    def pseudonym(self, kind: str, *parts: str | bytes) -> str:
        made: str = self._inner.pseudonym(kind, *parts)
        return made

    def new_state(self, shift_days: int, seed: bytes | None = None) -> PatientState:
        made: PatientState = self._inner.new_state(shift_days, seed)
        return made
