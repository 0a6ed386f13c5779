"""A tiny invented gold corpus in the PhysioNet layout (no corpus text: every name, place and
date here is made up), written to a temporary directory."""

from __future__ import annotations

from pathlib import Path

import pytest

# (template, fills): {n} names, {l} places, {d} dates; fills are invented
_TEMPLATES = [
    "Pt seen by Dr. {n} this am. Plan to transfer to {l} on {d}.\n",
    "SPOKE WITH WIFE {n} ABOUT PLAN. FAMILY LIVES IN {l}. F/U {d}.\n",
    "Daughter {n} called, will visit {d}. Pt from {l}, retired teacher.\n",
    "Seen with {n} RN. Admitted {d} from {l}. Afebrile, BP stable.\n",
]
_FILLS = [
    ("Quillon Marbry", "Westfalls General", "3/14"),
    ("Tessaly Dunmore", "Harrowgate", "12/2"),
    ("Orrin Vasquell", "Pine Hollow", "7/30"),
    ("Bettina Skarsgrove", "Lake Ambrin", "1/9"),
    ("Cormac Thibodine", "Saint Elswyth", "5/21"),
    ("Ivana Peltonen", "Northbrook Rehab", "10/11"),
]
_CATEGORY = {"n": "HCPName", "l": "Location", "d": "Date"}


def write_corpus(directory: Path) -> Path:
    text_lines: list[str] = []
    phi_lines: list[str] = []
    note = 0
    for patient, fills in enumerate(_FILLS, 1):
        for template in _TEMPLATES:
            note += 1
            values = dict(zip("nld", fills, strict=True))
            body, spans = _fill(template, values)
            if template.isupper():
                body = body.upper()
            text_lines.append(
                f"START_OF_RECORD={patient}||||{note}||||\n{body}||||END_OF_RECORD\n\n"
            )
            for start, end, key in spans:
                phi_lines.append(
                    f"{patient} {note} {start} {end} {_CATEGORY[key]} {body[start:end]}\n"
                )
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "id.text").write_text("".join(text_lines), encoding="utf-8")
    (directory / "id-phi.phrase").write_text("".join(phi_lines), encoding="utf-8")
    (directory / "pid_patientname.txt").write_text(
        "".join(f"{p}||||ALBA||||NOONE\n" for p in range(1, len(_FILLS) + 1)), encoding="utf-8"
    )
    return directory


def _fill(template: str, values: dict[str, str]) -> tuple[str, list[tuple[int, int, str]]]:
    out = ""
    spans: list[tuple[int, int, str]] = []
    rest = template
    while "{" in rest:
        head, _, tail = rest.partition("{")
        key, _, rest = tail.partition("}")
        out += head
        spans.append((len(out), len(out) + len(values[key]), key))
        out += values[key]
    return out + rest, spans


@pytest.fixture(scope="session")
def tiny_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("tiny") / "corpus")
