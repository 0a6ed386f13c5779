"""The split validation (skeleton validated once by the model, per-document values by their
field types) accepts and rejects exactly what validating the whole resource does."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import InvalidFHIR
from pipelines.research import validate, validate_whole

BASE: dict[str, Any] = {
    "resourceType": "DocumentReference",
    "id": "a1b2c3",
    "meta": {
        "security": [
            {
                "system": "http://terminology.hl7.org/CodeSystem/v3-ObservationValue",
                "code": "PSEUDED",
                "display": "pseudonymized",
            }
        ]
    },
    "extension": [
        {
            "url": "http://deidstream.local/fhir/StructureDefinition/near-duplicate",
            "extension": [
                {"url": "researchKey", "valueString": "k"},
                {"url": "score", "valueDecimal": 0.9},
            ],
        }
    ],
    "status": "current",
    "docStatus": "final",
    "type": {"coding": [{"code": "34746-8", "system": "http://loinc.org"}], "text": "Note"},
    "subject": {"reference": "Patient/p"},
    "date": "2024-01-02T03:04:05Z",
    "relatesTo": [{"code": "replaces", "target": {"reference": "DocumentReference/x"}}],
    "content": [{"attachment": {"contentType": "text/plain; charset=utf-8", "data": "aGk="}}],
    "context": {"encounter": [{"reference": "Encounter/e"}]},
}
PATHS: list[tuple[str | int, ...]] = [
    ("id",),
    ("date",),
    ("subject", "reference"),
    ("relatesTo", 0, "target", "reference"),
    ("context", "encounter", 0, "reference"),
    ("content", 0, "attachment", "data"),
    ("extension", 0, "extension", 0, "valueString"),
    ("extension", 0, "extension", 1, "valueDecimal"),
    ("type", "coding", 0, "code"),  # stays in the skeleton
]
VALUES = st.one_of(
    st.text(st.sampled_from(list("aZ09-. /+=\n\t\x00\x7fé:TZ")), max_size=30),
    st.sampled_from(
        [
            "2024-13-01T00:00:00Z",
            "2024-01-02",
            "2024-01-02T03:04:05+01:00",
            "AAAA",
            "AA=",
            "a" * 65,
            " x",
            "x ",
            "",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 5),
    st.none(),
    st.booleans(),
)


def _with(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    resource = copy.deepcopy(BASE)
    node: Any = resource
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return resource


def _accepts(check: Any, resource: dict[str, Any]) -> bool:
    try:
        check(resource)
    except InvalidFHIR:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(PATHS), value=VALUES)
def test_split_validation_agrees_with_whole_validation(
    path: tuple[str | int, ...], value: Any
) -> None:
    resource = _with(path, value)
    assert _accepts(validate, resource) == _accepts(validate_whole, resource)


def test_invalid_value_in_a_known_skeleton_is_still_rejected() -> None:
    validate(BASE)  # the skeleton is now known
    with pytest.raises(InvalidFHIR) as info:
        validate(_with(("id",), "has spaces Quixote"))
    assert "Quixote" not in str(info.value) and "id" in str(info.value)
    with pytest.raises(InvalidFHIR):
        validate(_with(("date",), "2024-01-02"))  # an instant needs a time and zone


@pytest.mark.parametrize("path", PATHS)
def test_values_that_serialise_alike_are_not_confused(path: tuple[str | int, ...]) -> None:
    # orjson writes None, NaN and infinities all as null: the skeleton cache must not
    # take one's verdict for another's
    for value in (None, float("nan"), float("inf"), None, float("-inf")):
        resource = _with(path, value)
        assert _accepts(validate, resource) == _accepts(validate_whole, resource)
