"""A reason string never echoes an input value (issue 14, item 11): a resource type, message
type, version, encoding or unknown element name is named only when it is a protocol token;
anything else (a name written where a code belongs) becomes "?"."""

from __future__ import annotations

import orjson
import pytest

from pipelines.errors import InputError
from pipelines.fhir.validate import validate_resource
from pipelines.hl7.routing import route
from pipelines.ingest import parse_input, reason_headers
from tests.conftest import FIXTURES

WORD = "Quillbrook"  # invented surnames, put where codes belong
SHORT = "Tamblin"  # short enough to pass for a code of up to eight letters
ORU = next((FIXTURES / "versions").glob("03_*.hl7")).read_bytes()


def _reasons(raw: bytes, hint: str | None = None) -> str:
    with pytest.raises(InputError) as caught:
        parse_input(raw, content_hint=hint, max_bytes=1 << 20)
    return " ".join(reason_headers(caught.value).values())


@pytest.mark.parametrize(
    "raw",
    [
        orjson.dumps({"resourceType": WORD, "id": "x"}),
        orjson.dumps({"resourceType": WORD.upper()}),
        orjson.dumps(
            {
                "resourceType": "Bundle",
                "type": "collection",
                "entry": [{"resource": {"resourceType": WORD}}],
            }
        ),
    ],
)
def test_fhir_reasons_do_not_echo_the_resource_type(raw: bytes) -> None:
    assert WORD.lower() not in _reasons(raw).lower()


def test_a_known_fhir_type_is_still_named() -> None:
    assert "resource=Observation" in _reasons(orjson.dumps({"resourceType": "Observation"}))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"ORU^R01", f"{SHORT}^R01".encode()),
        (b"ORU^R01", f"ORU^{SHORT}".encode()),
        (b"|P|2.5", f"|P|2.{SHORT}".encode()),
        (b"|P|2.5", f"|P|{SHORT}".encode()),
    ],
)
def test_hl7_reasons_do_not_echo_codes_that_are_words(old: bytes, new: bytes) -> None:
    raw = ORU.replace(old, new)
    assert SHORT.lower() not in _reasons(raw).lower()
    with pytest.raises(InputError) as caught:
        route(raw)
    assert SHORT.lower() not in str(caught.value).lower()


def test_hl7_reasons_still_name_protocol_codes() -> None:
    assert "type=ZZZ" in _reasons(ORU.replace(b"ORU^R01", b"ZZZ^R01"))
    assert "version=2_9" in _reasons(ORU.replace(b"|P|2.5", b"|P|2.9"))


def test_an_unknown_fhir_element_is_not_named() -> None:
    resource = {
        "resourceType": "DocumentReference",
        "status": "current",
        "content": [{"attachment": {"data": "eA=="}}],
        WORD: "x",
    }
    with pytest.raises(InputError) as caught:
        validate_resource(resource)
    assert WORD not in str(caught.value) and "unknown element" in str(caught.value)
