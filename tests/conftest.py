"""Shared fixtures. Corpus tests skip cleanly when ../shared is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

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
