"""Person names from context cues, capitalisation and census name lists.

Why context first: in nursing notes half the names are written in all-uppercase or
all-lowercase, and many census names are English words ("Will", "Bean") or clinical eponyms
("Foley", "Parkinson"). So a word becomes a name when a cue says so — a title before it
("Dr.", "Mrs."), a credential after it ("RN", "MD", "RRT"), a role word ("wife", "son",
"per", "spoke with") — and the cue also gives the role: provider, relative or patient.
Without a cue only a word that is far more a name than an English word counts, and only
where capitalisation supports it. Eponym heads ("X catheter", "X's disease", "X sign") veto
a word for the whole note unless a title stands before it.

The recognizer is a list of declared passes (``pipelines/phi/passes.py``; ``name_passes()``
below) over the note's words. The driver derives from the declarations which passes are
tried at a word and which words are visited at all; each word a pass takes carries the pass's
name to its span (``Span.source``: "names.after_title", …):

1. cue passes (``name_cue_passes``), at a cue word or an initial: "Dr. X", "X, RN",
   "X aware", "X (daughter)", "X is family contact", "wife X", "spoke with X", "J. Xyz";
2. uncued passes (``name_uncued``), each with a gate on its first word: "Xyz Abc", "J XYZ",
   a lone first name, a one-case full name, a lower-case full name;
3. note-level steps (``name_passes``): the signature line ("names.signature"), the roles the
   structured message tells ("names.known"), and the spans. A name found once spreads to its
   other occurrences in the detector's one propagation step ("names.propagated",
   ``pipelines.phi.propagate``).
"""

from __future__ import annotations

from collections.abc import Container
from functools import cache
from itertools import compress
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.passes import Case, Pass, Passes, declare
from pipelines.phi.recognizers import name_cue_passes as cue
from pipelines.phi.recognizers import name_labels as labels
from pipelines.phi.recognizers import name_lists as lists
from pipelines.phi.recognizers import name_uncued as uncued
from pipelines.phi.recognizers.known import known_name_forms
from pipelines.phi.recognizers.name_cues import OTHER, PT, Cues, P, R, cues
from pipelines.phi.recognizers.name_passes import Taken, _signature, _spans
from pipelines.phi.recognizers.name_words import (
    _base,
    _eponyms,
    _first_before_surname,
    _is_initial,
    _line_start,
    _plausible,
    _surname_after_first,
    _tight,
    surname_letter,
)
from pipelines.phi.registry import register
from pipelines.phi.wordlists import word_set
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


