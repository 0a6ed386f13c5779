"""Extension point of the detector: a ``Recognizer`` turns an analysed text into spans."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pipelines.document import ClinicalDocument, Identifiers
from pipelines.spans import Category, Span

if TYPE_CHECKING:
    from pipelines.phi.lexicons import Tokens


@dataclass(slots=True)
class Artifacts:
    """Work on one text shared by the recognizers (as presidio passes ``NlpArtifacts``):
    each field is None until the function that owns it computes it on first use, once per
    document — :func:`pipelines.phi.lexicons.tokens`, :func:`pipelines.phi.scan.lower`,
    :func:`pipelines.phi.scan.may_match` and
    :func:`pipelines.phi.recognizers.known.known_name_forms`. Read through those functions,
    not directly."""

    tokens: Tokens | None = None  # word tokens of the text
    lower: str | None = None  # the lower-cased text
    # the re2 set the text was matched against, and the indices of its patterns found
    present: tuple[Any, frozenset[int]] | None = None
    known_names: dict[str, Category] | None = None  # known name part (lower) → its role
    known_nicknames: frozenset[str] | None = None  # of those parts, the nicknames


@dataclass(frozen=True, slots=True)
class Doc:
    """The text under analysis and its known identifiers, with the work on it that the
    recognizers share (:class:`Artifacts`: tokens, lower-cased text…, computed lazily)."""

    text: str
    identifiers: Identifiers = field(default_factory=Identifiers)
    artifacts: Artifacts = field(default_factory=Artifacts, compare=False, repr=False)

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

    def keeps(self, text: str, span: Span) -> bool:
        """Does a copy of one of this recognizer's spans, made by the propagation step
        (``pipelines.phi.propagate``), stand where it was made? (Its own spans' post-filters.)"""
        return True
