"""Replacement values for PHI: per-patient consistent surrogates or redaction tags.

``replacer_for(category)`` gives the ``Surrogate`` that handles a category; everything is
deterministic given the patient's state (see ``choice``), and nothing here reads the clock.
"""

from __future__ import annotations

from surrogates.ages import AgeSurrogate
from surrogates.base import SpanLike, Surrogate
from surrogates.contact import EmailSurrogate, IpSurrogate, PhoneSurrogate, UrlSurrogate
from surrogates.context import ReplaceContext, SurrogateSettings, new_patient_state
from surrogates.dates import DateSurrogate
from surrogates.identifiers import IdentifierSurrogate
from surrogates.locations import LocationSurrogate
from surrogates.names import NameSurrogate
from surrogates.redaction import CONFLICT_TAG, group_of, redaction_tag

_ALL: tuple[Surrogate, ...] = (
    NameSurrogate(),
    DateSurrogate(),
    AgeSurrogate(),
    IdentifierSurrogate(),
    PhoneSurrogate(),
    EmailSurrogate(),
    UrlSurrogate(),
    IpSurrogate(),
    LocationSurrogate(),
)
_BY_CATEGORY: dict[str, Surrogate] = {c: s for s in _ALL for c in s.categories}


def warm() -> None:
    """Load the lists (census names, zip codes, area codes, holidays) now, not on first use.

    The service calls it at start-up so the first documents are not the slow ones.
    """
    from surrogates.contact import us_area_codes
    from surrogates.dates import _holiday_names
    from surrogates.locations import _multiword_cities, _states, _zip_data
    from surrogates.names import census
    from surrogates.places import place_table

    census()
    _zip_data()
    place_table()
    _multiword_cities()
    _states()
    us_area_codes()
    _holiday_names()


def replacer_for(category: str) -> Surrogate:
    """The surrogate maker for ``category`` (a ``pipelines.spans.Category`` or its value)."""
    try:
        return _BY_CATEGORY[str(category)]
    except KeyError:
        raise KeyError(f"no surrogate for category {category!s}") from None


__all__ = [
    "CONFLICT_TAG",
    "ReplaceContext",
    "SpanLike",
    "Surrogate",
    "SurrogateSettings",
    "group_of",
    "new_patient_state",
    "redaction_tag",
    "replacer_for",
    "warm",
]
