"""What the key store's tables hold: a sealed patient row, the column types and placeholder
of a SQL dialect, and the numbered migrations that create the tables.

Split from :mod:`keystore.backend` (which re-exports every name here). The statements are
written once with ``?`` placeholders and ``{blob}``-style type slots; ``@name`` lines are
expanded by the backend (:meth:`keystore.backend.SqlBackend.migrate`). Nothing stored is
plaintext PHI: patients are addressed by HMAC, records are sealed, mark keys are HMACs and
mark values AES-SIV ciphertexts, pseudonyms are stored as HMACs.
"""

from __future__ import annotations

from dataclasses import dataclass

from keystore import auditdb
from keystore.envelope import Sealed


@dataclass(frozen=True)
class Row:
    """One sealed patient record as stored."""

    lookup: bytes
    key_id: str
    wrapped_key: bytes
    nonce: bytes
    ciphertext: bytes
    record_schema: int
    revision: int

    @classmethod
    def of(cls, lookup: bytes, sealed: Sealed, revision: int) -> Row:
        return cls(
            lookup,
            sealed.key_id,
            sealed.wrapped_key,
            sealed.nonce,
            sealed.ciphertext,
            sealed.envelope,
            revision,
        )

    def inserted_at(self, now: float) -> tuple[object, ...]:
        """The values of an INSERT into ``patients``: the row, created and updated ``now``."""
        return (
            self.lookup,
            self.key_id,
            self.wrapped_key,
            self.nonce,
            self.ciphertext,
            self.record_schema,
            self.revision,
            now,
            now,
        )

    def sealed(self) -> Sealed:
        return Sealed(
            self.key_id, self.wrapped_key, self.nonce, self.ciphertext, self.record_schema
        )


@dataclass(frozen=True)
class Dialect:
    blob: str
    real: str
    bigint: str
    serial: str
    placeholder: str


