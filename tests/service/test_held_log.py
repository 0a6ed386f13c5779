"""Issue 28 item 4: a held document leaves one log line (reason class, the input's
coordinates, the patient's pseudonym — no text, no identifier), written once the held record
is acknowledged. The real processor holds it (a detector with no recognizers: the leak guard
finds the patient's known identifiers in the output); the runner's outputs route it. The whole
service does the same in tests/integration/test_held_release.py."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from hl7_gen import report

from keystore.memory import InMemoryStore
from pipelines.outcome import OutcomeKind
from pipelines.policy import Policy
from pipelines.process import Processor
from service.metrics import Metrics
from service.runner import Outputs
from service.settings import Settings

NOW = datetime(2026, 3, 1, tzinfo=UTC)


@dataclass
class Rec:
    topic: str = "clinical.hl7v2"
    partition: int = 2
    offset: int = 41
    key: bytes = b"700003"
    value: bytes = b""
    timestamp: int = 0
    headers: list[tuple[str, bytes]] = field(default_factory=list)


def test_a_held_document_is_one_warning_line_without_phi(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    raw = report(3)
    store = InMemoryStore()
    blind = tmp_path / "blind.toml"
    blind.write_text("[recognizers]\n", encoding="utf-8")
    [held] = Processor(policy=Policy.load(blind), store=store).process(
        raw, content_hint="hl7v2", now=NOW
    )
    assert held.kind is OutcomeKind.HELD and held.reason_class == "leak_guard"
    patient = dict(held.headers)["patient"]
    # the pseudonym the research record of this patient carries (a held version consumes
    # nothing: the same text is decided again, and published by a working detector)
    [published] = Processor(policy=Policy.load(), store=store).process(
        raw, content_hint="hl7v2", now=NOW
    )
    assert published.kind is OutcomeKind.PUBLISH and published.value is not None
    assert patient == orjson.loads(published.value)["subject"]["reference"]

    outputs = Outputs(Settings(), Metrics(), Counter())
    handled = outputs.route(Rec(value=raw), "hl7v2", [held], NOW)
    with caplog.at_level(logging.DEBUG):
        assert not [r for r in caplog.records if "held" in r.getMessage()]  # not before the ack
        for out in handled.outputs:
            out.on_ack()
    lines = [r for r in caplog.records if r.name == "deidstream.runner"]
    assert [r.levelno for r in lines] == [logging.WARNING]
    text = lines[0].getMessage()
    assert text == f"document held [leak_guard] input clinical.hl7v2:2:41 patient {patient}"
    pid = next(s for s in raw.split(b"\r") if s.startswith(b"PID")).decode()
    for value in pid.replace("^", "|").split("|"):
        if len(value) >= 4 and not value.isdigit() or value.startswith("7000"):
            assert value not in caplog.text, value


def test_a_hold_without_a_patient_still_logs_its_coordinates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The runner's other hold (the processor raised LeakHeldBack for the whole input)."""
    outputs = Outputs(Settings(), Metrics(), Counter())
    handled = outputs.held(Rec(), None, "leak_guard", "held back", NOW)
    with caplog.at_level(logging.WARNING):
        for out in handled.outputs:
            out.on_ack()
    assert "document held [leak_guard] input clinical.hl7v2:2:41 patient unknown" in caplog.text
