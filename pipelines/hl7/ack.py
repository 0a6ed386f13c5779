"""hl7apy where its knowledge of the standard matters: ACK/NAK messages and precise reasons.

- :func:`build_ack` answers a received message (AA accepted, AE error, AR rejected) with a
  standard ACK built by hl7apy: MSH addressed back to the sender, MSA echoing MSH-10, and for
  AE/AR an ERR segment (ERR-3 code from HL7 table 0357 in 2.5+, ERR-1 in older versions).
  The MLLP gateway frames it with :func:`pipelines.hl7.framing.mllp_frame`.
- :func:`diagnose` runs hl7apy's parser over a message the fast reader refused (the
  dead-letter path only: it is slow) and returns findings that name segment
  positions, element names and exception kinds — never values.

The pipelines never read the clock: pass ``now`` for MSH-7 (without it the received message's
MSH-7 is reused).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from hl7apy import exceptions as hl7_errors
from hl7apy.consts import VALIDATION_LEVEL
from hl7apy.core import Message
from hl7apy.parser import parse_message, parse_segment

from pipelines.errors import InputError
from pipelines.hl7.er7 import Delimiters

ACK_CODES = frozenset({"AA", "AE", "AR", "CA", "CE", "CR"})
HL7APY_VERSIONS = ("2.3", "2.3.1", "2.4", "2.5", "2.5.1", "2.6", "2.7", "2.8", "2.8.1", "2.8.2")
# reason_class → HL7 table 0357 (message error condition codes)
ERROR_CODES: dict[str, tuple[str, str]] = {
    "unsupported_message_type": ("200", "Unsupported message type"),
    "unsupported_version": ("203", "Unsupported version id"),
    "missing_patient_id": ("101", "Required field missing"),
    "no_msh": ("100", "Segment sequence error"),
    "not_hl7": ("100", "Segment sequence error"),  # no MSH where a message must start
    "empty": ("100", "Segment sequence error"),
    "bad_encoding_characters": ("102", "Data type error"),
    "bad_encoding": ("102", "Data type error"),
    # found by the full parse before the ACK (the service would dead-letter the message)
    "no_narrative": ("101", "Required field missing"),
    "unsupported_content_type": ("102", "Data type error"),
    "url_only_attachment": ("101", "Required field missing"),
    "partial_input": ("100", "Segment sequence error"),
    "invalid_input": ("102", "Data type error"),
}
_DEFAULT_ERROR = ("207", "Application internal error")
_UNSAFE = re.compile(r"[|^~\\&#\r\n\x00-\x1f]")
_ELEMENT = re.compile(r"\b[A-Z][A-Z0-9]{1,3}(?:_\d+)+\b")


def _clean(text: str, limit: int = 200) -> str:
    """Our own reason text with every delimiter removed (so it cannot break the ACK)."""
    return _UNSAFE.sub(" ", text)[:limit].strip()


def _header(raw: bytes) -> tuple[list[str], Delimiters | None]:
    text = raw.lstrip(b"\x0b \t\r\n").removeprefix(b"\xef\xbb\xbf").decode("latin-1")
    first = re.split(r"\r\n|\r|\n", text, maxsplit=1)[0]
    try:
        d = Delimiters.from_msh(first)
    except InputError:
        return [], None
    fields = first.split(d.field)
    fields.insert(1, d.field)
    return fields, d


def _field(fields: list[str], n: int) -> str:
    return fields[n] if n < len(fields) else ""


def build_ack(
    raw: bytes,
    code: str,
    error_text_without_phi: str = "",
    *,
    reason_class: str = "",
    now: datetime | None = None,
    control_id: str = "",
    sending_application: str = "DEIDSTREAM",
    sending_facility: str = "",
    engine: Literal["auto", "hl7apy"] = "auto",
) -> bytes:
    """An ACK for ``raw`` (the received message bytes, framed or not) as ER7 bytes (CR).

    Written directly as ER7 (fast) unless the sender uses other delimiters or echoed values
    hold escapes; then (or with ``engine="hl7apy"``) hl7apy builds it (slow). Both give
    the same bytes: tests/ingest/test_ingest_ack.py checks it on generated headers."""
    if code not in ACK_CODES:
        raise ValueError(f"ACK code must be one of {sorted(ACK_CODES)}")
    fields, d = _header(raw)  # no fields: every echoed value below is empty
    comp = d.component if d else "^"
    original_id = _field(fields, 10)[:199]
    stamp = now.strftime("%Y%m%d%H%M%S%z") if now is not None else _field(fields, 7).split(comp)[0]
    parts = _AckParts(
        version=_version(fields, comp),
        sending_application=_clean(sending_application, 40),
        sending_facility=_clean(sending_facility, 40) if sending_facility else "",
        receiving_application=_trim(_field(fields, 3)),
        receiving_facility=_trim(_field(fields, 4)),
        stamp=stamp,
        message_type=_ack_type(_field(fields, 9), comp),
        control_id=_clean(control_id, 20) or f"ACK{_clean(original_id, 17)}",
        processing_id=_field(fields, 11).split(comp)[0] or "P",
        code=code,
        original_id=original_id,
        text=_clean(error_text_without_phi),
        error=ERROR_CODES.get(reason_class, _DEFAULT_ERROR) if code[1] != "A" else None,
    )
    fast = engine == "auto" and (d is None or d == _STANDARD) and not _needs_hl7apy(parts)
    if stamp and fast:
        return _compose(parts)  # far cheaper than hl7apy, same bytes (differential test)
    return _compose_hl7apy(parts)


def _version(fields: list[str], comp: str) -> str:
    """MSH-12 when hl7apy knows it, else 2.5."""
    version = _field(fields, 12).split(comp)[0].strip()
    return version if version in HL7APY_VERSIONS else "2.5"


def _ack_type(msh9: str, comp: str) -> str:
    """MSH-9 of the ACK: ``ACK^<the received trigger>^ACK``, or ``ACK`` without one."""
    trigger = msh9.split(comp)[1] if comp in msh9 else ""
    return f"ACK^{trigger}^ACK" if trigger.isalnum() and len(trigger) <= 3 else "ACK"


@dataclass(frozen=True, slots=True)
class _AckParts:
    version: str
    sending_application: str
    sending_facility: str
    receiving_application: str
    receiving_facility: str
    stamp: str
    message_type: str
    control_id: str
    processing_id: str
    code: str
    original_id: str
    text: str
    error: tuple[str, str] | None


_STANDARD = Delimiters()
_OLD_ERR = ("2.3", "2.3.1", "2.4")


def _needs_hl7apy(p: _AckParts) -> bool:
    """Echoed values out of the plain shapes (subcomponents, escapes, odd spacing): let
    hl7apy decide how they come out."""
    return not all(
        _PLAIN_HD.match(v) for v in (p.receiving_application, p.receiving_facility)
    ) or bool(_ODD.search(p.original_id + p.stamp))


_ODD = re.compile(r"[\\\r\n\x00-\x1f~^&]")
_PLAIN_HD = re.compile(
    r"^(?:[\w.\-]+(?: [\w.\-]+)*)?(?:\^(?:[\w.\-]+(?: [\w.\-]+)*)?){0,2}$"
)  # HD: 3 parts


def _trim(value: str) -> str:
    """An echoed HD value without trailing empty (sub)components, as hl7apy writes it."""
    comps = [c.rstrip("&") for c in value.strip().split("^")]
    while comps and not comps[-1]:
        comps.pop()
    return "^".join(comps)


def _segment(*fields: str) -> str:
    out = list(fields)
    while out and not out[-1]:
        out.pop()
    return "|".join(out)


def _compose(p: _AckParts) -> bytes:
    """The ACK as ER7, written directly (the hot path of the MLLP gateway: one per message)."""
    encoding = "^~\\&#" if p.version.startswith(("2.7", "2.8")) else "^~\\&"  # 2.7: truncation
    msh = f"MSH|{encoding}|" + _segment(
        p.sending_application,
        p.sending_facility,
        p.receiving_application,
        p.receiving_facility,
        p.stamp,
        "",
        p.message_type,
        p.control_id,
        p.processing_id,
        p.version,
    )
    msa_text = p.text if p.error is not None and p.version in ("2.3", "2.3.1") else ""
    segments = [msh, _segment("MSA", p.code, p.original_id, msa_text)]
    if p.error is not None:
        segments.append(_err_segment(p, p.error))
    return "\r".join(segments).encode("utf-8")


def _err_segment(p: _AckParts, error: tuple[str, str]) -> str:
    err_code, err_text = error
    if p.version in _OLD_ERR:
        return f"ERR|^^^{err_code}&{err_text}&HL70357"
    severity = "E" if p.code[1] == "E" else "F"
    return _segment("ERR", "", "", f"{err_code}^{err_text}^HL70357", severity, "", "", "", p.text)


def _compose_hl7apy(p: _AckParts) -> bytes:
    """The same ACK built by hl7apy: the reference, and the path for unusual input."""
    ack = Message("ACK", version=p.version, validation_level=VALIDATION_LEVEL.TOLERANT)
    ack.msh.msh_3 = p.sending_application
    if p.sending_facility:
        ack.msh.msh_4 = p.sending_facility
    if p.receiving_application:
        ack.msh.msh_5 = p.receiving_application
    if p.receiving_facility:
        ack.msh.msh_6 = p.receiving_facility
    if p.stamp:
        ack.msh.msh_7 = p.stamp
    ack.msh.msh_9 = p.message_type
    ack.msh.msh_10 = p.control_id
    ack.msh.msh_11 = p.processing_id
    ack.msa.msa_1 = p.code
    if p.original_id:
        ack.msa.msa_2 = p.original_id
    if p.error is not None and p.version.startswith("2.8"):
        # hl7apy's 2.8 ERR has no (withdrawn) ERR-1 and writes ERR-3 one field early
        er7_28: str = ack.to_er7()
        return (er7_28 + "\r" + _err_segment(p, p.error)).encode("utf-8")
    if p.error is not None:
        err_code, err_text = p.error
        err = ack.add_segment("ERR")
        if p.version in _OLD_ERR:
            if p.text and p.version != "2.4":
                ack.msa.msa_3 = p.text
            err.err_1 = f"^^^{err_code}&{err_text}&HL70357"
        else:
            err.err_3 = f"{err_code}^{err_text}^HL70357"
            err.err_4 = "E" if p.code[1] == "E" else "F"
            if p.text:
                err.err_8 = p.text
    er7: str = ack.to_er7()
    return er7.encode("utf-8")


def _safe_finding(kind: str, message: str) -> str:
    names = sorted(set(_ELEMENT.findall(message)))
    return f"{kind}: {', '.join(names)}" if names else kind


def diagnose(message: bytes, limit: int = 5) -> tuple[str, ...]:
    """hl7apy's view of what is wrong with one message, as PHI-free findings (may be empty)."""
    text = message.lstrip(b"\x0b \t\r\n").removeprefix(b"\xef\xbb\xbf").decode("latin-1")
    lines = [line.rstrip(" \t") for line in re.split(r"\r\n|\r|\n", text) if line.strip()]
    if not lines:
        return ("empty message",)
    try:
        d = Delimiters.from_msh(lines[0])
    except InputError as e:
        return (e.reason,)
    fields = lines[0].split(d.field)
    version = fields[11].split(d.component)[0].strip() if len(fields) > 11 else ""
    if version not in HL7APY_VERSIONS:
        return ("MSH-12: version unknown to hl7apy",)
    enc = {
        "FIELD": d.field,
        "COMPONENT": d.component,
        "REPETITION": d.repetition,
        "ESCAPE": d.escape or "\\",
        "SUBCOMPONENT": d.subcomponent or "&",
    }
    findings: list[str] = []
    for i, line in enumerate(lines[1:], start=1):
        finding = _segment_finding(f"segment #{i}", line, version, enc)
        if finding is not None:
            findings.append(finding)
        if len(findings) >= limit:
            return tuple(findings)
    finding = _message_finding(lines)
    if finding is not None:
        findings.append(finding)
    return tuple(findings[:limit])


def _segment_finding(where: str, line: str, version: str, enc: dict[str, str]) -> str | None:
    """What hl7apy finds wrong with one segment line, None when it parses."""
    try:
        parse_segment(line, version=version, encoding_chars=enc)
    except hl7_errors.InvalidName:
        return f"{where}: not a segment of HL7 {version}"
    except hl7_errors.HL7apyException as e:
        where += f" {line[:3]}"  # the name parsed as a known segment: a protocol token
        return _safe_finding(f"{where}: {type(e).__name__}", str(e))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        return f"{where}: {type(e).__name__}"
    return None


def _message_finding(lines: list[str]) -> str | None:
    """What hl7apy's strict validation of the whole message finds, None when it passes."""
    try:
        msg = parse_message("\r".join(lines), validation_level=VALIDATION_LEVEL.STRICT)
        msg.validate()
    except hl7_errors.HL7apyException as e:
        return _safe_finding(f"message: {type(e).__name__}", str(e))
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        return f"message: {type(e).__name__}"
    return None
