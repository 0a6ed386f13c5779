"""Propagation: a string found once in a note spreads to its other occurrences there.

A surname or a town is usually written several times in a note, in contexts of varying
strength; one sure finding makes the others. One step does it for every caller, with the
rules of when a string spreads declared once, as data (``RULES``, one ``Rule`` per use):

- ``names``, ``places`` (the rules' spans) and ``learned`` (the tagger's): the detector runs
  them once after the recognizers (:func:`in_note`), before the vetoes, the union with the
  tagger and the merge, so a copy is judged like any other span;
- ``chunks``: a note detected in chunks gets back what its cuts lost (``deidentify``);
- ``every_occurrence``: every occurrence of a string acted on is replaced (issue 26,
  ``deidentify``).

A rule says which spans seed (recognizers, category groups, confidence, one line), which of
their strings spread (the whole phrase, each word alone) under which guards (length, how
common the word is in English, lists a word must not be in), how an occurrence must be
written (case, the spaces between its words), what blocks it (a span there already) and what
the copy is (confidence ceiling, source, whether it joins the name beside it). Occurrences
are whole words: no word character (``\\w``) right before or after, no letters joined by an
apostrophe ("Don" is not in "don't"); a possessive "'s" after a name is allowed and left out
of the span. The table of how the five former copies differed, and what was kept, is in
docs/architecture.md ("Propagation").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache, lru_cache
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.propagate_find import (
    WORD_RUN,
    StringTrie,
    first_words,
    is_word_char,
    word_end,
    written_as_name,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span


class Case(Enum):
    """How an occurrence must be written, against the found string."""

    AS_WRITTEN = "as written"  # the same characters
    ANY = "any case"
    # any case; where the note writes in both cases, each word capitalised or in capitals
    NAME = "as a name"


class Strings(Enum):
    """Which strings of a seed spread."""

    WORDS = "words"  # each word alone
    PIECES = "pieces"  # each blank-separated piece of letters alone (no "X-Y", no "O'X")
    PLACE = "place"  # a one-word seed as a word, a longer one as its phrase
    WORDS_THEN_PHRASE = "words, phrase"  # its words alone, then its phrase (of 2+ words)
    PHRASE_AND_NAME_WORDS = "phrase, name words"  # its phrase, and of a name each word


class Gap(Enum):
    """What may stand between the words of a phrase's occurrence."""

    AS_FOUND = "as found"  # what stands in the seed (places: one space)
    WHITESPACE = "whitespace"  # any run of whitespace, line breaks included


class Blocked(Enum):
    """The spans that keep a copy from being made where they overlap it."""

    GROUP = "group"  # a span of the seed's category group
    ANY = "any"  # any span given


@dataclass(frozen=True, slots=True)
class Guard:
    """When a string spreads. A word is *rare* when its English Zipf frequency is under
    ``rare_below`` (``rare_below_sure`` for a seed of ``sure_category`` with at least
    ``sure_from`` confidence; ``by_recognizer`` overrides per seed recognizer), or its census
    name score is at least ``name_over``; ``excluded`` names word sets (``EXCLUSIONS``) it
    must not be in. ``any_word``: one rare word of the string suffices (else each must be).
    A string with digits spreads only with ``min_digits`` of them (0: never)."""

    min_chars: int = 3
    min_confidence: float = 0.0
    rare_below: float | None = None
    rare_below_sure: float | None = None
    sure_category: Category | None = None
    sure_from: float = 1.0
    by_recognizer: tuple[tuple[str, float], ...] = ()
    name_over: float | None = None
    excluded: tuple[str, ...] = ()
    any_word: bool = False
    min_digits: int = 0


@dataclass(frozen=True, slots=True, eq=False)  # hashed by identity: a memo key
class Rule:
    """One use of propagation (module docstring)."""

    source: str  # the copies' ``Span.source``
    recognizers: frozenset[str] | None  # seeds' recognizer (``Span.source`` up to "."); None: any
    groups: frozenset[str] | None  # seeds' category groups; None: any (or the caller's ``acts``)
    strings: Strings
    phrase: Guard | None  # the seed's whole string (None: never)
    word: Guard  # a word of the seed alone
    case: Case
    gap: Gap
    blocked: Blocked
    ceiling: float  # a copy's confidence: the seed's, at most this
    one_line: bool = True  # a seed across a line break does not spread
    joins: bool = False  # a copy joins the span of its category beside it ("Jane" + "Doe")
    longest_first: bool = False  # at an occurrence, the longest string first (else as seen)


_NAME: Final = frozenset({"NAME"})
_PLACE: Final = frozenset({"LOCATION"})

