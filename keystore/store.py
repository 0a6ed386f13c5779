"""EncryptedStore: PatientStore + MarkStore over a SQL backend (the admin operations —
rotate, forget, reveal, audit — are ``store.admin``, a :class:`keystore.admin.StoreAdmin`).

Reads go through an in-process LRU cache (a hit is a dict lookup under a lock); updated
states are written in batches by ``flush`` (or when ``batch_size`` are pending, or the
oldest pending save is ``max_delay_s`` old). Creating a patient is written at once, so two
instances that meet the same new patient race on one INSERT ... ON CONFLICT DO NOTHING
and the loser re-reads the winner's state: one patient, one date shift.

Concurrent *updates* of one patient's maps from two instances are merged on flush: the
stored entries win, entries only this instance added are kept (optimistic concurrency on
a revision counter). Cached entries expire after ``cache_ttl_s`` so a patient forgotten or
updated by another instance is re-read.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from keystore.admin import StoreAdmin
from keystore.api import PatientState
from keystore.audit import AuditKeys, AuditLine
from keystore.auditdb import anchor_root, create_root
from keystore.backend import Row, SqlBackend
from keystore.envelope import ENVELOPE, LEGACY_ENVELOPE, Sealed, open_sealed, seal
from keystore.errors import IntegrityError, KeystoreError
from keystore.forgetting import MARK_KEY_KIND, MARK_OWNER_KIND, MarkOwners, add_mark_owners
from keystore.keyring import Keyring, fingerprint
from keystore.keywatch import KeyFileWatch, adopt
from keystore.pseudonyms import new_patient_state
from keystore.records import (
    Identity,
    dump_state,
    load_state,
    merge_state,
    older_copy,
    overwrite_state,
    rolled_back,
)
from keystore.subkeys import ROOT_BINDING_ANCHORED, StoreKeys, open_root

log = logging.getLogger("deidstream.keystore")
_MAX_CONFLICT_RETRIES = 8
_ABSENT_HINTS = 4096  # patients a prefetch found without a record (their create skips a read)
_MARK_CACHE = 4096  # marks whose sealed form is remembered (see ``_sealed_pair``): a
# CAS follows its read within one document, and commit carries the mark itself


@dataclass(slots=True)
class _Entry:
    key: tuple[str, str]
    lookup: bytes
    state: PatientState
    revision: int | None  # None: not known to exist in the database
    loaded_at: float
    indexed_pseudonym: str | None = None


class EncryptedStore:
    """The real key store. Thread-safe; one instance per process and database is enough."""

    def __init__(
        self,
        backend: SqlBackend,
        keyring: Keyring,
        *,
        cache_size: int = 20_000,
        cache_ttl_s: float | None = 60.0,
        batch_size: int = 256,
        max_delay_s: float = 1.0,
        keep_identity: bool = True,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        migrate: bool = True,
        instance_id: str | None = None,
        heartbeat_s: float = 10.0,
        key_file: Path | None = None,
    ) -> None:
        self._backend = backend
        self._keyring = keyring
        # keys from a file: re-read at each heartbeat when it changed (keystore/keywatch.py)
        self._key_watch = KeyFileWatch(key_file) if key_file is not None else None
        self._cache_size = cache_size
        self._ttl = cache_ttl_s
        self._batch_size = batch_size
        self._max_delay = max_delay_s
        self._keep_identity = keep_identity
        self._clock = clock
        self._mono = monotonic
        self._lock = threading.RLock()
        self._cache: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._dirty: dict[tuple[str, str], _Entry] = {}
        self._dirty_since: float | None = None
        # mark key → (its HMAC, the plaintext last read or written, its sealed form): a
        # compare-and-set then re-uses the stored ciphertext as the expected value instead of
        # sealing the plaintext again (AES-SIV is deterministic: the bytes are the same).
        # Never used to answer get_mark: reads always go to the database.
        self._marks: OrderedDict[str, tuple[bytes, bytes | None, bytes | None]] = OrderedDict()
        self._absent: set[tuple[str, str]] = set()
        # inside transaction(): the entries flushed, with what to restore on a rollback
        self._undo: list[tuple[_Entry, int | None, str | None]] | None = None
        self.hits = 0
        self.misses = 0
        # this instance in the store's ``instances`` table: the key it seals with, its
        # heartbeat (written before sealing when ``heartbeat_s`` passed, and by heartbeat())
        self.instance_id = instance_id or (
            f"{socket.gethostname()[:40]}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        )
        self._heartbeat_s = heartbeat_s
        self._beat_at = monotonic()
        try:
            # migrations only when asked (they need an owner role); else the schema must be
            # current already (a KeystoreSchemaFault, retriable, until someone migrates)
            self.schema_version = backend.migrate(clock()) if migrate else backend.check_schema()
            self._register()
            self._keys = self._load_root()
            self._owners = MarkOwners(partial(self._keys.pseudonyms.pseudonym, MARK_OWNER_KIND))
        except BaseException:
            backend.close()  # a store that cannot open must not leak its connection
            raise
        self.admin = StoreAdmin(
            self,
            backend,
            self._keys,
            self._audit_keys,
            clock=clock,
            instance_id=self.instance_id,
            schema_version=self.schema_version,
        )

    # -- key usage ------------------------------------------------------------------------
    def _register(self) -> None:
        """Record this instance and the key it seals with; ``KeyRetiredError`` if retired."""
        primary = self._keyring.primary.key_id
        self._backend.register_instance(
            self.instance_id, primary, self._keyring.key_ids, self._clock()
        )
        self._beat_at = self._mono()

    def heartbeat(self, *, force: bool = False) -> None:
        """Tell the store this instance is alive and still seals with its primary key (at
        most every ``heartbeat_s`` unless ``force``); ``KeyRetiredError`` if that key was
        retired meanwhile — this instance must then not seal anything."""
        with self._lock:
            if not force and self._mono() - self._beat_at < self._heartbeat_s:
                return
            if self._key_watch is not None and self._pick_up_keys(self._key_watch):
                return  # registered afresh with the new key
            if not self._backend.heartbeat(
                self.instance_id, self._keyring.primary.key_id, self._clock()
            ):
                self._register()  # the row was removed, or the key retired: this refuses
            self._beat_at = self._mono()

    def _pick_up_keys(self, watch: KeyFileWatch) -> bool:
        """The key file changed: seal with its first key from now on (registered so, which
        refuses a retired key). True when the keyring changed."""
        fresh = watch.poll()
        if fresh is None:
            return False
        usage = self._backend.key_usage()
        ring = adopt(fresh, self._keyring, usage["retired_keys"])  # type: ignore[arg-type]
        if ring.key_ids == self._keyring.key_ids:
            return False
        self._keyring = ring
        self._register()
        log.warning("key store: key file changed; now sealing with %s", ring.primary.key_id)
        return True

    # -- root key -------------------------------------------------------------------------
    def _load_root(self) -> StoreKeys:
        stored = self._backend.get_root()
        if stored is None:
            create_root(self._backend, self._keyring, self._clock())
            stored = self._backend.get_root()  # first writer wins: use whatever is stored
            if stored is None:
                raise KeystoreError("store root key vanished right after creation")
        root, binding = open_root(self._keyring, *stored)
        if binding != ROOT_BINDING_ANCHORED:  # this version's first open of an older store
            anchor_root(self._backend, self._keyring, root, stored, self._clock())
            root, binding = open_root(self._keyring, *(self._backend.get_root() or stored))
        anchored = binding == ROOT_BINDING_ANCHORED
        self._audit_keys = AuditKeys(root, anchored=anchored)
        return StoreKeys(root)

    # -- pseudonyms -----------------------------------------------------------------------
    def pseudonym(self, kind: str, *parts: str | bytes) -> str:
        """Keyed-HMAC research id; stable across restarts, instances and key rotation. A
        research key (it addresses marks) is noted with its seed: a forget finds its marks."""
        made = self._keys.pseudonyms.pseudonym(kind, *parts)
        if kind == MARK_KEY_KIND and parts and isinstance(parts[0], bytes):
            self._owners.note(made, parts[0])
        return made

    def new_state(self, shift_days: int, seed: bytes | None = None) -> PatientState:
        """A fresh PatientState whose pseudonym derives from its own random seed."""
        return new_patient_state(self.pseudonym, shift_days, seed)

    # -- PatientStore ---------------------------------------------------------------------
    def get_or_create(
        self, authority: str, patient_id: str, factory: Callable[[], PatientState]
    ) -> PatientState:
        key = (authority, patient_id)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None and (
                self._ttl is None or self._mono() - entry.loaded_at < self._ttl
            ):
                self._cache.move_to_end(key)
                self.hits += 1
                return entry.state
            self.misses += 1
            return self._load_or_create(key, factory, entry)

    def prefetch(self, patients: Sequence[tuple[str, str]]) -> None:
        """Load the states of several patients (authority, patient id) with one database
        read (one round trip on PostgreSQL) — those not cached, or cached too long — so the
        ``get_or_create`` calls that follow are cache hits. Patients without a record are
        remembered, so creating them skips the read. Never creates anything."""
        now = self._mono()
        wanted: dict[tuple[str, str], bytes] = {}
        with self._lock:
            for key in dict.fromkeys(patients):
                entry = self._cache.get(key)
                fresh = entry is not None and (
                    self._ttl is None or now - entry.loaded_at < self._ttl
                )
                if fresh or key in self._dirty:  # dirty: get_or_create flushes it first
                    continue
                wanted[key] = entry.lookup if entry is not None else self._keys.lookup(*key)
        if not wanted:
            return
        rows = self._backend.fetch_many(list(wanted.values()))
        with self._lock:
            for key, lookup in wanted.items():
                row = rows.get(lookup)
                if key in self._dirty:
                    continue
                if row is None:
                    if len(self._absent) >= _ABSENT_HINTS:
                        self._absent.clear()
                    self._absent.add(key)
                    continue
                self._absent.discard(key)
                self._adopt(key, row, self._cache.get(key))

    def get(self, authority: str, patient_id: str) -> PatientState | None:
        """The stored state, or None if this patient has none (no record is created)."""
        key = (authority, patient_id)
        with self._lock:
            entry = self._cache.get(key)
            if entry is not None:
                return entry.state
            row = self._backend.fetch(self._keys.lookup(authority, patient_id))
            if row is None:
                return None
            state, _ = self._open(row)
            self._remember(
                _Entry(key, row.lookup, state, row.revision, self._mono(), state.pseudonym)
            )
            return state

    def _load_or_create(
        self, key: tuple[str, str], factory: Callable[[], PatientState], stale: _Entry | None
    ) -> PatientState:
        if stale is not None and key in self._dirty:
            self._flush_locked()
        lookup = self._keys.lookup(*key)
        absent = key in self._absent  # a prefetch just found no record: try the insert first
        self._absent.discard(key)
        for _ in range(_MAX_CONFLICT_RETRIES):
            row = None if absent else self._backend.fetch(lookup)
            absent = False
            if row is not None:
                return self._adopt(key, row, stale)
            self.heartbeat()
            state = factory()
            sealed = seal(self._keyring, lookup, self._plaintext(key, state), revision=1)
            row = Row.of(lookup, sealed, revision=1)
            if self._backend.insert(
                row, self._keys.pseudonym_index(state.pseudonym), self._clock()
            ):
                entry = _Entry(key, lookup, state, 1, self._mono(), state.pseudonym)
                self._remember(entry)
                if self._undo is not None:  # a rollback un-creates it: pending, not known
                    self._undo.append((entry, None, None))
                return state
            # Lost the race: another writer created this patient first; read theirs.
        raise KeystoreError(
            "patient record kept appearing and disappearing", record=fingerprint(lookup)
        )

    def _adopt(self, key: tuple[str, str], row: Row, stale: _Entry | None) -> PatientState:
        state, _ = self._open(row)
        if stale is not None and stale.lookup == row.lookup:
            if older_copy(row, state, stale.state, stale.revision):
                raise rolled_back(row)
            if stale.revision != row.revision:
                overwrite_state(stale.state, state)  # keep the object callers already hold
            stale.revision = row.revision
            stale.loaded_at = self._mono()
            self._remember(stale)
            return stale.state
        self._remember(_Entry(key, row.lookup, state, row.revision, self._mono(), state.pseudonym))
        return state

    def save(self, authority: str, patient_id: str, state: PatientState) -> None:
        key = (authority, patient_id)
        with self._lock:
            entry = self._cache.get(key)
            if entry is None:
                entry = _Entry(key, self._keys.lookup(*key), state, None, self._mono())
                self._remember(entry)
            entry.state = state
            self._dirty[key] = entry
            now = self._mono()
            if self._dirty_since is None:
                self._dirty_since = now
            if len(self._dirty) >= self._batch_size or now - self._dirty_since >= self._max_delay:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Every database write made inside on this thread — patient states flushed, mark
        compare-and-sets — in ONE transaction: one commit instead of one per call (the
        service's confirmation of a batch: flush + acknowledge the marks). All or nothing:
        when the block raises, nothing of it is stored, and the states it flushed are
        pending again (their revisions as before), the remembered marks dropped. Other
        threads' calls wait until it ends. Inside one, a second is part of the first."""
        with self._lock:
            if self._undo is not None:
                yield
                return
            self._undo = []
            try:
                with self._backend.group():
                    yield
            except BaseException:
                self._rolled_back(self._undo)
                raise
            finally:
                self._undo = None

    def _rolled_back(self, undo: list[tuple[_Entry, int | None, str | None]]) -> None:
        """After a rollback: every state the block flushed or created is pending again, as
        it was before (a record it created is unknown again: the next flush inserts it)."""
        for entry, revision, indexed in reversed(undo):  # the first snapshot wins
            entry.revision, entry.indexed_pseudonym = revision, indexed
            self._dirty.setdefault(entry.key, entry)
        if undo and self._dirty_since is None:
            self._dirty_since = self._mono()
        self._marks.clear()  # they may name values that were never stored
        self._absent.clear()  # hints read inside: a record created there is gone again

    @property
    def pending(self) -> int:
        return len(self._dirty)

    def _flush_locked(self) -> None:
        if not self._dirty:
            return
        self.heartbeat()
        entries = list(self._dirty.values())
        if self._undo is not None:
            self._undo.extend((e, e.revision, e.indexed_pseudonym) for e in entries)
        conflicts = self._write_known(entries)
        for index, entry in enumerate(conflicts):
            try:
                self._resolve(entry)
            except BaseException:
                for pending in conflicts[index:]:  # keep what is not written yet
                    self._dirty[pending.key] = pending
                raise
        for entry in entries:
            if entry.revision is not None and entry.indexed_pseudonym != entry.state.pseudonym:
                self._backend.index_pseudonym(
                    self._keys.pseudonym_index(entry.state.pseudonym), entry.lookup, self._clock()
                )
                entry.indexed_pseudonym = entry.state.pseudonym

    def _write_known(self, entries: list[_Entry]) -> list[_Entry]:
        """Write the next revision of every entry whose stored revision is known, in one
        batch; nothing is pending afterwards. The entries still to resolve one by one: those
        with no known record, then those whose revision moved on."""
        known = [(e, e.revision) for e in entries if e.revision is not None]
        batch = [(self._sealed_row(e, revision + 1), revision) for e, revision in known]
        results = self._backend.update_many(batch, self._clock()) if batch else []
        # Written (or about to be resolved one by one): nothing is pending any more.
        self._dirty.clear()
        self._dirty_since = None
        conflicts = [e for e in entries if e.revision is None]
        for (entry, revision), ok in zip(known, results, strict=True):
            if ok:
                entry.revision = revision + 1
            else:
                conflicts.append(entry)
        return conflicts

    def _sealed_row(self, entry: _Entry, revision: int) -> Row:
        """The entry's state sealed as ``revision`` of its record."""
        plaintext = self._plaintext(entry.key, entry.state)
        return Row.of(
            entry.lookup, seal(self._keyring, entry.lookup, plaintext, revision), revision
        )

    def _resolve(self, entry: _Entry) -> None:
        """Write one state whose stored revision moved on (or is unknown): merge and retry."""
        for _ in range(_MAX_CONFLICT_RETRIES):
            row = self._backend.fetch(entry.lookup)
            if row is None:
                if entry.revision is not None:
                    # The record existed and is gone: the patient was forgotten meanwhile.
                    # Never resurrect a shredded identity; the next document gets a new one.
                    self._cache.pop(entry.key, None)
                    return
                if self._backend.insert(
                    self._sealed_row(entry, 1),
                    self._keys.pseudonym_index(entry.state.pseudonym),
                    self._clock(),
                ):
                    entry.revision = 1
                    entry.indexed_pseudonym = entry.state.pseudonym
                    return
                continue
            theirs, _ = self._open(row)
            if older_copy(row, theirs, entry.state, entry.revision):
                raise rolled_back(row)
            merge_state(entry.state, theirs)
            if self._backend.update_many(
                [(self._sealed_row(entry, row.revision + 1), row.revision)], self._clock()
            )[0]:
                entry.revision = row.revision + 1
                entry.indexed_pseudonym = theirs.pseudonym
                return
        raise KeystoreError(
            "could not write patient state: too many concurrent updates",
            record=fingerprint(entry.lookup),
        )

    # -- MarkStore ------------------------------------------------------------------------
    def get_mark(self, key: str) -> bytes | None:
        key_hash = self._mark_hash(key)
        sealed = self._backend.get_mark(key_hash)
        value = None if sealed is None else self._keys.open_mark(key_hash, sealed)
        self._remember_mark(key, key_hash, value, sealed)
        return value

    def get_marks(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        """Several marks with one database call (one round trip on PostgreSQL)."""
        with self._lock:
            known = {key: self._marks.get(key) for key in keys}
        hashes = {k: self._keys.mark_key(k) if f is None else f[0] for k, f in known.items()}
        stored = self._backend.get_marks(list(hashes.values()))
        opened = {h: self._keys.open_mark(h, sealed) for h, sealed in stored.items()}
        with self._lock:
            for key, h in hashes.items():
                self._remember_mark_locked(key, h, opened.get(h), stored.get(h))
        return {key: opened.get(h) for key, h in hashes.items()}

    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool:
        return self.compare_and_set_marks([(key, expected, value)])[0]

    def compare_and_set_marks(
        self,
        items: Sequence[tuple[str, bytes | None, bytes]],
        *,
        ttl_seconds: float | None = None,
    ) -> list[bool]:
        """Several compare-and-sets (key, expected, value) in one transaction, in order; each
        succeeds or fails on its own, exactly as :meth:`compare_and_set_mark` would. With
        ``ttl_seconds`` the marks written may be deleted by :meth:`prune_marks` once that
        time has passed (until then they read as usual); without it they are kept."""
        owned = self._owners.find(key for key, _, _ in items)
        if not owned:
            return self._cas_marks(items, ttl_seconds)
        try:  # whose marks these are, in the marks' transaction (keystore/forgetting.py)
            with self._backend.group():
                add_mark_owners(self._backend, [(self._mark_hash(k), o) for k, o in owned])
                results = self._cas_marks(items, ttl_seconds)
        except BaseException:
            with self._lock:  # the commit failed: nothing it remembered was stored
                for key, _, _ in items:
                    self._marks.pop(key, None)
            raise
        self._owners.written(owned)
        return results

    def _cas_marks(
        self, items: Sequence[tuple[str, bytes | None, bytes]], ttl_seconds: float | None
    ) -> list[bool]:
        with self._lock:  # each key's hash and last known value (nothing moves them here)
            known = [self._marks.get(key) for key, _, _ in items]
        pair = self._keys.sealed_pair
        sealed = [pair(*item, found) for item, found in zip(items, known, strict=True)]
        now = self._clock()
        if ttl_seconds is None:  # the version marks' path: the backend call as before
            results = self._backend.cas_marks(sealed, now)
        else:
            results = self._backend.cas_marks(sealed, now, now + ttl_seconds)
        with self._lock:
            for (key, _, value), (key_hash, _, new), ok in zip(items, sealed, results, strict=True):
                if ok:
                    self._remember_mark_locked(key, key_hash, value, new)
                else:
                    self._marks.pop(key, None)
        return results

    def prune_marks(self, limit: int = 10_000) -> int:
        """Delete up to ``limit`` marks whose time to live has passed; how many went. The
        cache of marks read is dropped too, so a pruned mark is never answered from it."""
        removed = self._backend.prune_marks(self._clock(), limit)
        if removed:
            with self._lock:
                self._marks.clear()
        return removed

    def _mark_hash(self, key: str) -> bytes:
        with self._lock:
            found = self._marks.get(key)
        return found[0] if found is not None else self._keys.mark_key(key)

    def _remember_mark(
        self, key: str, key_hash: bytes, plain: bytes | None, sealed: bytes | None
    ) -> None:
        with self._lock:
            self._remember_mark_locked(key, key_hash, plain, sealed)

    def _remember_mark_locked(
        self, key: str, key_hash: bytes, plain: bytes | None, sealed: bytes | None
    ) -> None:
        marks = self._marks
        marks[key] = (key_hash, plain, sealed)
        marks.move_to_end(key)
        while len(marks) > _MARK_CACHE:
            marks.popitem(last=False)

    def stats(self) -> dict[str, object]:
        counts = self._backend.counts()
        with self._lock:
            counts.update(
                {
                    "backend": self._backend.name,
                    "schema_version": self.schema_version,
                    "primary_key_id": self._keyring.primary.key_id,
                    "configured_key_ids": list(self._keyring.key_ids),
                    "cache_entries": len(self._cache),
                    "cache_hits": self.hits,
                    "cache_misses": self.misses,
                    "pending_writes": len(self._dirty),
                    "forgets_not_final": self.admin.forgets_not_final(),
                    "instance_id": self.instance_id,
                }
            )
        counts.update(self._backend.key_usage())
        return counts

    def close(self) -> None:
        try:
            with self._lock:
                self._flush_locked()
                self._cache.clear()
                # on failure its heartbeat simply ages: after the live window it counts no more
                with suppress(KeystoreError):
                    self._backend.deregister_instance(self.instance_id)
        finally:
            self._backend.close()

    def __enter__(self) -> EncryptedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sealed blobs for other tables (the review queue: keystore/reviewdb.py) -----------
    @property
    def backend(self) -> SqlBackend:
        """The SQL backend (other tables of the same database, e.g. the review queue)."""
        return self._backend

    def seal_blob(self, binding: bytes, plaintext: bytes) -> Sealed:
        """``plaintext`` sealed with the patient records' envelope encryption, bound to
        ``binding`` (a row's stable, non-secret address). A table keeping such blobs must be
        known to rotation (``keystore.reviewdb.rewrap_blobs``) and to the retire check
        (``keystore.backend.REVIEW_SEALED_TABLES``), or retiring a key loses its rows."""
        self.heartbeat()  # alive, and sealing with the key file's current key
        return seal(self._keyring, binding, plaintext)

    def open_blob(self, binding: bytes, sealed: Sealed) -> bytes:
        """A blob sealed by :meth:`seal_blob` (IntegrityError if moved or tampered)."""
        return open_sealed(self._keyring, binding, sealed)

    def audit(
        self, action: str, operator: str, subject: str, outcome: str, reason: str = ""
    ) -> None:
        """Append one line to the chained audit log (no PHI in any field)."""
        self._audit(action, operator, reason, subject, outcome)

    # -- internals ------------------------------------------------------------------------
    def _plaintext(self, key: tuple[str, str], state: PatientState) -> bytes:
        return dump_state(state, Identity(*key) if self._keep_identity else None)

    def _open(self, row: Row) -> tuple[PatientState, Identity | None]:
        if row.record_schema not in (LEGACY_ENVELOPE, ENVELOPE):
            raise IntegrityError(
                "record has an unknown schema",
                schema=row.record_schema,
                record=fingerprint(row.lookup),
            )
        return load_state(open_sealed(self._keyring, row.lookup, row.sealed(), row.revision))

    def _drop(self, key: tuple[str, str]) -> None:
        """Forget everything held about one patient (cached, pending, absent hint, the tag
        of its seed)."""
        self._cache.pop(key, None)
        self._dirty.pop(key, None)
        self._absent.discard(key)
        self._owners.drop_tags()

    def _remember(self, entry: _Entry) -> None:
        self._cache[entry.key] = entry
        self._cache.move_to_end(entry.key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)  # a dirty entry stays referenced by _dirty

    def _audit(self, action: str, operator: str, reason: str, subject: str, outcome: str) -> None:
        now = self._clock()
        self._backend.append_audit(
            AuditLine(now, action, operator, reason, subject, outcome), self._audit_keys, now
        )
