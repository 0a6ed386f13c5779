"""docs/operations.md names what an operator meets that tests/test_deploy.py does not derive
from the error hierarchy: the reason classes the runner sets itself, the dead-letter headers,
the readiness reasons, the request-timeout rule and the MLLP gateway."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")


def test_reason_classes_set_by_the_runner_are_explained() -> None:
    runner = "\n".join(
        p.read_text(encoding="utf-8") for p in sorted((ROOT / "service" / "runner").glob("*.py"))
    )
    literal = set(re.findall(r'dead_letter\(\s*\w+,\s*"(\w+)"', runner))
    literal |= set(re.findall(r'return "(\w+)", f?"unexpected', runner))
    assert {"oversize", "output_rejected", "internal_error"} <= literal
    missing = sorted(r for r in literal if f"`{r}`" not in DOC)
    assert not missing, missing


def test_dead_letter_headers_are_explained() -> None:
    ingest = (ROOT / "pipelines" / "ingest.py").read_text(encoding="utf-8")
    extra = {h.replace("_", "-") for h in re.findall(r'headers\["(\w+)"\]', ingest)}
    assert {"hl7-findings", "entry-errors"} <= extra
    missing = sorted(h for h in extra | {"value-dropped"} if f"`{h}`" not in DOC)
    assert not missing, missing


def test_readiness_reasons_are_explained() -> None:
    app = (ROOT / "service" / "app.py").read_text(encoding="utf-8")
    # the reasons are set in ``_not_ready_reasons``: a list, a table of (field, reason), extras
    body = app.split("def _not_ready_reasons", 1)[1].split("\ndef ", 1)[0]
    reasons = set(re.findall(r'(?:reasons = \[|reasons\.(?:append|extend)\()f?"(\w+)', body))
    reasons |= set(re.findall(r'\("\w+", "(\w+)"\)', body))
    assert {"starting", "broker_unreachable", "keystore_fault", "no_partitions"} <= reasons
    missing = sorted(r for r in reasons if f"`{r}" not in DOC)
    assert not missing, missing


def test_request_timeout_rule_and_mllp_gateway_are_documented() -> None:
    assert re.search(
        r"DEIDSTREAM_REQUEST_TIMEOUT_MS.{0,80}greater than"
        r" `DEIDSTREAM_SESSION_TIMEOUT_MS`",
        DOC,
    )
    assert "`deidstream mllp" in DOC
    for name in ("DEIDSTREAM_MLLP_PORT", "deidstream_mllp_messages_total"):
        assert name in DOC, name


def test_mllp_reply_table_says_what_the_gateway_answers() -> None:
    """Issue 28 item 6: the page said AR for a missing patient id; the gateway answers AE
    for a content error and AR only for the header-level classes (REJECT_CLASSES)."""
    from service.mllp import REJECT_CLASSES

    table = DOC[DOC.index("| situation | stored where | reply |") :].split("\n\n")[0]
    rows = {line.split("|")[1].strip(): line.split("|")[3] for line in table.splitlines()[2:]}
    content = next(r for s, r in rows.items() if s.startswith("no patient id"))
    header = next(r for s, r in rows.items() if s.startswith("not HL7"))
    assert "missing_patient_id" not in REJECT_CLASSES and "not_hl7" in REJECT_CLASSES
    assert "`AE`" in content and "`AR`" not in content, content
    assert "`AR`" in header and "`AE`" not in header, header
    assert "/readyz" in DOC[DOC.index("DEIDSTREAM_MLLP_METRICS_PORT") :].split("\n")[0]
