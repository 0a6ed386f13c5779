"""A forget is final at the documented step, copies included.

The forensic recovery of issue 14: after `keys forget`, read the SQLite files' raw bytes,
or take a copy of the database made before the forget (a backup; on PostgreSQL the same
bytes sit in dead tuples and pg_wal) and decrypt it with the master key. After the forget
the live SQLite files hold none of the record's bytes; after `keys rotate --retire-old` (or
`keys forget --now`) no copy opens with the keys that remain."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import psycopg
import pytest
import typer
from typer.testing import CliRunner

from keystore import Keyring, MissingKeyError, open_store
from keystore.backend import Row
from keystore.envelope import Sealed, open_sealed
from keystore.shred import retire_old_keys
from keystore.store import EncryptedStore

VICTIM = ("HOSP-Q", "900777")
OTHER = ("HOSP-Q", "900778")


def _run(app: typer.Typer, *args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _write_history(store: EncryptedStore, raw: list[bytes], read_row) -> None:  # type: ignore[no-untyped-def]
    """The victim with four revisions (every one's sealed bytes kept), one other patient."""
    state = store.get_or_create(*VICTIM, lambda: store.new_state(-30))
    raw.extend(read_row())
    for n in range(3):
        state.name_map[f"Vantreece, Odalys {n}"] = f"Surrogate, {n}"
        for m in range(60 * n):  # later revisions outgrow a page (overflow pages, freed too)
            state.id_map[f"ACC-{n}-{m:04d}"] = f"SUR-{n}-{m:04d}"
        store.save(*VICTIM, state)
        store.flush()
        raw.extend(read_row())
    other = store.get_or_create(*OTHER, lambda: store.new_state(12))
    other.id_map["MRN-1"] = "SUR-1"
    store.save(*OTHER, other)
    store.flush()


def _sqlite_row(db: Path, store: EncryptedStore):  # type: ignore[no-untyped-def]
    lookup = store._keys.lookup(*VICTIM)

    def read() -> list[bytes]:
        with sqlite3.connect(db) as conn:
            wrapped, ciphertext = conn.execute(
                "SELECT wrapped_key, ciphertext FROM patients WHERE lookup = ?", (lookup,)
            ).fetchone()
        return [bytes(wrapped), bytes(ciphertext)]

    return read


def _recover(db_copy: Path, keyring: Keyring) -> dict[str, str] | None:
    """The forensic recovery: the copy opened with the master key."""
    with open_store(f"sqlite:///{db_copy}", keyring) as thief:
        state = thief.get(*VICTIM)
        return None if state is None else dict(state.name_map)


@pytest.mark.parametrize("step", ["rotate --retire-old", "forget --now"])
def test_sqlite_forget_leaves_no_bytes_and_is_final_after_the_step(
    cli: typer.Typer, tmp_path: Path, step: str
) -> None:
    _run(cli, "keys", "init")
    key_file = tmp_path / ".deidstream" / "master.key"
    db = tmp_path / ".deidstream" / "keystore.sqlite3"
    old_keys = Keyring.from_file(key_file)
    service = open_store(f"sqlite:///{db}", old_keys)  # a running instance keeps the WAL
    sealed_bytes: list[bytes] = []
    _write_history(service, sealed_bytes, _sqlite_row(db, service))
    backup = tmp_path / "backup"
    backup.mkdir()
    for suffix in ("", "-wal"):  # a hot file-level copy taken before the forget
        if Path(f"{db}{suffix}").exists():
            shutil.copyfile(f"{db}{suffix}", backup / f"ks.sqlite3{suffix}")
    assert Path(f"{db}-wal").stat().st_size > 0

    assert "forgotten" in _run(
        cli, "keys", "forget", VICTIM[1], "--authority", VICTIM[0], "--reason", "patient request"
    )
    live = db.read_bytes() + (Path(f"{db}-wal").read_bytes() if Path(f"{db}-wal").exists() else b"")
    leftovers = [n for n, chunk in enumerate(sealed_bytes) if chunk in live]
    assert leftovers == []  # no revision's wrapped key or ciphertext, file or WAL
    assert len(old_keys) == 1 and Keyring.from_file(key_file).key_ids == old_keys.key_ids
    # before the documented step, an old copy still gives the record up
    assert _recover(backup / "ks.sqlite3", old_keys) is not None
    assert '"forgets_not_final": 1' in _run(cli, "keys", "stats", "--json")
    assert "not yet final:     1 forgets" in _run(cli, "keys", "stats")

    service.close()  # instances restart with the new key before the old one is retired
    if step == "forget --now":
        out = _run(
            cli,
            "keys",
            "forget",
            VICTIM[1],
            "--authority",
            VICTIM[0],
            "--now",
            "--reason",
            "patient request",
        )
        assert "final" in out
    else:
        _run(cli, "keys", "rotate", "--retire-old")
    remaining = Keyring.from_file(key_file)
    assert len(remaining) == 1 and remaining.key_ids != old_keys.key_ids
    with pytest.raises(MissingKeyError):
        _recover(backup / "ks.sqlite3", remaining)
    assert '"forgets_not_final": 0' in _run(cli, "keys", "stats", "--json")
    with open_store(f"sqlite:///{db}", remaining) as store:  # nothing live was lost
        assert store.get(*VICTIM) is None
        other = store.get(*OTHER)
        assert other is not None and other.id_map == {"MRN-1": "SUR-1"}


def test_postgresql_an_old_copy_opens_until_the_old_key_is_destroyed(
    pg_url: str, tmp_path: Path
) -> None:
    key_file = tmp_path / "master.key"
    Keyring.generate("pg-old").write_file(key_file)
    old_keys = Keyring.from_file(key_file)
    store = open_store(pg_url, old_keys)
    try:
        lookup = store._keys.lookup(*VICTIM)

        def read() -> list[bytes]:
            row = store._backend.fetch(lookup)
            assert row is not None
            copies.append(row)
            return [row.wrapped_key, row.ciphertext]

        copies: list = []  # type: ignore[type-arg]
        _write_history(store, [], read)
        store.admin.forget(*VICTIM, operator="officer", reason="patient request")
        for row in copies:  # a dump, dead tuples, pg_wal: every revision's sealed bytes
            assert open_sealed(
                old_keys,
                row.lookup,
                Sealed(row.key_id, row.wrapped_key, row.nonce, row.ciphertext, row.record_schema),
                row.revision,
            )
        assert store.admin.forgets_not_final() == 1
        done = retire_old_keys(store, key_file, operator="officer")
        assert done.destroyed == ("pg-old",) and store.admin.forgets_not_final() == 0
        remaining = Keyring.from_file(key_file)
        for row in copies:
            with pytest.raises(MissingKeyError):
                open_sealed(
                    remaining,
                    row.lookup,
                    Sealed(
                        row.key_id, row.wrapped_key, row.nonce, row.ciphertext, row.record_schema
                    ),
                    row.revision,
                )
    finally:
        store.close()
    with open_store(pg_url, Keyring.from_file(key_file)) as fresh:
        other = fresh.get(*OTHER)
        assert other is not None and other.id_map == {"MRN-1": "SUR-1"}
        assert fresh.admin.verify_audit().ok


def test_retiring_is_refused_while_a_record_is_wrapped_under_the_key(
    sqlite_url: str, keyring: Keyring
) -> None:
    with open_store(sqlite_url, keyring) as store:
        store.get_or_create(*OTHER, lambda: store.new_state(3))
        with pytest.raises(Exception, match="still wrapped"):
            store.admin.check_retirable([keyring.primary.key_id])


def _pg_files(admin: psycopg.Connection, schema: str) -> list[Path]:  # type: ignore[type-arg]
    """The patients heap file and the newest WAL segments, as a forensic reader takes them
    (after a CHECKPOINT, so the dead tuple is on disk)."""
    data = Path(admin.execute("SHOW data_directory").fetchone()[0])
    admin.execute("CHECKPOINT")
    heap = admin.execute(
        "SELECT pg_relation_filepath(%s::regclass)", (f'"{schema}".patients',)
    ).fetchone()[0]
    current = admin.execute("SELECT pg_walfile_name(pg_current_wal_lsn())").fetchone()[0]
    wal = sorted((data / "pg_wal").glob("0*"))
    recent = [p for p in wal if p.name <= current][-2:]
    return [data / heap, *recent]


def test_postgresql_dead_tuples_and_wal_keep_the_bytes_until_the_key_is_gone(
    pg_url: str, tmp_path: Path
) -> None:
    admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True)
    try:
        data = Path(admin.execute("SHOW data_directory").fetchone()[0])
        if not os.access(data / "pg_wal", os.R_OK):
            pytest.skip("the PostgreSQL data directory is not readable here")
        key_file = tmp_path / "master.key"
        Keyring.generate("pg-old").write_file(key_file)
        old_keys = Keyring.from_file(key_file)
        schema = pg_url.partition("?schema=")[2]
        with open_store(pg_url, old_keys) as store:
            rows: list[Row] = []
            lookup = store._keys.lookup(*VICTIM)

            def read() -> list[bytes]:
                row = store._backend.fetch(lookup)
                assert row is not None
                rows.append(row)
                return []

            _write_history(store, [], read)
            store.admin.forget(*VICTIM, operator="officer", reason="patient request")
            raw = b"".join(p.read_bytes() for p in _pg_files(admin, schema))
            # the forensic reader finds every revision (dead tuples, WAL) and opens it
            found = [r for r in rows if r.ciphertext in raw and r.wrapped_key in raw]
            assert found and all(_opens(old_keys, r) for r in found)
            retire_old_keys(store, key_file, operator="officer")
        raw = b"".join(p.read_bytes() for p in _pg_files(admin, schema))
        assert any(r.ciphertext in raw for r in rows)  # still on disk: no VACUUM reaches WAL
        remaining = Keyring.from_file(key_file)
        for row in rows:
            with pytest.raises(MissingKeyError):
                _opens(remaining, row)
    finally:
        admin.close()


