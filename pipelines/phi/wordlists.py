"""The one loader of the detector's hand-written vocabulary: every word list lives in
``pipelines/phi/data/vocabulary/<name>.txt`` (described in the README there).

Each file holds words separated by spaces or line breaks; ``#`` starts a comment. A role file
has sections (``[provider]``, ``[relative]``, ``[patient]``, ``[other]``) naming the role its
words give; a word in two sections takes the last. A phrase file holds one phrase a line, in
the order its reader wants them; a category phrase file has sections named by a ``Category``
value (``[MRN]``). Every file is read once and cached for the life of the process (a module
that names a list in a constant reads it when imported), never per document.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from importlib import resources
from types import MappingProxyType
from typing import Final

from pipelines.errors import DeidstreamError
from pipelines.spans import Category

_PACKAGE: Final = "pipelines.phi"
_FOLDER: Final = ("data", "vocabulary")
_ROLES: Final = MappingProxyType(
    {
        "provider": Category.NAME_PROVIDER,
        "relative": Category.NAME_RELATIVE,
        "patient": Category.NAME_PATIENT,
        "other": Category.NAME_OTHER,
    }
)


class WordListError(DeidstreamError):
    """A shipped word list is malformed: a packaging fault, never retried."""

    reason_class = "word_list"


def _lines(text: str) -> Iterator[str]:
    """The lines without comments and surrounding space, empty ones dropped."""
    for line in text.splitlines():
        kept = line.split("#", 1)[0].strip()
        if kept:
            yield kept


def _read(name: str) -> str:
    return resources.files(_PACKAGE).joinpath(*_FOLDER, f"{name}.txt").read_text("utf-8")


def parse_words(text: str, name: str = "<text>") -> frozenset[str]:
    """The words of a list without sections."""
    words: set[str] = set()
    for line in _lines(text):
        if line.startswith("["):
            raise WordListError(f"word list {name!r} has a section; use role_map")
        words.update(line.split())
    return frozenset(words)


def parse_roles(text: str, name: str = "<text>") -> MappingProxyType[str, Category]:
    """Word -> role of a list with role sections."""
    roles: dict[str, Category] = {}
    role: Category | None = None
    for line in _lines(text):
        if line.startswith("[") and line.endswith("]"):
            role = _ROLES.get(line[1:-1].strip())
            if role is None:
                raise WordListError(f"word list {name!r}: unknown section {line}")
            continue
        if role is None:
            raise WordListError(f"word list {name!r}: words before the first section")
        roles.update(dict.fromkeys(line.split(), role))
    return MappingProxyType(roles)


@cache
def word_set(name: str) -> frozenset[str]:
    """The words of ``vocabulary/<name>.txt`` (a file without sections)."""
    return parse_words(_read(name), name)


@cache
def word_list(name: str) -> tuple[str, ...]:
    """The words of ``vocabulary/<name>.txt`` in file order, each once (for a regex
    alternation, whose order matters)."""
    words = parse_words(_read(name), name)  # checks the format
    ordered = (w for line in _lines(_read(name)) for w in line.split())
    return tuple(dict.fromkeys(w for w in ordered if w in words))


@cache
def role_map(name: str) -> MappingProxyType[str, Category]:
    """Word -> role of ``vocabulary/<name>.txt`` (a file with role sections)."""
    return parse_roles(_read(name), name)


@cache
def phrases(name: str) -> tuple[tuple[str, ...], ...]:
    """The phrases of ``vocabulary/<name>.txt``, one a line, as word tuples in file order."""
    return tuple(tuple(line.split()) for line in _lines(_read(name)))


@cache
def category_phrases(name: str) -> MappingProxyType[str, Category]:
    """Phrase -> category of ``vocabulary/<name>.txt``: sections named by a ``Category`` value,
    one phrase a line (its words joined by one space), in file order."""
    out: dict[str, Category] = {}
    category: Category | None = None
    for line in _lines(_read(name)):
        if line.startswith("[") and line.endswith("]"):
            try:
                category = Category(line[1:-1].strip())
            except ValueError:
                raise WordListError(f"word list {name!r}: unknown category {line}") from None
            continue
        if category is None:
            raise WordListError(f"word list {name!r}: a phrase before the first section")
        out[" ".join(line.split())] = category
    return MappingProxyType(out)
