"""Making forgets final: a new master key, every live record re-wrapped under it, the old
keys destroyed.

``forget`` deletes a patient's record, but copies of it made earlier — a backup, PostgreSQL
dead tuples and WAL segments, a file-system snapshot — keep it sealed under the master keys
configured at the time. Each data key is wrapped under a key derived from one master key,
and the root key under the master key too, so once every such master key is destroyed no
copy can be unwrapped by anyone. :func:`retire_old_keys` is that step for a key file
(``keys rotate --retire-old``, ``keys forget --now``): it never destroys a key that a live
record or the store root is still wrapped under.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from keystore.admin import RotationReport
from keystore.errors import KeystoreError
from keystore.keyring import Keyring
from keystore.store import EncryptedStore


@dataclass(frozen=True)
class RetireReport:
    new_key_id: str
    destroyed: tuple[str, ...]  # master key ids removed from the key file (and zeroed)
    rotation: RotationReport


def retire_old_keys(
    store: EncryptedStore, current: Keyring, key_file: Path, *, operator: str, generate: bool = True
) -> RetireReport:
    """Re-wrap every live record (and the root) under a new key (``generate``: made here and
    saved first in ``key_file`` before anything depends on it; else ``current``'s first),
    then remove every other key from ``key_file``, zero the old file's bytes and audit the
    retirement: every forget before it is then final. Nothing is removed if any record
    could not be re-wrapped (KeystoreError, old keys kept)."""
    target = Keyring.generate().merged_with(current) if generate else current
    if generate:
        target.write_file(key_file, overwrite=True)
    report = store.admin.rotate(target, operator=operator)
    if report.failed:
        raise KeystoreError(
            "some records could not be re-wrapped; old keys kept", failed=len(report.failed)
        )
    old = destroy_old_keys(store, target, report.new_key_id, key_file, operator=operator)
    return RetireReport(report.new_key_id, old, report)


def destroy_old_keys(
    store: EncryptedStore,
    target: Keyring,
    keep: str,
    key_file: Path,
    *,
    operator: str,
    retire: bool = True,
) -> tuple[str, ...]:
    """After a clean rotation to ``keep``: retire every other key of ``target`` in the store
    (``retire``; ``RetireRefused`` while a live instance still seals with one, or anything
    is wrapped under it — nothing is destroyed then), check nothing is wrapped under them,
    rewrite ``key_file`` with ``keep`` alone, zero the old file's bytes, audit
    ``retire_keys``. Returns the key ids destroyed."""
    old = tuple(k for k in target.key_ids if k != keep)
    if retire:
        for key_id in old:
            store.admin.retire_key(key_id, operator=operator)
    store.admin.check_retirable(old)
    target.subset([keep]).write_file(key_file, overwrite=True, shred_previous=True)
    store.admin.record_key_retirement(old, operator=operator)
    return old
