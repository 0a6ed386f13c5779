"""EncryptedStore over SQLite: consistency, crypto-shredding, rotation, reveal, bad input."""

from __future__ import annotations

import random
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from keystore import EncryptedStore, Keyring, PatientState, open_store
from keystore.backend import SCHEMA_VERSION
from keystore.errors import ForgottenPatientError, IntegrityError, KeystoreError, MissingKeyError

MRN = "MRN-77881234"
AUTHORITY = "HOSPITAL-AUTH-XYZ"
NAME = "Zebulon Quixote"
DATE = "2021-03-04"


def _db_path(url: str) -> str:
    return url.removeprefix("sqlite:///")


def _factory(store: EncryptedStore, calls: list[int] | None = None) -> Callable[[], PatientState]:
    def make() -> PatientState:
        if calls is not None:
            calls.append(1)
        return store.new_state(random.choice([-1, 1]) * random.randint(1, 730))

    return make


def _never() -> PatientState:
    raise AssertionError("a new identity was created where the stored one must be used")


def test_restart_gives_the_same_state(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        state = s.get_or_create(AUTHORITY, MRN, _factory(s))
        state.name_map[NAME] = "Arthur Penhallow"
        state.id_map[MRN] = "MRN-12345678"
        s.save(AUTHORITY, MRN, state)
        pseudonym = s.pseudonym("visit", state.seed, "V1")
    with open_store(sqlite_url, keyring) as s:
        again = s.get_or_create(AUTHORITY, MRN, _never)
        assert again == state
        assert s.pseudonym("visit", again.seed, "V1") == pseudonym


def test_cached_read_returns_the_same_object(store: EncryptedStore) -> None:
    first = store.get_or_create("A", "1", _factory(store))
    assert store.get_or_create("A", "1", _never) is first
    assert store.stats()["cache_hits"] == 1


def test_same_id_under_other_authority_is_another_patient(store: EncryptedStore) -> None:
    a = store.get_or_create("A", "1", _factory(store))
    b = store.get_or_create("B", "1", _factory(store))
    assert a.pseudonym != b.pseudonym and a.seed != b.seed


def test_database_holds_no_plaintext_identifiers(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        state = s.get_or_create(AUTHORITY, MRN, _factory(s))
        state.name_map[NAME] = "Arthur Penhallow"
        state.extra["birth"] = DATE
        s.save(AUTHORITY, MRN, state)
        assert s.compare_and_set_mark(f"dedup:{MRN}:visit", None, DATE.encode())
        s.admin.reveal(state.pseudonym, operator="officer", reason="IRB-42")
        pseudonym = state.pseudonym
    raw = b"".join(p.read_bytes() for p in Path(_db_path(sqlite_url)).parent.iterdir())
    for secret in (MRN, AUTHORITY, NAME, "Zebulon", "Arthur Penhallow", DATE, pseudonym):
        assert secret.encode() not in raw, secret


def test_first_writer_wins_between_two_instances(sqlite_url: str, keyring: Keyring) -> None:
    a, b = open_store(sqlite_url, keyring), open_store(sqlite_url, keyring)
    results: dict[str, list[int]] = {}
    calls: list[int] = []
    lock = threading.Lock()

    def worker(store: EncryptedStore, patient: str, barrier: threading.Barrier) -> None:
        def slow() -> PatientState:
            calls.append(1)
            threading.Event().wait(0.01)  # widen the window between read and insert
            return store.new_state(random.randint(1, 730))

        barrier.wait()
        shift = store.get_or_create("A", patient, slow).shift_days
        with lock:
            results.setdefault(patient, []).append(shift)

    threads = []
    for n in range(10):
        barrier = threading.Barrier(2)
        threads += [threading.Thread(target=worker, args=(s, f"p{n}", barrier)) for s in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(len(set(shifts)) == 1 for shifts in results.values()), results
    assert len(calls) > 10  # both instances really raced for at least one patient
    assert a.stats()["patients"] == 10
    a.close()
    b.close()


def test_updates_from_two_instances_merge_and_stored_wins(
    sqlite_url: str, keyring: Keyring
) -> None:
    a, b = open_store(sqlite_url, keyring), open_store(sqlite_url, keyring)
    sa = a.get_or_create("A", "1", _factory(a))
    sb = b.get_or_create("A", "1", _never)
    sa.name_map["x"] = "one"
    a.save("A", "1", sa)
    a.flush()
    sb.name_map["x"] = "three"
    sb.name_map["y"] = "two"
    b.save("A", "1", sb)
    b.flush()
    assert sb.name_map == {"x": "one", "y": "two"}  # b adopted the stored surrogate
    a.close()
    b.close()
    with open_store(sqlite_url, keyring) as c:
        assert c.get_or_create("A", "1", _never).name_map == {"x": "one", "y": "two"}


def test_saves_are_batched_until_flush(sqlite_url: str, keyring: Keyring) -> None:
    now = [0.0]
    s = open_store(sqlite_url, keyring, batch_size=3, max_delay_s=5.0, monotonic=lambda: now[0])
    states = [s.get_or_create("A", str(i), _factory(s)) for i in range(3)]
    for state in states[:2]:
        state.id_map["k"] = "v"
    s.save("A", "0", states[0])
    s.save("A", "1", states[1])
    assert s.pending == 2
    with open_store(sqlite_url, keyring) as other:
        assert other.get_or_create("A", "0", _never).id_map == {}
    s.save("A", "2", states[2])  # third pending save reaches batch_size
    assert s.pending == 0
    s.save("A", "0", states[0])
    now[0] = 6.0
    s.save("A", "1", states[1])  # oldest pending save is older than max_delay
    assert s.pending == 0
    with open_store(sqlite_url, keyring) as other:
        assert other.get_or_create("A", "1", _never).id_map == {"k": "v"}
    s.close()


def test_close_flushes_pending_saves(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        state = s.get_or_create("A", "1", _factory(s))
        state.name_map["a"] = "b"
        s.save("A", "1", state)
        assert s.pending == 1
    with open_store(sqlite_url, keyring) as s:
        assert s.get_or_create("A", "1", _never).name_map == {"a": "b"}


# -- bad input: corrupted records, wrong or missing keys --------------------------------


def _tamper(url: str, sql: str, *params: object) -> None:
    conn = sqlite3.connect(_db_path(url))
    with conn:
        conn.execute(sql, params)
    conn.close()


def test_corrupted_record_is_an_error_not_a_new_identity(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        s.get_or_create("A", "1", _factory(s))
    conn = sqlite3.connect(_db_path(sqlite_url))
    (blob,) = conn.execute("SELECT ciphertext FROM patients").fetchone()
    with conn:
        conn.execute(
            "UPDATE patients SET ciphertext = ?",
            (blob[:10] + bytes([blob[10] ^ 0x40]) + blob[11:],),
        )
    conn.close()
    with open_store(sqlite_url, keyring) as s:
        with pytest.raises(IntegrityError):
            s.get_or_create("A", "1", _never)
        assert s.stats()["patients"] == 1  # the damaged record is still there, untouched


def test_swapped_rows_in_the_database_are_rejected(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        s.get_or_create("A", "1", _factory(s))
        s.get_or_create("A", "2", _factory(s))
    conn = sqlite3.connect(_db_path(sqlite_url))
    rows = conn.execute("SELECT lookup, wrapped_key, nonce, ciphertext FROM patients").fetchall()
    with conn:
        conn.execute(
            "UPDATE patients SET wrapped_key = ?, nonce = ?, ciphertext = ? WHERE lookup = ?",
            (*rows[0][1:], rows[1][0]),
        )
    conn.close()
    with open_store(sqlite_url, keyring) as s:
        outcomes = []
        for pid in ("1", "2"):
            try:
                s.get_or_create("A", pid, _never)
                outcomes.append("ok")
            except IntegrityError:
                outcomes.append("rejected")
        assert sorted(outcomes) == ["ok", "rejected"]


def test_store_opened_with_an_unknown_key_says_which(sqlite_url: str, keyring: Keyring) -> None:
    open_store(sqlite_url, keyring).close()
    with pytest.raises(MissingKeyError, match=keyring.primary.key_id):
        open_store(sqlite_url, Keyring.generate("someone-else"))


def test_store_opened_with_a_wrong_key_of_the_same_id(sqlite_url: str, keyring: Keyring) -> None:
    open_store(sqlite_url, keyring).close()
    with pytest.raises(IntegrityError):
        open_store(sqlite_url, Keyring.generate(keyring.primary.key_id))


def test_record_under_a_removed_key_is_missing_key(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        s.get_or_create("A", "1", _factory(s))
    # a key the store knows (the guard refuses a record under an unknown one), not configured
    _tamper(sqlite_url, "INSERT INTO master_keys (key_id, added_at) VALUES ('retired', 0)")
    _tamper(sqlite_url, "UPDATE patients SET key_id = 'retired'")
    with open_store(sqlite_url, keyring) as s, pytest.raises(MissingKeyError, match="retired"):
        s.get_or_create("A", "1", _never)


# -- admin: rotate, forget, reveal ------------------------------------------------------


def test_rotate_keeps_every_record_readable(sqlite_url: str, keyring: Keyring) -> None:
    new = Keyring.generate("new")
    states = {}
    with open_store(sqlite_url, keyring) as s:
        for i in range(40):
            states[str(i)] = s.get_or_create("A", str(i), _factory(s))
        assert s.compare_and_set_mark("m", None, b"v1")
        pseudonym = s.pseudonym("visit", "x")
        report = s.admin.rotate(new.merged_with(keyring))
        assert s.get_or_create("A", "0", _never) == states["0"]
    assert report.rewrapped == 40 and not report.failed
    with open_store(sqlite_url, new) as s:  # the old key is gone entirely
        for pid, state in states.items():
            assert s.get_or_create("A", pid, _never) == state
        assert s.get_mark("m") == b"v1"
        assert s.pseudonym("visit", "x") == pseudonym  # research ids survive rotation
        assert s.stats()["records_by_key"] == {"new": 40}
        again = s.admin.rotate(new)
        assert again.rewrapped == 0 and again.already_current == 40


def test_forget_makes_exactly_one_patient_unreadable(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring) as s:
        states = {str(i): s.get_or_create("A", str(i), _factory(s)) for i in range(5)}
        assert s.admin.forget("A", "3", operator="officer", reason="patient request")
        assert not s.admin.forget("A", "99", operator="officer", reason="typo")
    conn = sqlite3.connect(_db_path(sqlite_url))
    assert conn.execute("SELECT COUNT(*) FROM patients").fetchone()[0] == 4
    conn.close()
    with open_store(sqlite_url, keyring) as s:
        for pid in ("0", "1", "2", "4"):
            assert s.get_or_create("A", pid, _never) == states[pid]
            assert s.admin.reveal(states[pid].pseudonym, operator="o", reason="r").patient_id == pid
        with pytest.raises(ForgottenPatientError):
            s.admin.reveal(states["3"].pseudonym, operator="o", reason="r")
        fresh = s.get_or_create("A", "3", _factory(s))  # a NEW identity, unlinked
        assert fresh.pseudonym != states["3"].pseudonym and fresh.seed != states["3"].seed
        assert s.admin.reveal(fresh.pseudonym, operator="o", reason="r").patient_id == "3"
        assert s.stats()["forgotten"] == 1


def test_forget_in_one_instance_reaches_the_other(sqlite_url: str, keyring: Keyring) -> None:
    now = [0.0]
    a = open_store(sqlite_url, keyring, cache_ttl_s=10.0, monotonic=lambda: now[0])
    b = open_store(sqlite_url, keyring)
    old = a.get_or_create("A", "1", _factory(a))
    b.admin.forget("A", "1", operator="o", reason="r")
    old.name_map["late"] = "write"
    a.save("A", "1", old)
    a.flush()  # must not resurrect the shredded record
    assert b.stats()["patients"] == 0
    now[0] = 11.0  # cache entry expired: re-read finds nothing, new identity
    assert a.get_or_create("A", "1", _factory(a)).pseudonym != old.pseudonym
    a.close()
    b.close()


def test_reveal_is_audited_without_phi(store: EncryptedStore) -> None:
    state = store.get_or_create(AUTHORITY, MRN, _factory(store))
    who = store.admin.reveal(state.pseudonym, operator="officer", reason="IRB-2026-17")
    assert (who.authority, who.patient_id) == (AUTHORITY, MRN)
    with pytest.raises(KeystoreError, match="not found"):
        store.admin.reveal("nosuchpseudonym", operator="officer", reason="IRB-2026-17")
    with pytest.raises(KeystoreError, match="reason"):
        store.admin.reveal(state.pseudonym, operator="officer", reason=" ")
    log = store.admin.audit_log()
    assert [(row[1], row[5]) for row in log] == [
        ("reveal", "revealed"),
        ("reveal", "unknown_pseudonym"),
    ]
    flat = repr(log)
    for secret in (MRN, AUTHORITY, state.pseudonym):
        assert secret not in flat
    assert "IRB-2026-17" in flat and "officer" in flat


def test_audit_is_append_only(sqlite_url: str, store: EncryptedStore) -> None:
    store.admin.forget("A", "1", operator="o", reason="r")
    conn = sqlite3.connect(_db_path(sqlite_url))
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM audit")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE audit SET operator = 'x'")
    conn.close()


def test_reveal_without_kept_identity(sqlite_url: str, keyring: Keyring) -> None:
    with open_store(sqlite_url, keyring, keep_identity=False) as s:
        state = s.get_or_create("A", "1", _factory(s))
        with pytest.raises(KeystoreError, match="no identity"):
            s.admin.reveal(state.pseudonym, operator="o", reason="r")


# -- marks ------------------------------------------------------------------------------


def test_marks_compare_and_set(store: EncryptedStore) -> None:
    assert store.get_mark("k") is None
    assert store.compare_and_set_mark("k", None, b"v1")
    assert not store.compare_and_set_mark("k", None, b"v2")
    assert not store.compare_and_set_mark("k", b"v0", b"v2")
    assert store.compare_and_set_mark("k", b"v1", b"v2")
    assert store.get_mark("k") == b"v2"
    assert store.get_mark("other") is None


def test_marks_race_has_one_winner(sqlite_url: str, keyring: Keyring) -> None:
    stores = [open_store(sqlite_url, keyring) for _ in range(2)]
    stores[0].compare_and_set_mark("k", None, b"start")
    barrier = threading.Barrier(8)
    wins: list[bytes] = []

    def worker(i: int) -> None:
        barrier.wait()
        value = f"w{i}".encode()
        if stores[i % 2].compare_and_set_mark("k", b"start", value):
            wins.append(value)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(wins) == 1 and stores[1].get_mark("k") == wins[0]
    for s in stores:
        s.close()


def test_stats_counts(store: EncryptedStore) -> None:
    for i in range(3):
        store.get_or_create("A", str(i), _factory(store))
    store.compare_and_set_mark("m", None, b"1")
    stats = store.stats()
    assert (stats["patients"], stats["marks"], stats["pseudonyms"]) == (3, 1, 3)
    assert stats["schema_version"] == SCHEMA_VERSION and stats["backend"] == "sqlite"
    assert stats["expiring_marks"] == 0


def test_unsupported_url() -> None:
    with pytest.raises(KeystoreError, match="scheme"):
        open_store("mysql://x/y", Keyring.generate())
