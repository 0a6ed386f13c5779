"""Replacement values for PHI: per-patient consistent surrogates or redaction tags.

``replacer_for(category)`` gives the ``Surrogate`` that handles a category; everything is
deterministic given the patient's state (see ``choice``), and nothing here reads the clock.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import lazy_loader

if TYPE_CHECKING:
    from surrogates.base import SpanLike, Surrogate
    from surrogates.context import ReplaceContext, SurrogateSettings, new_patient_state
    from surrogates.redaction import CONFLICT_TAG, group_of, redaction_tag

# The package's names, imported from their modules on first use (PEP 562, through lazy_loader):
# the detector imports ``surrogates.names`` and ``surrogates.wordtable`` for their tables, and
# loading every surrogate maker with them (``holidays``, phone numbers, the key store) was a
# tenth of a short run's start-up (bench/README.md, "Session 15").
__getattr__, _, _ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "base": ["SpanLike", "Surrogate"],
        "context": ["ReplaceContext", "SurrogateSettings", "new_patient_state"],
        "redaction": ["CONFLICT_TAG", "group_of", "redaction_tag"],
    },
)


@cache
def _by_category() -> dict[str, Surrogate]:
    from surrogates.ages import AgeSurrogate
    from surrogates.contact import EmailSurrogate, IpSurrogate, PhoneSurrogate, UrlSurrogate
    from surrogates.dates import DateSurrogate
    from surrogates.identifiers import IdentifierSurrogate
    from surrogates.locations import LocationSurrogate
    from surrogates.names import NameSurrogate

    every: tuple[Surrogate, ...] = (
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
    return {c: s for s in every for c in s.categories}


def warm() -> None:
    """Load the lists (census names, zip codes, area codes, holidays) now, not on first use.

    The service calls it at start-up so the first documents are not the slow ones.
    """
    from surrogates.contact import us_area_codes
    from surrogates.dates import _holiday_names
    from surrogates.locations import _multiword_cities, _states, _zip_data
    from surrogates.names import census
    from surrogates.places import place_table

    _by_category()
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
        return _by_category()[str(category)]
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
