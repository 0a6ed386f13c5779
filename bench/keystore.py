"""Key store throughput: create, cold get, cached get, batched save, mark CAS.

    .venv/bin/python bench/keystore.py [--patients 2000] [--pg postgresql://postgres@127.0.0.1:5432/test]

The batched mark lines read and write 64 marks per call, as ``Processor.process_many`` does
for a Kafka batch (one ``get_marks`` and one ``compare_and_set_marks`` per batch). The batch
confirmation line is the service's commit of a batch: 64 dirty patient states flushed and 64
marks compare-and-set inside one ``store.transaction()`` (``--confirmation-only``: just it).

SQLite always; PostgreSQL when reachable (a throw-away schema, dropped afterwards).
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from keystore import EncryptedStore, Keyring, PatientState, open_store  # noqa: E402
from keystore.errors import KeystoreUnavailable  # noqa: E402


def _rate(label: str, n: int, fn: Callable[[], None]) -> None:
    start = time.perf_counter()
    fn()
    took = time.perf_counter() - start
    print(f"  {label:<34} {n / took:>12,.0f} /s   {took / n * 1e6:>9.2f} µs/op")


def confirmation(url: str, keyring: Keyring, batches: int, batch: int = 64) -> None:
    """The service's batch confirmation: flush + mark CAS in one transaction (timed alone)."""
    store = open_store(url, keyring, batch_size=batch * 4)
    ids = [f"c{i:06d}" for i in range(batch)]
    states = [store.get_or_create("CONF", pid, lambda: store.new_state(7)) for pid in ids]
    marks: dict[str, bytes | None] = {f"conf:{pid}": None for pid in ids}
    took = 0.0
    for n in range(batches):
        for pid, state in zip(ids, states, strict=True):
            state.name_map["latest"] = f"Surrogate {n}"
            store.save("CONF", pid, state)
        items = [(key, old, n.to_bytes(4, "big")) for key, old in marks.items()]
        start = time.perf_counter()
        with store.transaction():
            store.flush()
            results = store.compare_and_set_marks(items)
        took += time.perf_counter() - start
        assert all(results)
        marks = {key: new for key, _, new in items}
    store.close()
    print(
        f"  {f'batch confirmation ({batch} states + {batch} CAS)':<34}"
        f" {batches / took:>12,.0f} /s   {took / batches * 1e6:>9.2f} µs/batch"
    )


def run(url: str, keyring: Keyring, patients: int) -> None:
    ids = [f"{i:08d}" for i in range(patients)]
    store = open_store(url, keyring, batch_size=256)

    def factory(s: EncryptedStore) -> Callable[[], PatientState]:
        return lambda: s.new_state(-100)

    def create() -> None:
        for pid in ids:
            store.get_or_create("BENCH", pid, factory(store))

    def cached() -> None:
        for _ in range(20):
            for pid in ids:
                store.get_or_create("BENCH", pid, factory(store))

    def save() -> None:
        for pid in ids:
            state = store.get_or_create("BENCH", pid, factory(store))
            state.name_map[f"name{pid}"] = "Surrogate Name"
            state.id_map[pid] = "99999999"
            store.save("BENCH", pid, state)
        store.flush()

    _rate("create (insert, sealed)", patients, create)
    _rate("get, cached", patients * 20, cached)
    _rate("save + flush (batched updates)", patients, save)
    store.close()

    cold = open_store(url, keyring)

    def cold_get() -> None:
        for pid in ids:
            cold.get_or_create("BENCH", pid, factory(cold))

    def marks() -> None:
        for pid in ids:
            cold.compare_and_set_mark(f"dedup:{pid}", None, b"rank-1")

    def mark_get() -> None:
        for pid in ids:
            cold.get_mark(f"dedup:{pid}")

    _rate("get, cold (read + decrypt)", patients, cold_get)
    _rate("mark compare-and-set (insert)", patients, marks)
    _rate("mark get", patients, mark_get)

    batch = 64  # what Processor.process_many does per Kafka batch

    def marks_batched() -> None:
        for start in range(0, patients, batch):
            chunk = ids[start : start + batch]
            cold.get_marks([f"batch:{pid}" for pid in chunk])
            cold.compare_and_set_marks([(f"batch:{pid}", None, b"rank-1") for pid in chunk])

    def marks_batched_update() -> None:
        for start in range(0, patients, batch):
            chunk = ids[start : start + batch]
            found = cold.get_marks([f"batch:{pid}" for pid in chunk])
            cold.compare_and_set_marks([(k, v, b"rank-2") for k, v in found.items()])

    _rate(f"mark get_marks + CAS batch of {batch} (insert)", patients, marks_batched)
    _rate(f"mark get_marks + CAS batch of {batch} (update)", patients, marks_batched_update)

    notes = patients * 5

    def note_round_trip() -> None:
        """What the processor does per note: state, a new surrogate now and then, the
        version mark read + compare-and-set, and a flush per 50 notes (commit)."""
        for n in range(notes):
            pid = ids[n % patients]
            state = cold.get_or_create("BENCH", pid, factory(cold))
            if n % 3 == 0:
                state.name_map["latest"] = f"Surrogate {n}"
                cold.save("BENCH", pid, state)
            key = f"note:{pid}:{n % 7}"
            old = cold.get_mark(key)
            cold.compare_and_set_mark(key, old, n.to_bytes(4, "big"))
            if n % 50 == 49:
                cold.flush()
        cold.flush()

    _rate("note round trip (store share)", notes, note_round_trip)
    cold.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--patients", type=int, default=2000)
    parser.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--confirmation-only", action="store_true")
    parser.add_argument("--batches", type=int, default=300, help="batch confirmations timed")
    args = parser.parse_args()

    def measure(url: str) -> None:
        if not args.confirmation_only:
            run(url, keyring, args.patients)
        confirmation(url, keyring, args.batches)

    keyring = Keyring.generate("bench")
    print(f"patients={args.patients} cpu_count={os.cpu_count()}")
    with tempfile.TemporaryDirectory() as tmp:
        print("SQLite (file, WAL):")
        measure(f"sqlite:///{Path(tmp) / 'bench.sqlite3'}")

    import psycopg
    from psycopg import sql

    schema = f"ks_bench_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(args.pg, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        print("PostgreSQL: not reachable, skipped")
        return
    try:
        print("PostgreSQL (loopback, one connection per store):")
        measure(f"{args.pg}?schema={schema}")
    except KeystoreUnavailable as exc:
        print(f"PostgreSQL: {exc}")
    finally:
        admin.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))
        admin.close()


if __name__ == "__main__":
    main()
