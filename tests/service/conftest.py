"""Service unit tests: make tests/support importable (toy processor, Kafka helpers)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
