"""The de-identification pipeline: policy actions, output spans, the leak guard, the store."""

from __future__ import annotations

import re
from collections.abc import Iterator
from copy import deepcopy
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keystore import Keyring, open_store
from keystore.api import PatientState
from keystore.memory import InMemoryStore
from pipelines.deidentify import Deidentifier, deidentify_text
from pipelines.document import ClinicalDocument, Identifier, Identifiers, PersonName
from pipelines.phi.detector import Detector
from pipelines.policy import Action, Policy
from pipelines.spans import Category as C
from pipelines.spans import Span

TEXT = "Pt John Smith seen 07/22/2005 by Dr. Quesby; call 617-732-5500. MRN 4412345."
SPANS = [
    Span(3, 13, C.NAME_PATIENT),
    Span(19, 29, C.DATE),
    Span(33, 43, C.NAME_PROVIDER),
    Span(50, 62, C.PHONE),
    Span(68, 75, C.MRN),
]
KNOWN = Identifiers(
    patient_names=(PersonName("Smith", ("John",)),),
    patient_ids=(Identifier("4412345", "HOSP", "MR"),),
)


def _state(shift: int = -10) -> PatientState:
    return PatientState(shift_days=shift, pseudonym="p", seed=b"q" * 32)


def _no_detector(actions: dict[C, Action] | None = None) -> Deidentifier:
    policy = Policy(actions=actions or {})  # no recognizers: the detector finds nothing
    return Deidentifier(policy, Detector(policy))


def _doc(text: str = TEXT, identifiers: Identifiers = KNOWN) -> ClinicalDocument:
    return ClinicalDocument(
        text=text, identifiers=identifiers, patient_id="7", assigning_authority="HOSP"
    )


def test_replaced_lists_the_spans_acted_on_at_their_input_offsets() -> None:
    kept = _no_detector({C.NAME_PROVIDER: Action.KEEP}).deidentify(_doc(), _state(), spans=SPANS)
    assert kept.replaced == tuple(s for s in SPANS if s.category is not C.NAME_PROVIDER)
    assert [TEXT[s.start : s.end] for s in kept.replaced][:2] == ["John Smith", "07/22/2005"]
    assert all(
        s.start == a and s.end == b for s, (a, b, _) in zip(kept.replaced, kept.acted, strict=True)
    )


def test_surrogates_replace_every_span_and_output_spans_point_at_them() -> None:
    result = _no_detector().deidentify(_doc(), _state(), spans=SPANS)
    assert not result.held, result.held_reason
    for original in ("John", "Smith", "07/22/2005", "Quesby", "617-732-5500", "4412345"):
        assert original not in result.text
    assert [s.category for s in result.spans] == [s.category for s in SPANS]
    date_span = result.spans[1]
    assert re.fullmatch(r"\d{2}/\d{2}/\d{4}", result.text[date_span.start : date_span.end])
    assert result.text[date_span.start : date_span.end] == "07/12/2005"
    name = result.text[result.spans[0].start : result.spans[0].end]
    assert re.fullmatch(r"[A-Z][a-z]+ [A-Z][a-z]+", name)
    assert result.text.startswith("Pt " + name + " seen ")
    assert result.state_changed


def test_redact_writes_group_tags() -> None:
    deid = _no_detector({c: Action.REDACT for c in C})
    result = deid.deidentify(_doc(), _state(), spans=SPANS)
    assert result.text == "Pt [NAME] seen [DATE] by [NAME]; call [PHONE]. MRN [MRN]."
    assert [result.text[s.start : s.end] for s in result.spans] == [
        "[NAME]",
        "[DATE]",
        "[NAME]",
        "[PHONE]",
        "[MRN]",
    ]
    assert not result.held


def test_conflicting_categories_on_one_region_redact_as_phi() -> None:
    deid = _no_detector({C.DATE: Action.REDACT})
    text = "ref 07/22/2005 filed"
    spans = [Span(4, 14, C.DATE, 0.9), Span(4, 14, C.ID, 0.6)]
    result = deid.deidentify(_doc(text, Identifiers()), _state(), spans=spans)
    assert result.text == "ref [PHI] filed"
    assert {s.category for s in result.spans} == {C.DATE, C.ID}


