"""Synthetic HL7 v2 reports for stream tests (invented names and numbers only)."""

from __future__ import annotations

import random

GIVEN = [
    "Alma",
    "Boris",
    "Cecile",
    "Dorian",
    "Edith",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kira",
    "Lionel",
    "Maren",
    "Nils",
    "Odette",
    "Pavel",
    "Quinn",
    "Rosa",
    "Stellan",
    "Thea",
]
FAMILY = [
    "Abernathy",
    "Bellweather",
    "Castellano",
    "Dunmore",
    "Eskildsen",
    "Fairbrook",
    "Grunewald",
    "Halloran",
    "Ingersoll",
    "Jablonski",
    "Kettering",
    "Lindgren",
    "Marchetti",
    "Northcott",
    "Oyelaran",
    "Pemberton",
    "Quarrington",
    "Rasmussen",
]
FINDINGS = [
    "stable mild anemia",
    "improving cough",
    "resolved rash",
    "controlled hypertension",
    "new ankle swelling",
    "persistent headache",
    "normal sinus rhythm",
]


def report(n: int, visit: int = 1, *, rng: random.Random | None = None) -> bytes:
    """Patient ``n``'s report for ``visit``: a final ORU^R01 with a short narrative."""
    person = random.Random(n)  # the same name for a patient on every visit
    given, family = person.choice(GIVEN), person.choice(FAMILY)
    r = rng or random.Random(n * 1000 + visit)
    mrn = f"{700000 + n}"
    phone = f"(312) 555-{1000 + n % 9000:04d}"
    day = 1 + (n + visit) % 27
    finding = r.choice(FINDINGS)
    segments = [
        f"MSH|^~\\&|LAB|TESTHOSP|DEID|RES|202503{day:02d}0900||ORU^R01^ORU_R01|M{n}-{visit}|P|2.5",
        f"PID|1||{mrn}^^^TESTHOSP^MR||{family}^{given}||1960{1 + n % 12:02d}{day:02d}|F|||"
        f"{10 + n} Maple Ave^^Chicago^IL^60601||{phone}",
        f"PV1|1|O|CLIN^^^TESTHOSP||||77^Reyes^Ana^^^Dr||||||||||||V{n}-{visit}",
        f"OBR|1|O{n}{visit}|R{n}{visit}|11506-3^Progress note^LN|||202503{day:02d}0800||||||||"
        f"|77^Reyes^Ana^^^Dr||||||202503{day:02d}0850|||F",
        f"OBX|1|TX|11506-3^Progress note^LN||{given} {family} (MRN {mrn}) was seen on "
        f"03/{day:02d}/2025 for {finding}. Call {phone} with results.||||||F",
        f"OBX|2|TX|11506-3^Progress note^LN||Visit {visit} of the series; plan unchanged.||||||F",
    ]
    return ("\r".join(segments) + "\r").encode()


def big_report(n: int, size: int) -> bytes:
    """Patient ``n``'s report with an ordinary narrative of about ``size`` bytes (many OBX
    lines of plain clinical prose: nothing pathological, just long)."""
    head = report(n, 1).split(b"\r")[:4]
    line = (
        "Patient seen in clinic today, reports {f}; vitals within normal limits, "
        "exam unremarkable apart from the above, plan reviewed and unchanged."
    )
    segments = list(head)
    total, i = sum(len(s) for s in head), 0
    while total < size:
        text = line.format(f=FINDINGS[i % len(FINDINGS)])
        seg = f"OBX|{i + 1}|TX|11506-3^Progress note^LN||{text}||||||F".encode()
        segments.append(seg)
        total += len(seg) + 1
        i += 1
    return b"\r".join(segments) + b"\r"
