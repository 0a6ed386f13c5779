"""The key store's administrative operations: rotation and key retirement, forget
(crypto-shredding), re-identification (reveal), the audit log and the privacy officer's view.

Split from :mod:`keystore.store` so the code that can re-identify a patient is reviewed on
its own: everything here is audited (no PHI in the audit lines). :class:`StoreAdmin` is
composed with an :class:`keystore.store.EncryptedStore` (``store.admin``): it is given the
backend, the store's derived keys, its clock and its instance, and reaches the live store
only through the :class:`_LiveStore` protocol (the keyring rotation replaces, the lock,
pending writes, the cache and opening a record).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from keystore.api import PatientState
from keystore.audit import AuditKeys, AuditLine, AuditReport
from keystore.auditdb import reanchor, snapshot
from keystore.backend import Row, SqlBackend
from keystore.envelope import LEGACY_ENVELOPE, is_legacy_wrap, reseal, rewrap, wrap_key
from keystore.errors import ForgottenPatientError, IntegrityError, KeystoreError, RetireRefused
from keystore.forgetting import (
    MARK_OWNER_KIND,
    REVIEW_LIST,
    REVIEW_PATIENT,
    ReviewForget,
    forget_marks,
    forget_review_rows,
)
from keystore.keyring import Keyring, fingerprint
from keystore.records import Identity
from keystore.reviewdb import rewrap_blobs
from keystore.subkeys import StoreKeys, open_root

log = logging.getLogger("deidstream.keystore")
_MAX_REWRAP_RETRIES = 8  # a record rewritten by another instance while it is re-wrapped


@dataclass
class RotationReport:
    new_key_id: str
    rewrapped: int = 0
    already_current: int = 0
    upgraded: int = 0  # version-1 records sealed afresh in the current envelope
    review_rewrapped: int = 0  # the review queue's sealed blobs (keystore/reviewdb.py)
    failed: list[str] = field(default_factory=list)  # record fingerprints, no ids


class _LiveStore(Protocol):
    """What the admin operations use of the live :class:`keystore.store.EncryptedStore`."""

    _keyring: Keyring  # replaced by a rotation
    _lock: threading.RLock

    def _flush_locked(self) -> None: ...
    def _drop(self, key: tuple[str, str]) -> None: ...
    def flush(self) -> None: ...
    def get(self, authority: str, patient_id: str) -> PatientState | None: ...
    def _open(self, row: Row) -> tuple[PatientState, Identity | None]: ...
    def _audit(
        self, action: str, operator: str, reason: str, subject: str, outcome: str
    ) -> None: ...


class StoreAdmin:
    """Rotation, retirement, forget, reveal and audit of an :class:`EncryptedStore`."""

    def __init__(
        self,
        store: _LiveStore,
        backend: SqlBackend,
        keys: StoreKeys,
        audit_keys: AuditKeys,
        *,
        clock: Callable[[], float],
        instance_id: str,
        schema_version: int,
    ) -> None:
        self._store = store
        self._backend = backend
        self._keys = keys
        self._audit_keys = audit_keys
        self._clock = clock
        self._instance_id = instance_id
        self._schema_version = schema_version
        self.last_review_forget = ReviewForget()  # what the last forget removed from review

    @property
    def keyring(self) -> Keyring:
        """The master keys the store uses now (a rotation replaces them)."""
        return self._store._keyring

    def retire_key(
        self, key_id: str, *, operator: str = "unknown", live_within_s: float = 60.0
    ) -> None:
        """Retire master key ``key_id``: from then on nothing can be wrapped under it (the
        operator may then delete it). Refused (``RetireRefused``, nothing changed) while an
        instance with a heartbeat in the last ``live_within_s`` seals with it, or any record
        or the store root is still wrapped under it; audited either way."""
        if key_id == self._store._keyring.primary.key_id:
            raise RetireRefused(
                "refused: this is the primary key; rotate to a new key first", key_id=key_id
            )
        with self._store._lock:
            self._store._flush_locked()
            now = self._clock()
            try:
                self._backend.retire_key(
                    key_id, now, now - live_within_s, self._instance_id, operator
                )
            except RetireRefused as exc:
                self._store._audit("retire", operator, "", key_id, "refused")
                raise exc from None
            self._store._audit("retire", operator, "", key_id, "retired")

    def rotate(self, new_keyring: Keyring, *, operator: str = "unknown") -> RotationReport:
        """Re-wrap every data key (and the store root) under ``new_keyring.primary``.

        Keys of the current keyring stay usable for reading until the operator removes
        them from the configuration; ciphertexts are not touched.
        """
        with self._store._lock:
            self._store._flush_locked()
            combined = new_keyring.merged_with(self._store._keyring)
            report = RotationReport(combined.primary.key_id)
            # the new key may wrap from now on (refused if it was retired); this instance
            # seals with it from now on
            self._backend.register_instance(
                self._instance_id, combined.primary.key_id, combined.key_ids, self._clock()
            )
            for rows in self._backend.iter_rows():
                for row in rows:
                    self._rewrap_row(combined, row, report)
            root_id, root_wrapped = self._backend.get_root() or ("", b"")
            if root_id != combined.primary.key_id or is_legacy_wrap(root_wrapped):
                root, binding = open_root(combined, root_id, root_wrapped)  # keeps "anchored"
                key_id, wrapped = wrap_key(combined, binding, root)
                if not self._backend.replace_root(key_id, wrapped, root_wrapped, self._clock()):
                    raise KeystoreError("store root key changed during rotation; run it again")
            blobs = rewrap_blobs(self._backend, combined)
            report.review_rewrapped = blobs.rewrapped
            report.failed += blobs.failed
            self._store._keyring = combined
            self._store._audit(
                "rotate",
                operator,
                "",
                report.new_key_id,
                f"rewrapped={report.rewrapped} review={blobs.rewrapped}"
                f" failed={len(report.failed)}",
            )
            return report

    def forget(
        self,
        authority: str,
        patient_id: str,
        *,
        operator: str = "unknown",
        reason: str = "",
    ) -> bool:
        """Crypto-shred one patient: delete the sealed record and its wrapped data key.

        The live store can never read it again; on SQLite the WAL is checkpointed into the
        (secure_delete) file and truncated, so neither file holds the record any more.
        Copies made before — backups, PostgreSQL dead tuples and WAL — still hold it sealed
        under the master keys configured now: the forget is FINAL once those keys are
        destroyed (:meth:`record_key_retirement`, ``keys rotate --retire-old`` /
        ``keys forget --now``; docs/keystore.md). Later documents of this patient get a
        NEW identity: new shift, new surrogates, new pseudonym, unlinked to the old one.
        """
        key = (authority, patient_id)
        lookup = self._keys.lookup(authority, patient_id)
        patient_ref = self._keys.pseudonyms.pseudonym(REVIEW_PATIENT, authority, patient_id)
        with self._store._lock:
            self._store._drop(key)
            owner = self._mark_owner(self._backend.fetch(lookup))
            # the record and every review row of the patient go in ONE transaction (the
            # review rows are removed even when the record was gone already: a forget that
            # failed half-way, or one from before review rows were forgotten, is finished)
            with self._backend.group():
                review = forget_review_rows(self._backend, patient_ref, self._list_entry_id)
                if owner is not None:
                    review = replace(review, marks=forget_marks(self._backend, owner))
                deleted = self._backend.delete(lookup, self._clock())
                self._store._audit(
                    "forget",
                    operator,
                    reason,
                    self._audit_keys.subject("record", lookup),
                    "deleted" if deleted or review.total() else "absent",
                )
            self.last_review_forget = review
            if (deleted or review.total()) and self._backend.scrub() is False:
                log.warning(
                    "key store: the SQLite WAL could not be checkpointed after a "
                    "forget (readers busy); it is retried at the next forget"
                )
        return deleted

    def _mark_owner(self, row: Row | None) -> str | None:
        """The tag of the record's seed its version marks are owned by (None: no record, or
        one that does not open — its marks then stay; a WARNING)."""
        if row is None:
            return None
        try:
            state, _ = self._store._open(row)
        except KeystoreError:
            log.warning("key store: a forgotten record did not open; its marks are kept")
            return None
        return self._keys.pseudonyms.pseudonym(MARK_OWNER_KIND, state.seed)

    def _list_entry_id(self, scope: str, patient_ref: str, text_ref: str) -> str:
        return self._keys.pseudonyms.pseudonym(REVIEW_LIST, scope, patient_ref, text_ref)

    def check_retirable(self, key_ids: Sequence[str]) -> None:
        """KeystoreError unless no record and not the store root is wrapped under any of
        ``key_ids`` (after a rotation, before the keys are destroyed)."""
        with self._store._lock:
            self._store._flush_locked()
            by_key = self._backend.counts().get("records_by_key")
            still = sorted(set(key_ids) & set(by_key if isinstance(by_key, dict) else {}))
            root = self._backend.get_root()
            if still or (root is not None and root[0] in key_ids):
                raise KeystoreError(
                    "refused: records are still wrapped under a key to retire;"
                    " run `keys rotate` first",
                    keys=",".join(still) or None,
                )
            review = self._backend.review_wrapped(key_ids)
            if review:
                raise KeystoreError(
                    "refused: review queue blobs are still wrapped under a key"
                    " to retire; run `keys rotate` first",
                    **review,
                )

    def record_key_retirement(
        self, key_ids: Sequence[str], *, operator: str, destroyed: bool = True
    ) -> None:
        """Audit that master keys ``key_ids`` were destroyed (after :meth:`check_retirable`;
        ``destroyed=False``: retired, the operator destroys them where they are kept):
        every forget before this line is final once they are gone — no record, and no copy
        of one in a backup or an old database page, can be unwrapped any more."""
        self._store._audit(
            "retire_keys",
            operator,
            "",
            ",".join(sorted(key_ids)),
            "destroyed" if destroyed else "retired",
        )

    def forgets_not_final(self) -> int:
        """Forgets since the last key retirement: their records may still be recovered
        from a backup or old database pages with the keys configured now."""
        return self._backend.audit_count(
            "forget", "deleted", self._backend.last_audit_at("retire_keys")
        )

    def reveal(self, pseudonym: str, *, operator: str, reason: str) -> Identity:
        """Authorized re-identification of a patient pseudonym; always audited (no PHI)."""
        if not reason.strip() or not operator.strip():
            raise KeystoreError("reveal needs an operator and a reason")
        subject = self._audit_keys.subject("pseudonym", pseudonym)
        target = self._backend.pseudonym_target(self._keys.pseudonym_index(pseudonym))
        if target is None:
            self._store._audit("reveal", operator, reason, subject, "unknown_pseudonym")
            raise KeystoreError("pseudonym not found in this store", pseudonym_hash=subject)
        lookup, forgotten = target
        row = self._backend.fetch(lookup) if lookup is not None else None
        if forgotten or row is None:
            self._store._audit("reveal", operator, reason, subject, "forgotten")
            raise ForgottenPatientError("this patient was forgotten", pseudonym_hash=subject)
        try:
            _, identity = self._store._open(row)
        except KeystoreError:
            self._store._audit("reveal", operator, reason, subject, "unreadable")
            raise
        if identity is None:
            self._store._audit("reveal", operator, reason, subject, "identity_not_kept")
            raise KeystoreError(
                "the store kept no identity for this pseudonym", pseudonym_hash=subject
            )
        self._store._audit("reveal", operator, reason, subject, "revealed")
        return identity

    def grant_service(self, role: str) -> list[str]:
        """Grant a DML-only service role what the service needs (PostgreSQL; the statements
        are returned). Run by the owner, after migrating."""
        return self._backend.grant_service(role)

    def audit_log(self) -> list[tuple[float, str, str, str, str, str]]:
        return self._backend.audit_rows()

    def verify_audit(self, head: str | None = None) -> AuditReport:
        """Check the audit log's hash chain and its sealed head anchor (and that ``head``, a
        ``SEQ:MAC`` printed by an earlier verify, is still in it); the report names the
        first line that fails, or what is wrong with the head."""
        lines, anchor = snapshot(self._backend)
        return self._audit_keys.verify(lines, head, anchor)

    def reanchor_audit(self, *, operator: str, reason: str) -> AuditReport:
        """The officer's repair after ``verify_audit`` found the anchor (or the tail) wrong:
        seal the log's head as it is now, then audit that (old and new head seq); what was
        lost stays lost — the line says where. Returns the verify report before."""
        if not reason.strip() or not operator.strip():
            raise KeystoreError("re-anchoring the audit log needs an operator and a reason")
        before = self.verify_audit()
        with self._store._lock:
            old, new = reanchor(self._backend, self._audit_keys, self._clock())
            self._store._audit(
                "audit-reanchor",
                operator,
                reason,
                f"anchor {old.seq if old is not None else 'none'}->{new.seq}",
                "reanchored" if before.ok else f"reanchored: {before.problem}"[:200],
            )
        return before

    def audit_head(self) -> int | None:
        """The anchored head's seq, if its seal verifies (for /metrics; None: no valid one)."""
        anchor = self._backend.audit_anchor()
        return anchor.seq if anchor is not None and self._audit_keys.sealed(anchor) else None

    def audit_subjects(self, authority: str, patient_id: str) -> set[str]:
        """Every subject a patient's audit lines carry: its record (forget, preview) and,
        while its record exists, its pseudonym (reveal)."""
        lookup = self._keys.lookup(authority, patient_id)
        found = {self._audit_keys.subject("record", lookup)}
        row = self._backend.fetch(lookup)
        if row is not None:
            state, _ = self._store._open(row)
            found.add(self._audit_keys.subject("pseudonym", state.pseudonym))
        return found

    def pseudonym_subjects(self, pseudonym: str) -> set[str]:
        """The subjects of a research pseudonym's patient (its record's while indexed)."""
        found = {self._audit_keys.subject("pseudonym", pseudonym)}
        target = self._backend.pseudonym_target(self._keys.pseudonym_index(pseudonym))
        if target is not None and target[0] is not None:
            found.add(self._audit_keys.subject("record", target[0]))
        return found

    def audit_lines(self) -> list[AuditLine]:
        """Every audit line, in order (``keys audit show``)."""
        return self._backend.audit_lines()

    def preview_state(
        self, authority: str, patient_id: str, *, operator: str, reason: str
    ) -> PatientState | None:
        """A COPY of the patient's stored state for a preview (``/v1/deidentify``), or None
        when the store has none — nothing is created. Audited either way, before the
        state is returned: a preview shows the patient's real pseudonym."""
        with self._store._lock:
            lookup = self._keys.lookup(authority, patient_id)
            state = self._store.get(authority, patient_id)
            self._store._audit(
                "preview",
                operator,
                reason,
                self._audit_keys.subject("record", lookup),
                "read" if state is not None else "unknown_patient",
            )
            return None if state is None else copy.deepcopy(state)

    def audit_subject(self, pseudonym: str) -> str:
        """The subject a reveal of ``pseudonym`` is audited under (to find its lines)."""
        return self._audit_keys.subject("pseudonym", pseudonym)

    def find_patient(self, patient_id: str) -> list[Identity]:
        """Every identity with this patient id, whatever its assigning authority (the lookup
        hash needs the authority, so this opens every record: an admin operation, O(store)).
        Records that cannot be opened, or that kept no identity, are skipped."""
        self._store.flush()
        found: list[Identity] = []
        for identity, _ in self._identities():
            if identity.patient_id == patient_id:
                found.append(identity)
        return sorted(found, key=lambda i: i.authority)

    def reveal_visit(
        self,
        pseudonym: str,
        candidates: Callable[[PatientState], Sequence[str]],
        *,
        operator: str,
        reason: str,
    ) -> tuple[Identity, str]:
        """Authorized re-identification of a visit (encounter) pseudonym: the patient and the
        visit id. A visit pseudonym is keyed by its patient's secret seed and the visit id,
        so every patient's known visit ids (``candidates`` of its state) are tried; audited."""
        if not reason.strip() or not operator.strip():
            raise KeystoreError("reveal needs an operator and a reason")
        subject = self._audit_keys.subject("visit-pseudonym", pseudonym)
        self._store.flush()
        for identity, state in self._identities():
            for visit in candidates(state):
                if self._keys.pseudonyms.pseudonym("visit", state.seed, visit) == pseudonym:
                    self._store._audit("reveal-visit", operator, reason, subject, "revealed")
                    return identity, visit
        self._store._audit("reveal-visit", operator, reason, subject, "unknown_pseudonym")
        raise KeystoreError("visit pseudonym not found in this store", pseudonym_hash=subject)

    def officer_stats(self) -> dict[str, object]:
        """What a privacy officer asks: patients, keys in use, last rotation, forgotten."""
        counts = self._backend.counts()
        rotations = [row for row in self._backend.audit_rows() if row[1] == "rotate"]
        last = max(rotations, key=lambda r: r[0]) if rotations else None
        by_key = dict(counts.get("records_by_key") or {})  # type: ignore[call-overload]
        root = self._backend.get_root()
        return {
            "patients": counts["patients"],
            "forgotten": counts["forgotten"],
            "primary_key_id": self._store._keyring.primary.key_id,
            "configured_key_ids": list(self._store._keyring.key_ids),
            "keys_in_use": sorted({*by_key, *([root[0]] if root else [])}),
            "records_by_key": by_key,
            "last_rotation": None
            if last is None
            else {
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last[0])),
                "operator": last[2],
                "new_key_id": last[4],
                "outcome": last[5],
            },
            "backend": self._backend.name,
            "schema_version": self._schema_version,
            "forgets_not_final": self.forgets_not_final(),
        }

    def _rewrap_row(self, keyring: Keyring, row: Row, report: RotationReport) -> None:
        current: Row | None = row
        for _ in range(_MAX_REWRAP_RETRIES):
            if current is None:
                return  # forgotten meanwhile
            legacy = current.record_schema == LEGACY_ENVELOPE
            if current.key_id == keyring.primary.key_id and not legacy:
                report.already_current += 1
                return
            try:
                if legacy:  # upgrade: sealed afresh, same revision, only if unchanged
                    new = reseal(keyring, current.lookup, current.sealed(), current.revision)
                    done = self._backend.update_many(
                        [(Row.of(current.lookup, new, current.revision), current.revision)],
                        self._clock(),
                    )[0]
                else:
                    new = rewrap(keyring, current.lookup, current.sealed(), current.revision)
                    done = self._backend.rewrap(
                        current.lookup, new.key_id, new.wrapped_key, current.wrapped_key
                    )
            except (IntegrityError, KeystoreError):
                report.failed.append(fingerprint(current.lookup))
                return
            if done:
                report.rewrapped += 1
                report.upgraded += legacy
                return
            current = self._backend.fetch(current.lookup)  # rewritten meanwhile: again
        report.failed.append(fingerprint(row.lookup))

    def _identities(self) -> Iterator[tuple[Identity, PatientState]]:
        for rows in self._backend.iter_rows():
            for row in rows:
                try:
                    state, identity = self._store._open(row)
                except KeystoreError:
                    continue
                if identity is not None:
                    yield identity, state
