"""Person names from context cues, capitalisation and census name lists.

Why context first: in nursing notes half the names are written in all-uppercase or
all-lowercase, and many census names are English words ("Will", "Bean") or clinical eponyms
("Foley", "Parkinson"). So a word becomes a name when a cue says so — a title before it
("Dr.", "Mrs."), a credential after it ("RN", "MD", "RRT"), a role word ("wife", "son",
"per", "spoke with") — and the cue also gives the role: provider, relative or patient.
Without a cue only a word that is far more a name than an English word counts, and only
where capitalisation supports it. Eponym heads ("X catheter", "X's disease", "X sign") veto
a word for the whole note unless a title stands before it.

The recognizer is a few named passes over the note's words (``_visit`` tries them in order
at each word that may start a rule):

1. cue passes, at a cue word or an initial: ``_after_title`` ("Dr. X"),
   ``_before_credential`` ("X, RN"), ``_before_role_after`` ("X aware"), the role word passes
   (``_role_in_parens``, ``_family_contact``, ``_after_role``: "wife X", "spoke with X") and
   ``_initial_then_surname`` ("J. Xyz");
2. uncued passes: ``_title_case_pair`` ("Xyz Abc"), ``_capital_initial_surname`` ("J XYZ"),
   ``_lone_first_name`` and ``_one_case_full_name``;
3. note-level passes (``name_passes``): the signature line, propagation of a name found once
   to its other occurrences, the roles the structured message tells, and spans.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from functools import cache
from itertools import compress
from operator import itemgetter, or_
from string import ascii_lowercase
from typing import Final

from pipelines.memo import Memo
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.known import known_name_forms
from pipelines.phi.recognizers.name_cues import _RARE, OTHER, PT, Cues, P, R, cues
from pipelines.phi.recognizers.name_passes import _propagate, _signature, _spans
from pipelines.phi.recognizers.name_words import (
    _base,
    _city_state,
    _common_first_name,
    _dotted_credential,
    _eponyms,
    _first_before_surname,
    _is_initial,
    _line_start,
    _lower_full_name,
    _namey,
    _plausible,
    _rare_unknown,
    _role_slip,
    _sentence_start,
    _surname_after_first,
    _tight,
    _word_surname_after_dr,
)
from pipelines.phi.registry import register
from pipelines.spans import Category, Span


class _Lowered:
    """The words a mixed-case note also writes in lower case, built on the first question:
    only a few candidate words a note ask, and many notes ask none."""

    __slots__ = ("_toks", "_words")

    def __init__(self, toks: lx.Tokens) -> None:
        self._toks = toks
        self._words: frozenset[str] | None = None

    def __contains__(self, word: object) -> bool:
        if self._words is None:
            toks = self._toks
            self._words = frozenset(compress(toks.lowers, map(str.islower, toks.texts)))
        return word in self._words


def _may_start(low: str) -> bool:
    """May a lower-case word start a rule whatever its case: a cue word, a single letter (an
    initial) or a census first name."""
    return low in cues().triggers or len(low) <= 1 or low in lx.first_names()


_first_char = itemgetter(0)


@cache
def _start_words() -> frozenset[str]:
    """The lower-case words ``_may_start`` says yes to, for ASCII notes (where a one-letter word
    is one of a-z): one set, so a note asks it once per distinct word, not once per token."""
    return frozenset({*cues().triggers, *ascii_lowercase, *lx.first_names()})


class _Note:
    """One note under analysis: its words, what its case tells, and the name words taken so far
    (word index -> role and confidence; a higher confidence wins)."""

    __slots__ = (
        "cues",
        "eponyms",
        "first_names",
        "lower_note",
        "lowered",
        "mixed",
        "n",
        "taken",
        "steps",
        "text",
        "words",
        "written",
    )

    def __init__(self, doc: Doc, toks: lx.Tokens) -> None:
        self.cues: Cues = cues()
        self.words = toks.words
        self.text = doc.text
        self.n = len(toks.words)
        self.mixed = toks.mixed_case
        # a lower-case note: its few capitalised words are as telling as in a mixed-case one
        self.lower_note = toks.lower_note
        self.eponyms: set[str] = (
            _eponyms(toks, doc.text)
            if not toks.lower_set.isdisjoint(self.cues.eponym_heads)
            else set()
        )
        # the words as written, in an ASCII note (None in another: it looks words up by the
        # lower-case form it slices from the lower-cased note)
        self.written: frozenset[str] | None = toks.written if doc.text.isascii() else None
        # a lower-case word is written lower-case exactly when it is one of the words as
        # written there, so an ASCII note needs no set of its own for that
        self.lowered: Container[str] = (
            (self.written if self.written is not None else _Lowered(toks))
            if toks.mixed_case
            else frozenset()
        )
        self.first_names = lx.first_names()
        self.taken: dict[int, tuple[Category, float]] = {}
        # the passes to try at a word, by the word as written (None: a note not in ASCII,
        # where each visit works them out)
        self.steps: Callable[[str], tuple[_Pass, ...]] | None = (
            _STEPS[self.mixed, self.lower_note] if self.written is not None else None
        )

    def take(self, i: int, cat: Category, conf: float) -> None:
        old = self.taken.get(i)
        if old is None or old[1] < conf:
            self.taken[i] = (cat, conf)

    def gap(self, left: int, right: int) -> str:
        """The text between word ``left`` and word ``right``."""
        return self.text[self.words[left].end : self.words[right].start]

    def ok(self, i: int, strength: int) -> bool:
        """May word ``i`` be (part of) a name after a cue of ``strength`` (3 title, 2 role)?"""
        tok = self.words[i]
        base = _base(tok.lower)
        if base in self.cues.cue_words or (strength < 3 and base in self.eponyms):
            return False
        # a capital in a lower-case note is a signal, as in a mixed-case one
        mixed = True if self.lower_note and tok.is_title else self.mixed
        return _plausible(tok, mixed, strength, self.lowered)

    def run_right(self, i: int, cat: Category, conf: float, strength: int) -> int:
        """Take the name starting at word ``i`` (first word already judged); return next index."""
        self.take(i, cat, conf)
        j = self._run_words(i + 1, cat, conf, strength)
        return self._run_list(j, cat, conf, strength)

    def _run_words(self, j: int, cat: Category, conf: float, strength: int) -> int:
        """The further words of one name (up to four in all), tight after the previous one."""
        words, count = self.words, 1
        while j < self.n and count < 4 and _tight(self.gap(j - 1, j), words[j - 1]):
            if words[j].lower in self.cues.credentials or not (
                _is_initial(words[j], self.text)
                or self.ok(j, max(strength - 1, 2))
                or _surname_after_first(words[j - 1], words[j], self.mixed)
            ):
                break
            self.take(j, cat, conf)
            count += 1
            j += 1
        return j

    def _run_list(self, j: int, cat: Category, conf: float, strength: int) -> int:
        """A list after the name: "Drs. Smith and Jones", "sons Al, Bob and Carl"."""
        words = self.words
        while j + 1 < self.n:
            gap = self.gap(j - 1, j)
            if "\n" in gap:
                break
            mark = gap.strip()
            if words[j].lower in self.cues.joiners and self.ok(
                j + 1, 3 if self.mixed and strength >= 3 else 2
            ):
                self.take(j + 1, cat, conf)
                j += 2
            elif mark == "," and cat is R and lx.is_name(words[j].lower) and self.ok(j, 2):
                self.take(j, cat, conf)
                j += 1
            elif mark == "/" and strength >= 3 and self.ok(j, 3):
                self.take(j, cat, conf)  # "Drs. Smith/Jones" (not "Dr. Smith/Neuro": a service)
                j += 1
            else:
                break
        return j

    def run_left(self, i: int, cat: Category, conf: float, credential: str = "") -> None:
        """Take up to three name words ending at word ``i - 1`` (before a credential)."""
        words, j, got = self.words, i - 1, 0
        while j >= 0 and got < 3:
            gap = self.gap(j, j + 1)
            if "\n" in gap or (got and not _tight(gap, words[j])):
                break
            if not got and not _left_gap_ok(gap.strip(), credential):
                break
            if not (
                _is_initial(words[j], self.text)
                or self.ok(j, self._left_strength(j, got, credential))
                or (got and _first_before_surname(words[j], self.mixed))
            ):
                break
            self.take(j, cat, conf)
            got += 1
            j -= 1

    def _left_strength(self, j: int, got: int, credential: str) -> int:
        """After an initial or a first name, any rare word before "RN" is a surname; a
        signature line ("Jane Doe RN" alone on its line) is sure as well."""
        if not credential:
            return 2
        if j > 0:
            prev = self.words[j - 1]
            if _is_initial(prev, self.text) or lx.name_score(prev.lower) >= 1.5:
                return 3
        return 3 if got and _line_start(self.text, self.words[j].start) else 2


def _left_gap_ok(mark: str, credential: str) -> bool:
    """What may stand between a name and the credential or role word right after it."""
    if credential == "pa":  # "PA" is also a state and a chest film's view: a closer gap
        return mark in {"", ","}
    return mark in {"", ",", "(", "/"}


# --------------------------------------------------------------------------- cue passes

# A pass looks at word ``i``, takes what it finds, and returns the index to go on from when it
# took a name there (None: the next pass, then the next word).
_Pass = Callable[[_Note, int], "int | None"]


def _title_role(note: _Note, i: int) -> Category | None:
    """The role a title at word ``i`` gives the next word, or None when it is no title here."""
    words, tok = note.words, note.words[i]
    title = note.cues.titles.get(tok.lower)
    if title is None or i + 1 >= note.n:
        return None
    gap = note.gap(i, i + 1)
    if "\n" in gap or gap.strip() not in {"", ".", "'"}:
        return None
    if title is PT and note.mixed and tok.is_upper:
        return None  # "MS." in a mixed-case note is mental status / multiple sclerosis
    if title is PT and not note.mixed:
        # "ms" in a one-case note may be morphine or mental status: need a real name
        nw = words[i + 1].lower
        if lx.name_score(nw) < 0.5 and not (lx.name_score(nw) == -9.0 and lx.zipf(nw) < _RARE):
            return None
    return title


def _first_name_then_surname(note: _Note, nxt: int) -> bool:
    """ "Dr Will Cole": a common first name at ``nxt``, then a surname."""
    words = note.words
    return (
        nxt + 1 < note.n
        and lx.is_first_name(words[nxt].lower)
        and _tight(note.gap(nxt, nxt + 1), words[nxt])
        and note.ok(nxt + 1, 3)
        and (words[nxt + 1].is_title or not note.mixed)
    )


def _after_title(note: _Note, i: int) -> int | None:
    """ "Dr. Xyz", "Mrs. X.", "Dr. J. Xyz", "Dr Will Xyz": the name after a title."""
    title = _title_role(note, i)
    if title is None:
        return None
    words, text, n = note.words, note.text, note.n
    nxt = i + 1
    if _is_initial(words[nxt], text) and title is PT:  # "Ms. S." patient initial
        note.take(nxt, PT, 0.85)
        return nxt + 1
    bare = len(words[nxt].text) == 1 and nxt + 1 < n and words[nxt].text.isalpha()
    if (_is_initial(words[nxt], text) or bare) and nxt + 1 < n:
        nxt += 1  # "Dr. J. Smith", "Dr B Smith"
    elif _first_name_then_surname(note, nxt):
        note.take(nxt, title, 0.85)
        nxt += 1
    if note.ok(nxt, 3) or (title is P and not note.mixed and _word_surname_after_dr(words[nxt])):
        if nxt != i + 1:
            note.take(i + 1, title, 0.9)
        return note.run_right(nxt, title, 0.9, 3)
    return None


def _before_credential(note: _Note, i: int) -> None:
    """ "Jane Doe, RN", "J. Doe R.N.": the name before a credential is a provider."""
    tok = note.words[i]
    low = tok.lower
    if low in note.cues.credentials or (low in {"r", "m"} and _dotted_credential(note.text, tok)):
        after = note.text[tok.end : tok.end + 3].strip()
        if not (low == "pa" and after[:1].isdigit()) and not _city_state(note.words, i, note.text):
            note.run_left(i, P, 0.85, low)


def _before_role_after(note: _Note, i: int) -> None:
    """ "Xyz aware", "J. Xyz notified": the name before a word that makes it a provider."""
    words, tok = note.words, note.words[i]
    role = note.cues.role_after.get(tok.lower)
    if role is None or i == 0 or not _tight(note.gap(i - 1, i)):
        return
    j = i - 1
    after_initial = j > 0 and (
        _is_initial(words[j - 1], note.text)
        or _surname_after_first(words[j - 1], words[j], note.mixed)
    )
    if (after_initial and note.ok(j, 3)) or (
        note.ok(j, 2) and (words[j].is_title or lx.name_score(words[j].lower) >= 1.5)
    ):
        note.run_left(i, role, 0.75, "initial" if after_initial else "")


def _role_word(note: _Note, i: int) -> Category | None:
    """The role word ``i`` gives the name after it: "wife", "per", a slip ("daugher") or a
    possessive before "name" ("daughter's name is Ann", not "wife's concerns")."""
    low = note.words[i].lower
    c = note.cues
    role = c.role_before.get(low)
    if role is None and low in c.role_slips:
        role = _role_slip(low)
    if (
        role is None
        and low in c.role_possessive
        and i + 1 < note.n
        and note.words[i + 1].lower in {"name", "names", "named"}
    ):
        role = R
    return role


def _role_in_parens(note: _Note, i: int, role: Category) -> None:
    """ "Jane Doe (daughter)", "J. Doe (resident)": the role in parentheses after the name."""
    tok = note.words[i]
    if (
        i > 0
        and note.text[note.words[i - 1].end : tok.start].strip() == "("
        and note.text[tok.end : tok.end + 1] == ")"
    ):
        note.run_left(i, role, 0.75, "paren")


def _family_contact(note: _Note, i: int) -> None:
    """ "Anne is family contact", "Jim is the HCP"."""
    words = note.words
    if (
        words[i].lower == "is"
        and 0 < i < note.n - 1
        and _tight(note.gap(i - 1, i))
        and (
            note.cues.role_before.get(words[i + 1].lower) is R
            or words[i + 1].lower in {"family", "contact", "spokesperson"}
        )
    ):
        note.run_left(i, R, 0.7)


def _talked_with(note: _Note, i: int) -> Category | None:
    """ "spoke (at length / extensively) with X", "explained to X", "significant other X"."""
    words, low = note.words, note.words[i].lower
    verbs = note.cues.verb_then_name
    if low in {"with", "w", "by", "to"} and i > 0:
        role = verbs.get(words[i - 1].lower)
        if role is None and i > 1:
            role = verbs.get(words[i - 2].lower)
        return role
    if low == "other" and i > 0 and words[i - 1].lower == "significant":
        return R
    return None


def _name_slot(note: _Note, i: int) -> int | None:
    """Where the name after the role word ``i`` starts (past "is", "named"…), if it is close."""
    words, n = note.words, note.n
    j = i + 1
    while j < n and words[j].lower in note.cues.skippable and j - i < 3:
        j += 1
    if j >= n:
        return None
    gap = note.gap(j - 1, j)
    if len(gap) < 6 and "\n" not in gap and "." not in gap.strip(" ,:(-"):
        return j
    return None


def _lower_initial_surname(note: _Note, j: int) -> bool:
    """ "per d ross": a bare lower-case initial and a census surname."""
    words = note.words
    return (
        len(words[j].text) == 1
        and j + 1 < note.n
        and words[j].lower not in note.cues.clinical_letters - {"d", "s", "e", "p", "c"}
        and note.gap(j, j + 1) == " "
        and lx.name_score(words[j + 1].lower) >= 1.5
        and note.ok(j + 1, 3)
    )


def _dotted_initial_name(note: _Note, j: int) -> bool:
    """ "per E. Welsh": an initial, then a name."""
    return (
        _is_initial(note.words[j], note.text)
        and j + 1 < note.n
        and _tight(note.gap(j, j + 1))
        and note.ok(j + 1, 3)
    )


def _capitalised_full_name(note: _Note, j: int) -> bool:
    """ "son: Casimir Olafsen": two capitalised words make a full name."""
    words = note.words
    return (
        (note.mixed or note.lower_note)
        and j + 1 < note.n
        and words[j].is_title
        and words[j + 1].is_title
        and _tight(note.gap(j, j + 1), words[j])
        and lx.zipf(words[j].lower) < 4.5
        and _namey(words[j + 1])
        and words[j].lower not in note.cues.cue_words
    )


def _after_role(note: _Note, i: int, role: Category) -> int | None:
    """The name after a role word or a verb of talking: "wife Ann", "spoke with Dr X"."""
    j = _name_slot(note, i)
    if j is None:
        return None
    if _lower_initial_surname(note, j):
        note.take(j, role, 0.7)
        return note.run_right(j + 1, role, 0.7, 3)
    if _dotted_initial_name(note, j):
        note.take(j, role, 0.8)
        return note.run_right(j + 1, role, 0.8, 3)
    word = note.words[j]
    if role is R and not note.mixed and _rare_unknown(word):
        return note.run_right(j, role, 0.7, 2)  # "BROTHER XYZ"
    # "per protocol", "per Carevue": after "per" only a census name counts
    weak = note.words[i].lower == "per" and lx.name_score(word.lower) < 1.0
    if not weak and note.ok(j, 2):
        return note.run_right(j, role, 0.8 if role is not OTHER else 0.7, 2)
    if _capitalised_full_name(note, j):
        note.take(j, role, 0.7)
        return note.run_right(j + 1, role, 0.7, 2)
    return None


def _role_passes(note: _Note, i: int) -> int | None:
    """Role words before or around a name: "(daughter)", "X is family contact", "wife X"."""
    role = _role_word(note, i)
    if role is not None:
        _role_in_parens(note, i, role)
    _family_contact(note, i)
    if role is None:
        role = _talked_with(note, i)
    if role is not None and i + 1 < note.n:
        return _after_role(note, i, role)
    return None


def _family_contact_pass(note: _Note, i: int) -> None:
    """ "Anne is family contact" at an "is" (which is no role word itself)."""
    _family_contact(note, i)


# Where ``_talked_with`` may find a role: "spoke with X", "explained to X", "significant other X"
_TALK_WORDS: Final = frozenset({"with", "w", "by", "to", "other"})


def _talked_with_pass(note: _Note, i: int) -> int | None:
    """ "spoke with X", "significant other X" at a word that is no role word itself."""
    role = _talked_with(note, i)
    if role is not None and i + 1 < note.n:
        return _after_role(note, i, role)
    return None


def _surname_after_initial(note: _Note, i: int) -> bool:
    """Is the word after the initial at ``i`` a surname: far more a name than a word, a
    Title-case name in a mixed-case note, or ("M. XYZ" in a one-case note) a surname English
    never uses?"""
    tok, sur = note.words[i], note.words[i + 1]
    low, s_low = tok.lower, sur.lower
    if lx.name_score(s_low) >= 1.5 and lx.zipf(s_low) < 5.0:
        return True
    if note.mixed:
        return (
            sur.is_title
            and note.ok(i + 1, 2)
            and (lx.name_score(s_low) >= 1.0 or lx.zipf(s_low) < _RARE)
        )
    base = _base(s_low)
    return (
        low not in note.cues.clinical_letters  # "r > l. perl": left pupil
        and (tok.text.isupper() or note.lower_note)
        and note.gap(i, i + 1) == ". "
        and (
            (lx.rare_unknown(base) and (tok.text.isupper() or not lx.near_english(s_low)))
            or (lx.name_score(base) >= 0.5 and lx.zipf(base) < 4.0)
        )
    )


def _initial_then_surname(note: _Note, i: int) -> int | None:
    """ "J. Xyz": an initial with its period, then a surname."""
    words, tok = note.words, note.words[i]
    if not (
        len(tok.text) == 1
        and _is_initial(tok, note.text)
        and i + 1 < note.n
        and tok.lower not in {"a", "i"}
    ):
        return None
    if (
        _tight(note.gap(i, i + 1))
        and _surname_after_initial(note, i)
        and note.ok(i + 1, 3)
        # "AMPHO B.", "VIT K.": a drug's letter is no initial
        and not (i > 0 and lx.clinical_word(words[i - 1].lower))
    ):
        note.take(i, OTHER, 0.7)
        return note.run_right(i + 1, OTHER, 0.7, 2)
    return None


# --------------------------------------------------------------------------- uncued passes


def _title_case_pair(note: _Note, i: int) -> int | None:
    """No cue: two Title-case words that are each a name or rare ("Oriel Vantmoor")."""
    words, tok = note.words, note.words[i]
    low, title_case = tok.lower, lx.is_title
    if (
        (note.mixed or note.lower_note)
        and title_case(tok.text)
        and i + 1 < note.n
        and i not in note.taken
        and title_case(words[i + 1].text)
        and _tight(note.gap(i, i + 1), tok)
        and _namey(tok)
        and _namey(words[i + 1])
        and (
            low in note.first_names
            or _rare_unknown(tok)
            or (lx.zipf(low) < 2.5 and not _sentence_start(note.text, tok.start))
        )
        and low not in note.eponyms
        and _base(words[i + 1].lower) not in note.eponyms
        and note.ok(i, 2)
        and note.ok(i + 1, 2)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


def _capital_initial_surname(note: _Note, i: int) -> int | None:
    """ "J SMITH": a bare capital initial and a surname that is far more a name than a word."""
    words, text, tok = note.words, note.text, note.words[i]
    if (
        len(tok.text) == 1
        and tok.text.isupper()
        and tok.lower not in note.cues.clinical_letters
        and (tok.start == 0 or text[tok.start - 1] in " \n\t(")
        and i + 1 < note.n
        and note.gap(i, i + 1) == " "
        and lx.name_score(words[i + 1].lower) >= 1.8
        and lx.zipf(words[i + 1].lower) < 5.0
        and (words[i + 1].is_upper or words[i + 1].is_title)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


def _lone_first_name(note: _Note, i: int) -> int | None:
    """No cue: a rare census first name in Title case, maybe with its last name."""
    tok = note.words[i]
    if (
        (note.mixed or note.lower_note)
        and lx.is_title(tok.text)
        and i not in note.taken
        and tok.lower in note.first_names
        and (note.ok(i, 1) or _common_first_name(tok, note.text, note.lowered, note.eponyms))
    ):
        return note.run_right(i, OTHER, 0.6, 2)
    return None


def _one_case_full_name(note: _Note, i: int) -> int | None:
    """No cue, one-case note: "HAZEL PELLWORTH" (first name + census surname). A first name
    alone is not enough here: "MAE", "PERLA", "ALINE" are clinical abbreviations too."""
    words, tok = note.words, note.words[i]
    low = tok.lower
    if note.mixed or i in note.taken or low not in note.first_names or low in note.eponyms:
        return None
    ns, f = lx.name_score(low), lx.zipf(low)
    if not ((ns >= 1.5 and f < 4.5) or (ns >= 2.0 and f < 5.5)):
        return None
    if (
        i + 1 < note.n
        and _tight(note.gap(i, i + 1))
        and lx.name_score(_base(words[i + 1].lower)) >= 1.5
        and _surname_after_first(tok, words[i + 1], note.mixed)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 2)
    return None


# The uncued passes by the note's case (the others could never take a word there): a
# mixed-case or lower-case note trusts capitals, any other one-case note needs a full name.
_UNCUED_CAPITALS: tuple[_Pass, ...] = (
    _title_case_pair,
    _capital_initial_surname,
    _lone_first_name,
)
_UNCUED_ONE_CASE: tuple[_Pass, ...] = (_capital_initial_surname, _one_case_full_name)
_UNCUED_LOWER: tuple[_Pass, ...] = (*_UNCUED_CAPITALS, _one_case_full_name)


def _uncued(mixed: bool, lower_note: bool) -> tuple[_Pass, ...]:
    """The uncued passes of a note of this case."""
    if lower_note:
        return _UNCUED_LOWER
    return _UNCUED_CAPITALS if mixed else _UNCUED_ONE_CASE


def _lower_full_name_pass(note: _Note, i: int) -> int | None:
    """ "john kowalski in to visit": a lower-case full name in a mixed-case note, no cue."""
    tok = note.words[i]
    if (
        note.mixed
        and tok.lower in note.first_names
        and i not in note.taken
        and i + 1 < note.n
        and _lower_full_name(tok, note.words[i + 1], note.text, note.eponyms)
    ):
        note.take(i, OTHER, 0.6)
        return note.run_right(i + 1, OTHER, 0.6, 3)
    return None


def _capital_counts(tok: Token, mixed: bool, lower_note: bool) -> bool:
    """May a word that is no cue start an uncued rule: a capital where case tells something,
    or (in a one-case note) a census first name?"""
    capital = tok.text[0].isupper()
    if mixed:
        return capital
    return tok.lower in lx.first_names() or (lower_note and capital)


def _cue_plan(low: str) -> tuple[_Pass, ...]:
    """Lower-case word -> the cue passes it may start, in order (none for most words): a title,
    a credential, a word after a name, a role word or verb of talking, an initial."""
    c = cues()
    plan: list[_Pass] = []
    if low in c.titles:
        plan.append(_after_title)
    if low in c.credentials or low in {"r", "m"}:
        plan.append(_before_credential)
    if low in c.role_after:
        plan.append(_before_role_after)
    if low in c.role_before or low in c.role_slips or low in c.role_possessive:
        plan.append(_role_passes)
    elif low == "is":  # what ``_role_passes`` does at a word that is no role word
        plan.append(_family_contact_pass)
    elif low in _TALK_WORDS:
        plan.append(_talked_with_pass)
    if len(low) == 1:
        plan.append(_initial_then_surname)
    return tuple(plan)


# --------------------------------------------------------------------------- rule starts

# What each pass asks of the word it starts at, and of nothing else (not its neighbours, the
# note's eponyms or the names taken so far): a pass whose question fails there takes nothing,
# so it need not be tried at that word, and a word where no pass is left needs no visit.
_Gate = Callable[[Token, bool, bool], bool]


def _title_pair_may(tok: Token, mixed: bool, lower_note: bool) -> bool:
    low = tok.lower
    return (
        (mixed or lower_note)
        and lx.is_title(tok.text)
        and _namey(tok)
        and (low in lx.first_names() or _rare_unknown(tok) or lx.zipf(low) < 2.5)
    )


def _initial_surname_may(tok: Token, mixed: bool, lower_note: bool) -> bool:
    return len(tok.text) == 1 and tok.text.isupper() and tok.lower not in cues().clinical_letters


def _lone_first_may(tok: Token, mixed: bool, lower_note: bool) -> bool:
    return (mixed or lower_note) and lx.is_title(tok.text) and tok.lower in lx.first_names()


def _one_case_full_may(tok: Token, mixed: bool, lower_note: bool) -> bool:
    low = tok.lower
    if mixed or low not in lx.first_names():
        return False
    ns, f = lx.name_score(low), lx.zipf(low)
    return (ns >= 1.5 and f < 4.5) or (ns >= 2.0 and f < 5.5)


def _lower_full_may(tok: Token, mixed: bool, lower_note: bool) -> bool:
    low = tok.lower
    if not (mixed and low in lx.first_names() and tok.text.islower() and len(low) >= 3):
        return False
    ns, f = lx.name_score(low), lx.zipf(low)
    return (ns >= 1.0 and f < 4.5) or (ns >= 2.0 and f < 5.5)


def _initial_may(tok: Token, mixed: bool, lower_note: bool) -> bool:
    return len(tok.text) == 1 and tok.lower not in {"a", "i"}


def _always(tok: Token, mixed: bool, lower_note: bool) -> bool:
    return True


# the passes not listed ask of their word only what brought them to it (a cue word)
_MAY: dict[_Pass, _Gate] = {
    _title_case_pair: _title_pair_may,
    _capital_initial_surname: _initial_surname_may,
    _lone_first_name: _lone_first_may,
    _one_case_full_name: _one_case_full_may,
    _lower_full_name_pass: _lower_full_may,
    _initial_then_surname: _initial_may,
}


def _steps(tok: Token, mixed: bool, lower_note: bool) -> tuple[_Pass, ...]:
    """The passes to try, in order, at a word like ``tok`` in a note of this case: its cue
    passes (a title, a credential, a role word, an initial) then the uncued ones — or, at a
    word that is no cue and whose case tells nothing, only a lower-case full name — less
    those whose question about the word itself fails."""
    tried = _all_steps(tok, mixed, lower_note)
    return tuple(step for step in tried if _MAY.get(step, _always)(tok, mixed, lower_note))


def _all_steps(tok: Token, mixed: bool, lower_note: bool) -> tuple[_Pass, ...]:
    """The passes that may start at a word like ``tok``, before its own questions."""
    plan = _cue_plan(tok.lower)
    if plan or _capital_counts(tok, mixed, lower_note):
        return (*plan, *_uncued(mixed, lower_note))
    return (_lower_full_name_pass,)


def _steps_of(mixed: bool, lower_note: bool) -> Memo[str, tuple[_Pass, ...]]:
    """Word as written -> its ``_steps`` in an ASCII note of one case (where the word's
    lower-case form is ``str.lower`` of it)."""

    def steps_of(text: str) -> tuple[_Pass, ...]:
        steps = _steps(Token(0, len(text), text, text.lower()), mixed, lower_note)
        return _SHARED_STEPS.setdefault(steps, steps)  # a few distinct tuples, kept once

    # words as written: a stream's vocabulary grows for long
    return Memo("names.steps", steps_of, 50_000)


_SHARED_STEPS: dict[tuple[_Pass, ...], tuple[_Pass, ...]] = {}


_STEPS: Final = {(m, lo): _steps_of(m, lo) for m in (False, True) for lo in (False, True)}


def _starter(mixed: bool, lower_note: bool) -> Callable[[str], bool]:
    """Word as written in an ASCII note of one case -> may the main loop visit it: a word that
    may start a rule by itself or (where case tells something) a capitalised one, with some
    pass left to try (``_steps``)."""
    capitals_count = mixed or lower_note
    steps = _STEPS[mixed, lower_note]

    def starts(text: str) -> bool:
        # an ASCII word sorts before "[" exactly when its first letter is a capital
        may = text.lower() in _start_words() or (capitals_count and text < "[")
        return bool(may and steps(text))

    return starts


_STARTERS: Final = {(m, lo): _starter(m, lo) for m in (False, True) for lo in (False, True)}


def _rule_starts(
    toks: lx.Tokens, mixed: bool, lower_note: bool, written: frozenset[str] | None
) -> list[int]:
    """Indices of the words the main loop must visit: a word that may start a rule by itself
    (a cue word, an initial, a census first name) or, where case tells something, any
    capitalised word — less those where no pass is left to try (``_steps``). ``written``: the
    note's distinct words as written when it is ASCII, else None.

    Why the ASCII path: a per-token look-up in a big table misses the CPU cache once the other
    recognizers have run (slower than in a tight loop), so the big tables are asked once per
    distinct word and each token then asks only the note's few starters."""
    lows, texts = toks.lowers, toks.texts
    capitals_count = mixed or lower_note
    if written is not None:
        steps = _STEPS[mixed, lower_note]
        starter = _STARTERS[mixed, lower_note]
        kept = set(filter(starter, written))
        starts = list(compress(range(len(texts)), map(kept.__contains__, texts)))
        talk_only = {t for t in kept if steps(t) == _TALK_ONLY}
    else:
        may = map(_may_start, lows)
        if capitals_count:
            may = map(or_, may, map(str.isupper, map(_first_char, texts)))
        words = toks.words
        tried = [(i, _steps(words[i], mixed, lower_note)) for i in compress(range(len(lows)), may)]
        starts = [i for i, found in tried if found]
        talk_only = {texts[i] for i, found in tried if found == _TALK_ONLY}
    if not talk_only:
        return starts
    # "with", "to"… where nothing but a verb of talking before them could make them a cue
    lows = toks.lowers
    return [i for i in starts if texts[i] not in talk_only or _after_talking(lows, i)]


