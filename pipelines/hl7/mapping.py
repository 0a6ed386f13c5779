"""One HL7 v2 message → :class:`ClinicalDocument` (ORU^R01, MDM^T02..T10, ADT context).

Decisions where the standard leaves room (also in docs/ingest.md):

- Narrative: OBX of value type TX, FT, ST, TN (the whole value, escapes decoded, repetitions
  as line breaks), CE/CWE/CNE (the text component), ED (base64/hex/ASCII payloads of a text,
  HTML, XML or RTF subtype), each OBX one block, joined by line breaks in message order; NTE
  after the first OBR/TXA/OBX (order and result comments) are blocks too. NTE right after PID
  are patient notes, not part of the report. Numeric results (NM, SN…) are not narrative.
- ADT^A01/A03/A04/A08 carry no narrative: they give a *context-only* document (empty text,
  ``context_only=True``) so the service can keep the patient's identifiers for the leak guard.
- ORU/MDM without narrative raise NoNarrative, or UnsupportedContentType when the only
  content is a binary ED (PDF…) — unless the message is a *retraction* (MDM^T11 document
  cancel, TXA-17 "CA", OBR-25 "X", or every OBX-11 D/W/X): then it is an entered-in-error
  document with empty text and its version facts, so the research key gets a tombstone.
- Status: TXA-17 for MDM (T06/T08/T10 of a final document → amended), else OBR-25, else the
  OBX-11 of the narrative OBX. OBR-25 "A" (some results available) is preliminary.
- Times are timezone-aware; a time without offset takes MSH-7's offset, else UTC.
- A retraction's filing time is at least MSH-7: it happens when it is sent, so a cancel that
  repeats the document's older TXA-6/OBR-22 still orders after an edit filed in between.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from datetime import datetime

from pipelines.document import (
    Address,
    ClinicalDocument,
    Identifier,
    Identifiers,
    PersonName,
    ReportType,
    Source,
    Status,
    VersionMarker,
)
from pipelines.errors import (
    BadEncoding,
    MissingPatientId,
    NoNarrative,
    UnsupportedContentType,
    UnsupportedMessageType,
    UnsupportedVersion,
)
from pipelines.hl7 import datatypes as dt
from pipelines.hl7.er7 import Delimiters, Er7Message, Segment, pick, read_message
from pipelines.hl7.escapes import decode_escapes
from pipelines.hl7.status import document_status
from pipelines.identifiers import CollectedIdentifiers
from pipelines.markup import decode_bytes, is_text_type, to_text

SUPPORTED: dict[str, frozenset[str]] = {
    "ORU": frozenset({"R01"}),
    "MDM": frozenset({"T02", "T04", "T06", "T08", "T10", "T11"}),
    "ADT": frozenset({"A01", "A03", "A04", "A08"}),
}
TEXT_TYPES = frozenset({"TX", "FT", "ST", "TN"})
CODED_TYPES = frozenset({"CE", "CWE", "CNE"})

# ED-2/ED-3 short forms (HL7 tables 0191/0291) → media types
_ED_MEDIA = {
    "": "text/plain",
    "text": "text/plain",
    "tx": "text/plain",
    "plain": "text/plain",
    "html": "text/html",
    "xhtml": "application/xhtml+xml",
    "xml": "text/xml",
    "sgml": "text/xml",
    "rtf": "text/rtf",
}


# protocol codes a reason may name: HL7 message types and triggers (ORU, R01, A08), versions
# (2_5_1), OBX-5 ED encodings (Base64, Hex, A). Anything else is "?": a word of up to eight
# letters could be a name, and a reason never echoes an input value.
_CODE_SHAPE = re.compile(
    r"[A-Za-z]{1,3}|[A-Za-z]?\d{1,2}[A-Za-z]?|\d{1,2}(?:_\d{1,3}){0,3}|(?i:base64|hex)"
)


def _code(value: str) -> str:
    """A protocol code fit for an error reason (see ``_CODE_SHAPE``), else '?'."""
    v = value.strip()
    return v if v.isascii() and _CODE_SHAPE.fullmatch(v) else "?"


class _Reader:
    """Walks one message once; keeps the charset and delimiters at hand."""

    def __init__(self, msg: Er7Message) -> None:
        self.msg = msg
        self.d = msg.delimiters
        self.cs = msg.charset
        self.c = CollectedIdentifiers()
        # read on the way for to_document (what patient_identifier and PV1-19 would give)
        self.filed_under: list[Identifier] | None = None  # first PID: its PID-3, else PID-2
        self.visit: Identifier | None = None  # first PV1's PV1-19
        self._visit_read = False

    def val(self, seg: Segment, n: int, comp: int = 0, sub: int = 0, rep: int = 0) -> str:
        f = seg.fields  # most fields read here are absent: one look-up, no call chain
        if n >= len(f) or not f[n]:
            return ""
        return decode_escapes(seg.raw(n, rep, comp, sub), self.d, charset=self.cs).strip()

    # -- identifier groups -------------------------------------------------------------
    # Each reader first looks at the raw field: most of the fields read here are absent,
    # and an absent field costs one list lookup instead of a chain of calls.
    def names(
        self,
        seg: Segment,
        n: int,
        into: list[PersonName],
        reader: Callable[[str, Delimiters, str], PersonName | None] = dt.xpn,
    ) -> None:
        f = seg.fields
        if n >= len(f) or not f[n]:
            return
        for rep in seg.repetitions(n):
            name = reader(rep, self.d, self.cs)
            if name is not None:
                into.append(name)

    def addresses(self, seg: Segment, n: int) -> None:
        f = seg.fields
        if n >= len(f) or not f[n]:
            return
        for rep in seg.repetitions(n):
            a = dt.xad(rep, self.d, self.cs)
            if a is not None:
                self.c.addresses.append(a)

    def phones(self, seg: Segment, n: int) -> None:
        f = seg.fields
        if n >= len(f) or not f[n]:
            return
        for rep in seg.repetitions(n):
            phones, emails = dt.xtn(rep, self.d, self.cs)
            self.c.phones.extend(phones)
            self.c.emails.extend(emails)

    def ids(self, seg: Segment, n: int, into: list[Identifier], type_code: str = "") -> None:
        f = seg.fields
        if n >= len(f) or not f[n]:
            return
        for rep in seg.repetitions(n):
            ident = dt.cx(rep, self.d, self.cs)
            if ident is not None:
                if type_code and not ident.type_code:
                    ident = Identifier(ident.value, ident.authority, type_code)
                into.append(ident)

    def providers(self, seg: Segment, *fields: int) -> None:
        f = seg.fields
        last = len(f)
        for n in fields:
            if n < last and f[n]:
                self.names(seg, n, self.c.providers, dt.xcn)

    def collect_identifiers(self) -> None:
        """Every identifier of the message, segment kind by segment kind (the order of
        :data:`_IDENTIFYING_SEGMENTS`, which is the order of each list in the result)."""
        for name, read in _IDENTIFYING_SEGMENTS:
            segments = self.msg.all(name)
            if name == "OBX":  # many a message, OBX-16 rarely there: _Reader.obx, inline
                segments = [s for s in segments if len(s.fields) > 16 and s.fields[16]]
            for seg in segments:
                read(self, seg)

    def pid(self, seg: Segment) -> None:
        c = self.c
        start = len(c.patient_ids)
        self.ids(seg, 3, c.patient_ids)
        middle = len(c.patient_ids)
        self.ids(seg, 2, c.patient_ids)
        if self.filed_under is None:
            self.filed_under = c.patient_ids[start:middle] or c.patient_ids[middle:]
        self.ids(seg, 4, c.patient_ids)
        self.names(seg, 5, c.patient_names)
        self.names(seg, 9, c.patient_names)
        self.names(seg, 6, c.relatives)
        c.record_sex(self.val(seg, 8))
        self.addresses(seg, 11)
        self.phones(seg, 13)
        self.phones(seg, 14)
        self.value(seg, 18, c.accounts, comp=1, sub=1)
        for rep in range(len(seg.repetitions(19))):
            self.value(seg, 19, c.ssn, rep=rep)
        licence = self.val(seg, 20, comp=1)
        if licence:
            c.other_ids.append(Identifier(licence, self.val(seg, 20, comp=2), "DL"))
        self.ids(seg, 21, c.other_ids, "MOTHER")
        birth_place = self.val(seg, 23)
        if birth_place:
            c.addresses.append(Address(city=birth_place))

    def value(
        self, seg: Segment, n: int, into: list[str], comp: int = 0, rep: int = 0, sub: int = 0
    ) -> None:
        """Append one (decoded) value when present."""
        found = self.val(seg, n, comp=comp, sub=sub, rep=rep)
        if found:
            into.append(found)

    def nk1(self, seg: Segment) -> None:
        c = self.c
        self.names(seg, 2, c.relatives)
        self.names(seg, 30, c.relatives)
        self.addresses(seg, 4)
        self.addresses(seg, 32)
        for n in (5, 6, 31):
            self.phones(seg, n)
        self.ids(seg, 33, c.other_ids)

    def gt1(self, seg: Segment) -> None:
        self.names(seg, 3, self.c.relatives)
        self.addresses(seg, 5)
        self.phones(seg, 6)
        self.phones(seg, 7)
        self.value(seg, 12, self.c.ssn)

    def in1(self, seg: Segment) -> None:
        c = self.c
        self.names(seg, 16, c.relatives)
        self.addresses(seg, 19)
        policy = self.val(seg, 36)
        if policy:
            c.other_ids.append(Identifier(policy, "", "HP"))
        self.ids(seg, 49, c.other_ids)

    def pv1(self, seg: Segment) -> None:
        self.providers(seg, 7, 8, 9, 17)
        visit = dt.cx(seg.raw(19, 0), self.d, self.cs)
        if not self._visit_read:  # the first PV1's PV1-19, even when absent
            self._visit_read = True
            self.visit = visit
        if visit is not None:  # a visit number ("VN") unless PV1-19 says otherwise
            self.c.other_ids.append(
                visit if visit.type_code else Identifier(visit.value, visit.authority, "VN")
            )
        self.ids(seg, 50, self.c.other_ids, "VN")

    def obr(self, seg: Segment) -> None:
        self.providers(seg, 16, 28)
        for n in (32, 33, 34, 35):
            self.names(seg, n, self.c.providers, dt.ndl)

    def obx(self, seg: Segment) -> None:
        self.providers(seg, 16)

    def evn(self, seg: Segment) -> None:
        self.providers(seg, 5)

    def pd1(self, seg: Segment) -> None:
        self.providers(seg, 4)  # patient's primary care provider

    def rol(self, seg: Segment) -> None:
        self.providers(seg, 4)

    def orc(self, seg: Segment) -> None:
        self.providers(seg, 10, 11, 12)

    def txa(self, seg: Segment) -> None:
        self.providers(seg, 5, 9, 10, 22, 23)

    def identifiers(self, birth_date_raw: str) -> Identifiers:
        c = self.c
        c.birth_date = dt.parse_date(birth_date_raw)
        # NK1/GT1/IN1 may name the patient themself (relationship SEL): not a relative
        c.relatives = [r for r in c.relatives if r not in c.patient_names]
        return c.freeze()

    # -- narrative -----------------------------------------------------------------------
    def ed_text(self, seg: Segment, rep: str) -> str | None:
        """Text of one ED value, or None when the payload is not a text document."""
        parts = rep.split(self.d.component, 4)
        parts += [""] * (5 - len(parts))
        data_type = parts[1].strip().lower()
        subtype = parts[2].strip().lower()
        encoding = parts[3].strip().lower()
        media = subtype or data_type  # ED-3 subtype ("text/html", "HTML", "PDF"), else ED-2
        media = _ED_MEDIA.get(media, media)
        if not is_text_type(media):
            return None
        payload = parts[4]
        try:
            if encoding == "base64":
                data = base64.b64decode("".join(payload.split()), validate=False)
            elif encoding == "hex":
                data = bytes.fromhex(payload)
            else:  # "A" (ASCII), empty, or unknown: the value is the text, escapes apply
                return to_text(decode_escapes(payload, self.d, charset=self.cs), media)
        except (binascii.Error, ValueError):
            raise BadEncoding(
                "OBX-5 ED payload is not valid for its declared encoding",
                segment=f"OBX#{seg.position}",
                encoding=_code(encoding),
            ) from None
        return to_text(decode_bytes(data, media), media)

    def obx_block(self, seg: Segment) -> tuple[str | None, bool]:
        """(text block or None, True if a binary payload was skipped)."""
        vtype = seg.first_component(2).strip().upper()
        reps = seg.repetitions(5)
        if vtype in TEXT_TYPES:
            if len(reps) == 1:
                return decode_escapes(reps[0], self.d, charset=self.cs), False
            return "\n".join([decode_escapes(r, self.d, charset=self.cs) for r in reps]), False
        if vtype in CODED_TYPES:
            texts = []
            for r in reps:
                text = pick(r, self.d, 2) or pick(r, self.d, 5)
                if text:
                    texts.append(decode_escapes(text, self.d, charset=self.cs))
            return ("\n".join(texts) if texts else None), False
        if vtype == "ED":
            blocks = [t for t in (self.ed_text(seg, r) for r in reps if r) if t is not None]
            if blocks:
                return "\n".join(blocks), False
            return None, bool(reps)
        return None, False

    def narrative(self) -> tuple[str, list[Segment], bool]:
        """(text, the OBX segments that gave text, whether a binary ED was skipped)."""
        blocks: list[str] = []
        sources: list[Segment] = []
        skipped_binary = False
        in_report = False
        d, cs = self.d, self.cs
        repetition, esc = d.repetition, d.escape
        for seg in self.msg.segments:
            name = seg.name
            if name == "OBX":
                in_report = True
                f = seg.fields
                value = f[5] if len(f) > 5 else ""
                if len(f) > 2 and f[2] in TEXT_TYPES and repetition not in value:
                    # a bare text type code and one value (or none): obx_block's first case,
                    # inline (an ORU often carries one OBX per line of the report)
                    blocks.append(decode_escapes(value, d, charset=cs) if esc in value else value)
                    sources.append(seg)
                    continue
                block, binary = self.obx_block(seg)
                skipped_binary |= binary
                if block is not None:
                    blocks.append(block)
                    sources.append(seg)
            elif name in ("OBR", "TXA"):
                in_report = True
            elif name == "NTE" and in_report:
                comment = "\n".join(decode_escapes(r, d, charset=cs) for r in seg.repetitions(3))
                blocks.append(comment)
        text = "\n".join(blocks).strip()
        return text, sources, skipped_binary


# the segments that name the patient, their relatives and providers, in reading order
_IDENTIFYING_SEGMENTS: tuple[tuple[str, Callable[[_Reader, Segment], None]], ...] = (
    ("PID", _Reader.pid),
    ("NK1", _Reader.nk1),
    ("GT1", _Reader.gt1),
    ("IN1", _Reader.in1),
    ("PV1", _Reader.pv1),
    ("EVN", _Reader.evn),
    ("PD1", _Reader.pd1),
    ("ROL", _Reader.rol),
    ("ORC", _Reader.orc),
    ("OBR", _Reader.obr),
    ("OBX", _Reader.obx),
    ("TXA", _Reader.txa),
)


def _patient_id(ids: list[Identifier]) -> Identifier | None:
    for ident in ids:
        if ident.type_code.upper() == "MR":
            return ident
    return ids[0] if ids else None


def message_type(msg: Er7Message) -> tuple[str, str]:
    """(MSH-9.1, MSH-9.2) of a message we handle; UnsupportedMessageType/Version otherwise."""
    msh = msg.segments[0]
    mtype = msh.first_component(9).strip().upper()
    trigger = msh.raw(9, 0, 2).strip().upper()
    if mtype not in SUPPORTED or trigger not in SUPPORTED[mtype]:
        raise UnsupportedMessageType(
            "MSH-9 message type is not one we handle", type=_code(mtype), trigger=_code(trigger)
        )
    version = msh.first_component(12).strip()
    vparts = version.split(".")
    # ASCII digits, at most two: int() refuses "²" and numbers of thousands of digits
    minor = vparts[1] if len(vparts) >= 2 else ""
    if not (
        vparts[0] == "2"
        and minor.isascii()
        and minor.isdigit()
        and len(minor) <= 2
        and 3 <= int(minor) <= 8
    ):
        raise UnsupportedVersion(
            "MSH-12 version is outside 2.3 to 2.8", version=_code(version.replace(".", "_"))
        )
    return mtype, trigger


def patient_identifier(msg: Er7Message) -> Identifier:
    """The patient id a document is filed under: the first PID-3 of type MR, else the first
    PID-3, else PID-2 (MissingPatientId when there is none). The MLLP gateway keys by it."""
    pid = msg.first("PID")
    if pid is None:
        raise MissingPatientId("no PID segment")
    ids: list[Identifier] = []
    for n in (3, 2):
        ids = [i for r in pid.repetitions(n) if (i := dt.cx(r, msg.delimiters, msg.charset))]
        if ids:
            break
    patient = _patient_id(ids)
    if patient is None:
        raise MissingPatientId("PID-3 (and PID-2) hold no patient identifier", segment="PID")
    return patient


def to_document(msg: Er7Message) -> ClinicalDocument:
    """Map one read message; raises the typed input errors of :mod:`pipelines.errors`."""
    msh = msg.segments[0]
    mtype, trigger = message_type(msg)
    r = _Reader(msg)
    pid = msg.first("PID")
    if pid is None:
        raise MissingPatientId("no PID segment", message_type=mtype)
    r.collect_identifiers()
    patient = _patient_id(r.filed_under or [])  # patient_identifier(msg), ids read once
    if patient is None:
        raise MissingPatientId("PID-3 (and PID-2) hold no patient identifier", segment="PID")
    clock = _Clock(msh.first_component(7))
    visit = r.visit
    common = {
        "identifiers": r.identifiers(pid.first_component(7)),
        "source": Source.HL7V2,
        "message_id": r.val(msh, 10),
        "patient_id": patient.value,
        "assigning_authority": patient.authority,
        "visit_id": visit.value if visit is not None else "",
        "language": r.val(msh, 19, comp=1),
    }
    if mtype == "ADT":
        return ClinicalDocument(
            text="",
            context_only=True,
            version=VersionMarker(filing_time=clock.message_time),
            document_date=clock.message_time,
            **common,  # type: ignore[arg-type]
        )
    text, status = _text_and_status(r, mtype, trigger)
    facts = _Facts()
    txa = msg.first("TXA")
    if txa is not None:
        facts.read_txa(r, txa, clock)
    for obr in msg.all("OBR"):  # the first with a service id
        if obr.field(4):
            facts.read_obr(r, obr, clock)
            break
    return ClinicalDocument(
        text=text,
        document_id=facts.document_id,
        report_type=facts.report_type,
        status=status,
        version=VersionMarker(
            filing_time=facts.filed(status, clock.message_time), replaces_id=facts.replaces
        ),
        document_date=facts.doc_date or clock.message_time,
        **common,  # type: ignore[arg-type]
    )


def _text_and_status(r: _Reader, mtype: str, trigger: str) -> tuple[str, Status]:
    """The narrative and the status of an ORU/MDM; NoNarrative or UnsupportedContentType
    when it has no narrative and is not a retraction."""
    msg = r.msg
    text, sources, skipped_binary = r.narrative()
    if text:
        return text, document_status(msg, trigger, sources)
    # a retraction needs no narrative: its version facts are enough to tombstone the key
    status = document_status(msg, trigger, msg.all("OBX"))
    if status is Status.ENTERED_IN_ERROR:
        return text, status
    if skipped_binary:
        raise UnsupportedContentType(
            "OBX-5 ED payloads are not text (e.g. PDF); no narrative", message_type=mtype
        )
    raise NoNarrative("no OBX of a text type and no NTE comment", message_type=mtype)


class _Clock:
    """Reads the times of one message: a time without offset takes MSH-7's offset."""

    def __init__(self, msh7: str) -> None:
        self.msh7 = msh7
        self.default_tz = dt.parse_offset(msh7)
        # = parse_ts(msh7, default_tz), read once: the default only applies to a time without
        # an offset of its own, and MSH-7 then gave none (parse_offset read it as MSH-7's time)
        self.message_time = dt.parse_ts(msh7)

    def ts(self, seg: Segment, n: int) -> datetime | None:
        raw = seg.first_component(n)  # often MSH-7's time again (OBR-7, OBR-22, TXA-6…)
        return self.message_time if raw == self.msh7 else dt.parse_ts(raw, self.default_tz)