RULES: Final[dict[str, Rule]] = {
    # a name word of the name recognizer: rare in English or more a name than a word
    "names": Rule(
        source="names.propagated",
        recognizers=frozenset({"names"}),
        groups=_NAME,
        strings=Strings.WORDS,
        phrase=None,
        word=Guard(min_chars=3, rare_below=4.5, name_over=1.5),
        case=Case.NAME,
        gap=Gap.AS_FOUND,
        blocked=Blocked.GROUP,
        ceiling=0.7,
        one_line=False,
        joins=True,
    ),
    # a place of the location recognizer: a rare one-word place, or a sure phrase
    "places": Rule(
        source="locations.propagated",
        recognizers=frozenset({"locations"}),
        groups=_PLACE,
        strings=Strings.PLACE,
        phrase=Guard(min_chars=6, min_confidence=0.7),
        word=Guard(
            min_chars=1,
            min_confidence=0.6,
            rare_below=3.5,
            rare_below_sure=4.6,  # a listed city found by a sure cue: "Rome" too
            sure_category=Category.LOCATION_CITY,
            sure_from=0.7,
            excluded=("care units", "first names"),
        ),
        case=Case.NAME,
        gap=Gap.AS_FOUND,
        blocked=Blocked.GROUP,
        ceiling=0.65,
    ),
    # a rare word inside a span of the tagger (weaker evidence: a rarer word)
    "learned": Rule(
        source="tagger",
        recognizers=frozenset({"tagger"}),
        groups=None,
        strings=Strings.PIECES,
        phrase=None,
        word=Guard(min_chars=3, rare_below=3.5),
        case=Case.ANY,
        gap=Gap.AS_FOUND,
        blocked=Blocked.ANY,
        ceiling=1.0,
        one_line=False,
    ),
    # a note detected in chunks: what the name and place rules found, as written
    "chunks": Rule(
        source="recurrence",
        recognizers=frozenset({"names", "locations"}),
        groups=None,
        strings=Strings.WORDS_THEN_PHRASE,
        phrase=Guard(min_chars=3),
        word=Guard(min_chars=3, rare_below=4.5, by_recognizer=(("locations", 3.5),)),
        case=Case.AS_WRITTEN,
        gap=Gap.AS_FOUND,
        blocked=Blocked.ANY,
        ceiling=0.7,
    ),
    # every occurrence of a string acted on (issue 26): any case, across lines
    "every_occurrence": Rule(
        source="occurrence",
        recognizers=None,
        groups=None,
        strings=Strings.PHRASE_AND_NAME_WORDS,
        phrase=Guard(
            min_chars=3,
            rare_below=4.5,
            name_over=1.0,
            excluded=("clinical", "short capitals"),
            any_word=True,
            min_digits=4,
        ),
        word=Guard(
            min_chars=3,
            rare_below=4.5,
            name_over=1.0,
            excluded=("clinical", "short capitals", "titles"),
            any_word=True,
        ),
        case=Case.ANY,
        gap=Gap.WHITESPACE,
        blocked=Blocked.ANY,
        ceiling=0.7,
        one_line=False,
        longest_first=True,
    ),
}

# a word: letters, maybe joined by apostrophes ("O'Brien"); a name piece: one apostrophe
_WORD: Final = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_NAME_PIECE: Final = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_POSSESSIVE: Final = ("'s", "’s")
_SHORT_CAPITALS: Final = 3  # "CHF", "ICU": in a mixed-case note, short capitals abbreviate


@cache
def _titles() -> frozenset[str]:
    from surrogates.name_tables import SUFFIXES, TITLES

    return frozenset(TITLES | SUFFIXES)


def _care_unit(word: str, low: str, mixed: bool) -> bool:
    return low in word_set("care_units")


def _first_name(word: str, low: str, mixed: bool) -> bool:
    return lx.is_first_name(low)


def _clinical(word: str, low: str, mixed: bool) -> bool:
    return lx.clinical_word(low)


def _title(word: str, low: str, mixed: bool) -> bool:
    return low in _titles()


def _short_capitals(word: str, low: str, mixed: bool) -> bool:
    return mixed and word.isupper() and len(word) <= _SHORT_CAPITALS


# the word sets a guard may exclude: (word as written, lower case, note in both cases) -> in
EXCLUSIONS: Final[dict[str, Callable[[str, str, bool], bool]]] = {
    "care units": _care_unit,  # "ICU", "CCU": a unit of the hospital, not a place's name
    "first names": _first_name,  # "Florence", "Georgia": a person's as often as a place's
    "clinical": _clinical,  # clinical vocabulary
    "titles": _title,  # "Mrs", "Jr": parts of a name that are no one's name
    "short capitals": _short_capitals,  # "CHF" where the note writes in both cases
}


