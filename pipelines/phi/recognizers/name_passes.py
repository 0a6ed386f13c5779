"""Note-level passes of the name recognizer: the signature line, propagation of a name found
once to its other occurrences in the note, and joining name words into spans."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.name_cues import P, cues
from pipelines.phi.recognizers.name_words import (
    _base,
    _tight,
)
from pipelines.spans import Category, Span


def _signature(
    words: tuple[Token, ...], text: str, mixed: bool, take: Callable[[int, Category, float], None]
) -> None:
    """The note's last line as a signature: "Jane Doe" / "SUSAN" (a first name, maybe a surname)."""
    if not words or text[words[-1].end :].strip(" \t\r\n."):
        return
    k = len(words) - 1
    first = k
    while (
        first > 0 and k - first < 2 and "\n" not in text[words[first - 1].end : words[first].start]
    ):
        first -= 1
    while first < k and not lx.is_first_name(words[first].lower):
        first += 1
    head = words[first]
    if not lx.is_first_name(head.lower) or lx.name_score(head.lower) < 1.0:
        return
    if mixed and not (head.is_title or head.is_upper):
        return
    before = text[words[first - 1].end : head.start] if first > 0 else "\n"
    # on a line with other words: only right after a sentence ("... 1400U/HR. SUSAN")
    if "\n" not in before and not before.strip().endswith("."):
        return
    credentials = cues().credentials
    for idx in range(first, k + 1):
        if words[idx].lower not in credentials and lx.zipf(words[idx].lower) < 5.5:
            take(idx, P, 0.6)


def _propagate(toks: lx.Tokens, mixed: bool, taken: dict[int, tuple[Category, float]]) -> None:
    """A name found once in a note is a name wherever the same word recurs in that note."""
    words = toks.words
    found: dict[str, tuple[Category, float]] = {}
    for idx, (cat, conf) in taken.items():
        low = _base(words[idx].lower)
        if len(low) >= 3 and (lx.zipf(low) < 4.5 or lx.name_score(low) >= 1.5):
            found.setdefault(low, (cat, min(conf, 0.7)))
    if not found:
        return
    # the words whose base form was found, picked without a Python call per word
    forms = {*found, *(k + "'s" for k in found), *(k + "’s" for k in found)}
    for idx in lx.where(toks, forms):
        tok = words[idx]
        if idx in taken:
            continue
        hit = found.get(_base(tok.lower))
        if hit is not None and (not mixed or tok.is_title or tok.is_upper):
            taken[idx] = hit


def _spans(
    words: tuple[Token, ...], taken: dict[int, tuple[Category, float]], text: str
) -> list[Span]:
    out: list[Span] = []
    for i in sorted(taken):
        cat, conf = taken[i]
        tok = words[i]
        end = tok.end
        for suffix in ("'s", "’s"):
            if tok.lower.endswith(suffix) and len(tok.text) > len(suffix):
                end -= len(suffix)
        prev = out[-1] if out else None
        if (
            prev is not None
            and i > 0
            and prev.category is cat
            and words[i - 1].end == prev.end
            and _tight(text[prev.end : tok.start])
        ):
            # join adjacent words of one name into one span when only spaces/periods separate them
            out[-1] = Span(prev.start, end, cat, max(prev.confidence, conf), "names")
            continue
        out.append(Span(tok.start, end, cat, conf, "names"))
    return out
