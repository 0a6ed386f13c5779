"""The processing facade (pipelines/process.py) end to end on our HL7 fixtures: the real
parser, de-identifier, research renderer and the in-memory keystore — version rules,
at-least-once replay, two processors sharing one store, held documents, input errors."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from fhir.resources.R4B.documentreference import DocumentReference

from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.errors import InputError
from pipelines.outcome import Outcome
from pipelines.policy import Policy
from pipelines.process import Processor
from pipelines.research import NEAR_DUPLICATE_URL, attachment_text

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "versions"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
KNOWN = (
    "MRN448812",
    "Fairweather",
    "Ottoline",
    "Keller",
    "Marta",
    "VIS7788",
    "VIS7790",
    "MSG100",
    "ACC5501",
    "19560214",
    "1956",
    "218-555-0147",
    "Orchard",
    "Lakeside",
    "55812",
    "03/01/2024",
    "2024-03-01",
    "GENHOSP",
)


def raw(name: str) -> bytes:
    return next(FIXTURES.glob(f"{name}_*.*")).read_bytes()


@pytest.fixture(scope="module")
def policy() -> Policy:
    return Policy.load()


@pytest.fixture
def pseudonyms() -> Pseudonyms:
    return Pseudonyms.random()


def make(
    policy: Policy, store: InMemoryStore, pseudonyms: Pseudonyms, *, near_duplicates: bool = True
) -> Processor:
    return Processor(
        policy=policy, store=store, pseudonyms=pseudonyms, near_duplicates=near_duplicates
    )


def run(proc: Processor, *names: str, commit: bool = True) -> list[Outcome]:
    outs: list[Outcome] = []
    for name in names:
        hint = "fhir" if name.startswith("1") else "hl7v2"
        got = proc.process(raw(name), content_hint=hint, now=NOW)
        if commit:
            proc.commit(got)
        outs.extend(got)
    return outs


def kinds(outs: list[Outcome]) -> list[str]:
    return [o.kind for o in outs]


def test_fixture_stream_follows_the_version_rules(policy: Policy, pseudonyms: Pseudonyms) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    outs = run(proc, "00", "01", "02", "03", "04", "05", "06")
    assert kinds(outs) == [
        "context",
        "publish",
        "duplicate",
        "publish",
        "publish",
        "tombstone",
        "publish",
    ]
    context, prelim, _, final, corrected, tomb, other_visit = outs
    assert context.research_key is None and context.value is None
    same_key = {prelim.research_key, final.research_key, corrected.research_key, tomb.research_key}
    assert len(same_key) == 1 and None not in same_key
    assert other_visit.research_key not in same_key
    assert tomb.value is None
    # each newer version names the one it replaces
    ids = [dict(o.headers)["version"] for o in (prelim, final, corrected)]
    assert dict(final.headers)["replaces"] == ids[0]
    assert dict(corrected.headers)["replaces"] == ids[1]
    doc = orjson.loads(corrected.value or b"")
    assert doc["relatesTo"][0]["target"]["reference"] == f"DocumentReference/{ids[1]}"
    assert doc["docStatus"] == "amended"


def test_research_output_is_valid_fhir_without_known_identifiers(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    store = InMemoryStore()
    proc = make(policy, store, pseudonyms)
    outs = [o for o in run(proc, "01", "03", "04", "06") if o.kind == "publish"]
    assert len(outs) == 4
    state = store.get("GENHOSP", "MRN448812")
    assert state is not None
    for out in outs:
        assert out.value is not None
        model = DocumentReference.model_validate_json(out.value)
        assert model.subject.reference == f"Patient/{state.pseudonym}"
        assert model.context.encounter[0].reference.startswith("Encounter/")
        assert model.meta.security[0].code == "PSEUDED"
        assert model.type.coding[0].system == "http://loinc.org"
        body = attachment_text(orjson.loads(out.value))
        everything = out.value.decode() + body + repr(out.headers) + repr(out.reason)
        for value in KNOWN:
            assert value.lower() not in everything.lower(), value
        assert out.span_counts.get("NAME_PATIENT", 0) >= 1
        assert {"parse", "dedup", "detect", "render"} <= set(out.stage_seconds)


def test_out_of_order_arrival_keeps_only_the_newest(policy: Policy, pseudonyms: Pseudonyms) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    outs = run(proc, "04", "03", "01", "02")
    assert kinds(outs) == ["publish", "superseded", "superseded", "superseded"]
    assert "CORRECTED REPORT" in attachment_text(orjson.loads(outs[0].value or b""))


def test_replay_after_commit_publishes_nothing(policy: Policy, pseudonyms: Pseudonyms) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    names = ("00", "01", "02", "03", "04", "05", "06")
    run(proc, *names)
    replay = run(proc, *names)
    assert not [o for o in replay if o.kind in ("publish", "tombstone", "held")]


def test_crash_before_commit_redoes_the_same_output(policy: Policy, pseudonyms: Pseudonyms) -> None:
    store = InMemoryStore()
    first = run(make(policy, store, pseudonyms), "03", commit=False)
    restarted = make(policy, store, pseudonyms)  # a new process, same store and keys
    again = run(restarted, "03", commit=False)
    assert kinds(again) == ["publish"]
    assert (again[0].research_key, again[0].value) == (first[0].research_key, first[0].value)
    restarted.commit(again)
    assert kinds(run(restarted, "03")) == ["duplicate"]


def test_unacknowledged_tombstone_is_redone_on_replay(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    run(proc, "03")
    assert kinds(run(proc, "05", commit=False)) == ["tombstone"]
    assert kinds(run(proc, "05")) == ["tombstone"]
    assert kinds(run(proc, "05")) == ["duplicate"]


def test_two_processors_on_one_store_agree(policy: Policy, pseudonyms: Pseudonyms) -> None:
    store = InMemoryStore()
    a, b = make(policy, store, pseudonyms), make(policy, store, pseudonyms)
    final_a = run(a, "03")[0]
    assert kinds(run(b, "02", "03")) == ["superseded", "duplicate"]
    corrected = run(b, "04")[0]
    assert corrected.kind == "publish"
    assert dict(corrected.headers)["replaces"] == dict(final_a.headers)["version"]
    subject = {orjson.loads(o.value or b"")["subject"]["reference"] for o in (final_a, corrected)}
    assert len(subject) == 1


def test_two_processors_racing_publish_each_version_at_most_once(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    store = InMemoryStore()
    names = ["01", "02", "03", "04", "05"]
    order = names * 2
    random.Random(7).shuffle(order)
    results: list[Outcome] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def worker(share: list[str]) -> None:
        proc = make(policy, store, pseudonyms)
        barrier.wait()
        for name in share:
            got = run(proc, name)
            with lock:
                results.extend(got)

    threads = [
        threading.Thread(target=worker, args=(order[0::2],)),
        threading.Thread(target=worker, args=(order[1::2],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    published = [dict(o.headers)["version"] for o in results if o.kind == "publish"]
    assert len(published) == len(set(published))  # no version went out twice
    # whatever the interleaving, once both are done a replay of the newest is a duplicate
    late = make(policy, store, pseudonyms)
    assert kinds(run(late, "05")) == ["duplicate"]
    assert kinds(run(late, "04")) == ["duplicate"]  # an exact repeat of an older version


def test_near_duplicate_of_another_visit_is_flagged_not_dropped(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    final, other = run(proc, "03", "06")
    assert other.kind == "publish"
    score = float(dict(other.headers)["near-duplicate-score"])
    assert 0.8 <= score < 1.0
    ext = orjson.loads(other.value or b"")["extension"][0]
    assert ext["url"] == NEAR_DUPLICATE_URL
    assert {"url": "researchKey", "valueString": final.research_key} in ext["extension"]
    assert "near-duplicate-score" not in dict(final.headers)


def test_near_duplicate_check_can_be_switched_off(policy: Policy, pseudonyms: Pseudonyms) -> None:
    store = InMemoryStore()
    proc = make(policy, store, pseudonyms, near_duplicates=False)
    outs = run(proc, "03", "06")
    assert kinds(outs) == ["publish", "publish"]
    assert "near-duplicate-score" not in dict(outs[1].headers)
    state = store.get("GENHOSP", "MRN448812")
    assert state is not None
    assert not [k for k in state.extra if k.startswith("near-duplicate:")]  # no sketch kept


def test_tombstoned_visit_is_no_longer_a_near_duplicate_candidate(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    outs = run(proc, "03", "05", "06")
    assert kinds(outs) == ["publish", "tombstone", "publish"]
    assert "near-duplicate-score" not in dict(outs[-1].headers)


def test_leak_guard_hold_is_an_outcome_and_keeps_the_topic_version(pseudonyms: Pseudonyms) -> None:
    store = InMemoryStore()
    # no recognizers: the patient's known name stays in the text, so the guard must hold it
    blind = Policy.from_mapping({"recognizers": {}})
    seeing = Policy.load()
    published = run(make(seeing, store, pseudonyms), "03")[0]
    held = run(make(blind, store, pseudonyms), "04")[0]
    assert held.kind == "held"
    assert held.value is None and held.research_key == published.research_key
    assert held.reason_class == "leak_guard" and held.reason
    for value in KNOWN:
        assert value not in held.reason
    # a held version consumed nothing: re-sent while the cause stands, it is held again
    assert kinds(run(make(blind, store, pseudonyms), "04")) == ["held"]
    # the held version never reached the topic: a replacement still replaces the old one
    retry = run(make(seeing, store, pseudonyms), "05")
    assert kinds(retry) == ["tombstone"]


def test_held_document_is_published_once_the_cause_is_fixed(pseudonyms: Pseudonyms) -> None:
    """Issue 15 item 2: held, fix the policy, re-send the same input: published, once."""
    store = InMemoryStore()
    blind = Policy.from_mapping({"recognizers": {}})
    seeing = Policy.load()
    first = run(make(seeing, store, pseudonyms), "03")[0]
    assert kinds(run(make(blind, store, pseudonyms), "04")) == ["held"]  # committed
    fixed = make(seeing, store, pseudonyms)
    again = run(fixed, "04")
    assert kinds(again) == ["publish"]
    assert again[0].research_key == first.research_key
    # it replaces what the topic holds (the version before the held one)
    assert dict(again[0].headers)["replaces"] == dict(first.headers)["version"]
    assert again[0].value is not None
    for value in KNOWN:
        assert value.encode() not in again[0].value
    # published once: every later re-send is a duplicate
    assert kinds(run(fixed, "04")) == ["duplicate"]
    assert kinds(run(make(seeing, store, pseudonyms), "03")) == ["duplicate"]  # older, seen


def test_input_errors_propagate(policy: Policy, pseudonyms: Pseudonyms) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    with pytest.raises(InputError) as info:
        proc.process(raw("07"), content_hint="hl7v2", now=NOW)
    assert info.value.reason_class != "invalid_input" or info.value.reason


def test_store_pseudonyms_and_new_state_are_used_by_default(policy: Policy) -> None:
    store = InMemoryStore()
    proc = Processor(policy=policy, store=store)
    out = run(proc, "03")[0]
    state = store.get("GENHOSP", "MRN448812")
    assert state is not None
    # the patient's pseudonym is the store's keyed HMAC of its seed (revealable by the store)
    assert state.pseudonym == store.pseudonym("patient", state.seed)
    assert orjson.loads(out.value or b"")["subject"]["reference"] == f"Patient/{state.pseudonym}"
    assert out.research_key == store.pseudonym(
        "research-key", state.seed, "VIS7788", "http://loinc.org|36643-5"
    )


# -- two instances through the real encrypted store (SQLite file; PostgreSQL if reachable) --


def _shared_store_agreement(policy: Policy, url: str) -> None:
    from keystore import Keyring, open_store

    keyring = Keyring.generate("shared")
    one, two = open_store(url, keyring), open_store(url, keyring)
    try:
        a, b = Processor(policy=policy, store=one), Processor(policy=policy, store=two)
        final = run(a, "03")[0]
        assert final.kind == "publish"
        assert kinds(run(b, "03", "01")) == ["duplicate", "superseded"]
        corrected = run(b, "04")[0]
        assert corrected.kind == "publish"
        assert corrected.research_key == final.research_key
        assert dict(corrected.headers)["replaces"] == dict(final.headers)["version"]
        subjects = {
            orjson.loads(o.value or b"")["subject"]["reference"] for o in (final, corrected)
        }
        assert len(subjects) == 1  # one patient pseudonym whichever instance saw it
        assert kinds(run(a, "04", "05")) == ["duplicate", "tombstone"]
        assert kinds(run(b, "05")) == ["duplicate"]
    finally:
        one.close()
        two.close()


def test_two_store_instances_on_one_sqlite_file_agree(policy: Policy, tmp_path: Path) -> None:
    _shared_store_agreement(policy, f"sqlite:///{tmp_path / 'shared.sqlite3'}")


@pytest.mark.integration
def test_two_store_instances_on_postgresql_agree(policy: Policy) -> None:
    import uuid

    psycopg = pytest.importorskip("psycopg")
    base = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    schema = f"process_test_{uuid.uuid4().hex[:12]}"
    try:
        _shared_store_agreement(policy, f"{base}?schema={schema}")
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


def test_adt_context_is_remembered_for_later_reports(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    from pipelines.patient_context import context_of

    store = InMemoryStore()
    proc = make(policy, store, pseudonyms)
    assert kinds(run(proc, "00")) == ["context"]
    state = store.get("GENHOSP", "MRN448812")
    assert state is not None
    known = context_of(state)
    assert known is not None
    assert "Brightwater" in {n.family for n in known.relative_names}
    assert kinds(run(proc, "00")) == ["context"]  # the same context again changes nothing
    out = run(proc, "08")[0]
    assert out.kind == "publish"
    text = attachment_text(orjson.loads(out.value or b""))
    assert "Brightwater" not in text and "Odalys" not in text
    assert "Emergency contact" in text


def test_context_identifiers_reach_the_known_identifier_recognizer(pseudonyms: Pseudonyms) -> None:
    known_only = Policy.from_mapping({"recognizers": {"known": {}}})
    without = run(make(known_only, InMemoryStore(), pseudonyms), "08")[0]
    assert "Brightwater" in attachment_text(orjson.loads(without.value or b""))
    proc = make(known_only, InMemoryStore(), pseudonyms)
    with_context = run(proc, "00", "08")[-1]
    assert with_context.kind == "publish"
    assert "Brightwater" not in attachment_text(orjson.loads(with_context.value or b""))


def test_fhir_versions_follow_the_same_rules(policy: Policy, pseudonyms: Pseudonyms) -> None:
    proc = make(policy, InMemoryStore(), pseudonyms)
    # same lastUpdated: the final outranks the preliminary whichever comes first
    assert kinds(run(proc, "11", "10")) == ["publish", "superseded"]
    assert kinds(run(proc, "12", "12")) == ["tombstone", "duplicate"]
    other = make(policy, InMemoryStore(), pseudonyms)
    prelim, final = run(other, "10", "11")
    assert dict(final.headers)["replaces"] == dict(prelim.headers)["version"]
    body = (final.value or b"").decode()
    text = attachment_text(orjson.loads(final.value or b""))
    for value in (
        "Ashcombe",
        "Perpetua",
        "MRN550231",
        "enc-3301",
        "pat-1",
        "doc-77",
        "Vowell",
        "Harborview",
        "1948",
        "05/02/2024",
        "2.16.840.1.113883.19.5",
    ):
        assert value not in body and value not in text, value
    resource = DocumentReference.model_validate_json(final.value or b"")
    assert resource.docStatus == "final"
    assert resource.type.coding[0].code == "18842-5"
    assert resource.author is None and resource.custodian is None


def test_reports_without_a_visit_are_grouped_by_document_not_merged(
    policy: Policy, pseudonyms: Pseudonyms
) -> None:
    from pipelines.document import ClinicalDocument, ReportType, Status, VersionMarker

    def note(doc_id: str, text: str, day: int, replaces: str | None = None) -> ClinicalDocument:
        return ClinicalDocument(
            text=text,
            patient_id="P-9",
            assigning_authority="urn:test",
            document_id=doc_id,
            report_type=ReportType("11506-3", "Progress note", "http://loinc.org"),
            status=Status.AMENDED if replaces else Status.FINAL,
            version=VersionMarker(datetime(2024, 1, day, tzinfo=UTC), replaces_id=replaces),
        )

    proc = make(policy, InMemoryStore(), pseudonyms)
    first = proc.process_document(note("d1", "Day one: stable.", 1), now=NOW)
    second = proc.process_document(note("d2", "Day two: improving.", 2), now=NOW)
    assert (first.kind, second.kind) == ("publish", "publish")
    assert first.research_key != second.research_key  # an older note is not "superseded"
    fix = proc.process_document(note("d3", "Day one: stable, afebrile.", 3, "d1"), now=NOW)
    assert fix.kind == "publish" and fix.research_key == first.research_key
    assert dict(fix.headers)["replaces"] == dict(first.headers)["version"]


class _RacingStore(InMemoryStore):
    """The real in-memory store, with a hook that lets another instance act between this
    instance's read of a mark and its compare-and-set (a deterministic lost race)."""

    def __init__(self) -> None:
        super().__init__()
        self.before_next_cas: list[Callable[[], object]] = []

    def compare_and_set_mark(self, key: str, expected: bytes | None, value: bytes) -> bool:
        if self.before_next_cas:
            self.before_next_cas.pop()()
        return super().compare_and_set_mark(key, expected, value)

    def compare_and_set_marks(
        self,
        items: Sequence[tuple[str, bytes | None, bytes]],
        *,
        ttl_seconds: float | None = None,
    ) -> list[bool]:
        if self.before_next_cas:
            self.before_next_cas.pop()()
        return super().compare_and_set_marks(items, ttl_seconds=ttl_seconds)


def test_a_lost_compare_and_set_is_decided_again(policy: Policy, pseudonyms: Pseudonyms) -> None:
    store = _RacingStore()
    a, b = make(policy, store, pseudonyms), make(policy, store, pseudonyms)
    seen: list[Outcome] = []
    store.before_next_cas.append(lambda: seen.extend(run(b, "04")))
    outcome = run(a, "03")[0]
    assert kinds(seen) == ["publish"]  # the other instance won with the newer version
    assert outcome.kind == "superseded"  # re-decided against the mark it lost to
    # and the reverse: losing to an older version still publishes, replacing it
    store2 = _RacingStore()
    c, d = make(policy, store2, pseudonyms), make(policy, store2, pseudonyms)
    lost: list[Outcome] = []
    store2.before_next_cas.append(lambda: lost.extend(run(d, "03")))
    newer = run(c, "04")[0]
    assert kinds(lost) == ["publish"] and newer.kind == "publish"
    assert dict(newer.headers)["replaces"] == dict(lost[0].headers)["version"]