def test_conflict_under_surrogate_uses_the_most_confident_span() -> None:
    spans = [Span(4, 14, C.DATE, 0.9), Span(4, 14, C.ID, 0.6)]
    result = _no_detector().deidentify(
        _doc("ref 07/22/2005 filed", Identifiers()), _state(), spans=spans
    )
    assert result.text == "ref 07/12/2005 filed"


def test_keep_leaves_the_category_and_the_guard_ignores_it() -> None:
    deid = _no_detector({C.DATE: Action.KEEP})
    result = deid.deidentify(_doc(), _state(), spans=SPANS)
    assert "07/22/2005" in result.text
    assert C.DATE not in {s.category for s in result.spans}
    assert not result.held


def test_leak_guard_holds_back_a_known_name_the_detector_missed() -> None:
    text = "John seen. Later Smith walked."
    result = _no_detector().deidentify(_doc(text), _state(), spans=[Span(0, 4, C.NAME_PATIENT)])
    assert result.held
    assert result.held_reason == "leak guard: NAME_PATIENT=1"
    assert "Smith" not in (result.held_reason or "")


def test_leak_guard_holds_back_when_nothing_was_detected() -> None:
    result = _no_detector().deidentify(_doc("Seen with smith; mrn 4412345"), _state())
    assert result.held
    assert result.leaks == {"NAME_PATIENT": 1, "MRN": 1}
    assert "smith" not in (result.held_reason or "").lower()
    assert "4412345" not in (result.held_reason or "")


def test_leak_guard_catches_a_detected_phrase_that_survives_elsewhere() -> None:
    # too short to be replaced wherever it recurs (pipelines.deidentify.occurrences)
    text = "Moved to MA; the MA office called."
    result = _no_detector().deidentify(
        _doc(text, Identifiers()), _state(), spans=[Span(9, 11, C.LOCATION_OTHER)]
    )
    assert result.held and result.leaks == {"LOCATION_OTHER": 1}


def test_a_detected_phrase_is_replaced_wherever_it_recurs() -> None:
    text = "Transferred from Ashcott Hospital; ASHCOTT  hospital sent records."
    result = _no_detector().deidentify(
        _doc(text, Identifiers()), _state(), spans=[Span(17, 33, C.LOCATION_HOSPITAL)]
    )
    assert not result.held and "ashcott" not in result.text.lower()
    first, second = (result.text[s.start : s.end] for s in result.spans)
    assert first.lower() == " ".join(second.lower().split())
    assert result.detected == 1 and [s.source for s in result.spans] == ["surrogate"] * 2


def test_leak_guard_checks_phones_digits_and_birth_dates() -> None:
    from datetime import date

    ids = Identifiers(phones=("(617) 732-5500",), birth_date=date(1950, 1, 2))
    text = "Call 6177325500 or 732 5500; born January 2, 1950."
    result = _no_detector().deidentify(_doc(text, ids), _state())
    assert result.leaks == {"PHONE": 2, "DATE": 1}


def test_surrogates_are_not_counted_as_leaks() -> None:
    # A surrogate that reads like another original of the note is ours, not a leak.
    state = _state()
    state.name_map["smith"] = "jones"
    text = "Smith and Jones"
    spans = [Span(0, 5, C.NAME_PATIENT), Span(10, 15, C.NAME_OTHER)]
    result = _no_detector().deidentify(_doc(text, Identifiers()), state, spans=spans)
    assert result.text.startswith("Jones and ")
    assert not result.held


def test_same_patient_same_surrogates_across_documents_and_restart(tmp_path: Path) -> None:
    keyring = Keyring.generate()
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    deid = _no_detector()
    with open_store(url, keyring) as store:
        first = _run(deid, store, TEXT)
        second = _run(deid, store, "Note 2: SMITH, JOHN seen 07/23/2005.")
        shift = store.get_or_create("HOSP", "7", deid.new_state).shift_days
        store.flush()
    with open_store(url, keyring) as store:  # a new process: state read back and decrypted
        third = _run(deid, store, "Mr. Smith again on 07/24/2005.")
    name = first.text[first.spans[0].start : first.spans[0].end]
    given, family = name.split()
    moved = (datetime(2005, 7, 23) + timedelta(days=shift)).strftime("%m/%d/%Y")
    assert second.text == f"Note 2: {family.upper()}, {given.upper()} seen {moved}."
    moved = (datetime(2005, 7, 24) + timedelta(days=shift)).strftime("%m/%d/%Y")
    assert third.text == f"Mr. {family} again on {moved}."