_NO_REPORT_TYPE = ReportType()  # frozen: one shared value


class _Facts:
    """What TXA, else the first OBR with a service id, say of the document."""

    def __init__(self) -> None:
        self.report_type = _NO_REPORT_TYPE
        self.document_id = ""
        self.replaces: str | None = None
        self.filing: datetime | None = None
        self.doc_date: datetime | None = None

    def read_txa(self, r: _Reader, txa: Segment, clock: _Clock) -> None:
        ts = clock.ts
        self.report_type = ReportType(
            code=r.val(txa, 2, comp=1), display=r.val(txa, 2, comp=2), system=r.val(txa, 2, comp=3)
        )
        self.document_id = r.val(txa, 12, comp=1)
        self.replaces = r.val(txa, 13, comp=1) or None
        self.filing = ts(txa, 8) or ts(txa, 6) or ts(txa, 4)
        self.doc_date = ts(txa, 4) or ts(txa, 6)

    def read_obr(self, r: _Reader, obr: Segment, clock: _Clock) -> None:
        ts = clock.ts
        if not self.report_type.code and not self.report_type.display:
            self.report_type = ReportType(
                code=r.val(obr, 4, comp=1),
                display=r.val(obr, 4, comp=2),
                system=r.val(obr, 4, comp=3),
            )
        self.document_id = self.document_id or r.val(obr, 3, comp=1) or r.val(obr, 2, comp=1)
        self.filing = self.filing or ts(obr, 22)
        self.doc_date = self.doc_date or ts(obr, 7) or ts(obr, 22)

    def filed(self, status: Status, message_time: datetime | None) -> datetime | None:
        filing = self.filing or message_time
        if status is Status.ENTERED_IN_ERROR and message_time is not None:
            # a retraction happens when it is sent: a cancel that repeats the document's own
            # (older) TXA-6 / OBR-22 must still order after an edit filed in between
            filing = max(filing, message_time) if filing is not None else message_time
        return filing


