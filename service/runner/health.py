"""Readiness and health: broker and key store reachability (probed while idle), faults of
the key store as a whole (wrong or missing key, several patients in a row failing
authentication) and of the stream, and the ``deidstream_ready`` gauge."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pipelines.errors import DeidstreamError, IntegrityError, MissingKeyError
from service.metrics import Metrics
from service.settings import Settings

if TYPE_CHECKING:
    from service.runner.clients import Clients
    from service.runner.worker import Worker

log = logging.getLogger("deidstream.runner")

# this many records of different patients in a row failing authentication: the store (its
# key) is wrong, not the records — stop and retry instead of dead-lettering the stream
KEY_FAULT_STREAK = 3
# a fault of the stream that comes back within this many seconds of clearing is the same
# fault (a lock that times out record after record): counted and logged once
FAULT_QUIET_SECONDS = 30.0


class Health:
    """Readiness flags and faults: the broker and key store reachable, a fault of the whole
    store (``keystore_fault``) or of the stream (``stream_fault``), the integrity streak.
    ``assigned`` tells whether the consumer has partitions (part of readiness)."""

    def __init__(self, metrics: Metrics, assigned: Callable[[], bool]) -> None:
        self._metrics = metrics
        self._assigned = assigned
        self.started = False
        self._broker_ok = False
        self.broker_down_since: float | None = None  # monotonic, while unreachable
        self.stalls: dict[str, float] = {}  # cause → seconds (service/runner/stalls.py)
        self.keystore_ok = False
        self.keystore_fault: str | None = None  # reason class while the store is unusable
        # reason class while a fault of the stream (a key store/database error that is not
        # one record's fault) stops the batches, and which operation (process, confirm) met it
        self.stream_fault: str | None = None
        self._stream_fault_at: tuple[str, float] | None = None  # (operation, since)
        # the last fault of the stream: (reason class, when it cleared or None while it
        # lasts, whether its end was logged)
        self._last_fault: tuple[str, float | None, bool] | None = None
        self._integrity_streak: list[str] = []  # patients whose records failed in a row

    @property
    def broker_ok(self) -> bool:
        return self._broker_ok

    @broker_ok.setter
    def broker_ok(self, ok: bool) -> None:
        if ok:
            self.broker_down_since = None
        elif self.broker_down_since is None:
            self.broker_down_since = time.monotonic()
        self._broker_ok = ok

    @property
    def ready(self) -> bool:
        return (
            self.started
            and self._broker_ok
            and self.keystore_ok
            and not self.stalls
            and self._assigned()
        )

    def set_stalls(self, stalls: dict[str, float]) -> None:
        """The stall watchdog's finding (cause → seconds; empty: none)."""
        self.stalls = stalls
        self.update_ready()

    def update_ready(self) -> None:
        self._metrics.ready.set(1 if self.ready else 0)

    def set_broker(self, ok: bool) -> None:
        self.broker_ok = ok
        self.update_ready()

    def set_store_fault(self, reason_class: str, detail: DeidstreamError | None = None) -> None:
        if self.keystore_fault != reason_class:
            # the key store's own errors carry coordinates only (the key id that is missing,
            # a record's fingerprint), never content
            log.error(
                "key store unusable (%s%s): not ready, retrying; nothing is committed or "
                "dead-lettered until it is fixed",
                reason_class,
                f": {detail}" if detail is not None else "",
            )
            if self.keystore_fault is not None:
                self._metrics.keystore_fault.labels(self.keystore_fault).set(0)
        self.keystore_fault = reason_class
        self.keystore_ok = False
        self._metrics.keystore_fault.labels(reason_class).set(1)
        self.update_ready()

    def clear_store_fault(self) -> None:
        if self.keystore_fault is not None:
            log.warning("key store usable again (was %s)", self.keystore_fault)
            self._metrics.keystore_fault.labels(self.keystore_fault).set(0)
            self.keystore_fault = None
        if not self.keystore_ok:
            self.keystore_ok = True
        self.update_ready()

    def enter_stream_fault(self, exc: BaseException, operation: str) -> None:
        """A fault of the stream (key store/database, not the record's): not ready with the
        reason, one WARNING line and ``deidstream_stream_faults_total`` per fault (not per
        retry), ``deidstream_keystore_fault{reason_class}`` 1 while it lasts."""
        reason = str(getattr(exc, "reason_class", "") or type(exc).__name__)
        if self.stream_fault != reason and self._same_fault(reason):
            # the fault that cleared a moment ago is back (retried record after record):
            # the same fault, not a new one — no second line, no second count
            self._metrics.keystore_fault.labels(reason).set(1)
            self.stream_fault = reason
            self._stream_fault_at = (operation, time.monotonic())
            self._last_fault = (reason, None, True)
        elif self.stream_fault != reason:
            log.warning(
                "stream fault (%s, during %s): batch stopped, nothing committed or "
                "dead-lettered; retrying with backoff",
                reason,
                operation,
            )
            self._metrics.stream_faults.labels(reason).inc()
            if self.stream_fault is not None:
                self._metrics.keystore_fault.labels(self.stream_fault).set(0)
            self._metrics.keystore_fault.labels(reason).set(1)
            self.stream_fault = reason
            self._stream_fault_at = (operation, time.monotonic())
            self._last_fault = (reason, None, False)
        elif self._stream_fault_at is not None:
            self._stream_fault_at = (operation, self._stream_fault_at[1])
        self.keystore_ok = False
        self.update_ready()

    def _same_fault(self, reason: str) -> bool:
        last = self._last_fault
        if last is None or last[0] != reason:
            return False
        cleared = last[1]
        return cleared is None or time.monotonic() - cleared < FAULT_QUIET_SECONDS

    def clear_stream_fault(self, operation: str) -> None:
        """The operation that met the fault succeeded: the stream goes on."""
        at = self._stream_fault_at
        if self.stream_fault is None or at is None or at[0] != operation:
            return
        last = self._last_fault
        if last is not None:
            self._last_fault = (last[0], time.monotonic(), True)
        if last is not None and not last[2]:
            # the first time this fault clears: one line (a relapse within the quiet
            # period continues the same fault, silently)
            log.warning(
                "stream fault cleared (%s): resumed after %.1f s",
                self.stream_fault,
                time.monotonic() - at[1],
            )
        self._metrics.keystore_fault.labels(self.stream_fault).set(0)
        self.stream_fault = None
        self._stream_fault_at = None
        if self.keystore_fault is None:
            self.keystore_ok = True
        self.update_ready()

    def store_wide(self, exc: DeidstreamError, subject: str | None) -> bool:
        """Is this refusal about the whole store rather than this one record?"""
        if isinstance(exc, MissingKeyError):
            return True  # no key, or a key id the keyring does not have: configuration
        if isinstance(exc, IntegrityError):
            tag = str(exc.coordinates.get("record") or subject or "")
            if tag not in self._integrity_streak:
                self._integrity_streak.append(tag)
            return len(self._integrity_streak) >= KEY_FAULT_STREAK
        return False

    def settled(self) -> None:
        """A record was processed: the integrity streak ends, the store is usable."""
        if self._integrity_streak:
            self._integrity_streak.clear()
        if self.stream_fault is not None:
            self.clear_stream_fault("process")
        if not self.keystore_ok or self.keystore_fault is not None:
            self.clear_store_fault()

    def store_reachable(self, ok: bool) -> None:
        """The key store answered a probe (or not): usable unless a fault says otherwise."""
        if ok != self.keystore_ok:
            log.warning("key store reachable: %s", ok)
        self.keystore_ok = ok and self.keystore_fault is None and self.stream_fault is None


