"""What a mapper (HL7 v2 or FHIR) gathers from the structured part, frozen into Identifiers.

Both mappers walk their input once, appending what they find in order; duplicates are dropped
on freezing (first occurrence kept) so the detector sees each value once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from typing import TypeVar

from pipelines.document import Address, Identifier, Identifiers, PersonName, Sex

_T = TypeVar("_T")
_SEXES = {"m": Sex.MALE, "male": Sex.MALE, "f": Sex.FEMALE, "female": Sex.FEMALE}


def unique(items: Iterable[_T]) -> tuple[_T, ...]:
    """The items once each, in first-seen order. Most lists a mapper collects are empty or
    hold one item: those need no hashing (a dataclass hash runs in Python)."""
    if isinstance(items, list) and len(items) < 2:
        return tuple(items)
    return tuple(dict.fromkeys(items))


@dataclass(slots=True)
class CollectedIdentifiers:
    """Identifiers gathered so far, in the order found (mutable while a message is read)."""

    patient_names: list[PersonName] = field(default_factory=list)
    patient_ids: list[Identifier] = field(default_factory=list)
    birth_date: date | None = None
    ssn: list[str] = field(default_factory=list)
    accounts: list[str] = field(default_factory=list)
    addresses: list[Address] = field(default_factory=list)
    phones: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    providers: list[PersonName] = field(default_factory=list)
    relatives: list[PersonName] = field(default_factory=list)
    other_ids: list[Identifier] = field(default_factory=list)
    sex: Sex = Sex.UNKNOWN

    def record_sex(self, value: str) -> None:
        """The first male or female value read (HL7 ``M``/``F``, FHIR ``male``/``female``)."""
        if self.sex is Sex.UNKNOWN:
            self.sex = _SEXES.get(value.strip().lower(), Sex.UNKNOWN)

    def freeze(self) -> Identifiers:
        # most lists are empty: those skip the call (it costs more than the work)
        return Identifiers(
            patient_names=unique(self.patient_names) if self.patient_names else (),
            birth_date=self.birth_date,
            patient_ids=unique(self.patient_ids) if self.patient_ids else (),
            ssn=unique(self.ssn) if self.ssn else (),
            account_numbers=unique(self.accounts) if self.accounts else (),
            addresses=unique(self.addresses) if self.addresses else (),
            phones=unique(self.phones) if self.phones else (),
            emails=unique(self.emails) if self.emails else (),
            provider_names=unique(self.providers) if self.providers else (),
            relative_names=unique(self.relatives) if self.relatives else (),
            other_ids=unique(self.other_ids) if self.other_ids else (),
            sex=self.sex,
        )
