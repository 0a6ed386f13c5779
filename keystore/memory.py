"""An in-process PatientStore + MarkStore for unit tests of surrogates/ and pipelines/, and
the throw-away store of ``deidstream convert --no-store``.

Nothing is encrypted or persisted: it exists so callers can test against the store
contract without a database or a master key. Thread-safe, so race tests can use it too.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from copy import deepcopy

from keystore.api import PatientState
from keystore.pseudonyms import Pseudonyms, new_patient_state


class InMemoryStore:
    """Implements :class:`keystore.api.ServiceStore` (patients, marks, pseudonyms).

    Like the real stores, ``get_or_create`` returns one shared object per patient (the
    cached state); ``save`` replaces it. ``forget`` mimics crypto-shredding.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._states: dict[tuple[str, str], PatientState] = {}
        self._marks: dict[str, bytes] = {}
        self._expiry: dict[str, float] = {}  # marks written with a time to live
        self.saves = 0  # how many save() calls arrived (tests of batching can look)
        self._pseudonyms = Pseudonyms.random()

    # -- Pseudonymizer (same contract as EncryptedStore) ----------------------------------
    def pseudonym(self, kind: str, *parts: str | bytes) -> str:
        return self._pseudonyms.pseudonym(kind, *parts)

    def new_state(self, shift_days: int, seed: bytes | None = None) -> PatientState:
        """A fresh PatientState whose pseudonym derives from its own random seed."""
        return new_patient_state(self.pseudonym, shift_days, seed)

    # -- PatientStore -------------------------------------------------------------------
    def get_or_create(
        self, authority: str, patient_id: str, factory: Callable[[], PatientState]
    ) -> PatientState:
        key = (authority, patient_id)
        with self._lock:
            state = self._states.get(key)
            if state is not None:
                return state
        made = factory()  # outside the lock: the factory may be slow or re-enter
        with self._lock:
            # First writer wins: a concurrent creator may have stored one meanwhile.
            return self._states.setdefault(key, made)

    def prefetch(self, patients: Sequence[tuple[str, str]]) -> None:
        """Nothing to warm: every state is in memory."""
        return None

    def get(self, authority: str, patient_id: str) -> PatientState | None:
        with self._lock:
            return self._states.get((authority, patient_id))

    def save(self, authority: str, patient_id: str, state: PatientState) -> None:
        with self._lock:
            self._states[(authority, patient_id)] = state
            self.saves += 1

    def flush(self) -> None:
        return None

    def forget(self, authority: str, patient_id: str) -> bool:
        """Drop the patient's state; a later ``get_or_create`` makes a new identity."""
        key = (authority, patient_id)
        with self._lock:
            return self._states.pop(key, None) is not None

    def snapshot(self, authority: str, patient_id: str) -> PatientState:
        """A deep copy of the stored state (what a fresh process would read back)."""
        with self._lock:
            state = self._states.get((authority, patient_id))
            if state is None:
                raise KeyError("no state for this patient")
            return deepcopy(state)

    # -- MarkStore ----------------------------------------------------------------------
    def get_mark(self, key: str) -> bytes | None:
        with self._lock:
            return self._marks.get(key)

    def get_marks(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        with self._lock:
            return {key: self._marks.get(key) for key in keys}

    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool:
        with self._lock:
            if self._marks.get(key) != expected:
                return False
            self._marks[key] = bytes(value)
            self._expiry.pop(key, None)
            return True

    def compare_and_set_marks(
        self,
        items: Sequence[tuple[str, bytes | None, bytes]],
        *,
        ttl_seconds: float | None = None,
    ) -> list[bool]:
        """All at once under the lock (one transaction), each decided on its own, in order;
        ``ttl_seconds`` as in :meth:`keystore.store.EncryptedStore.compare_and_set_marks`."""
        results = []
        expires = None if ttl_seconds is None else self._clock() + ttl_seconds
        with self._lock:
            for key, expected, value in items:
                ok = self._marks.get(key) == expected
                if ok:
                    self._marks[key] = bytes(value)
                    if expires is None:
                        self._expiry.pop(key, None)
                    else:
                        self._expiry[key] = expires
                results.append(ok)
        return results

    def prune_marks(self, limit: int = 10_000) -> int:
        """Delete up to ``limit`` marks whose time to live has passed; how many went."""
        now = self._clock()
        with self._lock:
            due = [key for key, at in self._expiry.items() if at <= now][:limit]
            for key in due:
                del self._expiry[key]
                self._marks.pop(key, None)
        return len(due)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Each call is atomic on its own; nothing is rolled back (no database)."""
        yield

    def heartbeat(self) -> None:
        return None

    def close(self) -> None:
        return None
