"""What a surrogate needs to know: the patient's state, the settings, the note itself.

``ReplaceContext`` is built once per document by the pipeline. It never reads the clock:
the reference date (the document's date) is passed in.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property

import re2

from keystore.api import PatientState
from surrogates.base import SpanLike
from surrogates.choice import Chooser, Refused
from surrogates.pieces import whitespace_pieces

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+")
# Up to this length a substring test of the lower-cased note rules most words out without
# building the word set; above it, each test would cost a scan of the note: the set, once.
SUBSTRING_TEST_CHARS = 20_000
# At most this many substring tests a note (each scans it), then the set: a note of
# thousands of distinct names asks for thousands of words, and a scan each was quadratic.
SUBSTRING_TESTS = 16
_PIECE_CHARS = 1 << 16  # a long note's words are listed this much at a time


def note_words(text: str, piece_chars: int = _PIECE_CHARS) -> frozenset[str]:
    """The lower-cased ``_WORD`` tokens of ``text``.

    No token holds whitespace, so the tokens of the text are those of its whitespace-separated
    chunks, and a long note repeats few distinct chunks: each is tokenised once. The chunks
    are listed a piece at a time (cut at whitespace), never a string per word of the note.
    """
    chunks: set[str] = set()
    for start, end in whitespace_pieces(text, piece_chars):
        chunks.update(text[start:end].split())
    words: set[str] = set()
    for chunk in chunks:
        words.update(word.lower() for word in _WORD.findall(chunk))
    return frozenset(words)


_PRONOUN = re.compile(r"\b(he|him|his|himself|she|her|hers|herself)\b", re.I)
_MALE_PRONOUNS = frozenset({"he", "him", "his", "himself"})
PRONOUN_WINDOW = 200  # characters after a name searched for the pronoun that refers to it
PRONOUN_MAJORITY = 2  # the note's pronouns decide when one gender has twice the other's count


def pronoun_gender(text: str) -> str:
    """The gender the pronouns of ``text`` point to: one gender's pronouns at least
    ``PRONOUN_MAJORITY`` times the other's, else ""."""
    if len(text) > PRONOUN_SCAN_CHARS and text.isascii():
        male, female = _ascii_pronoun_counts(text)
    else:
        male, female = _pronoun_counts(text)
    if male and male >= PRONOUN_MAJORITY * female:
        return "M"
    if female and female >= PRONOUN_MAJORITY * male:
        return "F"
    return ""


PRONOUN_SCAN_CHARS = 20_000  # above it, an ASCII text's pronouns are counted by re2


def _pronoun_counts(text: str) -> tuple[int, int]:
    """(male, female) pronouns in ``text``."""
    male = female = 0
    for m in _PRONOUN.finditer(text):
        if m.group().lower() in _MALE_PRONOUNS:
            male += 1
        else:
            female += 1
    return male, female


_PRONOUN_ASCII = re2.compile(rb"\b(?:he|him|his|himself|she|her|hers|herself)\b")


def _ascii_pronoun_counts(text: str) -> tuple[int, int]:
    """``_pronoun_counts`` of an ASCII text, by one re2 scan of its lower-cased bytes: in
    ASCII, lower-casing is what ``re.I`` folds, and re2's word boundary on bytes is
    ``re``'s (the word characters are ``[0-9A-Za-z_]`` either way)."""
    male = female = 0
    for word in _PRONOUN_ASCII.findall(text.lower().encode("ascii")):
        if word.decode("ascii") in _MALE_PRONOUNS:
            male += 1
        else:
            female += 1
    return male, female


def first_pronoun(text: str, end: int) -> str:
    """The first pronoun within ``PRONOUN_WINDOW`` characters after ``end``, or ""."""
    m = _PRONOUN.search(text, end, end + PRONOUN_WINDOW) if end < len(text) else None
    return m.group() if m else ""


@dataclass(frozen=True)
class SurrogateSettings:
    """The policy's surrogate section (pipelines builds it from ``Policy``)."""

    age_ceiling: int = 89
    date_shift_min_days: int = 30
    date_shift_max_days: int = 730


