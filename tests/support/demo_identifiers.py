"""Identifiers of the demo's synthetic patients (service/demo_data): none may reach the
research output, a log line or a metric."""

from __future__ import annotations

import re
from collections.abc import Iterable

DEMO_IDENTIFIERS: tuple[str, ...] = (
    "Vance",
    "Eleanor",
    "Okafor",
    "Grace",
    "Hartley",
    "Tobias",
    "Lindqvist",
    "Raman",
    "Priya",
    "Ortega",
    "Okonkwo",
    "Chidi",
    "Brandt",
    "100234",
    "200871",
    "300552",
    "400918",
    "555-0142",
    "555-0199",
    "555-0123",
    "Birch Lane",
    "Harbor View",
    "Cedar Court",
    "priya.raman",
    "123-45-6789",
    "1958",
    "1947",
    "03/14/2025",
    "03/15/2025",
    "04/02/2025",
)

# long enough not to occur by chance in a log line: no bare years, no common words
IN_LOG_LINES: tuple[str, ...] = tuple(
    i for i in DEMO_IDENTIFIERS if i not in {"Grace", "1958", "1947"}
)


_RUN = re.compile(r"[0-9A-Za-z_+/=-]+")


def identifiers_in(text: str, identifiers: Iterable[str] = DEMO_IDENTIFIERS) -> list[str]:
    """The ``identifiers`` that occur in ``text`` (case-insensitively), except inside an
    opaque token: a run of 16 or more letters, digits and ``_+/=-`` mixing letters and
    digits, as a pseudonym's hex digest or a base64 value is. "1958" by chance inside such
    a token ("…e41958af0c…") is no leak; "1958", "19580412" or "Vance's" is."""
    found = []
    for ident in identifiers:
        for match in re.finditer(re.escape(ident), text, re.IGNORECASE):
            if not _opaque(_RUN.search(text, _run_start(text, match.start()))):
                found.append(ident)
                break
    return found


def _run_start(text: str, at: int) -> int:
    while at > 0 and _RUN.fullmatch(text[at - 1]):
        at -= 1
    return at


def _opaque(run: re.Match[str] | None) -> bool:
    token = run.group() if run else ""
    return len(token) >= 16 and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
