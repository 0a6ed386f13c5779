"""Rotation and retirement as a protocol that cannot lose data (issue 14, item 3), on real
PostgreSQL: the store records which master keys may wrap and which instances (heartbeat)
seal with which key; retiring a key a live instance seals with, or that anything is still
wrapped under, is refused; an instance refuses to seal under a retired key."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from keystore import EncryptedStore, Keyring, open_store
from keystore.errors import KeyRetiredError, RetireRefused


class Writer:
    """A running instance: a thread creating patients and updating their maps, flushing
    often, until stopped. Remembers every patient it wrote."""

    def __init__(self, store: EncryptedStore, tag: str) -> None:
        self.store, self.tag = store, tag
        self.written: list[str] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        n = len(self.written)
        try:
            while not self._stop.is_set():
                pid = f"{self.tag}-{n}"
                state = self.store.get_or_create("H", pid, lambda: self.store.new_state(5))
                state.name_map[f"given{n}"] = f"Surrogate{n}"
                self.store.save("H", pid, state)
                self.store.flush()
                self.written.append(pid)
                n += 1
                time.sleep(0.005)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        assert not self.errors, self.errors


@contextmanager
def running(store: EncryptedStore, tag: str) -> Iterator[Writer]:
    writer = Writer(store, tag)
    try:
        yield writer
    finally:
        writer.stop()


def test_rotate_and_retire_with_two_running_instances(pg_url: str) -> None:
    k1, k2 = Keyring.generate("k1"), Keyring.generate("k2")
    new_first = k2.merged_with(k1)  # what every instance is given before the rotation
    a = open_store(pg_url, k1, heartbeat_s=0.2)
    b = open_store(pg_url, k1, heartbeat_s=0.2)
    officer = open_store(pg_url, new_first)
    written: list[str] = []
    try:
        with running(a, "a") as wa, running(b, "b") as wb:
            time.sleep(0.3)
            report = officer.admin.rotate(new_first, operator="officer")
            assert report.rewrapped > 0 and not report.failed
            # both instances still seal with k1 (and keep writing meanwhile): refused
            with pytest.raises(RetireRefused, match="live instances") as refused:
                officer.admin.retire_key("k1", operator="officer")
            assert refused.value.coordinates["live_instances"] == 2
        written += wa.written + wb.written
        b.close()  # B restarts with the new key first
        b = open_store(pg_url, new_first, heartbeat_s=0.2)
        with running(a, "a2") as wa, running(b, "b2") as wb:
            time.sleep(0.2)
            with pytest.raises(RetireRefused, match="live instances") as refused:
                officer.admin.retire_key("k1", operator="officer")  # A is still on k1
            assert refused.value.coordinates["live_instances"] == 1
        written += wa.written + wb.written
        a.close()  # A restarts with the new key first too
        a = open_store(pg_url, new_first, heartbeat_s=0.2)
        # what A wrote under k1 after the rotation is still wrapped under it: refused
        with pytest.raises(RetireRefused, match="records") as refused:
            officer.admin.retire_key("k1", operator="officer")
        assert refused.value.coordinates["records"] > 0
        with running(a, "a3") as wa, running(b, "b3") as wb:
            again = officer.admin.rotate(new_first, operator="officer")  # re-wrap the leftovers
            assert again.rewrapped > 0 and not again.failed
            officer.admin.retire_key("k1", operator="officer")
        written += wa.written + wb.written

        # an instance still configured with k1 first refuses to start
        with pytest.raises(KeyRetiredError):
            open_store(pg_url, k1)
        usage = officer.stats()
        assert usage["retired_keys"] == ["k1"] and usage["active_keys"] == ["k2"]
        assert usage["records_by_key"] == {"k2": len(set(written))}
    finally:
        for store in (a, b, officer):
            store.close()

    # nothing unreadable: with the new key alone, every patient both instances wrote
    with open_store(pg_url, k2) as reader:
        for pid in written:
            state = reader.get("H", pid)
            assert state is not None and state.shift_days == 5, pid
    assert len(written) > 20


def test_a_stale_instance_cannot_seal_under_a_retired_key(pg_url: str) -> None:
    """An instance whose heartbeat aged past the live window (paused, partitioned) does not
    block the retirement; when it wakes up, the database refuses its writes under the
    retired key (before its next heartbeat would have told it): nothing is sealed."""
    k1, k2 = Keyring.generate("k1"), Keyring.generate("k2")
    stale = open_store(pg_url, k1, heartbeat_s=3600)
    stale.get_or_create("H", "before", lambda: stale.new_state(1))
    with open_store(pg_url, k2.merged_with(k1)) as officer:
        officer.admin.rotate(k2.merged_with(k1))
        time.sleep(0.3)
        officer.admin.retire_key("k1", live_within_s=0.2)
        before = officer.stats()["patients"]
    with pytest.raises(KeyRetiredError):
        stale.get_or_create("H", "after", lambda: stale.new_state(2))
    state = stale.get_or_create("H", "before", lambda: stale.new_state(3))
    state.name_map["x"] = "Y"
    stale.save("H", "before", state)
    with pytest.raises(KeyRetiredError):
        stale.flush()  # an update re-seals under the primary: refused as well
    stale._dirty.clear()  # noqa: SLF001 - the instance gives up; close() must not flush
    stale.close()
    with open_store(pg_url, k2) as reader:
        assert reader.stats()["patients"] == before
        assert reader.get("H", "after") is None
        assert (
            reader.get("H", "before") is not None and "x" not in reader.get("H", "before").name_map
        )


def test_the_primary_key_and_unknown_ids_are_handled(pg_url: str) -> None:
    k1 = Keyring.generate("k1")
    with open_store(pg_url, k1) as store:
        with pytest.raises(RetireRefused, match="primary"):
            store.admin.retire_key("k1")
        store.admin.retire_key("never-used")  # nothing uses it: retired, and stays so
        assert "never-used" in store.stats()["retired_keys"]
        assert [(a[1], a[4], a[5]) for a in store.admin.audit_log()][-1:] == [
            ("retire", "never-used", "retired")
        ]
