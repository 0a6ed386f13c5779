"""Shared fixtures. Corpus tests skip cleanly when ../shared is absent.

Hypothesis runs derandomized by default (profile ``gate``): ``make test`` is the gate that
decides whether a change lands, and a property that passes once passes on every machine. Two
properties failed the gate on examples a random run met once in many (a possessive seed in
the propagation rows; a date pattern's plain spelling). Random exploration has its own
profile: ``HYPOTHESIS_PROFILE=explore make test`` (or ``make explore``), fresh examples each
run, ten times as many; what it finds becomes a fix and, where useful, an ``@example``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("gate", derandomize=True, print_blob=True)
settings.register_profile("explore", max_examples=1000, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "gate"))

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
PHYSIONET_DEV = SHARED / "physionet" / "dev"
SAMPLES = SHARED / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def physionet_dev() -> Path:
    if not (PHYSIONET_DEV / "id.text").exists():
        pytest.skip("../shared/data/physionet/dev is not present")
    return PHYSIONET_DEV


@pytest.fixture
def samples_dir() -> Path:
    if not SAMPLES.exists():
        pytest.skip("../shared/data/samples is not present")
    return SAMPLES
