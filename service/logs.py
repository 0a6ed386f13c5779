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


def configure_logging(level: str) -> None:
    """The service commands' logging: ``level`` for the service, the floor for the others."""
    logging.basicConfig(level=level_of(level), format=FORMAT)
    quiet_payload_loggers(level)
    logging.getLogger("deidstream.logs").debug(
        "log level %s; payload-seeing library loggers at WARNING or above",
        logging.getLevelName(level_of(level)),
    )


__all__ = ["PAYLOAD_LOGGERS", "configure_logging", "level_of", "quiet_payload_loggers"]
