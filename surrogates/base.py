"""The one extension point of surrogates/: ``Surrogate.replace(span, ctx) -> str``.

surrogates/ sits below pipelines/, so it does not import ``pipelines.spans``; any object with
``start``, ``end`` and a string-valued ``category`` (``pipelines.spans.Span`` is one) will do.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from surrogates.context import ReplaceContext


class SpanLike(Protocol):
    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...

    @property
    def category(self) -> str: ...


class Surrogate(ABC):
    """Makes the replacement text for one span of the categories it declares."""

    categories: ClassVar[frozenset[str]] = frozenset()

    @abstractmethod
    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        """Return the text that takes the place of ``ctx.original(span)`` in the output."""


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Return ``text`` with each non-overlapping ``(start, end, new)`` range replaced."""
    out, pos = [], 0
    for start, end, new in sorted(edits):
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)
