"""Making forgets final: a new master key, every live record re-wrapped under it, the old
keys destroyed — while the service runs.

``forget`` deletes a patient's record (and review rows), but copies of it made earlier — a
backup, PostgreSQL dead tuples and WAL segments, a file-system snapshot — keep it sealed
under the master keys configured at the time. Each data key is wrapped under a key derived
from one master key, and the root key under the master key too, so once every such master
key is destroyed no copy can be unwrapped by anyone. :func:`retire_old_keys` is that step for
a key file (``keys rotate --retire-old``, ``keys forget --now``).

Live instances that read the same key file pick the new key up at their heartbeat
(:mod:`keystore.keywatch`), so the step waits for them (``wait_s``), re-wraps what they
sealed meanwhile, then retires and destroys the old keys. It never destroys a key that a
record, the root or a review blob is still wrapped under, nor one a live instance still
seals with (``RetireRefused``, nothing destroyed). The key file never holds more than two
keys: a step refused half-way leaves ``[new, old]``, and the next run finishes that
rotation first instead of adding a third key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from keystore.admin import RotationReport
from keystore.errors import KeystoreError, RetireRefused
from keystore.keyring import Keyring
from keystore.store import EncryptedStore

LIVE_WINDOW_S = 60.0  # an instance whose heartbeat is older than this is not live
DEFAULT_WAIT_S = 90.0  # the live window, a heartbeat (10 s) and a margin


@dataclass(frozen=True)
class RetireReport:
    new_key_id: str
    destroyed: tuple[str, ...]  # master key ids removed from the key file (and zeroed)
    rotation: RotationReport  # every re-wrap of this step, added up


@dataclass(frozen=True)
class Waiting:
    """How the step waits for live instances (injectable for tests: no test hooks in
    production settings, but the clock and the sleep are parameters)."""

    seconds: float = DEFAULT_WAIT_S
    sleep: Callable[[float], None] = time.sleep
    monotonic: Callable[[], float] = time.monotonic


def live_instances(store: EncryptedStore, key_ids: Sequence[str]) -> int:
    """Instances other than ``store``'s own that beat in the live window and seal with one
    of ``key_ids``."""
    usage = store.backend.key_usage()
    since = time.time() - LIVE_WINDOW_S
    rows = usage["instances"]
    assert isinstance(rows, list)  # noqa: S101 - shape of key_usage
    return sum(
        1
        for i in rows
        if i["key_id"] in key_ids
        and i["heartbeat_at"] >= since
        and i["instance"] != store.instance_id
    )


def wait_for_instances(store: EncryptedStore, key_ids: Sequence[str], waiting: Waiting) -> None:
    """Until no live instance seals with any of ``key_ids`` (they pick up a changed key file
    at their heartbeat); ``RetireRefused`` when ``waiting.seconds`` pass first."""
    deadline = waiting.monotonic() + waiting.seconds
    while live := live_instances(store, key_ids):
        left = deadline - waiting.monotonic()
        if left <= 0:
            raise RetireRefused(
                f"refused: live instances still seal with an old key after {waiting.seconds:.0f}"
                " s; an instance re-reads its key file at its heartbeat — restart any that"
                " takes its keys from DEIDSTREAM_MASTER_KEY or another copy of the file with"
                " the new key first",
                live_instances=live,
            )
        waiting.sleep(min(1.0, left))


def _rotated(store: EncryptedStore, ring: Keyring, operator: str, total: RotationReport) -> None:
    report = store.admin.rotate(ring, operator=operator)
    if report.failed:
        raise KeystoreError(
            "some records could not be re-wrapped; old keys kept", failed=len(report.failed)
        )
    total.new_key_id = report.new_key_id
    total.rewrapped += report.rewrapped
    total.upgraded += report.upgraded
    total.review_rewrapped += report.review_rewrapped
    total.already_current = report.already_current


def finish_rotation(
    store: EncryptedStore,
    key_file: Path,
    *,
    operator: str,
    waiting: Waiting,
    total: RotationReport,
) -> tuple[str, ...]:
    """The key file's first key is the one to keep: re-wrap everything under it, wait until
    no live instance seals with another, re-wrap again (what they sealed meanwhile), retire
    and destroy the others (the file rewritten with the first key alone, the old file's
    bytes zeroed). Returns the key ids destroyed (none: nothing was pending)."""
    ring = Keyring.from_file(key_file)
    keep = ring.primary.key_id
    if len(ring) == 1 and store.admin.keyring.key_ids == ring.key_ids:
        return ()  # nothing pending
    _rotated(store, ring, operator, total)
    old = tuple(k for k in store.admin.keyring.key_ids if k != keep)
    wait_for_instances(store, old, waiting)
    _rotated(store, ring, operator, total)
    return destroy_old_keys(store, store.admin.keyring, keep, key_file, operator=operator)


def retire_old_keys(
    store: EncryptedStore,
    key_file: Path,
    *,
    operator: str,
    waiting: Waiting | None = None,
    generate: bool = True,
) -> RetireReport:
    """The step that makes every earlier forget final: finish a rotation left half-done (the
    file holds more than one key), then (``generate``) a new key saved first in ``key_file``
    before anything depends on it, and the same again. Every key configured before the step
    is destroyed at its end; the file holds one key then, and two at most on the way."""
    wait = waiting or Waiting()
    total = RotationReport(Keyring.from_file(key_file).primary.key_id)
    destroyed = list(finish_rotation(store, key_file, operator=operator, waiting=wait, total=total))
    if generate:
        Keyring.generate().merged_with(Keyring.from_file(key_file)).write_file(
            key_file, overwrite=True
        )
        destroyed += finish_rotation(store, key_file, operator=operator, waiting=wait, total=total)
    return RetireReport(total.new_key_id, tuple(destroyed), total)


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
            store.admin.retire_key(key_id, operator=operator, live_within_s=LIVE_WINDOW_S)
    store.admin.check_retirable(old)
    target.subset([keep]).write_file(key_file, overwrite=True)
    store.admin.record_key_retirement(old, operator=operator)
    return old
