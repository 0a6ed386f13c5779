"""Issue 27: surrogates a research user cannot tell from real.

Gender follows the patient's recorded sex (PID-8, ``Patient.gender``), a title before the
name and the note's pronouns before census counts; city, state and ZIP come out as one real
triple of the shipped table; phones keep an area code of the original's state; streets take
names from a street-name vocabulary; the default date shift hides the date. Every patient,
name and place below is invented (the cities and ZIPs are real places, drawn from the table).
"""

from __future__ import annotations

import base64
import copy
import json
import random
import re
from datetime import date
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from surrogate_helpers import FakeSpan, make_ctx, make_state, replace_all

from keystore.api import PatientState
from pipelines.deidentify import Deidentifier
from pipelines.document import Sex
from pipelines.ingest import ingest
from pipelines.policy import Policy
from surrogates import zipdata
from surrogates.contact import PhoneSurrogate, area_codes_by_state, state_of_area_code
from surrogates.context import SurrogateSettings, new_patient_state
from surrogates.locations import LocationSurrogate
from surrogates.names import NameSurrogate, census
from surrogates.places import place_table, street_names

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Given names no census list holds: before issue 27 their gender was a coin flip.
UNCOMMON_MALE = (  # noqa: SIM905 - a word list reads better as text
    "Brannoc Tavin Lorcan Oisin Kasimir Osric Anselm Idris Thane Corwin Evander Lucan "
    "Peregrin Soren Tiernan Caspian Dashiell Ewan Fintan Halvard Ignatius Jorah Keir Lazlo"
).split()
LOC = LocationSurrogate()
NAMES = NameSurrogate()


@pytest.fixture(scope="module")
def deid() -> Deidentifier:
    return Deidentifier()


def _hl7(index: int, given_name: str, sex: str, note: str) -> bytes:
    return (
        f"MSH|^~\\&|LAB|HOSP|RES|DS|20240301120000||ORU^R01|M{index}|P|2.5\r"
        f"PID|1||MRN{index:05d}^^^HOSP^MR||Quellmark^{given_name}||19600101|{sex}\r"
        "OBR|1|||11488-4^Consult note^LN|||20240301\r"
        f"OBX|1|TX|11488-4^Consult note^LN||{note}||||||F\r"
    ).encode()


def _is_male(name: str | None) -> bool:
    return name is not None and census().share(name, "M") >= 0.9


def test_hl7_pid8_male_patients_get_male_first_names(deid: Deidentifier) -> None:
    male = 0
    for i, name in enumerate(UNCOMMON_MALE):
        note = f"{name} Quellmark is a 64 year old who presents with chest pain. {name} reports it."
        doc = ingest(_hl7(i, name, "M", note), content_hint="hl7v2").documents[0]
        assert doc.identifiers.sex is Sex.MALE
        state = new_patient_state(SurrogateSettings())
        deid(doc, state)
        male += _is_male(state.name_map.get(name.lower()))
    assert male / len(UNCOMMON_MALE) >= 0.95, male  # target; 15/24 before


def test_fhir_patient_gender_male_is_kept(deid: Deidentifier) -> None:
    bundle = json.loads((FIXTURES / "fhir" / "bundle-collection-partial.json").read_text())
    for i, name in enumerate(UNCOMMON_MALE[:6]):
        doc_bundle = copy.deepcopy(bundle)
        for entry in doc_bundle["entry"]:
            res = entry["resource"]
            if res["resourceType"] == "Patient":
                res["gender"] = "male"
                res["name"] = [{"family": "Quellmark", "given": [name]}]
            if res["resourceType"] == "DocumentReference":
                for content in res["content"]:
                    note = f"{name} Quellmark, seen today, says the cough is better."
                    content["attachment"]["data"] = base64.b64encode(note.encode()).decode()
        docs = ingest(json.dumps(doc_bundle).encode(), content_hint="fhir").documents
        assert docs and docs[0].identifiers.sex is Sex.MALE
        state = new_patient_state(SurrogateSettings())
        deid(docs[0], state)
        assert _is_male(state.name_map.get(name.lower())), (i, state.name_map)


