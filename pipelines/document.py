"""The parsed clinical document: narrative text plus what the structured part tells us.

HL7 v2 (PID, NK1, PV1, OBR, TXA) and FHIR (Patient, Encounter, Practitioner) both map onto
these types; the detector uses ``Identifiers`` as context to find the same values in the text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum


class Source(StrEnum):
    HL7V2 = "hl7v2"
    FHIR = "fhir"
    TEXT = "text"


class Sex(StrEnum):
    """Administrative sex as the structured part records it (PID-8, ``Patient.gender``)."""

    MALE = "M"
    FEMALE = "F"
    UNKNOWN = ""


class Status(StrEnum):
    PRELIMINARY = "preliminary"
    FINAL = "final"
    AMENDED = "amended"
    CORRECTED = "corrected"
    ENTERED_IN_ERROR = "entered-in-error"


@dataclass(frozen=True, slots=True)
class PersonName:
    family: str = ""
    given: tuple[str, ...] = ()  # first name, then middle names
    prefix: str = ""
    suffix: str = ""

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in (*self.given, self.family) if p)


@dataclass(frozen=True, slots=True)
class Address:
    street: tuple[str, ...] = ()
    city: str = ""
    state: str = ""
    postal_code: str = ""
    country: str = ""


@dataclass(frozen=True, slots=True)
class Identifier:
    """An identifier value with its assigning authority and HL7 type code (MR, SS, AN…)."""

    value: str
    authority: str = ""
    type_code: str = ""


@dataclass(frozen=True, slots=True)
class Identifiers:
    """Identifiers known from the structured part of the message (never from the text)."""

    patient_names: tuple[PersonName, ...] = ()
    birth_date: date | None = None
    patient_ids: tuple[Identifier, ...] = ()  # MRNs and other PID-3 / Patient.identifier
    ssn: tuple[str, ...] = ()
    account_numbers: tuple[str, ...] = ()
    addresses: tuple[Address, ...] = ()
    phones: tuple[str, ...] = ()
    emails: tuple[str, ...] = ()
    provider_names: tuple[PersonName, ...] = ()
    relative_names: tuple[PersonName, ...] = ()
    other_ids: tuple[Identifier, ...] = ()  # licences, visit numbers, document ids…
    sex: Sex = Sex.UNKNOWN  # not PHI: read so name surrogates keep the patient's gender

    def is_empty(self) -> bool:
        return not any(
            (
                self.patient_names,
                self.birth_date,
                self.patient_ids,
                self.ssn,
                self.account_numbers,
                self.addresses,
                self.phones,
                self.emails,
                self.provider_names,
                self.relative_names,
                self.other_ids,
            )
        )


@dataclass(frozen=True, slots=True)
class ReportType:
    code: str = ""
    display: str = ""
    system: str = ""


@dataclass(frozen=True, slots=True)
class VersionMarker:
    filing_time: datetime | None = None
    version_number: int | None = None
    replaces_id: str | None = None


@dataclass(frozen=True, slots=True)
class ClinicalDocument:
    """One clinical report, whatever format it came in."""

    text: str
    identifiers: Identifiers = field(default_factory=Identifiers)
    source: Source = Source.TEXT
    message_id: str = ""
    document_id: str = ""
    patient_id: str = ""
    assigning_authority: str = ""
    visit_id: str = ""
    report_type: ReportType = field(default_factory=ReportType)
    status: Status = Status.FINAL
    version: VersionMarker = field(default_factory=VersionMarker)
    document_date: datetime | None = None
    content_type: str = "text/plain"
    language: str = ""
    # True for patient-context messages (HL7 ADT): identifiers only, empty text, nothing to
    # publish; the service keeps the identifiers (leak guard) instead of dead-lettering them.
    context_only: bool = False
