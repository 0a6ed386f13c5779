"""A FHIR DocumentReference (R4/R4B or R5) or DiagnosticReport → :class:`ClinicalDocument`.

R4 and R5 differ where we read: ``context`` is an object with ``encounter`` (R4) or a list of
references (R5); ``relatesTo.code`` is a code (R4) or a CodeableConcept (R5). Both are read.
DiagnosticReport.presentedForm is accepted as well: report text arrives that way too.

Attachments: inline ``data`` (base64) of text/plain, text/html, XHTML/XML, or simple RTF. A
URL-only attachment is never fetched (pipelines do no I/O): UrlOnlyAttachment. Only binary
inline data (PDF…): UnsupportedContentType. Of several text attachments the plain one wins,
then HTML, then RTF.

Patient id (the keystore identity: one patient must get one identity whether or not its
Patient resource came along in the same Bundle), first that applies:

1. ``subject.identifier`` (or a conditional reference ``Patient?identifier=system|value``):
   (value, system) — what the sender says, the same in every packaging;
2. a literal reference ``Patient/123`` (relative, absolute or versioned): the logical id
   under the authority ``"fhir"`` — whether the Patient is included or not. The server base
   is not part of the authority, so relative and absolute references to one server agree
   (one deployment = one FHIR id space; several servers should send rule 1);
3. a bundle-local ``urn:uuid:`` reference: the included Patient's ``id`` under ``"fhir"``
   (as rule 2 would give for the same patient), else its MR identifier (else its first);
   a contained Patient (``#p``): its MR identifier (else its first) — a local ``#id`` names
   nobody;
4. otherwise MissingPatientId.

An included Patient's identifiers (MR…) always go into ``Identifiers.patient_ids`` for the
detector and the leak guard, whichever rule keyed the document.
Visit id: the logical id of the encounter reference (resolved resources give their ``id``).
"""

from __future__ import annotations

import base64
import binascii
from datetime import UTC, datetime

