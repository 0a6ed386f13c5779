"""Extension point of the detector: a ``Recognizer`` turns an analysed text into spans."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pipelines.document import ClinicalDocument, Identifiers
from pipelines.spans import Category, Span


@dataclass
class Doc:
    """The text under analysis and its known identifiers; caches shared work (tokens…).

    Recognizers may store derived data in ``cache`` under their own key so that work
    done once (tokenisation, lower-casing) is not repeated by every recognizer.
    """

    text: str
    identifiers: Identifiers = field(default_factory=Identifiers)
    cache: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_document(cls, document: ClinicalDocument) -> Doc:
        return cls(document.text, document.identifiers)


class Recognizer(ABC):
    """Finds one family of PHI. Subclasses are registered by name in ``registry``."""

    name: ClassVar[str] = ""
    categories: ClassVar[frozenset[Category]] = frozenset()
    learned: ClassVar[bool] = False  # a statistical model: its spans are united with the rules'

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options: Mapping[str, Any] = dict(options or {})

    @abstractmethod
    def detect(self, doc: Doc) -> list[Span]:
        """Return the spans found in ``doc.text`` (any order, overlaps allowed)."""