def recognizer_of(span: Span) -> str:
    """The recognizer that made a span: its source up to the pass ("names.after_title")."""
    return span.source.partition(".")[0]


def _ceiling(guard: Guard, seed: Span) -> float | None:
    if guard.sure_category is seed.category and seed.confidence >= guard.sure_from:
        return guard.rare_below_sure
    for recognizer, ceiling in guard.by_recognizer:
        if recognizer_of(seed) == recognizer:
            return ceiling
    return guard.rare_below


def _rare(word: str, guard: Guard, ceiling: float | None, mixed: bool) -> bool:
    """Is ``word`` evidence of itself under ``guard``?"""
    if len(word) < guard.min_chars:
        return False
    low = word.lower()
    common = ceiling is not None and lx.zipf(low) >= ceiling
    if common and (guard.name_over is None or lx.name_score(low) < guard.name_over):
        return False
    return not any(EXCLUSIONS[name](word, low, mixed) for name in guard.excluded)


def passes(string: str, guard: Guard, seed: Span, mixed: bool) -> bool:
    """Does ``string``, a string of ``seed``, spread under ``guard``?"""
    if len(string) < guard.min_chars or seed.confidence < guard.min_confidence:
        return False
    if not is_word_char(string[0]):
        return False
    digits = sum(c.isdigit() for c in string) if guard.min_digits else 0
    if digits:  # dates, ids: by their digits
        return digits >= guard.min_digits
    ceiling = _ceiling(guard, seed)
    if not guard.any_word:
        return _rare(string, guard, ceiling, mixed)
    return any(_rare(w, guard, ceiling, mixed) for w in WORD_RUN.findall(string))


def _base(word: str) -> str:
    """The word without a possessive "'s"."""
    return word[:-2] if word[-2:].lower() in _POSSESSIVE and len(word) > 2 else word


def strings(text: str, seed: Span, rule: Rule, mixed: bool) -> tuple[str, ...]:
    """The strings of ``seed`` that spread under ``rule``, in the order they are tried."""
    phrase = text[seed.start : seed.end]
    return _strings(rule, phrase, seed.category, seed.confidence, seed.source, mixed)


@lru_cache(maxsize=1 << 14)
def _strings(
    rule: Rule, phrase: str, category: Category, confidence: float, source: str, mixed: bool
) -> tuple[str, ...]:
    """:func:`strings`, once per seed string, category, confidence and source (a name
    recurs through a patient's notes)."""
    if rule.one_line and "\n" in phrase:
        return ()
    return tuple(_judged(phrase, Span(0, len(phrase), category, confidence, source), rule, mixed))


def _judged(phrase: str, seed: Span, rule: Rule, mixed: bool) -> list[str]:
    kind = rule.strings
    if kind is Strings.WORDS:
        words = (_base(w) for w in _WORD.findall(phrase))
        return [w for w in words if passes(w, rule.word, seed, mixed)]
    if kind is Strings.PIECES:
        pieces = (p.strip(".,;:'’") for p in phrase.split())
        return [p for p in pieces if p.isalpha() and passes(p, rule.word, seed, mixed)]
    if kind is Strings.PLACE:
        return _place(phrase, seed, rule, mixed)
    if kind is Strings.WORDS_THEN_PHRASE:
        return _words_then_phrase(phrase, seed, rule, mixed)
    return _phrase_and_name_words(phrase, seed, rule, mixed)


def _place(phrase: str, seed: Span, rule: Rule, mixed: bool) -> list[str]:
    """A one-word place as a word; a longer one as its words one space apart."""
    if " " not in phrase:
        ok = _WORD.fullmatch(phrase) and passes(phrase, rule.word, seed, mixed)
        return [phrase] if ok else []
    parts = phrase.split()
    if rule.phrase is None or not all(_WORD.fullmatch(p) for p in parts):
        return []
    return [" ".join(parts)] if passes(phrase, rule.phrase, seed, mixed) else []


def _words_then_phrase(phrase: str, seed: Span, rule: Rule, mixed: bool) -> list[str]:
    """The seed's words (word runs) that pass, then its phrase when it is more than one."""
    if rule.phrase is None or not passes(phrase, rule.phrase, seed, mixed):
        return []
    words = [w for w in WORD_RUN.findall(phrase) if len(w) >= rule.word.min_chars]
    out = [w for w in words if passes(w, rule.word, seed, mixed)]  # "Will", "May": not alone
    if len(words) > 1 or (words and words[0] != phrase):
        out.append(phrase)
    return out


