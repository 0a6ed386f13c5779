"""fhir.resources validation, used where it protects: on request and on the dead-letter path.

Input R4 resources validate with fhir.resources' R4B models (same DocumentReference shape as
R4); R5 resources with its default (R5) models. The reason names the element path and the
pydantic error type only — pydantic's messages quote input values, which may be PHI.
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import ValidationError

from pipelines.errors import InvalidFHIR

_MODULES = {
    "DocumentReference": "documentreference",
    "DiagnosticReport": "diagnosticreport",
    "Bundle": "bundle",
    "Patient": "patient",
    "Encounter": "encounter",
}


def _model(resource_type: str, release: str) -> Any:
    module = _MODULES.get(resource_type)
    if module is None:
        return None
    package = "fhir.resources.R4B" if release == "R4B" else "fhir.resources"
    mod = importlib.import_module(f"{package}.{module}")
    return getattr(mod, resource_type)


def _where(error: dict[str, Any]) -> str:
    """The element path of a pydantic error. An unknown element's name is the input's own
    key (it may be anything, PHI included): it is never echoed."""
    loc = list(error.get("loc", ()))
    if error.get("type") == "extra_forbidden" and loc:
        loc[-1] = "(unknown element)"
    return ".".join(str(p) for p in loc)[:120]


def validate_resource(resource: dict[str, Any], path: str = "$") -> str:
    """Validate as R4(B), then R5; return the release that accepted it or raise InvalidFHIR."""
    rtype = resource.get("resourceType")
    if not isinstance(rtype, str) or _model(rtype, "R4B") is None:
        return ""
    first: dict[str, Any] | None = None
    for release in ("R4B", "R5"):
        try:
            _model(rtype, release).model_validate(resource)
            return release
        except ValidationError as e:
            errors = e.errors()
            if first is None and errors:
                first = dict(errors[0])
        except (ValueError, TypeError) as e:  # fhir.resources raises these for bad shapes too
            if first is None:
                first = {"loc": (), "type": type(e).__name__}
    raise InvalidFHIR(
        "resource fails FHIR R4 and R5 validation",
        element=f"{path}.{_where(first or {})}".rstrip("."),
        error=str((first or {}).get("type", "?"))[:40],
    )
