"""Readiness and health: broker and key store reachability (probed while idle), faults of
the key store as a whole (wrong or missing key, several patients in a row failing
authentication), the ``deidstream_ready`` gauge and ``/v1/status``."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from pipelines.errors import DeidstreamError, IntegrityError, MissingKeyError
from service.runner.state import RunnerState

log = logging.getLogger("deidstream.runner")

# this many records of different patients in a row failing authentication: the store (its
# key) is wrong, not the records — stop and retry instead of dead-lettering the stream
KEY_FAULT_STREAK = 3


class Health(RunnerState):
    """Readiness flags, store faults and the idle probes of the runner."""

    @property
    def ready(self) -> bool:
        assigned = bool(self._consumer and self._consumer.assignment())
        return self.started and self.broker_ok and self.keystore_ok and assigned

    def _update_ready(self) -> None:
        self.metrics.ready.set(1 if self.ready else 0)

    def _set_store_fault(self, reason_class: str, detail: DeidstreamError | None = None) -> None:
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
                self.metrics.keystore_fault.labels(self.keystore_fault).set(0)
        self.keystore_fault = reason_class
        self.keystore_ok = False
        self.metrics.keystore_fault.labels(reason_class).set(1)
        self._update_ready()

    def _clear_store_fault(self) -> None:
        if self.keystore_fault is not None:
            log.warning("key store usable again (was %s)", self.keystore_fault)
            self.metrics.keystore_fault.labels(self.keystore_fault).set(0)
            self.keystore_fault = None
        if not self.keystore_ok:
            self.keystore_ok = True
        self._update_ready()

    def _enter_stream_fault(self, exc: BaseException, operation: str) -> None:
        """A fault of the stream (key store/database, not the record's): not ready with the
        reason, one WARNING line and ``deidstream_stream_faults_total`` per fault (not per
        retry), ``deidstream_keystore_fault{reason_class}`` 1 while it lasts."""
        reason = str(getattr(exc, "reason_class", "") or type(exc).__name__)
        if self.stream_fault != reason:
            log.warning(
                "stream fault (%s, during %s): batch stopped, nothing committed or "
                "dead-lettered; retrying with backoff",
                reason,
                operation,
            )
            self.metrics.stream_faults.labels(reason).inc()
            if self.stream_fault is not None:
                self.metrics.keystore_fault.labels(self.stream_fault).set(0)
            self.metrics.keystore_fault.labels(reason).set(1)
            self.stream_fault = reason
            self._stream_fault_at = (operation, time.monotonic())
        elif self._stream_fault_at is not None:
            self._stream_fault_at = (operation, self._stream_fault_at[1])
        self.keystore_ok = False
        self._update_ready()

    def _clear_stream_fault(self, operation: str) -> None:
        """The operation that met the fault succeeded: the stream goes on."""
        at = self._stream_fault_at
        if self.stream_fault is None or at is None or at[0] != operation:
            return
        log.warning(
            "stream fault cleared (%s): resumed after %.1f s",
            self.stream_fault,
            time.monotonic() - at[1],
        )
        self.metrics.keystore_fault.labels(self.stream_fault).set(0)
        self.stream_fault = None
        self._stream_fault_at = None
        if self.keystore_fault is None:
            self.keystore_ok = True
        self._update_ready()

    def _store_wide(self, exc: DeidstreamError, subject: str | None) -> bool:
        """Is this refusal about the whole store rather than this one record?"""
        if isinstance(exc, MissingKeyError):
            return True  # no key, or a key id the keyring does not have: configuration
        if isinstance(exc, IntegrityError):
            tag = str(exc.coordinates.get("record") or subject or "")
            if tag not in self._integrity_streak:
                self._integrity_streak.append(tag)
            return len(self._integrity_streak) >= KEY_FAULT_STREAK
        return False

    async def _probe_broker(self) -> None:
        """While idle, check every few seconds that the broker and the key store still
        answer (the processor's ``ping``), so readiness is true when it says so."""
        now = time.monotonic()
        if now - self._last_probe < 3.0 or self._producer is None:
            return
        self._last_probe = now
        timeout = self.settings.request_timeout_ms / 1000
        try:
            await asyncio.wait_for(self._producer.client.fetch_all_metadata(), timeout)
            ok = True
        except Exception:  # noqa: BLE001 - any failure means not reachable
            ok = False
        if ok != self.broker_ok:
            log.warning("broker reachable: %s", ok)
        if ok and not self.broker_ok:
            await self._after_outage()
        self.broker_ok = ok
        processor = self._processor
        if processor is not None:
            loop = asyncio.get_running_loop()
            try:
                ping = loop.run_in_executor(self._executor, processor.ping)
                await asyncio.wait_for(ping, timeout)
                store_ok = True
            except Exception:  # noqa: BLE001 - any failure means not reachable
                store_ok = False
            if store_ok != self.keystore_ok:
                log.warning("key store reachable: %s", store_ok)
            self.keystore_ok = (
                store_ok and self.keystore_fault is None and self.stream_fault is None
            )
        self._update_ready()

    async def _after_outage(self) -> None:
        """The broker answers again: it may be a new one that lost its topics (a broker with
        memory storage, a re-created cluster). Create them again before publishing — Tansu
        acknowledges records for a topic it no longer has and drops them."""
        if not self.settings.create_topics:
            return
        try:
            await asyncio.wait_for(self._ensure_topics(), self.settings.request_timeout_ms / 1000)
        except Exception as exc:  # noqa: BLE001 - retried on the next outage/probe
            log.warning("re-creating topics after an outage failed: %s", type(exc).__name__)

    def status(self) -> dict[str, Any]:
        """Assignments, lag and counts: coordinates and numbers only, no message content."""
        parts = []
        for tp in sorted(self.partitions, key=lambda t: (t.topic, t.partition)):
            st = self.partitions[tp]
            parts.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed": st.committed,
                    "position": st.position,
                    "highwater": st.highwater,
                    "lag": st.lag,
                }
            )
        return {
            "ready": self.ready,
            "started": self.started,
            "broker_reachable": self.broker_ok,
            "keystore_reachable": self.keystore_ok,
            # a fault of the whole store, else of the stream (e.g. keystore_permission)
            "keystore_fault": self.keystore_fault or self.stream_fault,
            "group_id": self.settings.group_id,
            "input_topics": list(self.settings.input_topics),
            "assignments": parts,
            # None while any assigned partition's lag is still unknown
            "total_lag": (
                sum(p["lag"] for p in parts)
                if parts and all(p["lag"] is not None for p in parts)
                else None
            ),
            "counts": dict(sorted(self.counts.items())),
            # wall time the processing thread spent working (processing, confirming, key
            # store calls): its growth per second near 1 means the instance is saturated
            "worker_busy_seconds": round(self.worker_busy_seconds, 6),
        }