class _Note:
    """One note under analysis: its words, what its case tells, and the name words taken so far
    (word index -> role, confidence and the pass that took it; a higher confidence wins)."""

    __slots__ = (
        "_eponyms",
        "_toks",
        "by",
        "case",
        "cues",
        "first_names",
        "lower_note",
        "lowered",
        "mixed",
        "n",
        "taken",
        "text",
        "words",
        "written",
    )

    def __init__(self, doc: Doc, toks: lx.Tokens, case: Case | None = None) -> None:
        """``case``: the note's case model (``Case.of`` its tokens unless given)."""
        self.cues: Cues = cues()
        self.words = toks.words
        self.text = doc.text
        self.n = len(toks.words)
        self.case = Case.of(toks) if case is None else case
        self.mixed = self.case is Case.MIXED
        # a lower-case note: its few capitalised words are as telling as in a mixed-case one
        self.lower_note = self.case is Case.LOWER
        self._toks = toks
        self._eponyms: set[str] | None = None  # ``eponyms``, once asked
        # the words as written, in an ASCII note (None in another: it looks words up by the
        # lower-case form it slices from the lower-cased note)
        self.written: frozenset[str] | None = toks.written if doc.text.isascii() else None
        # a lower-case word is written lower-case exactly when it is one of the words as
        # written there, so an ASCII note needs no set of its own for that
        self.lowered: Container[str] = (
            (self.written if self.written is not None else _Lowered(toks))
            if self.mixed
            else frozenset()
        )
        self.first_names = lx.first_names()
        self.taken: Taken = {}
        self.by = "names"  # the pass at work: the source ``take`` records for a word

    @property
    def eponyms(self) -> set[str]:
        """The words used as eponyms in this note (``_eponyms``), found when first asked:
        many notes' passes ask none."""
        found = self._eponyms
        if found is None:
            toks = self._toks
            heads = self.cues.eponym_heads
            found = set() if toks.lower_set.isdisjoint(heads) else _eponyms(toks, self.text)
            self._eponyms = found
        return found

    def take(self, i: int, cat: Category, conf: float) -> None:
        old = self.taken.get(i)
        if old is None or old[1] < conf:
            self.taken[i] = (cat, conf, self.by)

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

    def past_particles(self, j: int) -> int | None:
        """The name word after one or two surname particles from word ``j`` ("van der Berg",
        "de la Cruz", "bin Yusuf"): written apart by blanks, capitalised in a mixed-case note,
        and a word a title may name; None when ``j`` starts no such run."""
        words, k = self.words, j
        while k < self.n and k - j < 2 and words[k].lower in self.cues.particles:
            if self.mixed and not _particle_as_written(words[k]):
                return None  # "De" or "La" capitalised: a name word of its own, judged as such
            k += 1
        if k == j or k >= self.n or any(self.gap(x - 1, x) != " " for x in range(j + 1, k + 1)):
            return None
        head = words[k]
        if head.lower in self.cues.particles or (self.mixed and not head.is_title):
            return None
        return k if self.ok(k, 3) or self.one_case_surname(head) else None

    def one_case_surname(self, head: lx.Token) -> bool:
        """In a one-case note, a surname where a cue leaves no doubt may be a common word: after
        particles ("DR. VON POST", "dr van horn"), after a hyphen behind a title ("MRS.
        O'WHITLEY-LOVE"), after "and" in a list of doctors ("DRS HALE AND GLASS"): no capital
        tells it, the cue does. A census name not far less a name than a word ("POST",
        "GLASS"; not "STAFF", "PLAN"); no grammar, cue or clinical word ("DR VAN HAS SEEN"), no
        eponym of this note ("DR VAN FOLEY CATHETER")."""
        low = head.lower
        return (
            not self.mixed
            and low.isalpha()
            and len(low) >= 3
            and lx.zipf(low) < 6.0
            and lx.name_score(low) >= _SURNAME_AS_WORD
            and low not in self.cues.cue_words
            and low not in _never_words()
            and low not in self.eponyms
            and not lx.clinical_word(low)
        )

    def particle_name(self, j: int, cat: Category, conf: float) -> int | None:
        """A name that opens with surname particles at word ``j`` ("de la Cruz" after "Dr."),
        taken; the index after it, or None when ``j`` opens none."""
        head = self.past_particles(j)
        if head is None:
            return None
        for k in range(j, head):
            self.take(k, cat, conf)
        return self.run_right(head, cat, conf, 3)

    def _run_words(self, j: int, cat: Category, conf: float, strength: int) -> int:
        """The further words of one name (up to four in all), tight after the previous one;
        surname particles join the word after them ("Jan van der Berg")."""
        words, count = self.words, 1
        while j < self.n and count < 4 and _tight(self.gap(j - 1, j), words[j - 1]):
            head = self.past_particles(j)
            if head is not None:
                for k in range(j, head + 1):
                    self.take(k, cat, conf)
                count, j = count + 1, head + 1
                continue
            if words[j].lower in self.cues.credentials or not (
                _is_initial(words[j], self.text)
                or surname_letter(words[j], self.text)
                or self._next_word_ok(j, strength)
                or _surname_after_first(words[j - 1], words[j], self.mixed)
            ):
                break
            self.take(j, cat, conf)
            count += 1
            j += 1
        return j

    def _next_word_ok(self, j: int, strength: int) -> bool:
        """May word ``j`` go on the name before it: after a hyphen as after a title ("Ann-Marie
        Lowe", behind a title "O'WHITLEY-LOVE" in any case), else a cue weaker by one."""
        if self.gap(j - 1, j) == "-":
            return self.ok(j, 3) or (strength >= 3 and self.one_case_surname(self.words[j]))
        return self.ok(j, max(strength - 1, 2))

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
                or self._listed_doctor(j, credential)
            ):
                break
            self.take(j, cat, conf)
            got += 1
            j -= 1

    def _listed_doctor(self, j: int, credential: str) -> bool:
        """ "FORD ANGLE AND DRS X": before "and Drs" a common-word surname of a one-case note
        (``one_case_surname``), not after a preposition ("at rounds and drs X")."""
        return (
            credential in lists.PLURAL_TITLES
            and self.one_case_surname(self.words[j])
            and not (j > 0 and self.words[j - 1].lower in _never_words())
        )

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


