"""Session 19's shapes of issue 26's places, dates and identifiers families (helper places),
merged into ``bench/families.py``'s ``SHAPES`` and value table.

Invented from the issue's descriptions and general clinical writing, never from the corpus:
city short forms after a relative's "in", occupations and legal forms of employers, an IV
site beside a month/day, a stay before a day range, quarters and short holiday names,
identifier cues with words between cue and value, dotted and split values; and false-alarm
guards (departments after a movement cue, units after a relative's "in", the identifier
fillers' look-alikes, strengths and fractions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SHAPES: dict[str, dict[str, str]] = {
    "dates": {
        "iv-site-equal": "IV started L AC <eqsmall> by nursing, flushes well.",
        "iv-site-after": "IV placed on <eqsmall> L AC by nursing.",
        "stay-day-range": "{stay} <fracrange> for pneumonia, then home.",
        "quarter-year": "Last seen <quarter> in clinic.",
        "short-holiday": "Will visit family at <xmas>, per wife.",
        "ordinal-of-month": "Seen on <ordofmonth> in clinic.",
        "apostrophe-year": "Hip fracture in <aposyear>, did well.",
    },
    "places": {
        "kin-in-short-pair": "Has family in <cityshort> and <cityshort>, will call tonight.",
        "kin-in-short": "{Kinin} in <cityshort>, visits monthly.",
        "nickname-lower": "pt resting. son in <nicklower>, will visit sat.",
        "occupation-at": "Husband is a {occupation} at <orgsuffixed>, works days.",
        "legal-after-comma": "Works for <orgcomma>, days.",
        "person-of-acronym": "Referred by Dr. <personlast> of <hacr19>. Plan to f/u.",
        "bed-offer-bare": "Per CM, <bedname> {offer} a bed for him tomorrow.",
    },
    "identifiers": {
        "ssn-last-four": "SSN last {last4}: <d4> per pt.",
        "ssn-ending": "ss# ending in <d4>, verified.",
        "grp-cue": "Grp <digits5> per card.",
        "pol-no": "pol no <polcode> on file.",
        "dotted-groups": "MRN <dotted> on the armband.",
        "caps-blank-digits": "Member ID: <capsblank> per card.",
        "hyphen-line-break": "MRN <hyphenbreak> on armband.",
    },
    "false_alarms": {
        "department-moves": "Transferred to {department} overnight, stable.",
        "kin-in-units": "{Kinin} in {shortunit} with pt, updated.",
        "id-fillers": "Grp 2 therapy at 1400; SSN last 4 pending; last 4 beats irregular.",
        "strength-fractions": "Strength {eqsmall} in L hand, grip R {fracsmall}, pain {fracsmall}.",
        "bed-no-place": "{bedword} has a bed {bedwhen}.",
        "strength-grades": "{limb} {grade}, {limb} {grade}; grip {grade} on R.",
        "score-eponyms": "{scorer} score {scoreval}, turned q2h.",
        "ins-intake": "Ins: {volume}, out: {volume} over the shift.",
        "course-steps": "{abx} day {step}, week {step} of chemo; grade 2/6 murmur at {landmark}.",
    },
}

# large cities' short forms and invented two-capital town abbreviations (no state, no unit)
_CITY_SHORT = ("LA", "SF", "KC", "NYC", "WB", "QV", "ZB", "BQ")
_NICKNAMES = ("philly", "vegas", "nola", "slc")
_OCCUPATIONS = ("manager", "engineer", "cashier", "driver", "supervisor", "mechanic")
_LEGAL = ("LLC", "Inc", "Corp", "Ltd")
_STAYS = ("Inpatient", "Hospitalized", "hospitalized")
_DEPARTMENTS = (
    "Cardiac Step Down", "Holding area", "the Hospitalist service", "Progressive Care",
    "Interventional Radiology", "the Emergency Department", "Step Down unit",
)  # fmt: skip
_SHORT_UNITS = ("ER", "OR", "SDU", "PT", "ICU", "CT")
_KIN = ("Son", "Wife", "Daughter", "Husband", "Family")
_HOLIDAYS = ("Xmas", "X-mas", "Xmas Eve")
_MONTHS_FULL = ("January", "March", "April", "June", "July", "September", "October")


def values(draw: Any) -> dict[str, Callable[[], str]]:
    """The slot values of these shapes, drawn with ``draw.rng``."""
    rng = draw.rng

    def digits(n: int) -> str:
        return "".join(rng.choice("0123456789") for _ in range(n))

    return {
        "eqsmall": lambda: f"{(n := rng.randint(1, 5))}/{n}",
        "fracrange": lambda: f"{rng.randint(1, 3)}/4-{rng.randint(5, 9)}",
        "stay": lambda: rng.choice(_STAYS),
        "quarter": lambda: f"Q{rng.randint(1, 4)} {rng.randint(1995, 2022)}",
        "xmas": lambda: rng.choice(_HOLIDAYS),
        "ordofmonth": lambda: f"the {draw._ordinal()} of {rng.choice(_MONTHS_FULL)}",
        "aposyear": lambda: f"'{rng.randint(70, 99)}",
        "cityshort": lambda: rng.choice(_CITY_SHORT),
        "Kinin": lambda: rng.choice(_KIN),
        "nicklower": lambda: rng.choice(_NICKNAMES),
        "occupation": lambda: rng.choice(_OCCUPATIONS),
        "orgcomma": lambda: f"{rng.choice(draw.towns)}, {rng.choice(_LEGAL)}",
        "last4": lambda: rng.choice(("4", "four", "4 digits")),
        "d4": lambda: digits(4),
        "digits5": lambda: str(rng.randint(10000, 99999)),
        "polcode": lambda: "".join(rng.choice("BCDFGHKLMNPRTVWXZ") for _ in range(2)) + digits(5),
        "dotted": lambda: f"{rng.randint(100, 999)}.{digits(3)}.{rng.randint(1, 99)}",
        "capsblank": lambda: (
            "".join(rng.choice("BCDFGHKLMNPRTVWXZ") for _ in range(3)) + " " + digits(9)
        ),
        "hyphenbreak": lambda: f"{digits(4)}-\n{digits(3)}",
        "department": lambda: rng.choice(_DEPARTMENTS),
        "bedname": lambda: rng.choice(draw.towns) + rng.choice(("", " Crest", " Commons", "vale")),
        "offer": lambda: rng.choice(("has", "offered", "has offered")),
        "shortunit": lambda: rng.choice(_SHORT_UNITS),
        "bedword": lambda: rng.choice(("ICU", "Rehab", "The floor", "Medicine", "Pt", "Wife")),
        "bedwhen": lambda: rng.choice(("now", "tomorrow", "alarm on", "at home")),
        "abx": lambda: rng.choice(("Vanco", "Zosyn", "Cefepime", "Flagyl")),
        "step": lambda: f"{(k := rng.randint(1, 6))}/{k + rng.randint(1, 8)}",
        "landmark": lambda: rng.choice(("LUSB", "RUSB", "LLSB", "the apex")),
        "limb": lambda: rng.choice(("LLE", "RLE", "RUE", "LUE", "Motor", "Hip flexion", "Quads")),
        "grade": lambda: f"{rng.randint(1, 5)}/5",
        "scorer": lambda: rng.choice(("Braden", "Gleason", "Wells", "Morse fall", "Apgar")),
        "scoreval": lambda: str(rng.randint(2, 20)),
        "personlast": lambda: rng.choice(("Brinkman", "Okafor", "Lindqvist", "Haddad")),
        "hacr19": lambda: "".join(rng.choice("BDFJKLNPQVWXZ") for _ in range(2)) + "H",
        "volume": lambda: str(rng.randint(300, 3200)),
        "fracsmall": lambda: rng.choice(("1/2", "1/3", "3/4", "2/3")),
    }