# Versioned migrations: (version, statements). Append only; never edit a shipped one.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            "CREATE TABLE store_keys (name TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
            " wrapped {blob} NOT NULL, created_at {real} NOT NULL, updated_at {real} NOT NULL)",
            "CREATE TABLE patients (lookup {blob} PRIMARY KEY, key_id TEXT NOT NULL,"
            " wrapped_key {blob} NOT NULL, nonce {blob} NOT NULL, ciphertext {blob} NOT NULL,"
            " record_schema INTEGER NOT NULL, revision {bigint} NOT NULL,"
            " created_at {real} NOT NULL, updated_at {real} NOT NULL)",
            "CREATE INDEX patients_key_id ON patients (key_id)",
            "CREATE TABLE marks (key_hash {blob} PRIMARY KEY, value {blob} NOT NULL,"
            " updated_at {real} NOT NULL)",
            "CREATE TABLE pseudonyms (pseudonym_hash {blob} PRIMARY KEY, lookup {blob},"
            " created_at {real} NOT NULL, forgotten_at {real})",
            "CREATE INDEX pseudonyms_lookup ON pseudonyms (lookup)",
            "CREATE TABLE audit (id {serial}, at {real} NOT NULL, action TEXT NOT NULL,"
            " operator TEXT NOT NULL, reason TEXT NOT NULL, subject TEXT NOT NULL,"
            " outcome TEXT NOT NULL)",
            "@append_only_audit",
        ],
    ),
    (
        # marks that may be deleted once a time has passed (a dead letter's "sent" mark:
        # kept as long as a replay of its input can happen, not for good); NULL = kept
        2,
        [
            "ALTER TABLE marks ADD COLUMN expires_at {real}",
            "CREATE INDEX marks_expires_at ON marks (expires_at)",
        ],
    ),
    (
        # which master keys may wrap (registered, not retired), which were retired, and
        # which instances seal with which key (heartbeat): retiring a key is refused while a
        # live instance or any record (or the store root) still uses it
        3,
        [
            "CREATE TABLE master_keys (key_id TEXT PRIMARY KEY, added_at {real} NOT NULL)",
            "CREATE TABLE retired_keys (key_id TEXT PRIMARY KEY, retired_at {real} NOT NULL,"
            " operator TEXT NOT NULL)",
            "CREATE TABLE instances (instance_id TEXT PRIMARY KEY, key_id TEXT NOT NULL,"
            " key_ids TEXT NOT NULL, started_at {real} NOT NULL, heartbeat_at {real} NOT NULL)",
            "INSERT INTO master_keys (key_id, added_at)"
            " SELECT key_id, 0 FROM patients UNION SELECT key_id, 0 FROM store_keys",
            "@key_guard",
        ],
    ),
    (
        # the audit log as a hash chain (keystore/audit.py): a number and a mac per line;
        # older lines keep NULL in both and are covered by the first chained line; on
        # PostgreSQL a trigger refuses TRUNCATE (rules cannot)
        4,
        [
            "ALTER TABLE audit ADD COLUMN seq {bigint}",
            "ALTER TABLE audit ADD COLUMN mac {blob}",
            "CREATE UNIQUE INDEX audit_seq ON audit (seq)",
            "@audit_guard",
        ],
    ),
    (
        # the review queue (keystore/reviewdb.py): created here, not on first use, so a
        # DML-only service role can use it; IF NOT EXISTS because earlier releases created
        # the tables on first use. Its sealed blobs are re-wrapped by `keys rotate` and
        # guarded like patient records: a key they are wrapped under cannot be retired
        5,
        [
            "CREATE TABLE IF NOT EXISTS review_items (seq {serial}, id TEXT NOT NULL UNIQUE,"
            " doc_id TEXT NOT NULL, patient_ref TEXT NOT NULL, text_ref TEXT NOT NULL,"
            " kind TEXT NOT NULL, status TEXT NOT NULL, created_at {real} NOT NULL,"
            " key_id TEXT NOT NULL, wrapped_key {blob} NOT NULL, nonce {blob} NOT NULL,"
            " ciphertext {blob} NOT NULL, envelope INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS review_items_status ON review_items (status, seq)",
            "CREATE INDEX IF NOT EXISTS review_items_doc ON review_items (doc_id)",
            "CREATE INDEX IF NOT EXISTS review_items_text ON review_items (text_ref, status)",
            "CREATE INDEX IF NOT EXISTS review_items_key_id ON review_items (key_id)",
            "CREATE TABLE IF NOT EXISTS review_docs (doc_id TEXT PRIMARY KEY,"
            " coordinates TEXT NOT NULL, reason_class TEXT NOT NULL, reason TEXT NOT NULL,"
            " status TEXT NOT NULL, created_at {real} NOT NULL, released_at {real})",
            "CREATE TABLE IF NOT EXISTS review_decisions (id {serial}, item_id TEXT NOT NULL,"
            " reviewer TEXT NOT NULL, role TEXT NOT NULL, kind TEXT NOT NULL,"
            " category TEXT NOT NULL, scope TEXT NOT NULL, at {real} NOT NULL,"
            " undone INTEGER NOT NULL DEFAULT 0)",
            "CREATE INDEX IF NOT EXISTS review_decisions_item ON review_decisions (item_id)",
            "CREATE TABLE IF NOT EXISTS review_lists (entry TEXT PRIMARY KEY, list TEXT NOT NULL,"
            " scope TEXT NOT NULL, patient_ref TEXT NOT NULL, category TEXT NOT NULL,"
            " created_at {real} NOT NULL, key_id TEXT NOT NULL, wrapped_key {blob} NOT NULL,"
            " nonce {blob} NOT NULL, ciphertext {blob} NOT NULL, envelope INTEGER NOT NULL)",
            "CREATE INDEX IF NOT EXISTS review_lists_key_id ON review_lists (key_id)",
            "CREATE TABLE IF NOT EXISTS review_accounts (username TEXT PRIMARY KEY,"
            " role TEXT NOT NULL, password_hash TEXT NOT NULL, created_at {real} NOT NULL)",
            "@review_key_guard",
        ],
    ),
    (
        # the audit log's sealed head anchor (keystore/auditdb.py): a cut tail is found
        # without the operator keeping anything
        6,
        [auditdb.ANCHOR_TABLE],
    ),
    (
        # whose version marks (keystore/forgetting.py): a keyed tag of the patient's seed
        # per mark key hash, so `keys forget` deletes the patient's marks; and the review
        # items of a patient found by index, not by a scan of the queue
        7,
        [
            "CREATE TABLE mark_owners (key_hash {blob} PRIMARY KEY, owner TEXT NOT NULL)",
            "CREATE INDEX mark_owners_owner ON mark_owners (owner)",
            "CREATE INDEX review_items_patient ON review_items (patient_ref)",
        ],
    ),
]
# The review tables migration 5 guards (``@review_key_guard``). A migration is frozen: its
# statements must not change with later code, so a sealed table added later needs a new
# migration with its own guard (tests/review/test_rotation.py checks every one is guarded).
REVIEW_GUARDED_AT_5 = ("review_items", "review_lists")
# the tables holding blobs sealed under a master key besides ``patients`` (key_id column)
REVIEW_SEALED_TABLES = REVIEW_GUARDED_AT_5
SCHEMA_VERSION = MIGRATIONS[-1][0]