# particles written capitalised as the name after them ("Dr. Mc Allister")
_CAPITAL_PARTICLES: Final = frozenset({"mc"})


def _particle_as_written(tok: lx.Token) -> bool:
    """A particle written as one in a mixed-case note: in lower case ("van", "de"), or "Mc"."""
    return tok.text.islower() or tok.lower in _CAPITAL_PARTICLES


# the name score down to which a census surname that is a common word may be one ("post"
# -0.5, "child" -0.8; not "staff" -1.1)
_SURNAME_AS_WORD: Final = -0.9


@cache
def _never_words() -> frozenset[str]:
    return word_set("name_never_words")


# --------------------------------------------------------------------------- the passes

NamePass = Pass[_Note, int]
_CAPITALS_TELL: Final = frozenset({Case.MIXED, Case.LOWER})
_ONE_CASE: Final = frozenset({Case.LOWER, Case.UPPER})


@cache
def name_passes() -> Passes[_Note, int]:
    """The name recognizer's passes, in the order they are tried at a word (declared on first
    use: their trigger words come from the vocabulary files).

    The windows are each pass's usual reach (a name of up to four words past its cue), not a
    bound: a list of names ("Drs. Smith, Jones and Lee") runs on past any fixed window, and a
    pass reads the names taken so far. So no name pass keeps a window memo (``memo`` off);
    the windows only document the passes (``--explain``)."""
    c = cues()
    role_words = frozenset({*c.role_before, *c.role_slips, *c.role_possessive})
    passes: list[NamePass] = [
        Pass(
            "names.list_before_title",
            lists.list_before_title,
            lists.PLURAL_TITLES,
            before=4,
            after=5,
            vocabulary=("name_joiners",),
        ),
        Pass(
            "names.after_title",
            cue.after_title,
            frozenset({*c.titles, *c.title_slips}),
            after=6,
            vocabulary=("name_titles",),
        ),
        Pass(
            "names.before_credential",
            cue.before_credential,
            c.credentials | cue.DOTTED_CREDENTIAL_LETTERS,
            before=4,
            vocabulary=("name_credentials",),
        ),
        Pass(
            "names.before_role_after",
            cue.before_role_after,
            frozenset(c.role_after),
            before=4,
            vocabulary=("name_role_after",),
        ),
        Pass(
            "names.role_in_parens",
            cue.role_in_parens,
            role_words,
            before=4,
            after=1,
            vocabulary=("name_role_before",),
        ),
        Pass("names.family_contact", cue.family_contact, frozenset({"is"}), before=4, after=1),
        Pass(
            "names.role",
            cue.after_role,
            role_words,
            after=8,
            vocabulary=("name_role_before", "name_skippable"),
        ),
        Pass(
            "names.after_label",
            labels.after_label,
            frozenset({*c.people_labels, *role_words}),
            after=6,
            vocabulary=("name_people_labels", "name_role_before"),
        ),
        Pass(
            "names.talked_with",
            cue.talked_with,
            frozenset({*c.verb_then_name, "significant"}),
            after=10,
            vocabulary=("name_verbs_then_name", "name_skippable"),
        ),
        Pass(
            "names.initial_then_surname",
            cue.initial_then_surname,
            gate=cue.initial_gate,
            shape="letter",
            anywhere=True,
            before=1,
            after=5,
        ),
        Pass(
            "names.title_case_pair",
            uncued.title_case_pair,
            gate=uncued.title_pair_gate,
            shape="capital",
            cases=_CAPITALS_TELL,
            anywhere=True,
            after=5,
        ),
        Pass(
            "names.capital_initial_surname",
            uncued.capital_initial_surname,
            gate=uncued.capital_initial_gate,
            shape="letter",
            vocabulary=("name_clinical_letters",),
            anywhere=True,
            after=5,
        ),
        Pass(
            "names.first_name_initial",
            uncued.first_name_initial,
            gate=uncued.lone_first_gate,
            shape="capital",
            cases=_CAPITALS_TELL,
            anywhere=True,
            before=1,
            after=5,
        ),
        Pass(
            "names.one_case_first_initial",
            uncued.one_case_first_initial,
            gate=uncued.one_case_first_gate,
            lexicon=uncued.first_name_words,
            cases=frozenset({Case.UPPER}),
            vocabulary=("care_units",),
            anywhere=True,
            before=1,
            after=1,
        ),
        Pass(
            "names.lone_first_name",
            uncued.lone_first_name,
            gate=uncued.lone_first_gate,
            shape="capital",
            cases=_CAPITALS_TELL,
            anywhere=True,
            after=5,
        ),
        Pass(
            "names.one_case_full_name",
            uncued.one_case_full_name,
            gate=uncued.one_case_full_gate,
            lexicon=uncued.first_name_words,
            cases=_ONE_CASE,
            anywhere=True,
            after=5,
        ),
        Pass(
            "names.surname_before_age",
            uncued.surname_before_age,
            gate=uncued.surname_age_gate,
            shape="capital",
            cases=_CAPITALS_TELL,
            anywhere=True,
            after=3,
        ),
        Pass(
            "names.lower_full_name",
            uncued.lower_full_name,
            gate=uncued.lower_full_gate,
            lexicon=uncued.first_name_words,
            shape="lower",
            cases=frozenset({Case.MIXED}),
            anywhere=True,
            after=5,
        ),
    ]
    return declare(Passes("names", passes))


