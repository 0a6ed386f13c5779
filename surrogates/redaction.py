"""The redaction alternative to surrogates: a tag naming the category group."""

from __future__ import annotations

from collections.abc import Iterable

CONFLICT_TAG = "[PHI]"


def group_of(category: str) -> str:
    """NAME_PATIENT → NAME, LOCATION_CITY → LOCATION, DATE → DATE (as ``Category.group``)."""
    head = str(category).split("_", 1)[0]
    return head if head in {"NAME", "LOCATION"} else str(category)


def redaction_tag(categories: Iterable[str]) -> str:
    """``[NAME]``, ``[DATE]``…; ``[PHI]`` when the region's categories belong to several groups."""
    groups = {group_of(c) for c in categories}
    if len(groups) != 1:
        return CONFLICT_TAG
    return f"[{groups.pop()}]"
