"""The stall watchdog (issue 24, items 3 and 4): every second, on the event loop and
independent of the fetch loop, what holds the worker up and for how long — and the lag.

A stall has a cause:

* ``document``: a document still in progress past its budget (``pipelines.deadline``
  registers every open budget; the budget is enforced between steps and by killing the
  parse's child process, so this shows a step that does not return);
* ``keystore``: one key store call outstanding longer than ``stall_seconds`` (a lock held
  by another session, a database that stopped answering; ``Metrics.store_calls``);
* ``broker``: the broker unreachable longer than ``stall_seconds``.

While any lasts, ``/readyz`` answers 503 with ``stalled:<cause>``, the gauge
``deidstream_stall_seconds{cause}`` reads its age, and one WARNING line says when it
started and one when it ended (not one per second). The consumer lag is refreshed here
too, from the broker's end offsets (``Assignment.refresh_ends``), so it keeps growing while
the fetch loop waits on a stalled batch instead of freezing at its last value.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING

from pipelines import deadline
from service.metrics import Metrics
from service.settings import Settings

if TYPE_CHECKING:
    from service.runner.clients import Clients
    from service.runner.health import Health
    from service.runner.partitions import Assignment

log = logging.getLogger("deidstream.runner")
TICK_SECONDS = 1.0
LAG_EVERY_SECONDS = 2.0
CAUSES = ("document", "keystore", "broker")


class Stalls:
    """Measures the stalls every ``TICK_SECONDS`` and refreshes the lag every
    ``LAG_EVERY_SECONDS``; ``health.stalls`` holds the current ones (cause → seconds)."""

    def __init__(
        self,
        settings: Settings,
        metrics: Metrics,
        health: Health,
        clients: Clients,
        assignment: Assignment,
    ) -> None:
        self._settings = settings
        self._metrics = metrics
        self._health = health
        self._clients = clients
        self._assignment = assignment
        self._gauges = {cause: metrics.stall.labels(cause) for cause in CAUSES}
        self._since: dict[str, float] = {}  # cause → when it was first seen (monotonic)
        self._lag_at = 0.0

    def measure(self, now: float) -> dict[str, float]:
        """The current stalls: cause → seconds it has lasted."""
        found: dict[str, float] = {}
        overdue = [r for r in deadline.running() if r.over(now) > 0]
        if overdue:
            found["document"] = max(r.elapsed(now) for r in overdue)
        since = self._metrics.store_calls.since
        if since is not None and now - since > self._settings.stall_seconds:
            found["keystore"] = now - since
        down = self._health.broker_down_since
        if down is not None and now - down > self._settings.stall_seconds:
            found["broker"] = now - down
        return found

    def tick(self, now: float | None = None) -> dict[str, float]:
        """Measure, publish (gauge, readiness) and log the starts and ends of stalls."""
        now = time.monotonic() if now is None else now
        found = self.measure(now)
        for cause in CAUSES:
            seconds = found.get(cause)
            self._gauges[cause].set(round(seconds, 3) if seconds is not None else 0)
            if seconds is not None and cause not in self._since:
                self._since[cause] = now - seconds
                log.warning(
                    "stall (%s): %.1f s without progress; not ready until it ends", cause, seconds
                )
            elif seconds is None and cause in self._since:
                lasted = now - self._since.pop(cause)
                log.warning("stall (%s) ended after %.1f s", cause, lasted)
        self._health.set_stalls(found)
        return found

    async def refresh_lag(self, now: float) -> None:
        if now - self._lag_at < LAG_EVERY_SECONDS:
            return
        self._lag_at = now
        consumer = self._clients.consumer
        if consumer is None:
            return
        s = self._settings
        timeout = s.request_timeout_ms / 1000
        try:
            await asyncio.wait_for(self._assignment.refresh_ends(consumer), timeout)
        except Exception as exc:  # noqa: BLE001 - an unreachable broker is a stall of its own
            log.debug("lag refresh failed: %s", type(exc).__name__)
        try:  # the group as a whole: partitions nobody holds (service/runner/group.py)
            refresh = self._assignment.refresh_group(consumer, s.group_id, s.input_topics)
            await asyncio.wait_for(refresh, timeout)
        except Exception as exc:  # noqa: BLE001 - the group's view is unknown meanwhile
            log.debug("group refresh failed: %s", type(exc).__name__)

    async def run(self) -> None:
        """Until cancelled: a tick every second, the lag every few."""
        while True:
            now = time.monotonic()
            try:
                self.tick(now)
                await self.refresh_lag(now)
            except Exception as exc:  # noqa: BLE001 - the watchdog must outlive any bug
                log.warning("stall watchdog: %s", type(exc).__name__)
            await asyncio.sleep(TICK_SECONDS)

    def clear(self) -> None:
        """At stop: no stall left behind in the gauges."""
        for gauge in self._gauges.values():
            with contextlib.suppress(Exception):
                gauge.set(0)
        self._since.clear()
        self._health.set_stalls({})


__all__ = ["CAUSES", "Stalls"]
