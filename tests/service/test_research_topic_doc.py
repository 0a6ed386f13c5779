"""docs/research-topic.md (issue 15 item 7): the example record is a valid R4
DocumentReference as the service makes it, and the page says what it shows."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from fhir.resources.R4B.documentreference import DocumentReference

DOC = Path(__file__).resolve().parents[2] / "docs" / "research-topic.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}\n(.*?)\n```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_example_record_is_what_the_page_describes() -> None:
    record, tombstone = (json.loads(b) for b in _blocks("json"))
    value = record["value"]
    DocumentReference.model_validate(value)
    headers = record["headers"]
    assert headers["decision"] == "publish" and headers["version"] == value["id"]
    assert (
        value["relatesTo"][0]["target"]["reference"] == f"DocumentReference/{headers['replaces']}"
    )
    assert value["subject"]["reference"].startswith("Patient/")
    assert len(record["key"]) == 24
    [decoded] = _blocks("text")
    assert base64.b64decode(value["content"][0]["attachment"]["data"]).decode() == decoded
    assert tombstone["value"] is None and tombstone["headers"]["decision"] == "tombstone"
    # every header and value field the example carries is explained on the page
    text = DOC.read_text(encoding="utf-8")
    for name in [*headers, *tombstone["headers"], *value]:
        assert f"`{name}" in text, name  # `meta.security`, `content[0]…` count


def test_the_example_holds_no_demo_identifier() -> None:
    text = DOC.read_text(encoding="utf-8")
    example = text[text.index("## An example record") :]
    for ident in ("Eleanor", "100234", "555-0142", "Birch Lane", "Springfield"):
        assert ident not in example


def test_the_page_says_to_validate_with_the_r4b_models() -> None:
    """Issue 28 item 6: fhir.resources' default models are R5, which reject the records; the
    page names the R4B ones, which accept them."""
    from fhir.resources.documentreference import DocumentReference as R5DocumentReference
    from pydantic import ValidationError

    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Validating a record") :].split("\n## ")[0]
    assert "from fhir.resources.R4B.documentreference import DocumentReference" in section
    value = json.loads(_blocks("json")[0])["value"]
    DocumentReference.model_validate(value)
    with pytest.raises(ValidationError) as caught:
        R5DocumentReference.model_validate(value)
    rejected = {str(e["loc"][0]) for e in caught.value.errors()}
    assert rejected <= {"context", "relatesTo"}
    for field in rejected:
        assert f"`{field}" in section, field
