"""Logging for the service commands: the service's level for our own loggers, WARNING at the
least for third-party loggers that can see payloads (issue 14, item 10).

aiokafka logs fetched records and produced values at DEBUG; psycopg, httpx/httpcore and
uvicorn's access log can show parameters, URLs and bodies; hl7apy quotes segments. Their
level stays at WARNING (or the service's level, if higher) whatever ``DEIDSTREAM_LOG_LEVEL``
says, so turning the service to DEBUG to chase a problem never writes PHI to the log.
Our own loggers (``deidstream.*``) never log message content at any level.
"""

from __future__ import annotations

import logging
import threading
import time

# loggers of libraries that handle message bytes, SQL parameters or request data
PAYLOAD_LOGGERS = (
    "aiokafka",
    "kafka",
    "psycopg",
    "psycopg_pool",
    "sqlite3",
    "httpx",
    "httpcore",
    "h11",
    "urllib3",
    "uvicorn.access",
    "uvicorn.asgi",
    "hl7apy",
    "fhir",
    "fhir_core",
    "multipart",
    "python_multipart",
    "asyncio",
)
FORMAT = "%(asctime)s %(levelname)s %(name)s %(message)s"


def level_of(name: str) -> int:
    """A level name ("debug", "INFO", "trace"…) as a number (unknown names: INFO)."""
    found = logging.getLevelName(name.upper())
    return found if isinstance(found, int) else logging.INFO


def quiet_payload_loggers(level: str | int) -> None:
    """Hold every payload-seeing library logger at WARNING or above (``level`` if higher).
    Call again after anything that reconfigures logging (uvicorn's ``Config`` does)."""
    floor = max(logging.WARNING, level if isinstance(level, int) else level_of(level))
    for name in PAYLOAD_LOGGERS:
        logging.getLogger(name).setLevel(floor)


class RepeatLimit(logging.Filter):
    """At most ``burst`` lines of one kind (logger and message template) per ``window``
    seconds; the next one let through says how many were left out. A broker outage made
    aiokafka and the runner log ~200 lines per second (issue 24, item 4): now a bounded
    number per minute, whatever the outage's length."""

    def __init__(self, burst: int = 5, window: float = 60.0) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self._seen: dict[tuple[str, str], list[float]] = {}  # kind → [window start, n, left out]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        kind = (record.name, str(record.msg))
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(kind)
            if seen is None or now - seen[0] >= self.window:
                left_out = int(seen[2]) if seen is not None else 0
                if len(self._seen) > 1000:  # bounded memory: forget old kinds
                    self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window}
                self._seen[kind] = [now, 1, 0]
                if left_out:
                    record.msg = f"{record.msg} [{left_out} similar lines left out]"
                return True
            seen[1] += 1
            if seen[1] <= self.burst:
                return True
            seen[2] += 1
            return False


def configure_logging(level: str) -> None:
    """The service commands' logging: ``level`` for the service, the floor for the others,
    and :class:`RepeatLimit` on every handler of the root logger."""
    logging.basicConfig(level=level_of(level), format=FORMAT)
    quiet_payload_loggers(level)
    for handler in logging.getLogger().handlers:
        # the console handler basicConfig made (not a test harness's capture handler)
        if type(handler) is logging.StreamHandler and not any(
            isinstance(f, RepeatLimit) for f in handler.filters
        ):
            handler.addFilter(RepeatLimit())
    logging.getLogger("deidstream.logs").debug(
        "log level %s; payload-seeing library loggers at WARNING or above",
        logging.getLevelName(level_of(level)),
    )


__all__ = [
    "PAYLOAD_LOGGERS",
    "RepeatLimit",
    "configure_logging",
    "level_of",
    "quiet_payload_loggers",
]