def _phrase_and_name_words(phrase: str, seed: Span, rule: Rule, mixed: bool) -> list[str]:
    """The seed's phrase (its whitespace made one space) and, of a name, its pieces."""
    phrase = " ".join(phrase.split())
    found = [phrase] if rule.phrase is not None else []
    if seed.category.is_name:
        found += _NAME_PIECE.findall(phrase)
    elif seed.category in _NAMED_PLACES and " " in phrase:
        found += [w for w in _NAME_PIECE.findall(phrase) if _distinctive(w)]
    out: list[str] = []
    for i, string in enumerate(found):
        guard = rule.phrase if i == 0 and rule.phrase is not None else rule.word
        if string and string not in out and passes(string, guard, seed, mixed):
            out.append(string)
    return out


# A facility's or an organisation's name: its distinctive words are its own ("Quillfeather"
# of "Quillfeather Industries", written alone later)
_NAMED_PLACES: Final = frozenset({Category.LOCATION_HOSPITAL, Category.LOCATION_OTHER})
_PLACE_KINDS: Final = (
    "facility_heads_generic", "facility_modifiers",
    "facility_descriptors", "facility_services", "org_suffixes", "street_suffixes",
    "street_suffix_abbreviations", "care_units",
)  # fmt: skip


@cache
def _place_kind_words() -> frozenset[str]:
    return frozenset().union(*map(word_set, _PLACE_KINDS))


def _distinctive(word: str) -> bool:
    """A word of a facility's name that names it: no kind of place, service or suffix, and
    one English hardly uses ("Quillfeather", not "Industries", "Regional", "Pkwy")."""
    low = word.lower()
    return len(low) >= 4 and low not in _place_kind_words() and lx.zipf(low) < 3.5


def _wanted(
    text: str,
    spans: Sequence[Span],
    rule: Rule,
    mixed: bool,
    acts: Callable[[Category], bool] | None,
) -> dict[str, Span]:
    """Each string to look for again -> the first seed it comes from."""
    wanted: dict[str, Span] = {}
    for seed in spans:
        if rule.recognizers is not None and recognizer_of(seed) not in rule.recognizers:
            continue
        if rule.groups is not None and seed.category.group not in rule.groups:
            continue
        if acts is not None and not acts(seed.category):
            continue
        for string in strings(text, seed, rule, mixed):
            wanted.setdefault(string, seed)
    if rule.longest_first:
        return dict(sorted(wanted.items(), key=lambda item: -len(item[0])))
    return wanted


def _covered(text: str, spans: Sequence[Span], rule: Rule) -> bytearray:
    covered = bytearray(len(text))
    for span in spans:
        group = rule.blocked is Blocked.GROUP and rule.groups is not None
        if group and rule.groups is not None and span.category.group not in rule.groups:
            continue
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    return covered


def spread(
    text: str,
    spans: Sequence[Span],
    rule: Rule,
    mixed: bool,
    acts: Callable[[Category], bool] | None = None,
) -> list[Span]:
    """Copies of the strings of ``spans`` that spread under ``rule`` wherever else ``text``
    writes them: whole words, outside the spans that block them (``rule.blocked``), in
    order. ``mixed``: the note writes in both cases (``Case.NAME``, "short capitals");
    ``acts``: the categories whose spans seed (the policy's), when the rule names none."""
    wanted = _wanted(text, spans, rule, mixed, acts)
    return _spread(text, spans, rule, mixed, wanted, text.lower) if wanted else []


def _spread(
    text: str,
    spans: Sequence[Span],
    rule: Rule,
    mixed: bool,
    wanted: dict[str, Span],
    lower: Callable[[], str],
) -> list[Span]:
    """:func:`spread` of the ``wanted`` strings; ``lower()``: ``text.lower()``."""
    anycase = rule.case is not Case.AS_WRITTEN
    scan = lower() if anycase else text
    if len(scan) != len(text):  # a letter whose lower case is longer: no offsets to share
        scan, anycase = text, False
    keyed: dict[str, Span] = {}  # the first seed of a string in any case
    for string, seed in wanted.items():
        keyed.setdefault(string.lower() if anycase else string, seed)
    covered = _covered(text, spans, rule)
    out = _copies(text, scan, keyed, covered, rule, mixed)
    if rule.joins and out:
        return _joined(text, spans, out, rule)
    return out