def _run(deid: Deidentifier, store: object, text: str):  # type: ignore[no-untyped-def]
    spans = _spans_for(text)
    doc = _doc(text)
    state = store.get_or_create("HOSP", "7", deid.new_state)  # type: ignore[attr-defined]
    result = deid.deidentify(doc, state, spans=spans)
    if result.state_changed:
        store.save("HOSP", "7", state)  # type: ignore[attr-defined]
    return result


def _spans_for(text: str) -> list[Span]:
    spans = []
    for m in re.finditer(r"(?:Mr\. )?(?:John Smith|SMITH, JOHN|Smith)", text):
        spans.append(Span(m.start(), m.end(), C.NAME_PATIENT))
    for m in re.finditer(r"\d{2}/\d{2}/\d{4}", text):
        spans.append(Span(m.start(), m.end(), C.DATE))
    for m in re.finditer(r"Dr\. Quesby", text):
        spans.append(Span(m.start(), m.end(), C.NAME_PROVIDER))
    for m in re.finditer(r"617-732-5500|4412345", text):
        spans.append(Span(m.start(), m.end(), C.PHONE if "-" in m.group() else C.MRN))
    return spans


def test_run_creates_state_once_and_saves_only_when_maps_grow() -> None:
    store = InMemoryStore()
    deid = _no_detector()
    doc = _doc()
    result = deid.deidentify(doc, store.get_or_create("HOSP", "7", deid.new_state), spans=SPANS)
    assert result.state_changed
    state = store.snapshot("HOSP", "7")
    assert -730 <= state.shift_days <= -1
    again = deid.deidentify(doc, state, spans=SPANS)
    assert not again.state_changed
    assert again.text == deid.deidentify(doc, deepcopy(state), spans=SPANS).text


def test_end_to_end_with_the_detector_replaces_known_names() -> None:
    policy = Policy(recognizers={"known": {}})
    deid = Deidentifier(policy)
    text = "SMITH, JOHN was seen. Mr. Smith is stable; MRN 4412345."
    store = InMemoryStore()
    result = deid.run(_doc(text), store)
    assert not result.held, result.held_reason
    assert "smith" not in result.text.lower() and "4412345" not in result.text
    assert store.get("HOSP", "7") is not None


def test_reference_date_fixes_year_of_dates_without_year() -> None:
    doc = ClinicalDocument(text="seen 12/30", document_date=datetime(2006, 1, 2, 9, 0))
    result = _no_detector().deidentify(doc, _state(-3), spans=[Span(5, 10, C.DATE)])
    assert result.text == "seen 12/27"


def test_deidentify_text_helper_needs_no_detector() -> None:
    result = deidentify_text("on 7/22", _state(-1), [Span(3, 7, C.DATE)])
    assert result.text == "on 7/21"


@pytest.mark.parametrize("category", list(C))
def test_every_category_has_a_surrogate_that_differs(category: C) -> None:
    text = "value: Abc 12-34 Street"
    result = _no_detector().deidentify(
        _doc(text, Identifiers()), _state(), spans=[Span(7, 23, category)]
    )
    if category in (C.DATE, C.AGE):  # "12-34" is month/year: a 10-day shift keeps Dec 1934
        assert not result.held
    else:
        assert result.text != text


def test_a_known_name_inside_a_contraction_is_not_a_leak() -> None:
    ids = Identifiers(patient_names=(PersonName("Smith", ("Don",)),))
    result = _no_detector().deidentify(_doc("I don't remember", ids), _state())
    assert not result.held
    held = _no_detector().deidentify(_doc("Don's wife called", ids), _state())
    assert held.leaks == {"NAME_PATIENT": 1}


