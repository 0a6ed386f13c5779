"""A small, real processor for testing the Kafka mechanics of the runner without the pipeline.

Input: JSON ``{"patient": str, "doc": str, "v": int, "text": str, "status": str}``.
It raises the project's real errors for bad input, keeps version marks in SQLite (written
only on ``commit``, like the real pipeline), and can be told to fail transiently. It returns
the real :class:`pipelines.outcome.Outcome`; the version an outcome confirms is its
``version`` header.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pipelines.errors import InvalidJSON, KeystoreUnavailable, MissingPatientId, PartialInput
from pipelines.outcome import Outcome, OutcomeKind
from service.runner import BaseProcessor


def research_key(patient: str, doc: str) -> str:
    return hashlib.sha256(f"{patient}|{doc}".encode()).hexdigest()[:16]


class ToyProcessor(BaseProcessor):
    """Follows the real processor's contract: ``process`` writes an *unacknowledged* mark;
    meeting an unacknowledged mark of the same version re-emits the same outcome (a replay
    after a crash); ``commit`` acknowledges; an acknowledged same version is a duplicate."""

    def __init__(self, marks_path: str | None = None, fail_file: str | None = None) -> None:
        self._db = sqlite3.connect(marks_path or ":memory:", check_same_thread=False)
        self._db.execute("create table if not exists marks (k text primary key, v int, acked int)")
        self._db.commit()
        self._lock = threading.Lock()
        self.fail_file = fail_file  # while this file exists, processing is "database down"
        self.calls = 0

    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> list[Outcome]:
        self.calls += 1
        if self.fail_file and os.path.exists(self.fail_file):
            raise KeystoreUnavailable("toy database unreachable")
        try:
            msg: dict[str, Any] = json.loads(raw)
        except ValueError:
            raise InvalidJSON("input is not JSON", length=len(raw)) from None
        if not isinstance(msg, dict) or not msg.get("patient"):
            raise MissingPatientId("no patient id")
        key = research_key(str(msg["patient"]), str(msg.get("doc", "")))
        version = int(msg.get("v", 1))
        with self._lock:
            row = self._db.execute("select v, acked from marks where k = ?", (key,)).fetchone()
            if row is not None:
                seen, acked = int(row[0]), bool(row[1])
                if version == seen and acked:
                    return [Outcome(kind=OutcomeKind.DUPLICATE)]
                if version < seen:
                    return [Outcome(kind=OutcomeKind.SUPERSEDED)]
            self._db.execute("insert or replace into marks values (?, ?, 0)", (key, version))
            self._db.commit()
        marked = (("version", str(version)),)
        if msg.get("status") == "entered-in-error":
            return [Outcome(kind=OutcomeKind.TOMBSTONE, research_key=key, headers=marked)]
        if msg.get("hold"):
            return [
                Outcome(
                    kind=OutcomeKind.HELD,
                    research_key=key,
                    headers=marked,
                    reason_class="leak_guard",
                    reason="known identifier left (field PID-5)",
                )
            ]
        body = {
            "resourceType": "DocumentReference",
            "id": key,
            "version": version,
            "text": "[REDACTED] " + str(msg.get("text", "")).upper(),
        }
        if msg.get("pad"):  # an output too big for the broker
            body["pad"] = "x" * int(msg["pad"])
        if msg.get("partial"):  # a batch input whose second entry is broken
            good = Outcome(
                kind=OutcomeKind.PUBLISH,
                research_key=key,
                value=json.dumps(body).encode(),
                headers=marked,
            )
            exc = PartialInput("1 of 2 entries failed", entry=1)
            exc.outcomes = [good]
            raise exc
        return [
            Outcome(
                kind=OutcomeKind.PUBLISH,
                research_key=key,
                value=json.dumps(body).encode(),
                headers=(*marked, ("source", content_hint)),
                span_counts={"NAME": 1, "DATE": 2},
                stage_seconds={"parse": 0.0002, "detect": 0.001},
            )
        ]

    def ping(self) -> None:
        if self.fail_file and os.path.exists(self.fail_file):
            raise KeystoreUnavailable("toy database unreachable")

    def close(self) -> None:
        self._db.close()

    def commit(self, outcomes: Sequence[Outcome]) -> None:
        with self._lock:
            for out in outcomes:
                version = dict(out.headers).get("version")
                if out.research_key is not None and version is not None:
                    self._db.execute(
                        "update marks set acked = 1 where k = ? and v = ?",
                        (out.research_key, int(version)),
                    )
            self._db.commit()
