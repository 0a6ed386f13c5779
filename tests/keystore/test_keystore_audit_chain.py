"""The audit log is a keyed hash chain: any edit, deletion or insertion is found and the
first broken line named; subjects are keyed; on PostgreSQL a role that does not own the
table cannot change it, and TRUNCATE is refused even to the owner."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import threading
import uuid
from pathlib import Path

import psycopg
import pytest

from keystore import Keyring, open_store
from keystore.store import EncryptedStore

PG_URL = "postgresql://postgres@127.0.0.1:5432/test"

FIXTURE = Path(__file__).parent.parent / "fixtures" / "keystore_v1"


def _factory(store: EncryptedStore):  # type: ignore[no-untyped-def]
    return lambda: store.new_state(-4)


def _some_lines(store: EncryptedStore) -> str:
    state = store.get_or_create("H", "p1", _factory(store))
    store.admin.reveal(state.pseudonym, operator="officer", reason="IRB-1")
    store.admin.forget("H", "p2", operator="officer", reason="request 1")
    store.admin.forget("H", "p1", operator="officer", reason="request 2")
    store.admin.rotate(Keyring.generate("k-next"), operator="officer")
    return state.pseudonym


def _db(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def _tamper(url: str, sql: str) -> None:
    """What a writer with file access can do: drop the triggers, then edit."""
    with sqlite3.connect(_db(url)) as conn:
        conn.executescript(
            "DROP TRIGGER IF EXISTS audit_no_update;DROP TRIGGER IF EXISTS audit_no_delete;" + sql
        )


def test_an_untouched_log_verifies_and_every_edit_is_named(
    sqlite_url: str, keyring: Keyring
) -> None:
    with open_store(sqlite_url, keyring) as store:
        _some_lines(store)
        report = store.admin.verify_audit()
        assert report.ok and report.lines == 4 and report.head_seq == 4
        ids = [line.row_id for line in store._backend.audit_lines()]
        _tamper(sqlite_url, f"UPDATE audit SET reason = 'nothing to see' WHERE id = {ids[1]}")  # noqa: S608
        bad = store.admin.verify_audit()
        assert not bad.ok and bad.broken_at == ids[1] and bad.broken_seq == 2
        assert "changed" in bad.problem


@pytest.mark.parametrize(
    "edit, good",
    [  # good: the lines that still verify
        ("DELETE FROM audit WHERE seq = 2", 1),  # a line deleted: the next one is out of order
        ("UPDATE audit SET seq = seq + 10 WHERE seq >= 3", 2),  # renumbered (2's successor)
        ("UPDATE audit SET operator = 'someone else' WHERE seq = 3", 2),
        ("UPDATE audit SET mac = (SELECT mac FROM audit WHERE seq = 1) WHERE seq = 3", 2),
        (
            "INSERT INTO audit (at, action, operator, reason, subject, outcome, seq, mac)"
            " SELECT at, action, operator, reason, subject, outcome, 5, mac FROM audit"
            " WHERE seq = 4",
            4,
        ),  # a copied line appended
    ],
)
def test_tampering_is_found(sqlite_url: str, keyring: Keyring, edit: str, good: int) -> None:
    with open_store(sqlite_url, keyring) as store:
        _some_lines(store)
        ids = [x.row_id for x in store._backend.audit_lines()]
        _tamper(sqlite_url, edit + ";")
        report = store.admin.verify_audit()
        assert not report.ok
        assert report.broken_at is not None and report.broken_at not in ids[:good]
        assert report.head_seq == good


def test_a_deleted_tail_is_found_against_a_recorded_head(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as store:
        _some_lines(store)
        head = store.admin.verify_audit().head
        _tamper(sqlite_url, "DELETE FROM audit WHERE seq >= 3;")
        assert not store.admin.verify_audit().ok  # the sealed anchor finds it on its own
        report = store.admin.verify_audit(head)
        assert not report.ok and "tail was deleted" in report.problem


def test_subjects_are_keyed(tmp_path: Path, keyring: Keyring) -> None:
    subjects = []
    for name in ("a", "b"):
        with open_store(f"sqlite:///{tmp_path / name}.sqlite3", keyring) as store:
            state = store.get_or_create("H", "p1", _factory(store))
            store.admin.reveal(state.pseudonym, operator="o", reason="r")
            with pytest.raises(Exception, match="not found"):
                store.admin.reveal("notapseudonym", operator="o", reason="r")
            lines = store._backend.audit_lines()
            assert lines[0].subject == store.admin.audit_subject(state.pseudonym)
            unkeyed = hashlib.sha256(state.pseudonym.encode()).hexdigest()
            assert all(unkeyed[:16] not in line.subject for line in lines)
            subjects.append(store.admin.audit_subject("samepseudonym"))
    assert subjects[0] != subjects[1]  # another store's key: unlinkable


def test_lines_from_before_the_chain_are_covered(tmp_path: Path) -> None:
    db = tmp_path / "legacy.sqlite3"
    shutil.copyfile(FIXTURE / "ks.sqlite3", db)
    key = next(
        line.split('"')[1]
        for line in (FIXTURE / "make_v1_store.py").read_text().splitlines()
        if line.startswith("KEY = ")
    )
    url = f"sqlite:///{db}"
    with open_store(url, Keyring.parse(key)) as store:
        store.admin.forget("H", "nobody", operator="o", reason="r")
        report = store.admin.verify_audit()
        assert report.ok and report.legacy_lines == 2 and report.head_seq == 1
        _tamper(url, "UPDATE audit SET operator = 'someone else' WHERE seq IS NULL;")
        report = store.admin.verify_audit()
        assert not report.ok and report.broken_seq == 1


@pytest.fixture
def pg_owner_and_role(pg_url: str):  # type: ignore[no-untyped-def]
    role = f"ks_audit_{uuid.uuid4().hex[:10]}"
    schema = pg_url.partition("?schema=")[2]
    admin = psycopg.connect(PG_URL, autocommit=True)
    admin.execute(f'CREATE ROLE "{role}" NOLOGIN')
    try:
        yield pg_url, schema, role, admin
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.execute(f'DROP OWNED BY "{role}"')
        admin.execute(f'DROP ROLE "{role}"')
        admin.close()


def test_postgresql_a_role_without_ownership_cannot_change_the_log(
    pg_owner_and_role, keyring: Keyring
) -> None:  # type: ignore[no-untyped-def]
    pg_url, schema, role, admin = pg_owner_and_role
    with open_store(pg_url, keyring) as store:
        _some_lines(store)
        # the documented grants for the officer's role on the audit table
        admin.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        admin.execute(f'GRANT SELECT, INSERT ON "{schema}".audit TO "{role}"')
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            conn.execute(f'SET ROLE "{role}"')
            # UPDATE and DELETE: the rules make them do nothing (no error, nothing changed)
            conn.execute("UPDATE audit SET reason = 'x'")
            conn.execute("DELETE FROM audit")
            for sql in (
                "TRUNCATE audit",
                "DROP RULE audit_no_update ON audit",
                "DROP TRIGGER audit_no_truncate ON audit",
                "DROP TABLE audit",
                "ALTER TABLE audit DISABLE TRIGGER ALL",
            ):
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    conn.execute(sql)
        assert store.admin.verify_audit().ok and store.admin.verify_audit().lines == 4
        # the owner cannot TRUNCATE either (the trigger); what it can do is found
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            with pytest.raises(psycopg.errors.RaiseException, match="append-only"):
                conn.execute("TRUNCATE audit")
            conn.execute("DROP RULE audit_no_update ON audit")
            conn.execute("UPDATE audit SET operator = 'someone else' WHERE seq = 3")
        report = store.admin.verify_audit()
        assert not report.ok and report.broken_seq == 3


def test_postgresql_concurrent_appends_never_fork_the_chain(pg_url: str, keyring: Keyring) -> None:
    stores = [open_store(pg_url, keyring) for _ in range(3)]
    try:

        def work(store: EncryptedStore, n: int) -> None:
            for i in range(12):
                store.admin.forget("H", f"absent-{n}-{i}", operator=f"o{n}", reason="r")

        threads = [threading.Thread(target=work, args=(s, n)) for n, s in enumerate(stores)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        report = stores[0].admin.verify_audit()
        assert report.ok and report.lines == 36 and report.head_seq == 36
    finally:
        for s in stores:
            s.close()