# --------------------------------------------------------------------------- the command line

PHYSIONET = (
    "START_OF_RECORD=7||||1||||\nPt SMITH, JOHN seen 07/22/2005, stable.\n||||END_OF_RECORD\n\n"
    "START_OF_RECORD=7||||2||||\nMr. Smith called on 07/24/2005.\n||||END_OF_RECORD\n\n"
    "START_OF_RECORD=8||||1||||\nNothing to hide here.\n||||END_OF_RECORD\n\n"
)


def _cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, policy: str, *extra: str
) -> tuple[int, str]:
    import typer
    from typer.testing import CliRunner

    from service.commands.deidentify import register

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", f"sqlite:///{tmp_path / 'ks.sqlite3'}")
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", KEY_ENTRY)
    (tmp_path / "id.text").write_text(PHYSIONET, encoding="utf-8")
    (tmp_path / "names.txt").write_text("7||||JOHN||||SMITH\n", encoding="utf-8")
    (tmp_path / "policy.toml").write_text(policy, encoding="utf-8")
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        """Test root."""

    register(app)
    args = ["deidentify", "id.text", "--known-names", "names.txt", "--policy", "policy.toml"]
    result = CliRunner().invoke(app, [*args, *extra])
    return result.exit_code, result.output


KEY_ENTRY = "test:" + __import__("base64").b64encode(b"k" * 32).decode()
WITH_RECOGNIZERS = "[recognizers.known]\n[recognizers.dates]\n"


def test_cli_writes_the_same_records_with_deidentified_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipelines.corpus import read_notes, read_phi

    code, out = _cli(
        tmp_path, monkeypatch, WITH_RECOGNIZERS, "-o", "out.text", "--annotations", "out.phi"
    )
    assert code == 0, out
    notes = [n for n in read_notes(tmp_path / "out.text", "physionet")]
    assert [(n.patient, n.note) for n in notes] == [("7", "1"), ("7", "2"), ("8", "1")]  # type: ignore[union-attr]
    body = "".join(n.text for n in notes)  # type: ignore[union-attr]
    # whole words: a surrogate may contain the original's letters ("Johnson" for "John")
    assert not re.search(r"\b(smith|john)\b", body, re.IGNORECASE), body
    assert "07/22/2005" not in body and "Nothing to hide here." in body
    with (tmp_path / "out.phi").open(encoding="utf-8") as fh:
        spans = read_phi(fh)
    first = notes[0].text  # type: ignore[union-attr]
    categories = [c for _, _, c in spans[("7", "1")]]
    assert set(categories) == {"NAME_PATIENT", "DATE"} and categories[-1] == "DATE"
    start, end, _ = spans[("7", "1")][-1]
    assert re.fullmatch(r"\d{2}/\d{2}/\d{4}", first[start:end])
    # A second run reads the same patient state back: same output.
    again_code, _ = _cli(tmp_path, monkeypatch, WITH_RECOGNIZERS, "-o", "again.text")
    assert again_code == 0
    assert (tmp_path / "again.text").read_text() == (tmp_path / "out.text").read_text()


