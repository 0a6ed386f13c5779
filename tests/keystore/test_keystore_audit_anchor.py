"""Issue 23 item 2: the audit log cannot be silently edited. The head is anchored (sealed
in the store, its existence sealed into the store root's wrapping), so nulling the chain
columns, cutting the tail or deleting the anchor is found by ``verify`` with nothing kept
by the operator — on SQLite and on PostgreSQL, by a writer who drops the table's guards."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import psycopg
import pytest

from keystore import Keyring, open_store
from keystore.auditdb import AuditAnchorError
from keystore.store import EncryptedStore

PG_ADMIN = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    return str(request.getfixturevalue("pg_url"))


def tamper(url: str, sql: str) -> None:
    """What a writer with database access can do: drop the guards, then edit."""
    if url.startswith("sqlite:///"):
        with sqlite3.connect(Path(url.removeprefix("sqlite:///"))) as conn:
            conn.executescript(
                "DROP TRIGGER IF EXISTS audit_no_update;"
                "DROP TRIGGER IF EXISTS audit_no_delete;" + sql
            )
        return
    schema = url.partition("?schema=")[2]
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{schema}"')
        for statement in (
            "DROP RULE IF EXISTS audit_no_update ON audit",
            "DROP RULE IF EXISTS audit_no_delete ON audit",
            "DROP TRIGGER IF EXISTS audit_no_truncate ON audit",
            *[s for s in sql.split(";") if s.strip()],
        ):
            conn.execute(statement)  # type: ignore[arg-type]


def _lines(store: EncryptedStore) -> None:
    """Five lines: a reveal, two forgets, a rotation, a note."""
    state = store.get_or_create("H", "p1", lambda: store.new_state(-4))
    store.flush()
    store.admin.reveal(state.pseudonym, operator="officer", reason="IRB-1")
    store.admin.forget("H", "p2", operator="officer", reason="request 1")
    store.admin.forget("H", "p1", operator="officer", reason="request 2")
    store.admin.rotate(store._keyring, operator="officer")  # same key: a rotate line
    store.audit("note", "officer", "s-none", "noted")


def test_nulling_every_chain_column_is_found(url: str, keyring: Keyring) -> None:
    """Before: every line counted as "from before the chain" and verify said intact after
    the forget, reveal and rotate lines were deleted."""
    with open_store(url, keyring) as store:
        _lines(store)
        assert store.admin.verify_audit().ok
        tamper(
            url,
            "DELETE FROM audit WHERE action IN ('forget', 'reveal', 'rotate');"
            "UPDATE audit SET seq = NULL, mac = NULL;",
        )
        report = store.admin.verify_audit()
        assert not report.ok and "unchained" in report.problem
        assert report.legacy_lines == 0


def test_a_cut_tail_is_found_without_a_recorded_head(url: str, keyring: Keyring) -> None:
    with open_store(url, keyring) as store:
        _lines(store)
        tamper(url, "DELETE FROM audit WHERE seq >= 3")
        report = store.admin.verify_audit()  # no --head: the anchor knows
        assert not report.ok and "tail was deleted" in report.problem
        assert report.head_seq == 2 and report.anchored_seq == 5
        # the next line continues from the anchor, so the cut stays visible after it
        store.admin.forget("H", "p3", operator="officer", reason="request 3")
        later = store.admin.verify_audit()
        assert not later.ok and "seq 6 where 3 was due" in later.problem


def test_a_deleted_anchor_is_found_and_appends_refuse(url: str, keyring: Keyring) -> None:
    with open_store(url, keyring) as store:
        _lines(store)
        tamper(url, "DELETE FROM audit_head")
        report = store.admin.verify_audit()
        assert not report.ok and "anchor was deleted" in report.problem
        with pytest.raises(AuditAnchorError):
            store.admin.forget("H", "p3", operator="officer", reason="request 3")
    with open_store(url, keyring) as again:  # a reopen does not re-anchor it silently
        assert "anchor was deleted" in again.admin.verify_audit().problem


def test_a_deleted_anchor_and_cut_log_is_not_a_new_store(url: str, keyring: Keyring) -> None:
    """Deleting every line and the anchor does not pass for a store that never had any."""
    with open_store(url, keyring) as store:
        _lines(store)
    tamper(url, "DELETE FROM audit; DELETE FROM audit_head")
    with open_store(url, keyring) as store:
        report = store.admin.verify_audit()
        assert not report.ok and "anchor was deleted" in report.problem


def test_an_edited_or_older_anchor_is_found(url: str, keyring: Keyring) -> None:
    with open_store(url, keyring) as store:
        _lines(store)
        tamper(url, "UPDATE audit_head SET seq = 3")
        assert "does not verify" in store.admin.verify_audit().problem
        with pytest.raises(AuditAnchorError):
            store.audit("note", "officer", "s-none", "noted")


def test_an_old_anchor_put_back_is_found(url: str, keyring: Keyring) -> None:
    with open_store(url, keyring) as store:
        _lines(store)
        old = store._backend.audit_anchor()
        store.audit("note", "officer", "s-none", "noted")
    assert old is not None
    tamper(
        url,
        f"UPDATE audit_head SET seq = {old.seq}, mac = {_hex(url, old.mac)},"  # noqa: S608
        f" seal = {_hex(url, old.seal)}",
    )
    with open_store(url, keyring) as store:
        report = store.admin.verify_audit()
        assert not report.ok and "older copy" in report.problem


def _hex(url: str, data: bytes) -> str:
    return f"X'{data.hex()}'" if url.startswith("sqlite") else f"'\\x{data.hex()}'::bytea"


def test_reordered_lines_are_found(url: str, keyring: Keyring) -> None:
    with open_store(url, keyring) as store:
        _lines(store)
        ids = [line.row_id for line in store._backend.audit_lines()]
        identity = "" if url.startswith("sqlite") else "ALTER TABLE audit ALTER id DROP IDENTITY;"
        tamper(
            url,
            identity + f"UPDATE audit SET id = -1 WHERE id = {ids[1]};"  # noqa: S608
            f"UPDATE audit SET id = {ids[1]} WHERE id = {ids[2]};"
            f"UPDATE audit SET id = {ids[2]} WHERE id = -1",
        )
        report = store.admin.verify_audit()
        assert not report.ok and report.broken_at == ids[1]


def test_the_anchor_survives_rotation(url: str, keyring: Keyring) -> None:
    """Rotation re-wraps the root under the new key as "anchored": deleting the anchor
    after it is still found."""
    with open_store(url, keyring) as store:
        _lines(store)
        rotated = Keyring.generate("k-next").merged_with(keyring)
        store.admin.rotate(rotated, operator="officer")
        assert store._backend.get_root() is not None
        assert store._backend.get_root()[0] == "k-next"  # type: ignore[index]
    tamper(url, "DELETE FROM audit_head")
    with open_store(url, rotated) as store:
        assert "anchor was deleted" in store.admin.verify_audit().problem


def test_reanchoring_is_audited_and_keeps_the_damage_visible(url: str, keyring: Keyring) -> None:
    with open_store(url, keyring) as store:
        _lines(store)
        tamper(url, "DELETE FROM audit WHERE seq >= 4")
        before = store.admin.reanchor_audit(operator="officer", reason="incident 7")
        assert "tail was deleted" in before.problem
        assert store.admin.verify_audit().ok  # the cut tail is gone for good ...
        last = store._backend.audit_lines()[-1]
        assert last.action == "audit-reanchor" and last.reason == "incident 7"
        assert "tail was deleted" in last.outcome and last.subject == "anchor 5->3"
        store.admin.forget("H", "p3", operator="officer", reason="request 3")  # appends again
        assert store.admin.verify_audit().ok
        with pytest.raises(Exception, match="reason"):
            store.admin.reanchor_audit(operator="officer", reason=" ")


def test_every_append_logs_the_head(
    url: str, keyring: Keyring, caplog: pytest.LogCaptureFixture
) -> None:
    """The service log carries the head at every append: an outside record of it."""
    with (
        caplog.at_level(logging.INFO, logger="deidstream.keystore.audit"),
        open_store(url, keyring) as store,
    ):
        store.admin.forget("H", "p1", operator="officer", reason="r")
        head = store.admin.verify_audit()
    assert f"audit head 1:{head.head_mac[:16]} (forget)" in caplog.text


def test_an_upgraded_store_is_anchored_at_its_first_open(tmp_path: Path) -> None:
    """A store from before the chain (two unchained lines) is anchored by the first open of
    an owner: its old lines are pinned (two, no more), and from then on a deleted anchor is
    found, not taken for a store never anchored."""
    import shutil

    fixture = Path(__file__).parent.parent / "fixtures" / "keystore_v1"
    db = tmp_path / "legacy.sqlite3"
    shutil.copyfile(fixture / "ks.sqlite3", db)
    key = next(
        line.split('"')[1]
        for line in (fixture / "make_v1_store.py").read_text().splitlines()
        if line.startswith("KEY = ")
    )
    url = f"sqlite:///{db}"
    with open_store(url, Keyring.parse(key)) as store:
        report = store.admin.verify_audit()
        assert report.ok and report.legacy_lines == 2 and report.head_seq == 0
        store.admin.forget("H", "nobody", operator="o", reason="r")
        assert store.admin.verify_audit().ok
    tamper(url, "UPDATE audit SET seq = NULL, mac = NULL")  # the chained line made "old"
    with open_store(url, Keyring.parse(key)) as store:
        report = store.admin.verify_audit()
        assert not report.ok and report.legacy_lines == 2 and "unchained" in report.problem
    tamper(url, "DELETE FROM audit_head")
    with open_store(url, Keyring.parse(key)) as store:
        assert "anchor was deleted" in store.admin.verify_audit().problem


def test_postgresql_the_service_role_appends_and_moves_the_anchor(
    pg_url: str, keyring: Keyring
) -> None:
    """The DML-only service role (``keys migrate --grant-to``) writes audit lines (previews,
    review settles): its grants cover the anchor, and verify stays intact."""
    import uuid

    schema = pg_url.partition("?schema=")[2]
    role = f"ks_aud_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')  # type: ignore[arg-type]
    try:
        with open_store(pg_url, keyring) as owner:
            owner.admin.grant_service(role)
        service_url = f"postgresql://{role}@127.0.0.1:5432/test?schema={schema}"
        with open_store(service_url, keyring, migrate=False) as service:
            service.audit("preview", "deidentify-api", "s-x", "read")
            assert service.admin.audit_head() == 1
        with open_store(pg_url, keyring) as owner:
            assert owner.admin.verify_audit().ok
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (role,),
            )
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')  # type: ignore[arg-type]
            conn.execute(f'DROP OWNED BY "{role}"')  # type: ignore[arg-type]
            conn.execute(f'DROP ROLE "{role}"')  # type: ignore[arg-type]
