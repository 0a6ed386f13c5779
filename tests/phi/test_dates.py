"""Dates and years: every NLM Scrubber format found, clinical look-alikes kept."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.base import Doc
from pipelines.phi.recognizers.dates import DateRecognizer, YearRecognizer, holiday_pattern
from pipelines.spans import Category

DATES = DateRecognizer()
YEARS = YearRecognizer()


def found(recognizer: DateRecognizer | YearRecognizer, text: str) -> list[str]:
    return sorted(
        text[s.start : s.end] for s in recognizer.detect(Doc(text)) if s.confidence >= 0.5
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("seen in clinic 7/22 for f/u", "7/22"),
        ("admitted 03/14/2019 from home", "03/14/2019"),
        ("CXR 3-24-17 clear", "3-24-17"),
        ("echo 12.03.2020 normal", "12.03.2020"),
        ("MRI 2019-04-01 showed", "2019-04-01"),
        ("intubated 6/30-7/2 for CHF", "6/30-7/2"),
        ("s/p pelvic fx 4/97", "4/97"),
        ("Cath 3/15 revealed EF 50%", "3/15"),
        ("BC from 3-5 grew staph", "3-5"),
        ("admitted on July 1 from osh", "July 1"),
        ("seen Aug7 in clinic", "Aug7"),
        ("onset 7-August", "7-August"),
        ("on the 7th of August", "the 7th of August"),
        ("knows it is 20th Oct, 1989 now", "20th Oct, 1989"),
        ("drainage in nov. 2016 then", "nov. 2016"),
        ("symptoms since mid-July", "mid-July"),
        ("seen Monday, March 3rd by PCP", "March 3rd"),
        ("home for Christmas with family", "Christmas"),
        ("visit on Thanksgiving Day", "Thanksgiving Day"),
        ("he said it's the 11th.", "11th"),
        ("transferred in September", "September"),
        ("seen 2019/12/25 in ED", "2019/12/25"),
        ("onset 25 Dec 2019 at home", "25 Dec 2019"),
        ("seen Dec. 25 by PCP", "Dec. 25"),
        ("last colonoscopy 12/2019", "12/2019"),
        ("symptoms since mid-2012", "mid-2012"),
        ("DOB: 1/2/1930", "1/2/1930"),
        ("WBC 16.0 8/22, remains afebrile", "8/22"),
        ("seen Tues 7/22 in clinic", "7/22"),
        ("decreased UO-9/10 lasix given", "9/10"),
        ("HCT 30 post 3/3 tx", "3/3"),
    ],
)
def test_dates_found(text: str, expected: str) -> None:
    assert expected in found(DATES, text)


@pytest.mark.parametrize(
    "text",
    [
        "BP 120/80 HR 88",
        "pain 7/10 after turning",
        "c/o 3/10 incisional pain",
        "GCS 3/15 on arrival",
        "strength 5/5 all extremities",
        "5/5 strength",
        "BC + staph aureus 4/4 bottles",
        "d5 1/2 NS at 125cc/hr",
        "conts on 1/4 NS",
        "crackles 1/2 up bilaterally",
        "PSV 10/5 all day",
        "SIMV/PS, 500x10, 40%, & 5/8",
        "on BIPAP 10/5 FIO2 65%",
        "sats 95-97 on 2L",
        "rr 16-20, hr 80-90",
        "on 1-2 pillows",
        "T 98.6 HR 88",
        "arrived approx. 2130",
        "K 3.9, dec BS at bases",
        "pt may 2x assist",
        "nc 02 dec from 4",
        "MAR reviewed",
        "the 4th ventricle",
        "complications with the 1st.",
        "wean 10/5/40% tonight",
        "co/ci 5/2.5/800",
        "+3/6 SEM",
        "remained on 5/5, 40% till 4PM",
        "extubated from 5/5 PSV/CPAP",
    ],
)
def test_clinical_numbers_kept(text: str) -> None:
    assert found(DATES, text) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PMH: CAD, S/P MI 1992; LCX PTCA", "1992"),
        ("pmh: cad--s/p mi '92", "92"),
        ("s/p cabg/mvr '95", "95"),
        ("CVA 74'. cholecystectomy", "74"),
        ("PMH MI 92, 3 VCABG", "92"),
        ("S/P CABG 1957, 1971", "1971"),
        ("PMHX CVA in 94 and 00 affected", "00"),
        ("chest ache since 2006 but", "2006"),
        ("old CVA 2008 with right hemi", "2008"),
        ("quit smoking in 1985", "1985"),
        ("PSH: TAH 85, appy", "85"),
        ("Recently diagnosed NIDDM. 09 PTCA to LCX", "09"),
    ],
)
def test_years_tied_to_patient(text: str, expected: str) -> None:
    assert expected in found(YEARS, text)


@pytest.mark.parametrize(
    "text",
    [
        "arrived in transfer approx. 2130",
        "lasix given at 2000",
        "NPO since 2400",
        "1900-0700 shift",
        "heparin at 1100 units",
        "CABG X3 with good result",
        "intubated 21 lip",
        "mi 10 years ago",
        "ambulated 30' with assist",
        "HOB 30'",
        "MI 50 mg",
        "UO 1960 cc",
        "ica 1.05 replaced w 1 amp",
        "ca~1.08 repleted",
        "3 stents placed",
    ],
)
def test_year_lookalikes_kept(text: str) -> None:
    assert found(YEARS, text) == []


def test_weekday_joins_the_span_only_when_asked() -> None:
    text = "seen Monday, March 3rd and Tues 7/22"
    with_days = DateRecognizer({"include_weekday": True})
    assert found(with_days, text) == ["Monday, March 3rd", "Tues 7/22"]
    assert found(DATES, text) == ["7/22", "March 3rd"]


def test_holidays_come_from_the_package() -> None:
    pattern = holiday_pattern()
    for name in ("Christmas", "Christmas Eve", "New Year's Day", "Thanksgiving", "Labor Day"):
        assert pattern.search(f"seen on {name} here"), name
    assert not pattern.search("labor and delivery")


def test_the_shipped_holiday_names_equal_the_installed_package() -> None:
    """Fails when the holidays package changes its names: run
    ``python -m pipelines.phi.holiday_names``."""
    from pipelines.phi import holiday_names

    assert holiday_names.shipped() == holiday_names.from_package()


def test_confidence_is_higher_with_context() -> None:
    bare = DATES.detect(Doc("7/22 found on floor"))
    cued = DATES.detect(Doc("found on 7/22 on floor"))
    assert bare and cued and cued[0].confidence > bare[0].confidence
    assert all(s.category is Category.DATE for s in bare + cued)


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_never_raises_and_spans_in_bounds(text: str) -> None:
    for recognizer in (DATES, YEARS):
        for span in recognizer.detect(Doc(text)):
            assert 0 <= span.start < span.end <= len(text)
            assert 0.0 <= span.confidence <= 1.0


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "7/22",
                "Aug",
                " 7",
                "'95",
                "MI",
                " ",
                "2130",
                "-",
                "/",
                "BP",
                "1992",
                ",",
                "the",
                "11th",
                "of",
                "\n",
            ]
        ),
        max_size=30,
    )
)
def test_date_like_soup_is_safe(parts: list[str]) -> None:
    text = "".join(parts)
    for recognizer in (DATES, YEARS):
        for span in recognizer.detect(Doc(text)):
            assert 0 <= span.start < span.end <= len(text)
