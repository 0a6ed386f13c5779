"""Defensive readers over parsed FHIR JSON (plain dicts).

The hot path maps dicts directly (orjson parsing is far cheaper than a fhir.resources
``model_validate``). Every read checks the JSON type it gets and a wrong type
raises InvalidFHIR naming the element path, never the value.
"""

from __future__ import annotations

from typing import Any

from pipelines.errors import InvalidFHIR

Json = dict[str, Any]


def obj(parent: Json, key: str, path: str) -> Json:
    v = parent.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise InvalidFHIR("element must be a JSON object", element=f"{path}.{key}")
    return v


def arr(parent: Json, key: str, path: str) -> list[Any]:
    v = parent.get(key)
    if v is None:
        return []
    if not isinstance(v, list):
        raise InvalidFHIR("element must be a JSON array", element=f"{path}.{key}")
    return v


def objs(parent: Json, key: str, path: str) -> list[Json]:
    out = []
    for i, v in enumerate(arr(parent, key, path)):
        if not isinstance(v, dict):
            raise InvalidFHIR("array item must be a JSON object", element=f"{path}.{key}[{i}]")
        out.append(v)
    return out


def string(parent: Json, key: str, path: str) -> str:
    v = parent.get(key)
    if v is None:
        return ""
    if not isinstance(v, str):
        raise InvalidFHIR("element must be a JSON string", element=f"{path}.{key}")
    return v.strip()


def strings(parent: Json, key: str, path: str) -> list[str]:
    out = []
    for i, v in enumerate(arr(parent, key, path)):
        if v is None:
            continue
        if not isinstance(v, str):
            raise InvalidFHIR("array item must be a JSON string", element=f"{path}.{key}[{i}]")
        if v.strip():
            out.append(v.strip())
    return out


def codes(concept: Json, path: str) -> list[tuple[str, str, str]]:
    """(system, code, display) of every coding of a CodeableConcept."""
    return [
        (string(c, "system", path), string(c, "code", path), string(c, "display", path))
        for c in objs(concept, "coding", path)
    ]
