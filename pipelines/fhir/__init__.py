"""FHIR ingest: DocumentReference (R4/R4B/R5) and DiagnosticReport, alone, in Bundles, NDJSON.

- :mod:`pipelines.fhir.json`      — type-checked reads over parsed JSON
- :mod:`pipelines.fhir.context`   — references; Patient/Encounter/Practitioner → Identifiers
- :mod:`pipelines.fhir.documents` — one resource → ClinicalDocument (attachments → text)
- :mod:`pipelines.fhir.parse`     — JSON/NDJSON/Bundle → one outcome per entry
- :mod:`pipelines.fhir.validate`  — fhir.resources validation (R4B, then R5), on request
"""

from __future__ import annotations

from pipelines.fhir.parse import Outcome, loads, parse_ndjson, parse_resource

__all__ = ["Outcome", "loads", "parse_ndjson", "parse_resource"]