def patient_groups(msg: Er7Message) -> list[Er7Message]:
    """One message per patient: an ORU^R01 may carry several PATIENT_RESULT groups.

    Each PID starts a group; the segments before the first PID (MSH, SFT, EVN…) are shared.
    Mixing two patients' results in one document would file one under the other's key.
    """
    if len(msg.all("PID")) <= 1:
        return [msg]
    starts = [i for i, seg in enumerate(msg.segments) if seg.name == "PID"]
    header = msg.segments[: starts[0]]
    bounds = [*starts, len(msg.segments)]
    return [
        msg.subset(header + msg.segments[a:b]) for a, b in zip(bounds, bounds[1:], strict=False)
    ]


def parse_hl7v2_all(message: bytes) -> list[ClinicalDocument]:
    """One message (CR-separated bytes) → one document per patient group (usually one)."""
    return [to_document(group) for group in patient_groups(read_message(message))]


def parse_hl7v2(message: bytes) -> ClinicalDocument:
    """One single-patient message (CR-separated bytes, as :func:`split_messages` gives)."""
    msg = read_message(message)
    groups = patient_groups(msg)
    if len(groups) > 1:
        raise UnsupportedMessageType(
            "message holds several patients; use parse_hl7v2_all", patients=len(groups)
        )
    return to_document(msg)


__all__ = [
    "SUPPORTED",
    "message_type",
    "parse_hl7v2",
    "parse_hl7v2_all",
    "patient_groups",
    "patient_identifier",
    "to_document",
]
