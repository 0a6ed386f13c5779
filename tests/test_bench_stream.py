"""bench/stream.py's method holds: the messages it builds are read by the real parser with
the text intact (ER7 escaping), every document gets its own research key, and the output's
``date`` keeps the seconds of the day that name the input (how outputs are matched). Our own
synthetic notes only; no timing here."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import orjson
import pytest

from bench.stream import (
    DAY,
    FHIR_TOPIC,
    HELD_TOPIC,
    HL7_TOPIC,
    Collector,
    PassThrough,
    build_messages,
    hl7_escape,
    observed_at,
)
from keystore.memory import InMemoryStore
from pipelines.corpus import Note
from pipelines.document import Identifiers, PersonName
from pipelines.ingest import DEFAULT_MAX_BYTES, parse_input
from pipelines.policy import Policy
from pipelines.process import Processor

NOTES = [
    Note(
        "7",
        "1",
        "Pt resting. BP 120/80 | HR 72 ^ afebrile & calm ~ see \\ chart.\nPlan: ambulate.",
        1,
        1,
    ),
    Note("7", "2", "Overnight uneventful.\n\nTolerating diet.", 2, 10),
    Note("9", "1", "Family at bedside, questions answered.", 3, 20),
]
NAMES = {"7": Identifiers(patient_names=(PersonName(family="Quillfeather", given=("Odalys",)),))}


def test_hl7_escape_covers_every_delimiter() -> None:
    assert hl7_escape("a|b^c&d~e\\f") == "a\\F\\b\\S\\c\\T\\d\\R\\e\\E\\f"


def test_messages_alternate_formats_and_parse_with_the_text_intact() -> None:
    messages = build_messages(NOTES, NAMES, 0, 6)
    assert [m.topic for m in messages] == [HL7_TOPIC, FHIR_TOPIC] * 3
    for m in messages:
        note = NOTES[m.seq % len(NOTES)]
        hint = "hl7v2" if m.topic == HL7_TOPIC else "fhir"
        docs = parse_input(m.value, content_hint=hint, max_bytes=DEFAULT_MAX_BYTES)
        assert len(docs) == 1
        doc = docs[0]
        assert doc.text.strip() == note.text.strip()
        assert doc.patient_id.endswith(note.patient.zfill(6))
        assert m.key == doc.patient_id.encode()
        assert doc.visit_id  # PV1-19 / encounter: one visit per (note, cycle)
        assert doc.document_date == observed_at(m.seq)
        if note.patient in NAMES:
            names = {n.family for n in doc.identifiers.patient_names}
            assert "Quillfeather" in names


def test_every_document_publishes_and_its_date_names_the_input() -> None:
    store = InMemoryStore()
    processor = Processor(policy=Policy.load(None), store=store)
    messages = build_messages(NOTES, NAMES, 86_390, 2 * len(NOTES) * 2)  # crosses midnight
    keys = set()
    for m in messages:
        outcomes = processor.process(m.value, content_hint="auto", now=datetime.now(UTC))
        assert [o.kind for o in outcomes] in (["publish"], ["held"])
        out = outcomes[0]
        keys.add(out.research_key)
        processor.commit(outcomes)
        if out.kind != "publish":
            continue
        resource = orjson.loads(out.value or b"{}")
        moment = datetime.fromisoformat(resource["date"].replace("Z", "+00:00"))
        seconds = moment.hour * 3600 + moment.minute * 60 + moment.second
        assert seconds == m.seq % DAY
        text = base64.b64decode(resource["content"][0]["attachment"]["data"]).decode()
        assert "Quillfeather" not in text
    assert len(keys) == len(messages)


@pytest.mark.parametrize("seq", [0, 12_345, 86_399])
def test_passthrough_processor_names_the_input(seq: int) -> None:
    message = build_messages(NOTES, NAMES, seq, 1)[0]
    (out,) = PassThrough().process(message.value, content_hint="auto", now=datetime.now(UTC))
    assert out.kind == "publish"
    assert orjson.loads(out.value or b"{}")["date"].startswith(
        observed_at(seq).isoformat().replace("+00:00", "")
    )


def test_a_held_output_before_its_inputs_ack_is_matched() -> None:
    """The service may answer before the bench has taken the produce acknowledgement that
    gives the input's offset: the output waits for it instead of staying unmatched."""

    class Rec:
        topic = HELD_TOPIC
        value = b"{}"
        headers = [
            ("source-topic", HL7_TOPIC.encode()),
            ("source-partition", b"0"),
            ("source-offset", b"41"),
            ("reason-class", b"leak_guard"),
        ]

    collector = Collector("unused:0")
    collector.expect(7)
    collector._match(Rec(), 1.5)
    assert collector.unmatched == {"held": 1} and 7 not in collector.received
    collector.sent(7, HL7_TOPIC, 0, 41)
    assert collector.received[7] == (1.5, "held") and not collector.unmatched
    collector._match(Rec(), 2.5)  # the same output again (a replay): unmatched as before
    assert collector.unmatched == {"held": 1}