def test_title_before_the_span_decides_gender() -> None:
    # "Mr. [Olivia Green]": the title is outside the span and Olivia is a woman's name
    for seed in range(20):
        text = "Mr. Olivia Green is a 64 year old man."
        ctx = make_ctx(text, state=make_state(seed=bytes([seed]) * 32))
        (out,) = replace_all(NAMES, ctx, "NAME_PATIENT", "Olivia Green")
        assert _is_male(ctx.state.name_map["olivia"]), out


def test_note_pronouns_decide_for_the_patients_own_uncommon_name() -> None:
    text = "Tavilla Quellmark came in today. She says her knee hurts; her gait is slow."
    for seed in range(20):
        ctx = make_ctx(text, state=make_state(seed=bytes([seed]) * 32))
        ctx.patient_given = frozenset({"tavilla"})
        replace_all(NAMES, ctx, "NAME_PATIENT", "Tavilla Quellmark")
        assert census().share(ctx.state.name_map["tavilla"], "F") >= 0.9


def test_recorded_sex_beats_census_and_pronouns_for_the_patient() -> None:
    text = "Ashley Quellmark, 30, says she is fine."
    ctx = make_ctx(text)
    ctx.patient_given = frozenset({"ashley"})
    ctx.recorded_sex = "M"
    replace_all(NAMES, ctx, "NAME_PATIENT", "Ashley Quellmark")
    assert _is_male(ctx.state.name_map["ashley"])


def _address_rows(count: int, seed: int) -> list[zipdata.ZipRow]:
    rows = [r for r in zipdata.rows() if r.standard and r.city.replace(" ", "").isalpha()]
    return random.Random(seed).sample(rows, count)


def test_addresses_come_out_as_real_city_state_zip_triples(deid: Deidentifier) -> None:
    table = place_table()
    in_state = agree = 0
    rows = _address_rows(24, 7)
    for i, row in enumerate(rows):
        note = (
            f"Mr. Quellmark lives at 41 Harbor Street, {row.city}, {row.state} {row.zip_code}"
            f" with his wife. He was born in {row.city}."
        )
        doc = ingest(_hl7(i, "Tavin", "M", note), content_hint="hl7v2").documents[0]
        out = deid(doc, new_patient_state(SurrogateSettings())).text
        m = re.search(r"lives at .+?, ([A-Za-z .'\-]+), ([A-Z]{2}) (\d{5})", out)
        assert m, out
        city, state, zip_code = m.groups()
        in_state += table.is_city_of(city, state)
        agree += table.state_of_zip.get(zip_code) == state
        assert city.lower() != row.city.lower() and zip_code != row.zip_code
        assert f"born in {city}." in out  # the city alone agrees with the address
    assert in_state / len(rows) >= 0.95, in_state  # 1/24 before
    assert agree == len(rows)


@settings(max_examples=60, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), pick=st.integers(0, 10**9))
def test_any_patient_any_address_gives_a_triple_of_the_table(seed: bytes, pick: int) -> None:
    table = place_table()
    zips = sorted(table.city_of_zip)
    zip_code = zips[pick % len(zips)]
    city, state = table.city_of_zip[zip_code], table.state_of_zip[zip_code]
    text = f"12 Elm Street, {city}, {state} {zip_code}"
    ctx = make_ctx(text, state=make_state(seed=seed))
    out = LOC.replace(FakeSpan(0, len(text), "LOCATION_STREET"), ctx)
    m = re.fullmatch(r"\d+ (.+) Street, (.+), ([A-Z]{2}) (\d{5})", out)
    assert m, out
    assert m.group(1) in street_names()
    assert table.city_of_zip[m.group(4)].lower() == m.group(2).lower()
    assert table.state_of_zip[m.group(4)] == m.group(3) == state


def test_a_city_alone_is_a_real_city_of_a_plausible_state() -> None:
    table = place_table()
    for seed in range(10):
        ctx = make_ctx("moved here from Boise last year", state=make_state(seed=bytes([seed]) * 32))
        (out,) = replace_all(LOC, ctx, "LOCATION_CITY", "Boise")
        assert out != "Boise" and table.is_city_of(out, "ID"), out


