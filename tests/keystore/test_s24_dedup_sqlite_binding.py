"""The SQLite backend's identity adapters for bytes and None: sqlite3 binds the very same
values (a BLOB, a NULL) as without them, answered from its adapter registry at once."""

from __future__ import annotations

import sqlite3

import keystore.sqlite  # noqa: F401 - registers the adapters


def test_adapters_hand_back_the_value_itself() -> None:
    blob = b"\x00sealed\xff" * 3
    assert sqlite3.adapters[(bytes, sqlite3.PrepareProtocol)](blob) is blob
    assert sqlite3.adapters[(type(None), sqlite3.PrepareProtocol)](None) is None


def test_values_are_stored_and_compared_as_without_adapters() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        conn.execute("CREATE TABLE t (k BLOB PRIMARY KEY, v BLOB, e REAL)")
        rows = [(b"k1", b"\x00v", None), (b"k2", b"", 1.5), (bytearray(b"k3"), None, None)]
        conn.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        got = conn.execute("SELECT typeof(k), typeof(v), typeof(e) FROM t ORDER BY k").fetchall()
        assert got == [("blob", "blob", "null"), ("blob", "blob", "real"), ("blob", "null", "null")]
        assert conn.execute("SELECT k FROM t WHERE v = ?", (b"\x00v",)).fetchall() == [(b"k1",)]
        assert conn.execute("SELECT k FROM t WHERE v IS ?", (None,)).fetchall() == [(b"k3",)]
        subclass = type("Sub", (bytes,), {})(b"k2")  # not adapted: found as before
        assert conn.execute("SELECT e FROM t WHERE k = ?", (subclass,)).fetchone() == (1.5,)
    finally:
        conn.close()
