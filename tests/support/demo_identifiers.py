"""Identifiers of the demo's synthetic patients (service/demo_data): none may reach the
research output, a log line or a metric."""

from __future__ import annotations

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