def test_phone_area_code_is_of_the_original_state_and_geographic() -> None:
    phones = PhoneSurrogate()
    by_state = area_codes_by_state()
    assert "500" not in state_of_area_code() and "800" not in state_of_area_code()
    for seed in range(20):
        ctx = make_ctx("call (208) 555-7741", state=make_state(seed=bytes([seed]) * 32))
        (out,) = replace_all(phones, ctx, "PHONE", "(208) 555-7741")
        area = re.fullmatch(r"\((\d{3})\) 555-01\d\d", out)
        assert area and area.group(1) in by_state["ID"], out


def test_street_names_come_from_the_vocabulary_with_the_suffix_kept() -> None:
    ctx = make_ctx("lives at 51 Harbor Rd")
    (out,) = replace_all(LOC, ctx, "LOCATION_STREET", "51 Harbor Rd")
    m = re.fullmatch(r"\d+ (.+) Rd", out)
    assert m and m.group(1) in street_names() and m.group(1) != "Harbor", out


def test_default_policy_shift_hides_the_date() -> None:
    policy = Policy.load()
    assert policy.date_shift_min_days >= 30
    with pytest.raises(ValueError, match="date_shift_min_days"):
        Policy.from_mapping({"surrogates": {"date_shift_min_days": 0}})
    with pytest.raises(ValueError, match="date_shift_min_days"):
        Policy.from_mapping({"surrogates": {"date_shift_min_days": 90, "date_shift_max_days": 60}})


@settings(max_examples=200, deadline=None)
@given(low=st.integers(1, 400), span=st.integers(0, 400), draw=st.integers(0, 10**9))
def test_shifts_respect_the_policy_minimum(low: int, span: int, draw: int) -> None:
    state = new_patient_state(
        SurrogateSettings(date_shift_min_days=low, date_shift_max_days=low + span),
        randbelow=lambda n: draw % n,
    )
    assert low <= -state.shift_days <= low + span


def test_surrogates_stay_the_same_across_documents_and_restarts(
    deid: Deidentifier, tmp_path: Path
) -> None:
    from keystore import Keyring, open_store

    keyring = Keyring.generate("t")
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    note = "Tavin Quellmark lives at 41 Harbor Street, Boise, ID 83702. He feels well."
    seen = []
    for run in range(2):  # the second run reopens the store: a restart
        store = open_store(url, keyring)
        for _ in range(2):
            doc = ingest(_hl7(3, "Tavin", "M", note), content_hint="hl7v2").documents[0]
            seen.append(deid.run(doc, store).text)
        store.close()
        assert run in (0, 1)
    assert len(set(seen)) == 1, seen
    assert "Boise" not in seen[0] and "Tavin" not in seen[0]


def test_patient_state_round_trip_keeps_sex_in_context() -> None:
    from pipelines.patient_context import context_of, remember_context

    doc = ingest(_hl7(1, "Tavin", "M", "note"), content_hint="hl7v2").documents[0]
    state = PatientState(shift_days=-40, pseudonym="p", seed=b"s" * 32)
    assert remember_context(state, doc.identifiers)
    known = context_of(state)
    assert known is not None and known.sex is Sex.MALE
    assert date(1960, 1, 1) == known.birth_date


def test_a_one_city_district_keeps_its_zip_and_city_paired() -> None:
    """In DC every ZIP's city holds "Washington": no city of the district is fresh, and the
    surrogate once paired "Washington" with a ZIP the table names "Washington Navy Yard"
    (found by ``make explore``). The city written is the surrogate ZIP's own."""
    table = place_table()
    zips = sorted(z for z, s in table.state_of_zip.items() if s == "DC")
    assert len(zips) > 5
    for seed in range(40):
        zip_code = zips[seed % len(zips)]
        text = f"12 Elm Street, {table.city_of_zip[zip_code]}, DC {zip_code}"
        ctx = make_ctx(text, state=make_state(seed=bytes([seed]) * 32))
        out = LOC.replace(FakeSpan(0, len(text), "LOCATION_STREET"), ctx)
        m = re.fullmatch(r"\d+ (.+) Street, (.+), ([A-Z]{2}) (\d{5})", out)
        assert m, out
        assert table.city_of_zip[m.group(4)].lower() == m.group(2).lower(), out
        assert table.state_of_zip[m.group(4)] == m.group(3) == "DC"
