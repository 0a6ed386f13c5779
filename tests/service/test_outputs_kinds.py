"""Every :class:`OutcomeKind` is routed by ``Outputs.route``: research records for publish and
tombstone, a held record for held, nothing sent (a count) for the others."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest

from pipelines.outcome import Outcome, OutcomeKind
from service.metrics import Metrics
from service.runner import Outputs
from service.settings import Settings

NOW = datetime(2026, 1, 2, tzinfo=UTC)


@dataclass
class Rec:
    topic: str = "in.hl7v2"
    partition: int = 0
    offset: int = 7
    key: bytes = b"k"
    value: bytes = b"MSH|..."
    timestamp: int = 0
    headers: list[tuple[str, bytes]] = field(default_factory=list)


def _route(outcome: Outcome) -> tuple[list[tuple[str, bytes | None, bytes | None]], Counter[str]]:
    settings, counts = Settings(), Counter[str]()
    handled = Outputs(settings, Metrics(), counts).route(Rec(), "hl7v2", [outcome], NOW)
    assert handled.kind == outcome.kind.value
    for out in handled.outputs:
        out.on_ack()
    handled.apply()
    return [(o.topic, o.key, o.value) for o in handled.outputs], counts


@pytest.mark.parametrize("kind", list(OutcomeKind))
def test_every_kind_is_routed(kind: OutcomeKind) -> None:
    settings = Settings()
    outcome = Outcome(
        kind=kind,
        research_key="rk",
        value=b"{}",
        headers=(("version", "v1"),),
        reason_class="leak_guard",
        reason="r",
    )
    sent, counts = _route(outcome)
    match kind:
        case OutcomeKind.PUBLISH:
            assert sent == [(settings.research_topic, b"rk", b"{}")]
            assert counts["published"] == 1
        case OutcomeKind.TOMBSTONE:  # the value is dropped whatever the outcome carried
            assert sent == [(settings.research_topic, b"rk", None)]
            assert counts["tombstoned"] == 1
        case OutcomeKind.HELD:
            assert [(topic, key) for topic, key, _ in sent] == [(settings.held_topic, b"rk")]
            assert counts["held"] == 1
        case OutcomeKind.DUPLICATE | OutcomeKind.SUPERSEDED | OutcomeKind.CONTEXT:
            assert sent == [] and counts[kind.value] == 1


def test_research_record_keeps_the_outcome_headers_first() -> None:
    outputs = Outputs(Settings(), Metrics(), Counter())
    outcome = Outcome(
        kind=OutcomeKind.PUBLISH,
        research_key="rk",
        value=b"{}",
        headers=(("source", "fhir"), ("version", "v2")),
    )
    record = outputs.research_record(Rec(), "hl7v2", outcome)
    headers = dict(record.headers)
    assert headers["source"] == b"fhir" and headers["version"] == b"v2"
    assert headers["content-type"] == b"application/fhir+json"