def new_patient_state(
    settings: SurrogateSettings,
    randbelow: Callable[[int], int] = secrets.randbelow,
    token_bytes: Callable[[int], bytes] = secrets.token_bytes,
) -> PatientState:
    """A fresh identity: a shift drawn once in [min, max] days back (never 0) and a seed."""
    low = max(1, settings.date_shift_min_days)
    high = max(low, settings.date_shift_max_days)
    shift = low + randbelow(high - low + 1)
    return PatientState(shift_days=-shift, pseudonym=token_bytes(16).hex(), seed=token_bytes(32))


@dataclass
class ReplaceContext:
    """Per-document context; surrogates record new map entries in ``state`` and set ``changed``."""

    state: PatientState
    text: str
    settings: SurrogateSettings = field(default_factory=SurrogateSettings)
    reference_date: date | None = None
    known_given: frozenset[str] = frozenset()  # lower-cased given names known for this document
    known_family: frozenset[str] = frozenset()
    # the patient's recorded sex ("M", "F" or ""; PID-8, Patient.gender) and own given names:
    # a surrogate for one of those names keeps the recorded sex
    recorded_sex: str = ""
    patient_given: frozenset[str] = frozenset()
    changed: bool = False
    _substring_tests: int = field(default=0, repr=False, compare=False)
    # per pool drawn from (see ``refused``): the indices known refused in this document
    _refused: dict[object, Refused] = field(default_factory=dict, repr=False, compare=False)
    # values of a state map, kept as a set while surrogates add to the map through ``mapped``
    _values: dict[int, tuple[dict[str, str], set[str], int]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def original(self, span: SpanLike) -> str:
        return self.text[span.start : span.end]

    @property
    def shift(self) -> timedelta:
        return timedelta(days=self.state.shift_days)

    @cached_property
    def original_tokens(self) -> frozenset[str]:
        """Every word of the note, lower-cased: a surrogate may never be one of them."""
        return note_words(self.text)

    @cached_property
    def pronoun_gender(self) -> str:
        """ "M" or "F" when the note's pronouns point clearly to one gender, else ""."""
        return pronoun_gender(self.text)

    @cached_property
    def lowered(self) -> str:
        return self.text.lower()

    def is_note_word(self, word: str) -> bool:
        """``word in self.original_tokens``, without building that set when an ASCII word
        does not even occur in the lower-cased note: every ASCII token is a substring of
        ``text.lower()`` (lower-casing is per character but for the final-sigma rule, which
        never yields ASCII), so the substring test can only rule words out. After
        ``SUBSTRING_TESTS`` tests the set is built: the cost stays linear in the note."""
        if (
            self._substring_tests < SUBSTRING_TESTS
            and len(self.text) <= SUBSTRING_TEST_CHARS
            and word.isascii()
        ):
            self._substring_tests += 1
            if word not in self.lowered:
                return False
        return word in self.original_tokens

    def refused(self, key: object, size: int) -> Refused:
        """The indices of the pool ``key`` (of ``size`` items) found refused so far in this
        document: what refuses a candidate (a word of the note, a known name, a surrogate
        already given) only grows while the document is replaced."""
        found = self._refused.get(key)
        if found is None or found.size != size:
            found = self._refused[key] = Refused(size)
        return found

    def taken(self, table: dict[str, str]) -> set[str]:
        """The surrogates already in ``table`` (not to be drawn again), as a set kept up to
        date by ``mapped``: rebuilding it for every draw made a long note quadratic."""
        entry = self._values.get(id(table))
        if entry is None or entry[0] is not table or entry[2] != len(table):
            entry = (table, set(table.values()), len(table))
            self._values[id(table)] = entry
        return entry[1]

    def chooser(self, purpose: str, original: str) -> Chooser:
        return Chooser(self.state.seed, purpose, original)

    def mapped(self, table: dict[str, str], key: str, make: Callable[[], str]) -> str:
        """Look ``key`` up in a state map; on a miss make the surrogate and remember it."""
        found = table.get(key)
        if found is None:
            found = make()
            table[key] = found
            self.changed = True
            entry = self._values.get(id(table))
            if entry is not None and entry[0] is table and entry[2] == len(table) - 1:
                entry[1].add(found)
                self._values[id(table)] = (table, entry[1], len(table))
        return found

    def is_original_word(self, words: Iterable[str]) -> bool:
        return any(self.is_note_word(w.lower()) for w in words)