_TALK_ONLY: Final = (_talked_with_pass,)


def _after_talking(lows: Sequence[str], i: int) -> bool:
    """Is word ``i`` one where ``_talked_with`` may find a role: one or two words after a verb
    of talking ("spoke with", "spoke at length with"), one after "significant"? Asked at the
    few starts that need it, not worked out for every word of the note."""
    verbs = cues().verb_then_name
    if i >= 1 and (lows[i - 1] in verbs or lows[i - 1] == "significant"):
        return True
    return i >= 2 and lows[i - 2] in verbs


def _visit(note: _Note, i: int) -> int | None:
    """Try the passes at word ``i``; return the index to go on from, or None for ``i + 1``."""
    tok = note.words[i]
    steps = (
        note.steps(tok.text) if note.steps is not None else _steps(tok, note.mixed, note.lower_note)
    )
    for step in steps:
        nxt = step(note, i)
        if nxt is not None:
            return nxt
    return None


def _scan(note: _Note, starts: list[int]) -> None:
    """Visit the words that may start a rule, left to right, skipping the words a name took."""
    k, m, i = 0, len(starts), 0
    while True:
        # every word that is not in ``starts`` would only move on by one: jump over them
        while k < m and starts[k] < i:
            k += 1
        if k == m:
            return
        i = starts[k]
        nxt = _visit(note, i)
        i = i + 1 if nxt is None else nxt


def _known_roles(doc: Doc, note: _Note) -> None:
    """The structured part of the message tells the role of a known name."""
    known = known_name_forms(doc)
    if not known:
        return
    for idx, (_, conf) in list(note.taken.items()):
        role = known.get(_base(note.words[idx].lower))
        if role is not None:
            note.taken[idx] = (role, max(conf, 0.95))


@register("names")
class NameRecognizer(Recognizer):
    """Names of providers, relatives and patients found by cue words and capitalisation."""

    categories = frozenset({P, R, PT, OTHER})

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        if not toks.words:
            return []
        note = _Note(doc, toks)
        _scan(note, _rule_starts(toks, note.mixed, note.lower_note, note.written))
        _signature(note.words, note.text, note.mixed, note.take)
        _propagate(toks, note.mixed, note.taken)
        _known_roles(doc, note)
        return _spans(note.words, note.taken, note.text)
