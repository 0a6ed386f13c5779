"""PostgreSQL backend with real server: two instances share one state (first writer wins)."""

from __future__ import annotations

import random
import threading

import psycopg
import pytest
from psycopg import sql

from keystore import EncryptedStore, Keyring, PatientState, open_store
from keystore.errors import ForgottenPatientError, IntegrityError, KeystoreUnavailable

pytestmark = pytest.mark.integration


def _never() -> PatientState:
    raise AssertionError("a new identity was created where the stored one must be used")


def test_two_instances_racing_on_new_patients_share_one_state(
    pg_url: str, keyring: Keyring
) -> None:
    a, b = open_store(pg_url, keyring), open_store(pg_url, keyring)
    shifts: dict[str, list[int]] = {}
    calls: list[str] = []
    guard = threading.Lock()

    def worker(store: EncryptedStore, patient: str, barrier: threading.Barrier) -> None:
        def slow() -> PatientState:
            with guard:
                calls.append(patient)
            threading.Event().wait(0.02)  # both read "absent" before either inserts
            return store.new_state(random.choice([-1, 1]) * random.randint(1, 730))

        barrier.wait()
        state = store.get_or_create("HOSP", patient, slow)
        with guard:
            shifts.setdefault(patient, []).append(state.shift_days)

    threads = []
    for n in range(12):
        barrier = threading.Barrier(4)
        for store in (a, b, a, b):
            threads.append(threading.Thread(target=worker, args=(store, f"p{n}", barrier)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(shifts) == 12
    assert all(len(set(s)) == 1 and len(s) == 4 for s in shifts.values()), shifts
    assert len(calls) > 12  # the race really happened: several instances built a state
    assert a.stats()["patients"] == 12
    for s in (a, b):
        s.close()
    with open_store(pg_url, keyring) as c:  # restart: the winners were stored
        for patient, values in shifts.items():
            assert c.get_or_create("HOSP", patient, _never).shift_days == values[0]


def test_concurrent_schema_creation_and_migration(pg_url: str, keyring: Keyring) -> None:
    stores: list[EncryptedStore] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(4)

    def opener() -> None:
        barrier.wait()
        try:
            stores.append(open_store(pg_url, keyring))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(stores) == 4
    # One store root for all: every instance derives the same pseudonyms.
    assert len({s.pseudonym("patient", "x") for s in stores}) == 1
    for s in stores:
        s.close()


def test_updates_merge_and_marks_race(pg_url: str, keyring: Keyring) -> None:
    a, b = open_store(pg_url, keyring), open_store(pg_url, keyring)
    sa = a.get_or_create("H", "1", lambda: a.new_state(-10))
    sb = b.get_or_create("H", "1", _never)
    sa.name_map["x"] = "one"
    a.save("H", "1", sa)
    a.flush()
    sb.name_map.update({"x": "other", "y": "two"})
    b.save("H", "1", sb)
    b.flush()
    assert sb.name_map == {"x": "one", "y": "two"}

    assert a.compare_and_set_mark("dedup", None, b"r1")
    wins: list[bool] = []
    barrier = threading.Barrier(6)

    def cas(store: EncryptedStore, value: bytes) -> None:
        barrier.wait()
        wins.append(store.compare_and_set_mark("dedup", b"r1", value))

    threads = [
        threading.Thread(target=cas, args=((a, b)[i % 2], f"v{i}".encode())) for i in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wins.count(True) == 1
    a.close()
    b.close()


def test_rotate_forget_reveal_and_tamper(pg_url: str, keyring: Keyring) -> None:
    new = Keyring.generate("pg-new")
    with open_store(pg_url, keyring) as s:
        states = {str(i): s.get_or_create("H", str(i), lambda: s.new_state(5)) for i in range(6)}
        report = s.admin.rotate(new.merged_with(keyring))
        assert report.rewrapped == 6
        assert s.admin.forget("H", "2", operator="o", reason="request")
    with open_store(pg_url, new) as s:
        for pid, state in states.items():
            if pid == "2":
                with pytest.raises(ForgottenPatientError):
                    s.admin.reveal(state.pseudonym, operator="o", reason="irb")
                continue
            assert s.get_or_create("H", pid, _never) == state
        assert s.admin.reveal(states["4"].pseudonym, operator="o", reason="irb").patient_id == "4"
    schema = pg_url.rsplit("schema=", 1)[1]
    with psycopg.connect(pg_url.split("?")[0], autocommit=True) as conn:
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        conn.execute(
            "UPDATE patients SET ciphertext = set_byte(ciphertext, 4, get_byte(ciphertext, 4) # 1)"
        )  # flip one bit
        conn.execute("DELETE FROM audit")  # append-only: silently nothing
        assert conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0] >= 3
    with open_store(pg_url, new) as s, pytest.raises(IntegrityError):
        s.get_or_create("H", "0", _never)


def test_unreachable_server_is_retriable(keyring: Keyring) -> None:
    with pytest.raises(KeystoreUnavailable) as info:
        open_store("postgresql://postgres@127.0.0.1:1/test?connect_timeout=1", keyring)
    assert info.value.retriable


def test_lost_connection_is_retriable_then_recovers(pg_url: str, keyring: Keyring) -> None:
    with open_store(pg_url, keyring) as s:
        state = s.get_or_create("H", "1", lambda: s.new_state(3))
        pid = s._backend._conn.info.backend_pid  # type: ignore[attr-defined]
        with psycopg.connect(pg_url.split("?")[0], autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(KeystoreUnavailable) as info:
            s.get_mark("x")
        assert info.value.retriable
        s.flush()
        assert s.get("H", "1") == state  # reconnected on the next call
        assert s.compare_and_set_mark("x", None, b"1")


def test_batched_state_writes_keep_the_revision_check(pg_url: str, keyring: Keyring) -> None:
    """Distinct records go in one batch (one UPDATE statement on PostgreSQL); a record
    another instance moved on is not overwritten (its revision check fails) and is merged,
    as with one UPDATE per record."""
    a, b = open_store(pg_url, keyring), open_store(pg_url, keyring)
    try:
        states = {p: a.get_or_create("H", p, lambda: a.new_state(-5)) for p in ("x", "y", "z")}
        assert b.get_or_create("H", "y", _never).shift_days == -5
        b.get_or_create("H", "y", _never).name_map["theirs"] = "T"
        b.save("H", "y", b.get_or_create("H", "y", _never))
        b.flush()  # y's stored revision moved on under a
        for p, state in states.items():
            state.name_map[f"mine-{p}"] = p.upper()
            a.save("H", p, state)
        backend = a._backend
        calls: list[int] = []
        real = backend.update_many

        def counting(batch: list[tuple[object, int]], now: float) -> list[bool]:
            calls.append(len(batch))
            return real(batch, now)  # type: ignore[arg-type]

        backend.update_many = counting  # type: ignore[method-assign]
        a.flush()
        assert calls[0] == 3  # one batch for x, y, z; then y alone after its merge
        assert calls[1:] == [1]
    finally:
        a.close()
        b.close()
    with open_store(pg_url, keyring) as c:
        y = c.get_or_create("H", "y", _never)
        assert y.name_map == {"theirs": "T", "mine-y": "Y"}  # both kept
        for p in ("x", "z"):
            assert c.get_or_create("H", p, _never).name_map == {f"mine-{p}": p.upper()}
