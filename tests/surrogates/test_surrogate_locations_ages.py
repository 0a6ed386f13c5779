"""Locations follow the original's pattern from real lists; ages fold above the ceiling."""

from __future__ import annotations

import re

import pytest
import zipcodes
from surrogate_helpers import make_ctx, replace_all, replace_one

from surrogates.ages import AgeSurrogate
from surrogates.context import SurrogateSettings
from surrogates.locations import LocationSurrogate
from surrogates.redaction import redaction_tag

LOC = LocationSurrogate()


def test_hospital_words_kept_place_words_replaced_consistently() -> None:
    text = "transfer from ASHCOTT HOSPITAL; back to ashcott later"
    ctx = make_ctx(text)
    hospital, alone = replace_all(LOC, ctx, "LOCATION_HOSPITAL", "ASHCOTT HOSPITAL", "ashcott")
    word = hospital.split()[0]
    assert hospital.endswith(" HOSPITAL") and word.isupper() and word != "ASHCOTT"
    assert alone == word.lower()


def test_acronym_stays_an_acronym() -> None:
    out = replace_one(LOC, "GH", "LOCATION_HOSPITAL")
    assert re.fullmatch(r"[A-Z]{2}", out) and out != "GH"


def test_address_city_state_zip() -> None:
    out = replace_one(LOC, "12 Elm Street, Boston, MA 02115-1234", "LOCATION_STREET")
    m = re.fullmatch(r"(\d{2}) ([\w ]+) Street, ([\w ]+), ([A-Z]{2}) (\d{5})-(\d{4})", out)
    assert m, out
    assert m.group(2) != "Elm" and m.group(3) != "Boston"
    # issue 15 item 12: the zip stays in its state and the state beside it agrees with it
    found = zipcodes.matching(m.group(5))[0]
    assert found["state"] == m.group(4) == "MA"
    assert m.group(5) != "02115"
    # issue 27: the city is the zip's own city (one real triple)
    assert found["city"].lower() == m.group(3).lower()


def test_zip_is_real_and_different() -> None:
    out = replace_one(LOC, "21228", "LOCATION_ZIP")
    assert out != "21228" and zipcodes.matching(out)


def test_state_name_becomes_another_state() -> None:
    out = replace_one(LOC, "Maryland", "LOCATION_OTHER")
    assert out != "Maryland" and out[0].isupper()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("92", "90+"),
        ("92 yo", "90+ yo"),
        ("age 104", "age 90+"),
        ("89", "89"),
        ("ninety-two year old", "90+ year old"),
        ("eighty", "eighty"),
    ],
)
def test_ages_over_the_ceiling_fold(text: str, expected: str) -> None:
    assert replace_one(AgeSurrogate(), text, "AGE") == expected


def test_age_ceiling_comes_from_the_policy() -> None:
    out = replace_one(AgeSurrogate(), "85", "AGE", settings=SurrogateSettings(age_ceiling=80))
    assert out == "81+"


def test_redaction_tags() -> None:
    assert redaction_tag(["NAME_PATIENT"]) == "[NAME]"
    assert redaction_tag(["NAME_PATIENT", "NAME_PROVIDER"]) == "[NAME]"
    assert redaction_tag(["LOCATION_CITY"]) == "[LOCATION]"
    assert redaction_tag(["DATE", "ID"]) == "[PHI]"


def test_multi_word_city_becomes_a_real_city_of_as_many_words() -> None:
    from surrogates.locations import _multiword_cities

    out = replace_one(LOC, "Middle River", "LOCATION_CITY")
    assert len(out.split()) == 2 and out != "Middle River"
    assert out.lower() in _multiword_cities()[2]


@pytest.mark.parametrize(
    ("text", "head"),
    [
        ("Quillby Heart Memorial Hospital", "Hospital"),
        ("QUILLBY GENERAL HOSPITAL", "HOSPITAL"),
        ("Quillby Children's Cancer Center", "Center"),
        ("Sacred Heart Medical Center", "Medical Center"),
        ("Heart Memorial", ""),
    ],
)
def test_facility_keeps_only_its_head_nouns(text: str, head: str) -> None:
    """Organ, commemorative and patron words are the distinctive part of a facility's name:
    every word but the head nouns changes, each into a word of its kind, the same way for
    the patient wherever it is written."""
    ctx = make_ctx(f"transfer from {text} yesterday")
    (out,) = replace_all(LOC, ctx, "LOCATION_HOSPITAL", text)
    kept = text[len(text) - len(head) :] if head else ""
    assert out.endswith(kept)
    assert len(out.split()) == len(text.split())
    changed = out[: len(out) - len(kept)].split()
    assert all(new != old for new, old in zip(changed, text.split(), strict=False))
    assert [w.isupper() for w in changed] == [w.isupper() for w in text.split()[: len(changed)]]
    again = make_ctx(f"seen at {text} today", state=ctx.state)
    assert replace_all(LOC, again, "LOCATION_HOSPITAL", text) == [out]


def test_street_named_like_a_facility_gets_a_street_name() -> None:
    out = replace_one(LOC, "12 Memorial Drive", "LOCATION_STREET")
    assert out.endswith(" Drive") and "Memorial" not in out
