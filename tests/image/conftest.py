"""The built image, run with podman: `make image-test` (after `make image`) names it in
DEIDSTREAM_IMAGE. Without it these tests skip (`make test` does not build images); with it, a
missing prerequisite (podman, the image, PostgreSQL) fails with one line saying which."""

from __future__ import annotations

import os
import shutil
from typing import Any

import pytest

from tests.image.podman_run import REPORT, podman


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if REPORT:
        terminalreporter.section("image figures")
        for line in REPORT:
            terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def image() -> str:
    name = os.environ.get("DEIDSTREAM_IMAGE")
    if not name:
        pytest.skip("the image tests run with `make image-test` (DEIDSTREAM_IMAGE names the image)")
    if shutil.which("podman") is None:
        pytest.fail("image-test: podman is not installed (make image installs it)", pytrace=False)
    if podman("image", "exists", name, check=False).returncode != 0:
        pytest.fail(f"image-test: no image {name}: run `make image` first", pytrace=False)
    return name