def test_cli_holds_back_notes_that_would_leak(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out = _cli(tmp_path, monkeypatch, "[recognizers]\n", "-o", "out.text")
    assert code == 0, out
    written = (tmp_path / "out.text").read_text()
    assert "START_OF_RECORD=8||||1||||" in written
    assert "START_OF_RECORD=7" not in written  # both notes of 7 name the patient: held
    assert "2 note(s) held back by the leak guard (NAME_PATIENT=3)" in out
    assert "smith" not in out.lower()


def test_common_word_name_parts_count_only_where_they_read_as_names() -> None:
    ids = Identifiers(patient_names=(PersonName("Smith", ("Will",)),))
    deid = _no_detector()
    assert not deid.deidentify(_doc("We will call back.", ids), _state()).held
    assert not deid.deidentify(_doc("PT WILL CALL BACK.", ids), _state()).held
    assert deid.deidentify(_doc("Spoke with Will today.", ids), _state()).leaks == {
        "NAME_PATIENT": 1
    }
    assert deid.deidentify(_doc("SPOKE WITH MR. WILL TODAY.", ids), _state()).held
    # A part that is mostly a name stays strict, in any case.
    assert deid.deidentify(_doc("family: smith", ids), _state()).held


# --------------------------------------------------------------------------- two instances


@pytest.fixture
def pg_url() -> Iterator[str]:
    import uuid

    import psycopg

    base = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        admin = psycopg.connect(base, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError:
        pytest.skip("PostgreSQL on 127.0.0.1:5432 is not reachable")
    schema = f"deid_test_{uuid.uuid4().hex[:12]}"
    try:
        yield f"{base}?schema={schema}"
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


@pytest.mark.integration
def test_two_instances_on_postgresql_meeting_a_new_patient_agree(pg_url: str) -> None:
    import threading

    keyring = Keyring.generate()
    deid = _no_detector()
    stores = [open_store(pg_url, keyring), open_store(pg_url, keyring)]
    texts = ["Pt John Smith seen 07/22/2005.", "SMITH, JOHN seen again 07/23/2005."]
    results: list[str] = ["", ""]
    barrier = threading.Barrier(2)

    def work(i: int) -> None:
        barrier.wait()  # both meet the new patient at the same moment
        results[i] = _run(deid, stores[i], texts[i]).text
        stores[i].flush()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    states = [s.get_or_create("HOSP", "7", deid.new_state) for s in stores]
    assert states[0].shift_days == states[1].shift_days
    given, family = results[0].split(" seen")[0].removeprefix("Pt ").split()
    assert results[1].startswith(f"{family.upper()}, {given.upper()} seen again ")
    d1 = datetime.strptime(results[0].rsplit(" ", 1)[1].rstrip("."), "%m/%d/%Y")
    d2 = datetime.strptime(results[1].rsplit(" ", 1)[1].rstrip("."), "%m/%d/%Y")
    assert d2 - d1 == timedelta(days=1)
    for s in stores:
        s.close()
    with open_store(pg_url, keyring) as third:  # a third instance reads the same identity
        again = _run(deid, third, "Mr. Smith, 07/22/2005.")
    assert again.text == f"Mr. {family}, {results[0].rsplit(' ', 1)[1]}"


def test_a_recurring_phrase_gets_what_a_fresh_surrogate_call_gives() -> None:
    """``_replace`` makes the surrogate of a (category, text) once per note; every other
    occurrence must read what the surrogate would have made for it afresh."""
    from surrogates import ReplaceContext, replacer_for

    pieces = [
        ("Quesby Marlowe", C.NAME_PROVIDER),
        ("07/22/2005", C.DATE),
        ("617-732-5500", C.PHONE),
        ("4412345", C.MRN),
        ("Ashcott General Hospital", C.LOCATION_HOSPITAL),
        ("12 Elm Street, Boston, MA 02115", C.LOCATION_STREET),
        ("Quesby", C.NAME_OTHER),
        ("jo.quesby@mail.org", C.EMAIL),
    ]
    text, spans = "", []
    for i in range(3):
        for phrase, category in pieces[i % 2 :]:
            text += "Seen: "
            spans.append(Span(len(text), len(text) + len(phrase), category))
            text += phrase + ". "
    state = _state()
    deid = _no_detector()
    result = deid.deidentify(_doc(text, Identifiers()), state, spans=spans)
    ctx = ReplaceContext(state=deepcopy(state), text=text, settings=deid.settings)
    assert len(result.acted) == len(spans) == len(result.spans)
    for (start, end, chosen), out in zip(result.acted, result.spans, strict=True):
        fresh = replacer_for(chosen.category).replace(chosen.with_bounds(start, end), ctx)
        assert result.text[out.start : out.end] == fresh
    assert not ctx.changed  # every surrogate was made and remembered by the first run


def _reference_regions(spans: list[Span]) -> list[tuple[int, int, tuple[Span, ...]]]:
    regions: list[tuple[int, int, tuple[Span, ...]]] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if regions and span.start < regions[-1][1]:
            start, end, members = regions[-1]
            end = max(end, span.end)
            regions[-1] = (start, end, tuple(s.with_bounds(start, end) for s in (*members, span)))
            continue
        regions.append((span.start, span.end, (span,)))
    return regions


def test_regions_group_overlapping_spans_at_the_regions_bounds() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from pipelines.deidentify import _regions

    span = st.builds(
        lambda a, n, c: Span(a, a + n, c), st.integers(0, 40), st.integers(1, 9), st.sampled_from(C)
    )

    @settings(deadline=None)
    @given(st.lists(span, max_size=12))
    def check(spans: list[Span]) -> None:
        got = list(_regions(spans))
        assert [(g[0].start, g[0].end, g) for g in got] == _reference_regions(spans)

    check()


def test_without_chosen_spans_the_result_is_otherwise_the_same() -> None:
    policy = Policy()
    kept = Deidentifier(policy, Detector(policy)).deidentify(_doc(), _state(), spans=SPANS)
    light = Deidentifier(policy, Detector(policy), keep_chosen=False)
    result = light.deidentify(_doc(), _state(), spans=SPANS)
    assert result.chosen == result.acted == result.replaced == ()
    assert (result.text, result.spans, result.leaks) == (kept.text, kept.spans, kept.leaks)
    assert len(kept.chosen) == len(SPANS)


def _choose_reference(
    spans: tuple[Span, ...], action: dict[C, Action]
) -> tuple[Span, list[C], str] | None:
    """What ``Deidentifier._replace`` did with a region before ``_choose``: the chosen span,
    the output's categories and the redaction tag (or "" for a surrogate)."""
    from pipelines.deidentify import _most_confident
    from surrogates.redaction import redaction_tag

    actions = {action[s.category] for s in spans}
    if actions == {Action.KEEP}:
        return None
    if Action.REDACT in actions:
        categories = sorted({s.category for s in spans}, key=lambda c: c.value)
        return _most_confident(spans), categories, redaction_tag(s.category for s in spans)
    chosen = _most_confident(
        [s for s in spans if action[s.category] is Action.SURROGATE] if len(spans) > 1 else spans
    )
    return chosen, [chosen.category], ""


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(list(C)), st.sampled_from([0.5, 0.7, 0.9]), st.integers(3, 6)),
        min_size=1,
        max_size=4,
    ),
    st.dictionaries(st.sampled_from(list(C)), st.sampled_from(list(Action))),
    st.sampled_from(list(Action)),
)
def test_choose_agrees_with_the_region_rules_it_replaced(
    parts: list[tuple[C, float, int]], actions: dict[C, Action], default: Action
) -> None:
    from pipelines.deidentify import _choose
    from surrogates.redaction import redaction_tag

    spans = tuple(Span(2, end, category, conf) for category, conf, end in parts)
    action = {c: actions.get(c, default) for c in C}
    got = _choose(spans, action)
    expected = _choose_reference(spans, action)
    if got is None or expected is None:
        assert got is expected
        return
    chosen, categories, redact = got
    assert (chosen, categories, redaction_tag(categories) if redact else "") == expected


SHORT_NAMED = Identifiers(patient_names=(PersonName(family="Quellbrook", given=("Ed",)),))


@pytest.mark.parametrize(
    ("text", "leaks"),
    [
        ("Seen in the ED; ED to call back.", {}),
        ("SEEN IN ED. ED TO CALL.", {}),
        ("Mr. Ed called twice.", {"NAME_PATIENT": 1}),
        ("Ed Quellbrook called.", {"NAME_PATIENT": 2}),
        ("QUELLBROOK, ED CALLED.", {"NAME_PATIENT": 2}),
    ],
)
def test_a_two_letter_known_name_holds_only_with_name_context(
    text: str, leaks: dict[str, int]
) -> None:
    result = _no_detector().deidentify(_doc(text, SHORT_NAMED), _state())
    assert result.leaks == leaks


def test_a_found_two_letter_name_does_not_hold_the_abbreviation_elsewhere() -> None:
    text = "Mr. Ed called; back to ED later."
    result = _no_detector().deidentify(
        _doc(text, Identifiers()), _state(), spans=[Span(4, 6, C.NAME_PATIENT)]
    )
    assert not result.held and result.text.endswith("back to ED later.")
