"""Envelope version 2: AES key wrap under a per-record key, the revision authenticated, and
stores written by the first version (GCM-wrapped keys) still open — SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
import json
import shutil
import sqlite3
import time
from pathlib import Path

import pytest

from keystore import IntegrityError, Keyring, open_store
from keystore.envelope import ENVELOPE, LEGACY_ENVELOPE, open_sealed, seal
from keystore.postgres import PostgresBackend
from keystore.store import EncryptedStore

FIXTURE = Path(__file__).parent.parent / "fixtures" / "keystore_v1"
LEGACY_KEY = next(
    line.split('"')[1]
    for line in (FIXTURE / "make_v1_store.py").read_text().splitlines()
    if line.startswith("KEY = ")
)
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


def _legacy_copy(tmp_path: Path) -> Path:
    db = tmp_path / "legacy.sqlite3"
    shutil.copyfile(FIXTURE / "ks.sqlite3", db)
    db.chmod(0o600)
    return db


def _check_expected(store: EncryptedStore) -> None:
    for who, want in EXPECTED.items():
        authority, pid = who.split("|")
        state = store.get(authority, pid)
        assert state is not None
        assert (state.pseudonym, state.shift_days, state.name_map) == (
            want["pseudonym"],
            want["shift"],
            want["names"],
        )


def _rows(db: Path) -> list[tuple[int, int, int]]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT record_schema, length(wrapped_key), revision FROM patients ORDER BY lookup"
        ).fetchall()


def test_a_version_1_sqlite_store_opens_reads_and_upgrades_on_rotation(tmp_path: Path) -> None:
    db = _legacy_copy(tmp_path)
    keyring = Keyring.parse(LEGACY_KEY)
    assert {r[0] for r in _rows(db)} == {LEGACY_ENVELOPE}
    with open_store(f"sqlite:///{db}", keyring) as store:
        _check_expected(store)
        first = EXPECTED["HOSP-A|900001"]["pseudonym"]
        assert store.admin.reveal(first, operator="t", reason="IRB-T").patient_id == "900001"
        # a write of a version-1 record writes version 2 (at the next revision)
        state = store.get("HOSP-A", "900002")
        assert state is not None
        state.id_map["MRN-X"] = "SUR-1"
        store.save("HOSP-A", "900002", state)
        store.flush()
    assert sorted(r[0] for r in _rows(db)) == [LEGACY_ENVELOPE, ENVELOPE]
    new = Keyring.generate("k2").merged_with(keyring)
    with open_store(f"sqlite:///{db}", keyring) as store:
        report = store.admin.rotate(new, operator="t")
        assert report.rewrapped == 2 and report.upgraded == 1 and not report.failed
    assert {(r[0], r[1]) for r in _rows(db)} == {(ENVELOPE, 41)}
    with sqlite3.connect(db) as conn:
        assert len(conn.execute("SELECT wrapped FROM store_keys").fetchone()[0]) == 41
    with open_store(f"sqlite:///{db}", new.subset(["k2"])) as store:  # the old key gone
        _check_expected(store)


def test_a_version_1_store_copied_to_postgresql_opens(tmp_path: Path, pg_url: str) -> None:
    base, _, schema = pg_url.partition("?schema=")
    backend = PostgresBackend(base, schema=schema)
    backend.migrate(time.time())
    tables = {
        "store_keys": "name, key_id, wrapped, created_at, updated_at",
        "patients": "lookup, key_id, wrapped_key, nonce, ciphertext, record_schema,"
        " revision, created_at, updated_at",
        "pseudonyms": "pseudonym_hash, lookup, created_at, forgotten_at",
        "marks": "key_hash, value, updated_at",
    }
    with sqlite3.connect(_legacy_copy(tmp_path)) as src, backend._transaction() as cur:
        # what migration 3 registers for a store that already has records
        cur.execute(
            "INSERT INTO master_keys (key_id, added_at) VALUES (%s, 0)", (LEGACY_KEY.split(":")[0],)
        )
        for table, columns in tables.items():
            marks = ", ".join(["%s"] * len(columns.split(",")))
            for row in src.execute(f"SELECT {columns} FROM {table}"):  # noqa: S608
                cur.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", row)  # noqa: S608
    backend.close()
    with open_store(pg_url, Keyring.parse(LEGACY_KEY)) as store:
        _check_expected(store)
        assert store.get_mark("version:doc-1") == b"v1"


def test_the_revision_is_authenticated(keyring: Keyring) -> None:
    lookup = b"L" * 32
    sealed = seal(keyring, lookup, b"state", revision=7)
    assert sealed.wrapped_key[:1] == b"\x02" and len(sealed.wrapped_key) == 41
    assert open_sealed(keyring, lookup, sealed, 7) == b"state"
    for other in (6, 8, 0):
        with pytest.raises(IntegrityError):
            open_sealed(keyring, lookup, sealed, other)
    # a version-2 record relabelled as version 1 (the downgrade) fails too
    with pytest.raises(IntegrityError):
        open_sealed(keyring, lookup, dataclasses.replace(sealed, envelope=LEGACY_ENVELOPE), 7)


def test_the_per_record_key_is_hkdf_expand(keyring: Keyring) -> None:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

    from keystore.envelope import _kek, kek_info

    key_id, lookup = keyring.primary.key_id, b"M" * 32
    want = HKDFExpand(hashes.SHA256(), 32, kek_info(key_id, lookup, 3)).derive(
        keyring.wrapping_key(key_id)
    )
    assert _kek(keyring, key_id, lookup, 3) == want != _kek(keyring, key_id, lookup, 4)


def _raw_row(db: Path) -> tuple[bytes, bytes, bytes, int]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT wrapped_key, nonce, ciphertext, revision FROM patients"
        ).fetchone()


def test_a_database_writer_cannot_roll_a_record_back_unnoticed(
    tmp_path: Path, keyring: Keyring
) -> None:
    db = tmp_path / "ks.sqlite3"
    url = f"sqlite:///{db}"
    with open_store(url, keyring, cache_ttl_s=0) as store:
        state = store.get_or_create("A", "p1", lambda: store.new_state(9))
        state.name_map["Harrowgate, Wilmot"] = "Surrogate, One"
        store.save("A", "p1", state)
        store.flush()  # revision 2
        old = _raw_row(db)
        state.name_map["Harrowgate, Wilmot"] = "Surrogate, Two"
        store.save("A", "p1", state)
        store.flush()  # revision 3
        assert _raw_row(db)[3] == 3
        # 1. the old sealed bytes under the current revision number
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE patients SET wrapped_key = ?, nonce = ?, ciphertext = ?", old[:3])
        with open_store(url, keyring) as fresh, pytest.raises(IntegrityError):
            fresh.get("A", "p1")
        # 2. the whole old row, revision included: consistent on its own, but this
        # instance has seen revision 3 of this identity and refuses the older one
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE patients SET revision = 2")
        with pytest.raises(IntegrityError, match="rolled back"):
            store.get_or_create("A", "p1", lambda: store.new_state(1))
