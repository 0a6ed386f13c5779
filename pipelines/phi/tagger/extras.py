"""Features of a token that depend on the note around it (the tagger's ``_extras``): line
starts, gazetteer phrases, a kinship word a few tokens back. Split from
:mod:`pipelines.phi.tagger.features`; the line starts are found in C where the compiled helper
is built (``pipelines/phi/tagger/_rows_c.pyx``), by bisection otherwise."""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import cache
from itertools import accumulate, compress, count, repeat
from operator import add
from typing import TYPE_CHECKING, Final

from pipelines import compiled
from pipelines.phi.tagger.gazetteers import (
    _END,
    _GAZETTEERS,
    GazetteerPlan,
    _any_first_word,
    add_gazetteer_features,
    gazetteer_plans,
)
from pipelines.phi.wordlists import word_set

if TYPE_CHECKING:
    from pipelines.phi.tagger.features import Attributes

_KIN: Final = word_set("tagger_cues_kin")


@dataclass(frozen=True, slots=True)
class _Plan:
    """What ``_extras`` looks for, worked out once per model: the records of the kept
    note-level features (None: not kept, so not looked for)."""

    bol: bytes | None
    kin: bytes | None
    gazetteers: tuple[GazetteerPlan, ...]


def _plan(attributes: Attributes) -> _Plan:
    def record(attribute: str) -> bytes | None:
        return attributes.one(attribute) if attribute in attributes else None

    return _Plan(record("bol"), record("kin<"), gazetteer_plans(attributes))


def _extras(text: str, starts: list[int], lowers: list[str], plan: _Plan) -> dict[int, bytes]:
    """Features of a token that depend on the note around it: line starts, gazetteer
    phrases, a kinship word a few tokens back ("wife of 30 years, Ann"), each token's
    records end to end. Only those kept by the model are added (``_plan``)."""
    extras: dict[int, bytes] = {}
    if plan.bol:
        _add_line_features(text, starts, extras, plan.bol)
    if not (plan.gazetteers or plan.kin):
        return extras
    # the few tokens either family starts from, found in one pass over the note
    fast = compiled.helper("rows")
    if fast is not None:
        phrases, kins = fast.marked(lowers, _marked_words(), _second_words(), _ALONE, _KIN)
    else:
        phrases, kins = _marked(lowers)
    if plan.gazetteers and phrases:
        add_gazetteer_features(lowers, extras, plan.gazetteers, phrases)
    if plan.kin:
        kin = plan.kin
        n = len(lowers)
        for i in kins:
            for j in range(i + 3, min(i + 6, n)):
                extras[j] = extras.get(j, b"") + kin
    return extras


def _marked(lowers: list[str]) -> tuple[list[int], list[int]]:
    """The tokens where some gazetteer's phrase may start (``_phrase_starts``) and those of a
    kinship word, found among the few marked (``_marked_words``): the reference of
    ``_rows_c.marked``."""
    marked = list(compress(count(), map(_marked_words().__contains__, lowers)))
    return _phrase_starts(lowers, marked), [i for i in marked if lowers[i] in _KIN]


def _phrase_starts(lowers: list[str], marked: list[int]) -> list[int]:
    """The tokens of ``marked`` where some gazetteer's phrase may start: a phrase of one
    word, or a first word the next token goes on from (``_second_words``). Most first
    words of a note are common ("new", "st") and go on to no phrase."""
    seconds = _second_words()
    last = len(lowers) - 1
    return [
        i
        for i in marked
        if (after := seconds.get(lowers[i])) is not None
        and (after is _ALONE or (i < last and lowers[i + 1] in after))
    ]


_ALONE: Final[frozenset[str]] = frozenset({""})  # a phrase of one word: it starts here


@cache
def _second_words() -> dict[str, frozenset[str]]:
    """Each gazetteer's first word -> the words that go on from it in any gazetteer, or
    ``_ALONE`` when it is a phrase of its own in one of them."""
    seconds: dict[str, set[str]] = {}
    alone: set[str] = set()
    for gazetteer in _GAZETTEERS.values():
        for word, node in gazetteer().trie.items():
            seconds.setdefault(word, set()).update(node)
            if _END in node:
                alone.add(word)
    return {w: _ALONE if w in alone else frozenset(after) for w, after in seconds.items()}


@cache
def _marked_words() -> frozenset[str]:
    """The first words of the gazetteers' phrases and the kinship words."""
    return _any_first_word() | _KIN


def _add_line_features(text: str, starts: list[int], extras: dict[int, bytes], bol: bytes) -> None:
    """``bol`` on the first token and on the first token after each line break (twice on
    the first when a break comes before it)."""
    if not starts:
        return
    fast = compiled.helper("rows")
    after_breaks = (
        fast.line_starts(text, starts) if fast is not None else _after_breaks(text, starts)
    )
    extras[0] = extras.get(0, b"") + bol
    for k in after_breaks:
        extras[k] = extras.get(k, b"") + bol


def _after_breaks(text: str, starts: list[int]) -> list[int]:
    """The first token at or after each line's start, found in C by bisection, each once, none
    past the last token (the reference of ``_rows_c.line_starts``: one scan of the text)."""
    n = len(starts)
    line_starts = accumulate(map(add, map(len, text.split("\n")[:-1]), repeat(1)))
    after_breaks = dict.fromkeys(map(bisect.bisect_left, repeat(starts), line_starts))
    after_breaks.pop(n, None)  # breaks after the last token open no line of tokens
    return list(after_breaks)
