"""PHI categories and the immutable ``Span`` every recognizer returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, cast


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
GROUPS: Mapping[Category, str] = _GROUPS  # Category -> its group, for loops over many spans


@dataclass(frozen=True, slots=True, order=True, init=False)
class Span:
    """A half-open character range ``[start, end)`` of a text that holds PHI."""

    start: int
    end: int
    category: Category
    confidence: float = 1.0
    source: str = ""

    def __init__(
        self, start: int, end: int, category: Category, confidence: float = 1.0, source: str = ""
    ) -> None:
        """The dataclass's own ``__init__`` and a ``__post_init__`` check, written out: a
        frozen dataclass sets each field through ``object.__setattr__`` and then reads them
        back to check them; this checks the arguments and writes the slots directly (about
        40 % less per span; a 1 MB note makes some 40,000 spans)."""
        if not isinstance(category, Category):
            category = Category(category)
        if start < 0 or end <= start:
            raise ValueError(f"invalid span bounds [{start}, {end})")
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"confidence {confidence} outside [0, 1]")
        _set_start(self, start)
        _set_end(self, end)
        _set_category(self, category)
        _set_confidence(self, confidence)
        _set_source(self, source)

    @property
    def length(self) -> int:
        return self.end - self.start

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end

    def text_of(self, text: str) -> str:
        return text[self.start : self.end]

    def with_bounds(self, start: int, end: int) -> Span:
        return Span(start, end, self.category, self.confidence, self.source)


# The slots' own setters (member descriptors): they write a field of a frozen Span without
# going through its ``__setattr__``, which refuses. Used by ``Span.__init__`` only.
_set_start, _set_end, _set_category, _set_confidence, _set_source = (
    cast("Any", vars(Span)[name]).__set__
    for name in ("start", "end", "category", "confidence", "source")
)
