"""What every part of the runner reads and none replaces: :class:`RunnerContext`. Each part
is an object constructed with the context and the other parts it calls, and owns its own
mutable state (``Health`` the readiness flags, ``Assignment`` the partitions, ``Finishing``
the batches in flight, ``Clients`` the Kafka clients, ``Worker`` the processor)."""

from __future__ import annotations

import asyncio
from collections import Counter as Tally
from dataclasses import dataclass

from service.metrics import Metrics
from service.settings import Settings


@dataclass(frozen=True, slots=True)
class RunnerContext:
    """The runner's settings, metrics, status counts (``/v1/status``) and stop request."""

    settings: Settings
    metrics: Metrics
    counts: Tally[str]
    stop: asyncio.Event

    @property
    def stopping(self) -> bool:
        return self.stop.is_set()
