"""``add_mark_owners`` writes its rows with one ``executemany`` (session 21): every row
written, an owned key keeping its first owner, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from keystore import Keyring, open_store
from keystore.forgetting import add_mark_owners


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    return str(request.getfixturevalue("pg_url"))


def _owners(backend: object) -> dict[bytes, str]:
    with backend._transaction(write=False) as cur:  # type: ignore[attr-defined]
        rows = backend._exec(cur, "SELECT key_hash, owner FROM mark_owners").fetchall()  # type: ignore[attr-defined]
    return {bytes(k): str(o) for k, o in rows}


def test_rows_written_first_owner_kept(url: str) -> None:
    with open_store(url, Keyring.generate("owners-a")) as store:
        backend = store.backend
        first = [(bytes([i]) * 32, f"owner-{i % 3}") for i in range(40)]
        add_mark_owners(backend, first)
        add_mark_owners(backend, [])  # nothing to write: no statement
        later = [(bytes([i]) * 32, "someone-else") for i in range(30, 50)]
        with backend.group():  # as compare_and_set_marks calls it
            add_mark_owners(backend, later)
        owners = _owners(backend)
        assert len(owners) == 50
        assert all(owners[k] == o for k, o in first)
        assert all(owners[bytes([i]) * 32] == "someone-else" for i in range(40, 50))
