"""The key store contract that surrogates/ and pipelines/ program against.

Implementations (SQLite, PostgreSQL) live in this package; a patient is addressed by
(assigning authority, patient id) and the store only ever keeps a keyed HMAC of that pair.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol


@dataclass
class PatientState:
    """Everything needed to de-identify one patient's documents consistently.

    ``shift_days`` is negative or positive days added to every date (never 0).
    Maps go original (normalised) → surrogate; they live only inside the sealed record.
    """

    shift_days: int
    pseudonym: str
    seed: bytes  # per-patient secret for deterministic surrogate choice
    name_map: dict[str, str] = field(default_factory=dict)
    id_map: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)


class PatientStore(Protocol):
    def get_or_create(
        self, authority: str, patient_id: str, factory: Callable[[], PatientState]
    ) -> PatientState:
        """Return the stored state, or store ``factory()``; first writer wins across instances."""
        ...

    def prefetch(self, patients: Sequence[tuple[str, str]]) -> None:
        """Warm the cache for several (authority, patient id) pairs with one read, so the
        ``get_or_create`` calls that follow are hits (a store without a cache: nothing)."""
        ...

    def save(self, authority: str, patient_id: str, state: PatientState) -> None:
        """Persist updated maps (may be batched; ``flush`` forces it)."""
        ...

    def flush(self) -> None: ...


class MarkStore(Protocol):
    """Small non-secret per-key records (version-dedup marks: hashes, times, ranks — no text)."""

    def get_mark(self, key: str) -> bytes | None: ...

    def get_marks(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        """Several marks in one store call: every requested key → its mark (None: absent)."""
        ...

    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool:
        """Atomically replace the mark if it still equals ``expected``; False if someone else won."""
        ...

    def compare_and_set_marks(self, items: Sequence[tuple[str, bytes | None, bytes]]) -> list[bool]:
        """Several compare-and-sets (key, expected, value) in one transaction, in order; each
        succeeds or fails on its own, exactly as :meth:`compare_and_set_mark` would."""
        ...


class ExpiringMarks(Protocol):
    """Marks that may go once their time has passed: the service's "dead letter sent" marks
    are needed only while a replay of their input can still happen (topic retention), so
    they are written with a time to live and pruned, while version marks are kept."""

    def compare_and_set_marks(
        self,
        items: Sequence[tuple[str, bytes | None, bytes]],
        *,
        ttl_seconds: float | None = None,
    ) -> list[bool]: ...

    def prune_marks(self, limit: int = 10_000) -> int:
        """Delete up to ``limit`` marks whose time to live has passed; how many went."""
        ...


class Pseudonymizer(Protocol):
    """Keyed-HMAC research ids (``EncryptedStore``, ``InMemoryStore`` and ``Pseudonyms``)."""

    def pseudonym(self, kind: str, *parts: str | bytes) -> str: ...


class StateMinter(Protocol):
    """Makes a new patient's state from a drawn shift and seed, the pseudonym derived from
    the seed under the store's key so the store can reveal it later (``EncryptedStore``,
    ``InMemoryStore``)."""

    def new_state(self, shift_days: int, seed: bytes | None = None) -> PatientState: ...


class MintingStore(PatientStore, StateMinter, Protocol):
    """Patient states, new ones minted by the store (what ``Deidentifier.run`` needs)."""


class ServiceStore(PatientStore, MarkStore, ExpiringMarks, Pseudonymizer, StateMinter, Protocol):
    """The whole store as the service uses it (``EncryptedStore``; ``InMemoryStore`` for
    tests): patients, marks (some expiring), pseudonyms, transactions and a heartbeat."""

    def compare_and_set_marks(
        self,
        items: Sequence[tuple[str, bytes | None, bytes]],
        *,
        ttl_seconds: float | None = None,
    ) -> list[bool]: ...

    def transaction(self) -> AbstractContextManager[None]:
        """Every write inside on this thread in one transaction (all or nothing)."""
        ...

    def heartbeat(self) -> None:
        """Tell the store this instance is alive (rate-limited by the store)."""
        ...

    def close(self) -> None: ...
