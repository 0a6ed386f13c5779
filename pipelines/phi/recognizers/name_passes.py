"""Note-level steps of the name recognizer: the signature line and joining name words into
spans (each span names the pass that took its first word: ``Span.source``). A name found once
spreads to its other occurrences in the detector's one propagation step
(``pipelines.phi.propagate``)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.name_cues import P, cues
from pipelines.phi.recognizers.name_words import (
    _tight,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

# word index -> the role, the confidence and the pass that took the word
Taken = dict[int, tuple[Category, float, str]]


def _last_line_first_name(words: tuple[Token, ...], text: str) -> int:
    """The first census first name among the last three words of the note's last line (or
    the last word when there is none)."""
    k = len(words) - 1
    first = k
    while (
        first > 0 and k - first < 2 and "\n" not in text[words[first - 1].end : words[first].start]
    ):
        first -= 1
    while first < k and not lx.is_first_name(words[first].lower):
        first += 1
    return first


_NUMBER_SET_APART: Final = re.compile(r"[ \t]*[,(][ \t]*\d")


def _signature_head(words: tuple[Token, ...], text: str, mixed: bool) -> int | None:
    """Where the note's last line starts a signature: a census first name among its last three
    words ("Jane Doe" / "SUSAN"), alone on its line or right after a sentence."""
    if not words or text[words[-1].end :].strip(" \t\r\n."):
        return None
    first = _last_line_first_name(words, text)
    head = words[first]
    if not lx.is_first_name(head.lower) or lx.name_score(head.lower) < 1.0:
        return None
    if mixed and not (head.is_title or head.is_upper):
        return None
    if _NUMBER_SET_APART.match(text, head.end):
        return None  # "HILDA, 95, LIVES ALONE": a person and her age, no signature
    before = text[words[first - 1].end : head.start] if first > 0 else "\n"
    if "\n" in before or _signed_off(words, first, before):
        return first
    # on a line with other words: only right after a sentence ("... 1400U/HR. SUSAN"), and
    # a title's period ends none ("discussed with Dr. Jim Hanley's fellow")
    if not before.strip().endswith(".") or words[first - 1].lower in cues().titles:
        return None
    return first


def _signed_off(words: tuple[Token, ...], first: int, before: str) -> bool:
    """A sign-off word and a comma before the name: "Thanks, Bea", "thx, hal q", "thank you,
    bea", "Regards, Greta Quist"."""
    if before.strip(" \t") != ",":
        return False
    word = words[first - 1].lower
    if word == "you" and first > 1:
        word = words[first - 2].lower  # "thank you,"
    return word in _sign_offs()


@cache
def _sign_offs() -> frozenset[str]:
    return word_set("name_sign_offs")


def _signature(
    words: tuple[Token, ...], text: str, mixed: bool, take: Callable[[int, Category, float], None]
) -> None:
    """The note's last line as a signature: "Jane Doe" / "SUSAN" (a first name, maybe a surname)."""
    first = _signature_head(words, text, mixed)
    if first is None:
        return
    credentials = cues().credentials
    for idx in range(first, len(words)):
        if idx > first and not _signature_goes_on(words, idx, text, mixed):
            break  # "Hilda, 95, lives alone": a clause after the name is no signature
        if words[idx].lower not in credentials and lx.zipf(words[idx].lower) < 5.5:
            take(idx, P, 0.6)
        if _word_end(words[idx]) < words[idx].end:
            break  # "Jim Hanley's fellow": what follows a possessive is no one's name


def _signature_goes_on(words: tuple[Token, ...], idx: int, text: str, mixed: bool) -> bool:
    """Whether word ``idx`` still belongs to the signature that the word before it is in: only
    blanks, a hyphen or an initial's period between ("Jane Doe", "Jane Q. Doe"), a credential
    after a comma ("Jane Doe, RN"), in a mixed-case note no lower-case word ("Hilda lives
    alone"), in a one-case note no English word that is no census name ("HAL STAYED")."""
    tok = words[idx]
    if tok.lower in cues().credentials:
        return True
    if not _tight(text[words[idx - 1].end : tok.start]):
        return False
    if _english_word(tok, mixed):
        return False  # "VISITORS:\nBRADLEY STAYED OVERNIGHT.": a clause, no signature
    return not (mixed and tok.text.islower())


# Zipf from which a word in no census list is plain English, no name (a signature's)
_ENGLISH: Final = 3.0


def _english_word(tok: Token, mixed: bool) -> bool:
    """In a one-case note, an English word in no census list that is no joiner of a list of
    names ("HAL STAYED"; not "greta and hal")."""
    low = tok.lower
    return (
        not mixed
        and lx.name_score(low) == -9.0
        and lx.zipf(low) >= _ENGLISH
        and low not in cues().joiners
    )


def _word_end(tok: Token) -> int:
    """Where the name in ``tok`` ends: before a possessive "'s"."""
    for suffix in ("'s", "’s"):
        if tok.lower.endswith(suffix) and len(tok.text) > len(suffix):
            return tok.end - len(suffix)
    return tok.end


def _spans(words: tuple[Token, ...], taken: Taken, text: str) -> list[Span]:
    """The words taken, as spans: adjacent words of one name and role joined when only spaces
    or periods separate them (the span keeps its first word's pass)."""
    out: list[Span] = []
    for i in sorted(taken):
        cat, conf, by = taken[i]
        tok = words[i]
        end = _word_end(tok)
        prev = out[-1] if out else None
        if (
            prev is not None
            and i > 0
            and prev.category is cat
            and words[i - 1].end == prev.end
            and _tight(text[prev.end : tok.start])
        ):
            out[-1] = Span(prev.start, end, cat, max(prev.confidence, conf), prev.source)
            continue
        out.append(Span(tok.start, end, cat, conf, by))
    return out
