"""``Doc.artifacts``: the recognizers' shared work on a text is computed on first use, once
per document, and a ``Doc`` cannot be changed under it (frozen)."""

from __future__ import annotations

import dataclasses

import pytest

from pipelines.document import Identifiers, PersonName
from pipelines.phi import lexicons as lx
from pipelines.phi import scan
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import dates
from pipelines.phi.recognizers.known import known_name_forms
from pipelines.spans import Category


def test_artifacts_are_computed_on_first_use_and_kept() -> None:
    ids = Identifiers(patient_names=(PersonName(family="Quellmark", given=("Odalys",)),))
    doc = Doc("Seen on 3/4/2021 by Odalys QUELLMARK.", ids)
    arts = doc.artifacts
    assert (arts.tokens, arts.lower, arts.present, arts.known_names) == (None,) * 4
    toks = lx.tokens(doc)
    assert arts.tokens is toks and lx.tokens(doc) is toks
    assert scan.lower(doc) == doc.text.lower() and arts.lower is scan.lower(doc)
    assert scan.may_match(doc, dates._NUMERIC_SHAPE) and arts.present is not None
    forms = known_name_forms(doc)
    assert forms["quellmark"] is Category.NAME_PATIENT and arts.known_names is forms
    assert arts.known_nicknames is not None


def test_each_doc_has_its_own_artifacts_and_cannot_change() -> None:
    a, b = Doc("alpha beta"), Doc("alpha beta")
    assert a == b and a.artifacts is not b.artifacts
    lx.tokens(a)
    assert b.artifacts.tokens is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.text = "gamma"  # type: ignore[misc]
