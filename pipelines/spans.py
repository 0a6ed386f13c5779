"""PHI categories and the immutable ``Span`` every recognizer returns."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Category(StrEnum):
    """HIPAA Safe Harbor identifiers, names split by role and locations by kind."""

    NAME_PATIENT = "NAME_PATIENT"
    NAME_PROVIDER = "NAME_PROVIDER"
    NAME_RELATIVE = "NAME_RELATIVE"
    NAME_OTHER = "NAME_OTHER"  # a name whose role the text does not tell
    DATE = "DATE"
    AGE = "AGE"  # ages over 89 only
    PHONE = "PHONE"
    FAX = "FAX"
    EMAIL = "EMAIL"
    SSN = "SSN"
    MRN = "MRN"
    ACCOUNT = "ACCOUNT"
    HEALTH_PLAN = "HEALTH_PLAN"
    LICENSE = "LICENSE"
    VEHICLE = "VEHICLE"
    DEVICE = "DEVICE"
    URL = "URL"
    IP = "IP"
    LOCATION_STREET = "LOCATION_STREET"
    LOCATION_CITY = "LOCATION_CITY"
    LOCATION_ZIP = "LOCATION_ZIP"
    LOCATION_HOSPITAL = "LOCATION_HOSPITAL"
    LOCATION_OTHER = "LOCATION_OTHER"
    ID = "ID"  # any other unique identifying number or code

    @property
    def group(self) -> str:
        """The coarse class used for redaction tags: NAME, LOCATION, DATE, PHONE…"""
        return _GROUPS[self]  # asked per span when merging: a look-up, not string work

    @property
    def is_name(self) -> bool:
        return self.group == "NAME"


def _group(value: str) -> str:
    head = value.split("_", 1)[0]
    return head if head in {"NAME", "LOCATION"} else value


_GROUPS: dict[Category, str] = {category: _group(category.value) for category in Category}


@dataclass(frozen=True, slots=True, order=True)
class Span:
    """A half-open character range ``[start, end)`` of a text that holds PHI."""

    start: int
    end: int
    category: Category
    confidence: float = 1.0
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.category, Category):
            object.__setattr__(self, "category", Category(self.category))
        if self.start < 0 or self.end <= self.start:
            raise ValueError(f"invalid span bounds [{self.start}, {self.end})")
        if not 0.0 <= self.confidence <= 1.0:
            raise ValueError(f"confidence {self.confidence} outside [0, 1]")

    @property
    def length(self) -> int:
        return self.end - self.start

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    def text_of(self, text: str) -> str:
        return text[self.start : self.end]

    def with_bounds(self, start: int, end: int) -> Span:
        return Span(start, end, self.category, self.confidence, self.source)