def _opens(keyring: Keyring, row: Row) -> bool:
    return bool(
        open_sealed(
            keyring,
            row.lookup,
            Sealed(row.key_id, row.wrapped_key, row.nonce, row.ciphertext, row.record_schema),
            row.revision,
        )
    )


def test_forget_now_is_refused_while_an_instance_seals_under_the_old_key(
    cli: typer.Typer, tmp_path: Path
) -> None:
    """Destroying the key a running instance still seals with would lose what it writes
    next: the step is refused, the key file kept, the forget itself stands."""
    _run(cli, "keys", "init")
    key_file = tmp_path / ".deidstream" / "master.key"
    db = tmp_path / ".deidstream" / "keystore.sqlite3"
    old_keys = Keyring.from_file(key_file)
    with open_store(f"sqlite:///{db}", old_keys) as service:
        service.get_or_create(*VICTIM, lambda: service.new_state(-30))
        service.get_or_create(*OTHER, lambda: service.new_state(12))
        result = CliRunner().invoke(
            cli,
            [
                *("keys", "forget", VICTIM[1], "--authority", VICTIM[0], "--now"),
                *("--reason", "request", "--wait", "1"),
            ],
        )
        assert result.exit_code == 1 and "not final" in result.output, result.output
        assert "live instances" in result.output
        assert old_keys.primary.key_id in Keyring.from_file(key_file).key_ids
        state = service.get_or_create("HOSP-Q", "900779", lambda: service.new_state(5))
        service.flush()
    with open_store(f"sqlite:///{db}", Keyring.from_file(key_file)) as store:
        assert store.get(*VICTIM) is None
        assert store.get("HOSP-Q", "900779") == state
        assert store.admin.forgets_not_final() == 1