def _copies(
    text: str,
    scan: str,
    keyed: dict[str, Span],
    covered: bytearray,
    rule: Rule,
    mixed: bool,
) -> list[Span]:
    """At each whole-word occurrence of a string's first word, the first string (in
    ``keyed``'s order) written there (``StringTrie``: a cost per place bounded by the
    longest string, not by how many strings share a first word)."""
    capitals = rule.case is Case.NAME and mixed
    trie = StringTrie(keyed)
    out: list[Span] = []
    for at, word in first_words(scan, trie.firsts, covered):
        if covered[at]:
            continue  # a copy made just before reaches here
        for key, seed in trie.candidates(scan, at, word):
            end = _match(scan, at, key, rule)
            stop = word_end(text, end) if end is not None else None
            if stop is None or covered.find(1, at, stop) >= 0:
                continue
            if capitals and not written_as_name(text, at, stop):
                continue
            conf = min(seed.confidence, rule.ceiling)
            out.append(Span(at, stop, seed.category, conf, rule.source))
            covered[at:stop] = b"\x01" * (stop - at)
            break
    return out


@cache
def _flexible(phrase: str) -> re.Pattern[str]:
    return re.compile(r"\s+".join(re.escape(w) for w in phrase.split(" ")))


def _match(scan: str, at: int, string: str, rule: Rule) -> int | None:
    """The end of ``string`` written at ``at`` of ``scan``, or None."""
    if rule.gap is Gap.WHITESPACE and " " in string:
        m = _flexible(string).match(scan, at)
        return m.end() if m is not None else None
    return at + len(string) if scan.startswith(string, at) else None


def _tight(text: str, left: Span, right: Span) -> bool:
    """Two words of one name: separated by spaces, a hyphen or an initial's period."""
    gap = text[left.end : right.start]
    if len(gap) > 3 or "\n" in gap:
        return False
    mark = gap.strip()
    if mark in {"", "-"}:
        return True
    single = left.end - left.start == 1 or not text[left.end - 2].isalpha()
    return mark == "." and single


def _joined(text: str, spans: Sequence[Span], copies: list[Span], rule: Rule) -> list[Span]:
    """The copies, each joined to the seeding recognizer's spans and the copies of its
    category right beside it (a name's words found apart make one name)."""
    mine: list[Span] = []  # the recognizer's spans, none overlapping one before it
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if rule.recognizers is not None and recognizer_of(span) not in rule.recognizers:
            continue
        if not mine or mine[-1].end <= span.start:
            mine.append(span)
    made = {(c.start, c.end) for c in copies}
    ordered = sorted([*mine, *copies], key=lambda s: (s.start, -s.end))
    out: list[Span] = []
    run: list[Span] = []
    for span in ordered:
        prev = run[-1] if run else None
        if (
            prev is not None
            and prev.category is span.category
            and prev.end <= span.start
            and _tight(text, prev, span)
        ):
            run.append(span)
            continue
        out += _run_copy(run, made)
        run = [span]
    out += _run_copy(run, made)
    return out


def _run_copy(run: list[Span], made: set[tuple[int, int]]) -> list[Span]:
    """A run of adjacent name words as one copy, when it holds a copy."""
    if not any((s.start, s.end) in made for s in run):
        return []
    if len(run) == 1:
        return run
    first = run[0]
    conf = max(s.confidence for s in run)
    return [Span(first.start, run[-1].end, first.category, conf, first.source)]


def in_note(
    text: str, mixed: bool, kept: Sequence[Span], learned: Sequence[Span]
) -> tuple[list[Span], list[Span]]:
    """The detector's propagation, once per note after the recognizers: the copies of the
    rules' spans (``names``, ``places``) and of the learned recognizers' (``learned``).
    ``mixed``: the note's case as the recognizers read it (``lexicons.Tokens.mixed_case``)."""
    if not kept and not learned:
        return [], []
    lowered: list[str] = []  # the note in lower case, made once if a row needs it

    def lower() -> str:
        if not lowered:
            lowered.append(text.lower())
        return lowered[0]

    seeds: dict[str, list[Span]] = {}  # recognizer -> its spans, in order
    for span in (*kept, *learned):
        seeds.setdefault(span.source.partition(".")[0], []).append(span)
    copies: tuple[list[Span], list[Span]] = ([], [])
    for row, pool, out in (("names", kept, 0), ("places", kept, 0), ("learned", learned, 1)):
        rule = RULES[row]
        mine = [s for r in rule.recognizers or () for s in seeds.get(r, ())]
        wanted = _wanted(text, mine, rule, mixed, None) if mine else None
        if wanted:
            copies[out].extend(_spread(text, pool, rule, mixed, wanted, lower))
    return copies
