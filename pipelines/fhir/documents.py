"""A FHIR DocumentReference (R4/R4B or R5) or DiagnosticReport → :class:`ClinicalDocument`.

R4 and R5 differ where we read: ``context`` is an object with ``encounter`` (R4) or a list of
references (R5); ``relatesTo.code`` is a code (R4) or a CodeableConcept (R5). Both are read.
DiagnosticReport.presentedForm is accepted as well: report text arrives that way too.

Attachments: inline ``data`` (base64) of text/plain, text/html, XHTML/XML, or simple RTF. A
URL-only attachment is never fetched (pipelines do no I/O): UrlOnlyAttachment. Only binary
inline data (PDF…): UnsupportedContentType. Of several text attachments the plain one wins,
then HTML, then RTF.

Patient id: the subject's MR identifier (Bundle/contained Patient, Reference.identifier or
a conditional reference), else its first identifier, else the reference's logical id.
Visit id: the logical id of the encounter reference (resolved resources give their ``id``).
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime
from typing import TypeVar

from pipelines.document import (
    ClinicalDocument,
    Identifier,
    Identifiers,
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
    UrlOnlyAttachment,
)
from pipelines.fhir.context import Collected, Resolver, logical_id, name_from_display
from pipelines.fhir.json import Json, codes, obj, objs, string
from pipelines.markup import decode_bytes, is_text_type, to_text

DOC_STATUS = {
    "preliminary": Status.PRELIMINARY,
    "registered": Status.PRELIMINARY,
    "partial": Status.PRELIMINARY,
    "final": Status.FINAL,
    "amended": Status.AMENDED,
    "appended": Status.AMENDED,
    "corrected": Status.CORRECTED,
    "entered-in-error": Status.ENTERED_IN_ERROR,
    "cancelled": Status.ENTERED_IN_ERROR,
}
REPLACING = frozenset({"replaces", "appends", "transforms"})
_PREFERENCE = ("plain", "html", "rtf")
_T = TypeVar("_T")


def parse_instant(value: str) -> datetime | None:
    """FHIR date/dateTime/instant → aware datetime (date-only and zone-less read as UTC)."""
    if len(value) < 4:
        return None
    v = value.replace("Z", "+00:00")
    if len(v) == 4:
        v += "-01-01"
    elif len(v) == 7:
        v += "-01"
    try:
        dt = datetime.fromisoformat(v)
    except ValueError:
        return None
    return dt if dt.tzinfo is not None else dt.replace(tzinfo=UTC)


def _kind(media: str) -> str:
    t = media.split(";", 1)[0].strip().lower()
    if "rtf" in t:
        return "rtf"
    if "html" in t or "xml" in t:
        return "html"
    return "plain"


def attachment_text(content: list[Json], path: str) -> tuple[str, str, str]:
    """(text, source media type, language) of the best text attachment."""
    found: list[tuple[int, str, str, str]] = []
    binary = url_only = 0
    for i, attachment in enumerate(content):
        apath = f"{path}[{i}]"
        media = string(attachment, "contentType", apath)
        data = string(attachment, "data", apath)
        if not data:
            if string(attachment, "url", apath):
                url_only += 1
            continue
        if not is_text_type(media or "text/plain"):
            binary += 1
            continue
        try:
            raw = base64.b64decode("".join(data.split()), validate=True)
        except (binascii.Error, ValueError):
            raise BadEncoding(
                "attachment data is not valid base64", element=f"{apath}.data"
            ) from None
        media = media or "text/plain"
        text = to_text(decode_bytes(raw, media), media)
        rank = _PREFERENCE.index(_kind(media))
        found.append((rank, text, media, string(attachment, "language", apath)))
    found = [f for f in found if f[1]]
    if found:
        _, text, media, language = min(found, key=lambda f: f[0])
        return text, media, language
    if url_only:
        raise UrlOnlyAttachment("attachment only by URL; it is not fetched", element=path)
    if binary:
        raise UnsupportedContentType("attachments are not text (e.g. PDF)", element=path)
    raise NoNarrative("no attachment with text", element=path)


class _DocumentReader:
    def __init__(self, res: Json, resolver: Resolver, path: str) -> None:
        self.res = res
        self.path = path
        self.resolver = resolver.with_contained(res, path)
        self.c = Collected()

    def follow(self, ref: Json, path: str, role: str) -> Json | None:
        """Resolve a Reference and collect what its target (or its display) tells."""
        target = self.resolver.resolve(string(ref, "reference", path))
        if target is not None:
            self.c.resource(target, path, role)
        display = string(ref, "display", path)
        if display and target is None:
            name = name_from_display(display)
            if name is not None:
                {"subject": self.c.patient_names, "author": self.c.providers}.get(
                    role, self.c.providers
                ).append(name)
        return target

    def patient(self) -> tuple[str, str]:
        path = f"{self.path}.subject"
        ref = obj(self.res, "subject", self.path)
        if not ref:
            raise MissingPatientId("no subject reference", element=path)
        target = self.follow(ref, path, "subject")
        ids = list(self.c.patient_ids) if target is not None else []
        ident = obj(ref, "identifier", path)
        if string(ident, "value", path):
            ids.append(Identifier(string(ident, "value", path), string(ident, "system", path)))
        chosen = next((i for i in ids if i.type_code == "MR"), ids[0] if ids else None)
        if chosen is not None:
            return chosen.value, chosen.authority
        reference = string(ref, "reference", path)
        if target is not None and isinstance(target.get("id"), str):
            return str(target["id"]), ""
        value, authority = logical_id(reference)
        if not value:
            raise MissingPatientId("subject reference names no patient", element=path)
        if reference.startswith("Patient?"):
            self.c.patient_ids.append(Identifier(value, authority))
        return value, authority

    def visit(self, refs: list[Json], path: str) -> str:
        for i, ref in enumerate(refs):
            rpath = f"{path}[{i}]"
            reference = string(ref, "reference", rpath)
            if (
                reference
                and not reference.startswith(("Encounter", "#", "urn:"))
                and "/Encounter/" not in reference
            ):
                continue  # R5 context may point to EpisodeOfCare
            target = self.follow(ref, rpath, "encounter")
            if target is not None and isinstance(target.get("id"), str):
                return str(target["id"])
            value = logical_id(reference)[0] or string(
                obj(ref, "identifier", rpath), "value", rpath
            )
            if value:
                return value
        return ""

    def identifiers(self) -> Identifiers:
        c = self.c

        def u(items: list[_T]) -> tuple[_T, ...]:
            return tuple(dict.fromkeys(items))

        return Identifiers(
            patient_names=u(c.patient_names),
            birth_date=c.birth_date,
            patient_ids=u(c.patient_ids),
            ssn=u(c.ssn),
            addresses=u(c.addresses),
            phones=u(c.phones),
            emails=u(c.emails),
            provider_names=u(c.providers),
            relative_names=u(c.relatives),
            other_ids=u(c.other_ids),
        )


def _report_type(concept: Json, path: str) -> ReportType:
    coded = codes(concept, path)
    loinc = [c for c in coded if "loinc" in c[0]]
    system, code, display = (loinc or coded or [("", "", "")])[0]
    return ReportType(code=code, display=display or string(concept, "text", path), system=system)


def _version_number(res: Json, path: str) -> int | None:
    meta = obj(res, "meta", path)
    v = string(meta, "versionId", f"{path}.meta")
    if not v and isinstance(res.get("version"), str):  # R5 DocumentReference.version
        v = string(res, "version", path)
    return int(v) if v.isdigit() and len(v) < 18 else None


def document_reference(
    res: Json, resolver: Resolver, path: str, message_id: str = ""
) -> ClinicalDocument:
    r = _DocumentReader(res, resolver, path)
    content = [
        obj(c, "attachment", f"{path}.content[{i}]")
        for i, c in enumerate(objs(res, "content", path))
    ]
    text, media, language = attachment_text(content, f"{path}.content")
    patient_id, authority = r.patient()

    context = res.get("context")
    encounters: list[Json] = []
    if isinstance(context, dict):  # R4/R4B
        encounters = objs(context, "encounter", f"{path}.context")
        for i, ref in enumerate(objs(context, "related", f"{path}.context")):
            r.follow(ref, f"{path}.context.related[{i}]", "related")
    elif isinstance(context, list):  # R5
        encounters = objs(res, "context", path)
    visit_id = r.visit(encounters, f"{path}.context")
    for key in ("author", "authenticator"):
        refs = objs(res, key, path) if key == "author" else [obj(res, key, path)]
        for i, ref in enumerate(refs):
            if ref:
                r.follow(ref, f"{path}.{key}[{i}]", "author")
    for i, att in enumerate(objs(res, "attester", path)):  # R5
        r.follow(obj(att, "party", path), f"{path}.attester[{i}].party", "author")

    status = Status.FINAL
    if string(res, "status", path) == "entered-in-error":
        status = Status.ENTERED_IN_ERROR
    else:
        status = DOC_STATUS.get(string(res, "docStatus", path), Status.FINAL)
    replaces = None
    for i, rel in enumerate(objs(res, "relatesTo", path)):
        rpath = f"{path}.relatesTo[{i}]"
        code = rel.get("code")
        code_str = code if isinstance(code, str) else ""
        if isinstance(code, dict):  # R5 CodeableConcept
            code_str = next((c for _, c, _ in codes(code, f"{rpath}.code") if c), "")
        if code_str in REPLACING:
            target = obj(rel, "target", rpath)
            replaces = logical_id(string(target, "reference", rpath))[0] or string(
                obj(target, "identifier", rpath), "value", rpath
            )
            if replaces:
                break
    date = parse_instant(string(res, "date", path)) or parse_instant(
        string(obj(res, "meta", path), "lastUpdated", f"{path}.meta")
    )
    filing = parse_instant(string(obj(res, "meta", path), "lastUpdated", f"{path}.meta")) or date
    document_id = string(res, "id", path) or string(
        obj(res, "masterIdentifier", path), "value", path
    )
    if not document_id:
        ids = objs(res, "identifier", path)
        document_id = string(ids[0], "value", path) if ids else ""
    return ClinicalDocument(
        text=text,
        identifiers=r.identifiers(),
        source=Source.FHIR,
        message_id=message_id or document_id,
        document_id=document_id,
        patient_id=patient_id,
        assigning_authority=authority,
        visit_id=visit_id,
        report_type=_report_type(obj(res, "type", path), f"{path}.type"),
        status=status,
        version=VersionMarker(
            filing_time=filing,
            version_number=_version_number(res, path),
            replaces_id=replaces or None,
        ),
        document_date=date,
        content_type="text/plain",
        language=language or string(res, "language", path),
    )


DIAGNOSTIC_STATUS = {
    "registered": Status.PRELIMINARY,
    "partial": Status.PRELIMINARY,
    "preliminary": Status.PRELIMINARY,
    "final": Status.FINAL,
    "amended": Status.AMENDED,
    "appended": Status.AMENDED,
    "corrected": Status.CORRECTED,
    "cancelled": Status.ENTERED_IN_ERROR,
    "entered-in-error": Status.ENTERED_IN_ERROR,
}


def diagnostic_report(
    res: Json, resolver: Resolver, path: str, message_id: str = ""
) -> ClinicalDocument:
    r = _DocumentReader(res, resolver, path)
    text, _media, language = attachment_text(
        objs(res, "presentedForm", path), f"{path}.presentedForm"
    )
    patient_id, authority = r.patient()
    enc = obj(res, "encounter", path)
    visit_id = r.visit([enc] if enc else [], f"{path}.encounter")
    for key in ("performer", "resultsInterpreter"):
        for i, ref in enumerate(objs(res, key, path)):
            r.follow(ref, f"{path}.{key}[{i}]", "author")
    issued = parse_instant(string(res, "issued", path))
    effective = parse_instant(string(res, "effectiveDateTime", path)) or parse_instant(
        string(obj(res, "effectivePeriod", path), "start", path)
    )
    document_id = string(res, "id", path)
    return ClinicalDocument(
        text=text,
        identifiers=r.identifiers(),
        source=Source.FHIR,
        message_id=message_id or document_id,
        document_id=document_id,
        patient_id=patient_id,
        assigning_authority=authority,
        visit_id=visit_id,
        report_type=_report_type(obj(res, "code", path), f"{path}.code"),
        status=DIAGNOSTIC_STATUS.get(string(res, "status", path), Status.FINAL),
        version=VersionMarker(
            filing_time=parse_instant(string(obj(res, "meta", path), "lastUpdated", f"{path}.meta"))
            or issued
            or effective,
            version_number=_version_number(res, path),
        ),
        document_date=effective or issued,
        language=language or string(res, "language", path),
    )


MAPPERS = {"DocumentReference": document_reference, "DiagnosticReport": diagnostic_report}
