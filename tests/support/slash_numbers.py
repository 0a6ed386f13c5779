"""Test-only recognizer shared by the ``detect`` CLI tests: digits/digits as DATE, and a note
containing "EXPLODE" makes it fail (the per-record error path)."""

from __future__ import annotations

import re

from pipelines.phi.base import Doc, Recognizer
from pipelines.spans import Category, Span


class SlashNumbers(Recognizer):
    """digits/digits as DATE; a note containing 'EXPLODE' makes it fail."""

    name = "test_cli_slash_numbers"

    def detect(self, doc: Doc) -> list[Span]:
        if "EXPLODE" in doc.text:
            raise RuntimeError("boom")
        return [
            Span(m.start(), m.end(), Category.DATE, source=self.name)
            for m in re.finditer(r"\d+/\d+", doc.text)
        ]