Starts = list[tuple[int, tuple[NamePass, ...]]]


def _rule_starts(note: _Note, toks: lx.Tokens) -> Starts:
    """The words the scan must visit, with the passes to try at each: the words where some
    pass is tried (``Passes.steps``).

    Why the ASCII path: a per-token look-up in a big table misses the CPU cache once the other
    recognizers have run (slower than in a tight loop), so each distinct word as written is
    judged once (``Passes.starts``) and each token then asks only the note's few starters; the
    compiled helper filters and looks up the note's words in one pass (``Passes.positions``)."""
    passes, case = name_passes(), note.case
    if note.written is None:  # each word works its passes out (on its lower-case form)
        found = ((i, passes.plan(tok, case)) for i, tok in enumerate(toks.words))
        return [(i, steps) for i, steps in found if steps]
    return passes.positions(toks.texts, note.written, case)


def _scan(note: _Note, starts: Starts) -> None:
    """Visit the words that may start a rule, left to right, skipping the words a name took;
    at each, try its passes in order until one finds a name."""
    i = 0
    for at, steps in starts:
        if at < i:
            continue  # inside a name just taken
        i = at + 1
        for step in steps:
            note.by = step.name
            nxt = step.run(note, at)
            if nxt is not None:
                i = nxt
                break


def _known_roles(doc: Doc, note: _Note) -> None:
    """The structured part of the message tells the role of a known name."""
    known = known_name_forms(doc)
    if not known:
        return
    for idx, (_, conf, _by) in list(note.taken.items()):
        role = known.get(_base(note.words[idx].lower))
        if role is not None:
            note.taken[idx] = (role, max(conf, 0.95), "names.known")


@register("names")
class NameRecognizer(Recognizer):
    """Names of providers, relatives and patients found by cue words and capitalisation."""

    categories = frozenset({P, R, PT, OTHER})

    def __init__(self, options: dict[str, object] | None = None) -> None:
        super().__init__(options)
        name_passes()  # declared for ``--explain`` as soon as the recognizer exists

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        if not toks.words:
            return []
        note = _Note(doc, toks)
        _scan(note, _rule_starts(note, toks))
        note.by = "names.signature"
        _signature(note.words, note.text, note.mixed, note.take)
        _known_roles(doc, note)
        return _spans(note.words, note.taken, note.text)