from pipelines.document import (
    ClinicalDocument,
    Identifier,
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
from pipelines.fhir.context import (
    Collected,
    Resolver,
    logical_id,
    name_from_display,
    reference_parts,
)
from pipelines.fhir.json import Json, codes, obj, objs, string
from pipelines.markup import decode_bytes, is_text_type, to_text

# DocumentReference.docStatus (composition-status) and DiagnosticReport.status
# (diagnostic-report-status) share these codes and their meaning here
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
FHIR_AUTHORITY = "fhir"  # assigning authority of patients keyed by a FHIR logical id


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


def _base64(data: str) -> bytes:
    """``b64decode("".join(data.split()), validate=True)``. The strict decode refuses any
    whitespace, so the payload is first decoded as it is (most hold none) and split (a pass
    over all of it) only when that failed."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return base64.b64decode("".join(data.split()), validate=True)


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
            raw = _base64(data)
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


_NO_CONTENT = (NoNarrative, UrlOnlyAttachment, UnsupportedContentType)


def _text_or_retraction(content: list[Json], path: str, status: Status) -> tuple[str, str, str]:
    """The attachment text; a retraction (entered-in-error) needs none: its version facts
    are enough to tombstone the research key, so missing / URL-only / binary content gives
    empty text instead of an error."""
    try:
        return attachment_text(content, path)
    except _NO_CONTENT:
        if status is Status.ENTERED_IN_ERROR:
            return "", "text/plain", ""
        raise


def _docref_status(res: Json, path: str) -> Status:
    if string(res, "status", path) == "entered-in-error":
        return Status.ENTERED_IN_ERROR
    return DOC_STATUS.get(string(res, "docStatus", path), Status.FINAL)


def _authority_of(reference: str) -> str:
    """``"fhir"`` for a Patient reference; a subject of another type (Group, Device…) gets
    its own id space so ``Group/5`` never shares an identity with ``Patient/5``."""
    parts = reference_parts(reference)
    rtype = parts[-2] if len(parts) >= 2 else "Patient"
    return FHIR_AUTHORITY if rtype == "Patient" else f"{FHIR_AUTHORITY}:{rtype}"


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
                (self.c.patient_names if role == "subject" else self.c.providers).append(name)
        return target

    def patient(self) -> tuple[str, str]:
        """(patient id, assigning authority): the keystore identity (rule in the module doc)."""
        path = f"{self.path}.subject"
        ref = obj(self.res, "subject", self.path)
        if not ref:
            raise MissingPatientId("no subject reference", element=path)
        target = self.follow(ref, path, "subject")  # an included Patient's MR → identifiers
        reference = string(ref, "reference", path)
        ident = obj(ref, "identifier", path)
        value, system = string(ident, "value", path), string(ident, "system", path)
        if not value and reference.startswith("Patient?"):  # conditional reference
            value, system = logical_id(reference)
        if value:  # 1. a business identifier the sender put on the reference
            self.c.patient_ids.append(Identifier(value, system))
            return value, system
        if reference and not reference.startswith(("#", "urn:")):
            value, _base = logical_id(reference)
            if value:  # 2. a server's logical id, whether or not the Patient came along
                return value, _authority_of(reference)
        if target is not None:  # 3. contained / bundle-local (urn:uuid) Patient
            if reference.startswith("urn:") and isinstance(target.get("id"), str):
                return str(target["id"]), FHIR_AUTHORITY
            ids = self.c.patient_ids
            chosen = next((i for i in ids if i.type_code == "MR"), ids[0] if ids else None)
            if chosen is not None:
                return chosen.value, chosen.authority
        raise MissingPatientId("subject reference names no patient we can key on", element=path)

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

    def document(
        self,
        text: str,
        language: str,
        status: Status,
        patient: tuple[str, str],
        visit_id: str,
        *,
        document_id: str,
        message_id: str,
        report_type: ReportType,
        filing: datetime | None,
        document_date: datetime | None,
        replaces: str | None = None,
    ) -> ClinicalDocument:
        """The document, with what every FHIR resource gets alike: the message id defaults to
        the document id, the version number is meta.versionId (R5: version), the language is
        the attachment's, else the resource's."""
        return ClinicalDocument(
            text=text,
            identifiers=self.c.freeze(),
            source=Source.FHIR,
            message_id=message_id or document_id,
            document_id=document_id,
            patient_id=patient[0],
            assigning_authority=patient[1],
            visit_id=visit_id,
            report_type=report_type,
            status=status,
            version=VersionMarker(
                filing_time=filing,
                version_number=_version_number(self.res, self.path),
                replaces_id=replaces or None,
            ),
            document_date=document_date,
            language=language or string(self.res, "language", self.path),
        )


def _report_type(concept: Json, path: str) -> ReportType:
    coded = codes(concept, path)
    loinc = [c for c in coded if "loinc" in c[0]]
    system, code, display = (loinc or coded or [("", "", "")])[0]
    return ReportType(code=code, display=display or string(concept, "text", path), system=system)


def _last_updated(res: Json, path: str) -> datetime | None:
    return parse_instant(string(obj(res, "meta", path), "lastUpdated", f"{path}.meta"))


def _version_number(res: Json, path: str) -> int | None:
    meta = obj(res, "meta", path)
    v = string(meta, "versionId", f"{path}.meta")
    if not v and isinstance(res.get("version"), str):  # R5 DocumentReference.version
        v = string(res, "version", path)
    return int(v) if v.isascii() and v.isdigit() and len(v) < 18 else None


def document_reference(
    res: Json, resolver: Resolver, path: str, message_id: str = ""
) -> ClinicalDocument:
    r = _DocumentReader(res, resolver, path)
    content = [
        obj(c, "attachment", f"{path}.content[{i}]")
        for i, c in enumerate(objs(res, "content", path))
    ]
    status = _docref_status(res, path)
    text, _media, language = _text_or_retraction(content, f"{path}.content", status)
    patient = r.patient()
    visit_id = _docref_visit(r, res, path)
    _docref_authors(r, res, path)
    replaces = _replaced_id(res, path)
    date = parse_instant(string(res, "date", path))
    last_updated = _last_updated(res, path)
    return r.document(
        text,
        language,
        status,
        patient,
        visit_id,
        document_id=_docref_id(res, path),
        message_id=message_id,
        report_type=_report_type(obj(res, "type", path), f"{path}.type"),
        filing=last_updated or date,
        document_date=date or last_updated,
        replaces=replaces,
    )


def _docref_visit(r: _DocumentReader, res: Json, path: str) -> str:
    """The visit id from context.encounter (R4/R4B) or context (R5); R4's context.related
    are followed for their identifiers."""
    context = res.get("context")
    encounters: list[Json] = []
    if isinstance(context, dict):  # R4/R4B
        encounters = objs(context, "encounter", f"{path}.context")
        for i, ref in enumerate(objs(context, "related", f"{path}.context")):
            r.follow(ref, f"{path}.context.related[{i}]", "related")
    elif isinstance(context, list):  # R5
        encounters = objs(res, "context", path)
    return r.visit(encounters, f"{path}.context")


def _docref_authors(r: _DocumentReader, res: Json, path: str) -> None:
    """Follow author, authenticator and (R5) attester.party: providers."""
    for key in ("author", "authenticator"):
        refs = objs(res, key, path) if key == "author" else [obj(res, key, path)]
        for i, ref in enumerate(refs):
            if ref:
                r.follow(ref, f"{path}.{key}[{i}]", "author")
    for i, att in enumerate(objs(res, "attester", path)):  # R5
        r.follow(obj(att, "party", path), f"{path}.attester[{i}].party", "author")


def _replaced_id(res: Json, path: str) -> str | None:
    """The id of the document a relatesTo of a replacing code targets (None without one)."""
    replaces = None
    for i, rel in enumerate(objs(res, "relatesTo", path)):
        rpath = f"{path}.relatesTo[{i}]"
        if _relation_code(rel, rpath) in REPLACING:
            target = obj(rel, "target", rpath)
            replaces = logical_id(string(target, "reference", rpath))[0] or string(
                obj(target, "identifier", rpath), "value", rpath
            )
            if replaces:
                break
    return replaces


def _relation_code(rel: Json, rpath: str) -> str:
    """relatesTo.code: a code (R4), or the first code of a CodeableConcept (R5)."""
    code = rel.get("code")
    if isinstance(code, dict):  # R5 CodeableConcept
        return next((c for _, c, _ in codes(code, f"{rpath}.code") if c), "")
    return code if isinstance(code, str) else ""


def _docref_id(res: Json, path: str) -> str:
    """id, else masterIdentifier.value, else the first identifier's value."""
    document_id = string(res, "id", path) or string(
        obj(res, "masterIdentifier", path), "value", path
    )
    if not document_id:
        ids = objs(res, "identifier", path)
        document_id = string(ids[0], "value", path) if ids else ""
    return document_id


def diagnostic_report(
    res: Json, resolver: Resolver, path: str, message_id: str = ""
) -> ClinicalDocument:
    r = _DocumentReader(res, resolver, path)
    status = DOC_STATUS.get(string(res, "status", path), Status.FINAL)
    text, _media, language = _text_or_retraction(
        objs(res, "presentedForm", path), f"{path}.presentedForm", status
    )
    patient = r.patient()
    enc = obj(res, "encounter", path)
    visit_id = r.visit([enc] if enc else [], f"{path}.encounter")
    for key in ("performer", "resultsInterpreter"):
        for i, ref in enumerate(objs(res, key, path)):
            r.follow(ref, f"{path}.{key}[{i}]", "author")
    issued = parse_instant(string(res, "issued", path))
    effective = parse_instant(string(res, "effectiveDateTime", path)) or parse_instant(
        string(obj(res, "effectivePeriod", path), "start", path)
    )
    return r.document(
        text,
        language,
        status,
        patient,
        visit_id,
        document_id=string(res, "id", path),
        message_id=message_id,
        report_type=_report_type(obj(res, "code", path), f"{path}.code"),
        filing=_last_updated(res, path) or issued or effective,
        document_date=effective or issued,
    )


MAPPERS = {"DocumentReference": document_reference, "DiagnosticReport": diagnostic_report}
