"""research.validate puts the skeleton's placeholders into the resource itself for the time
of the check: it must see the very skeleton ``_skeleton`` builds by copying (same cache key,
same values taken out), and leave the resource as it was — also when two paths reach one
slot (shared containers) or validation fails."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import research
from pipelines.errors import InvalidFHIR
from tests.test_research_validation import BASE, PATHS, VALUES, _with


def _put(node: Any, path: Any, value: Any) -> Any:
    """A copy of ``node`` with ``value`` at ``path`` (only the containers on the path copied)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = list(node) if isinstance(node, list) else dict(node)
    copy[head] = _put(node[head], rest, value)
    return copy


def _skeleton(resource: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[Any, Any, Any]]]:
    """The reference for ``research.validate``'s in-place skeleton: the resource with its
    per-document values replaced by placeholders (the containers on the paths copied), and
    those values (path, value, adapter). A value of another JSON kind than its placeholder (or "") stays
    in the skeleton, which is then validated whole with it."""
    skeleton: dict[str, Any] = resource
    taken: list[tuple[Any, Any, Any]] = []
    for path, placeholder, adapter in research._PATHS:
        node: Any = resource  # eight paths per document: walked inline
        for step in path:
            if type(step) is int:
                if type(node) is not list or step >= len(node):
                    break
            elif type(node) is not dict or step not in node:
                break
            node = node[step]
        else:
            if type(node) is type(placeholder) and node != "":
                skeleton = _put(skeleton, path, placeholder)
                taken.append((path, node, adapter))
    return skeleton, taken


def _snapshot(resource: dict[str, Any]) -> str:
    return repr(resource)  # also tells NaN and None, 1 and 1.0 apart


def _keys_seen(resource: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    real = research._skeleton_key

    def recording(skeleton: dict[str, Any]) -> Any:
        key = real(skeleton)
        seen.append(key)
        return key

    monkeypatch.setattr(research, "_skeleton_key", recording)
    try:
        research.validate(resource)
    except InvalidFHIR:
        pass
    finally:
        monkeypatch.setattr(research, "_skeleton_key", real)
    return seen


@settings(max_examples=300, deadline=None)
@given(edits=st.lists(st.tuples(st.sampled_from(PATHS), VALUES), max_size=4), alias=st.booleans())
def test_in_place_skeleton_is_the_copied_skeleton(
    edits: list[tuple[Any, Any]], alias: bool
) -> None:
    resource = copy.deepcopy(BASE)
    for path, value in edits:
        node: Any = resource
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
    if alias:  # subject and the encounter reference: one dict reached by two paths
        resource["context"]["encounter"][0] = resource["subject"]
    before = _snapshot(resource)
    skeleton, taken = _skeleton(resource)
    expected_key = research._skeleton_key(skeleton)
    holes = research._holes(resource)
    assert [(p, v) for p, v, _ in taken] == [(h[4], h[2]) for h in holes]
    with pytest.MonkeyPatch.context() as mp:
        seen = _keys_seen(resource, mp)
    assert seen == [expected_key]
    assert _snapshot(resource) == before


def test_the_resource_is_put_back_when_the_model_rejects_it() -> None:
    resource = _with(("docStatus",), {"not": "a code"})
    before = _snapshot(resource)
    with pytest.raises(InvalidFHIR):
        research.validate(resource)
    assert _snapshot(resource) == before