class Prober:
    """While idle, check every few seconds that the broker and the key store still answer
    (the processor's ``ping``), so readiness is true when it says so."""

    def __init__(
        self, settings: Settings, health: Health, clients: Clients, worker: Worker
    ) -> None:
        self._settings = settings
        self._health = health
        self._clients = clients
        self._worker = worker
        self.last_probe = 0.0  # monotonic seconds of the last probe

    async def probe(self) -> None:
        now = time.monotonic()
        producer = self._clients.producer
        if now - self.last_probe < 3.0 or producer is None:
            return
        self.last_probe = now
        health = self._health
        timeout = self._settings.request_timeout_ms / 1000
        try:
            await asyncio.wait_for(producer.client.fetch_all_metadata(), timeout)
            ok = True
        except Exception:  # noqa: BLE001 - any failure means not reachable
            ok = False
        if ok != health.broker_ok:
            log.warning("broker reachable: %s", ok)
        if ok and not health.broker_ok:
            await self._clients.after_outage()
        health.broker_ok = ok
        processor = self._worker.current
        if processor is not None:
            try:
                await asyncio.wait_for(self._worker.run(processor.ping), timeout)
                store_ok = True
            except Exception:  # noqa: BLE001 - any failure means not reachable
                store_ok = False
            health.store_reachable(store_ok)
        health.update_ready()
