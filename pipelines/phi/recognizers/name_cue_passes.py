"""The cue passes of the name recognizer: a title, a credential, a role word or a verb of
talking makes the word next to it a name and tells its role. Each pass is one small function
``run(note, i)`` tried at a word that starts it (declared in ``names.py``); it takes the words
of the name it finds (``note.take``) and returns the index to go on from, or None.

Every pass checks its own first word: tried where its declaration would not try it, it takes
nothing (``tests/phi/test_name_passes.py`` checks that for random notes)."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Final

from pipelines.phi import lexicons as lx
from pipelines.phi.recognizers.name_cues import _RARE, OTHER, PT, P, R
from pipelines.phi.recognizers.name_kin import (
    clinical_stem,
    initial_forms,
    newer_first_name,
)
from pipelines.phi.recognizers.name_lists import (
    PLURAL_TITLES,
    WRAP_LINKS,
    and_list,
    comma_list,
    line_wrap,
)
from pipelines.phi.recognizers.name_words import (
    _base,
    _city_state,
    _dotted_credential,
    _is_initial,
    _namey,
    _rare_unknown,
    _role_slip,
    _surname_after_first,
    _tight,
    _word_surname_after_dr,
    message_initial,
    set_off_short_name,
    surname_letter,
)
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category

if TYPE_CHECKING:
    from pipelines.phi.recognizers.names import _Note

# The words that end a verb of talking before the name: "spoke with X", "seen by X",
# "explained to X", "talked w X".
TALK_LINKS: Final = frozenset({"with", "w", "by", "to"})
# Words of leaving a message, after which "for" links the name too ("message left for X",
# "LM for X", "left VM for X").
MESSAGE_WORDS: Final = frozenset({"message", "msg", "lm", "vm", "voicemail"})
_MESSAGE_LINKS: Final = TALK_LINKS | {"for"}
# Written after a name and a credential's first letter: "J. Doe R.N.", "A. Smith M.D."
DOTTED_CREDENTIAL_LETTERS: Final = frozenset({"r", "m"})


def _title_role(note: _Note, i: int) -> Category | None:
    """The role a title at word ``i`` gives the next word, or None when it is no title here."""
    words, tok = note.words, note.words[i]
    title = note.cues.titles.get(tok.lower) or _title_slip(note, tok.lower)
    if title is None or i + 1 >= note.n:
        return None
    if not _title_gap(note, i):
        return None
    if title is PT and note.mixed and tok.is_upper:
        return None  # "MS." in a mixed-case note is mental status / multiple sclerosis
    if title is PT and not note.mixed:
        # "ms" in a one-case note may be morphine or mental status: need a real name
        nw = words[i + 1].lower
        if lx.name_score(nw) < 0.5 and not (lx.name_score(nw) == -9.0 and lx.zipf(nw) < _RARE):
            return None
    return title


def _title_gap(note: _Note, i: int) -> bool:
    """Only blanks, a period or an apostrophe between the title ``i`` and the next word; a
    line break only after the title's period ("Dr.\nQuist"; "follow ms\nlytes" is mental
    status)."""
    gap = note.gap(i, i + 1)
    if "\n" in gap:
        return gap.strip() == "." and line_wrap(note, i)
    return gap.strip() in {"", ".", "'"}


def _title_slip(note: _Note, low: str) -> Category | None:
    """A title with one typing slip ("the renal doctr Hanlon"), unless the form is an English
    word ("miser")."""
    role = note.cues.title_slips.get(low)
    return role if role is not None and lx.zipf(low) < 2.0 else None


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


def after_title(note: _Note, i: int) -> int | None:
    """ "Dr. Xyz", "Mrs. X.", "Dr. J. Xyz", "Dr Will Xyz", "Dr. Q.": the name after a title."""
    title = _title_role(note, i)
    if title is None:
        return None
    words, text = note.words, note.text
    nxt = i + 1
    if _is_initial(words[nxt], text) and title is PT:  # "Ms. S." patient initial
        note.take(nxt, PT, 0.85)
        return nxt + 1
    particled = note.particle_name(nxt, title, 0.9)  # "Dr. de la Cruz", "Dr van der Berg"
    if particled is not None:
        return particled
    nxt = _surname_slot(note, nxt, title)
    if _surname_ok(note, i, nxt, title):
        if nxt != i + 1:
            note.take(i + 1, title, 0.9)
        end = note.run_right(nxt, title, 0.9, 3)
        if words[i].lower not in PLURAL_TITLES:
            return end
        return comma_list(note, and_list(note, end, title), title)
    if surname_letter(words[i + 1], text):  # "Dr. Q.", "Dr B today": the initial alone
        note.take(i + 1, title, 0.85)
        return i + 2
    return None


def _surname_ok(note: _Note, i: int, nxt: int, title: Category) -> bool:
    """May word ``nxt`` be the surname after the title ``i``: a word a title may name, in a
    one-case note after "Dr" a census surname that is a word too ("DR. PRICE"), and after
    "Drs" one that opens a list ("DRS MONEY AND ERDMANN": ``one_case_surname``)."""
    word = note.words[nxt]
    if note.ok(nxt, 3):
        return True
    if title is not P or note.mixed:
        return False
    if _word_surname_after_dr(word):
        return True
    return (
        note.words[i].lower in PLURAL_TITLES
        and nxt + 2 < note.n
        and note.words[nxt + 1].lower in note.cues.joiners
        and note.one_case_surname(word)
    )


def _surname_slot(note: _Note, nxt: int, title: Category) -> int:
    """Where the surname after a title stands: past an initial ("Dr. J. Smith", "Dr B Smith")
    or a first name ("Dr Will Cole": the first name is taken here), else right after it."""
    words, n = note.words, note.n
    bare = len(words[nxt].text) == 1 and nxt + 1 < n and words[nxt].text.isalpha()
    if (_is_initial(words[nxt], note.text) or bare) and nxt + 1 < n:
        return nxt + 1
    if _first_name_then_surname(note, nxt):
        note.take(nxt, title, 0.85)
        return nxt + 1
    return nxt


def before_credential(note: _Note, i: int) -> None:
    """ "Jane Doe, RN", "J. Doe R.N.": the name before a credential is a provider."""
    tok = note.words[i]
    low = tok.lower
    if low in note.cues.credentials or (
        low in DOTTED_CREDENTIAL_LETTERS and _dotted_credential(note.text, tok)
    ):
        after = note.text[tok.end : tok.end + 3].strip()
        if not (low == "pa" and after[:1].isdigit()) and not _city_state(note.words, i, note.text):
            note.run_left(i, P, 0.85, low)


def before_role_after(note: _Note, i: int) -> None:
    """ "Xyz aware", "J. Xyz notified": the name before a word that makes it a provider."""
    words, tok = note.words, note.words[i]
    role = note.cues.role_after.get(tok.lower)
    if role is None or i == 0 or not _tight(note.gap(i - 1, i)):
        return
    j = i - 1
    if _service_word(words[j].lower):
        return  # "Hospice aware": a service is told, no one by name
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


def role_in_parens(note: _Note, i: int) -> None:
    """ "Jane Doe (daughter)", "J. Doe (resident)": the role in parentheses after the name."""
    role = _role_word(note, i)
    tok = note.words[i]
    if (
        role is not None
        and i > 0
        and note.text[note.words[i - 1].end : tok.start].strip() == "("
        and note.text[tok.end : tok.end + 1] == ")"
    ):
        note.run_left(i, role, 0.75, "paren")


def family_contact(note: _Note, i: int) -> None:
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


def _name_slot(note: _Note, i: int) -> int | None:
    """Where the name after the role word ``i`` starts (past "is", "named"…), if it is close."""
    words, n = note.words, note.n
    j = i + 1
    while j < n and words[j].lower in note.cues.skippable and j - i < 3:
        if words[j].lower == "in" and (j + 1 >= n or words[j + 1].lower != "law"):
            return None  # "son in law Jim", but "WIFE IN HALL": a place, no name after
        j += 1
    if j >= n:
        return None
    gap = _wrapped(note, i, j)
    if gap == "-" and f"{words[i].lower}-{words[j].lower}" in word_set("eponyms"):
        return None  # "Child-Pugh B": an eponym, no role word and name ("DAUGHTER-ANN" is)
    if len(gap) < 6 and "\n" not in gap and "." not in gap.strip(" ,:(-"):
        # "son tylenol'd him"; "Son Hospice worker called": a service, no one's name
        return None if clinical_stem(words[j].lower) or _service_word(words[j].lower) else j
    return None


def _wrapped(note: _Note, i: int, j: int) -> str:
    """The gap before the name slot ``j`` after the cue ``i``, a line wrapped after a
    preposition read as a blank ("spoke with\nGreta Q.")."""
    gap = note.gap(j - 1, j)
    if "\n" in gap and j == i + 1 and note.words[i].lower in WRAP_LINKS and line_wrap(note, i):
        return " "
    return gap


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
    # a first name newer than the census after a kin word ("her son Liam visited")
    if newer_first_name(note, i, j, role):
        return note.run_right(j, role, 0.75, 2)
    # "per d ross", "wife j. ross": an initial, then the surname; "Son V. called"
    after = initial_forms(note, i, j, role)
    if after is not None:
        return after
    word = note.words[j]
    if role is R and not note.mixed and _rare_unknown(word):
        return note.run_right(j, role, 0.7, 2)  # "BROTHER XYZ"
    if role is R and j == i + 1 and set_off_short_name(word, note.text, note.gap(i, j)):
        note.take(j, role, 0.7)  # "son, jo, at bedside"
        return j + 1
    # "per protocol", "per Carevue": after "per" only a census name counts
    weak = note.words[i].lower == "per" and lx.name_score(word.lower) < 1.0
    if not weak and note.ok(j, 2):
        return note.run_right(j, role, 0.8 if role is not OTHER else 0.7, 2)
    if _capitalised_full_name(note, j):
        note.take(j, role, 0.7)
        return note.run_right(j + 1, role, 0.7, 2)
    return None


def after_role(note: _Note, i: int) -> int | None:
    """ "wife Ann", "per Dr X", "daughter's name is Ann": the name after a role word."""
    role = _role_word(note, i)
    if role is None or i + 1 >= note.n:
        return None
    return _after_role(note, i, role)


@cache
def _services() -> frozenset[str]:
    """Services one talks with or leaves a message for, no person ("spoke with Hospice",
    "message left for Case Management")."""
    return word_set("facility_services") | word_set("exclusion_service_nouns")


def _service_word(low: str) -> bool:
    """A service of four letters or more ("Hospice", "Case Management"); a shorter one may be
    a first name ("husband Ed": the emergency department's initials)."""
    return len(low) >= 4 and low in _services()


def talked_with(note: _Note, i: int) -> int | None:
    """ "spoke (at length) with X", "explained to X", "significant other X": the name after a
    verb of talking (``i``) and the "with" / "to" / "by" one or two words after it."""
    words, n = note.words, note.n
    low = words[i].lower
    if low == "significant":
        if i + 2 < n and words[i + 1].lower == "other":
            return _after_role(note, i + 1, R)
        return None
    verbs = note.cues.verb_then_name
    role = verbs.get(low)
    if role is None:
        return None
    links = _MESSAGE_LINKS if low in MESSAGE_WORDS else TALK_LINKS
    for j in range(i + 1, min(i + 3, n - 1)):
        if words[j].lower in links and words[j + 1].lower not in _services():
            # the verb right before the link gives the role ("called talked with X")
            found = _after_role(note, j, verbs.get(words[j - 1].lower, role))
            if (
                found is not None
                and links is _MESSAGE_LINKS
                and message_initial(note.words, note.text, note.taken, found)
            ):
                note.take(found, note.taken[found - 1][0], 0.7)  # "lm for bea r to call"
                return found + 1
            if found is not None:
                return found
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


def initial_then_surname(note: _Note, i: int) -> int | None:
    """ "J. Xyz": an initial with its period, then a surname."""
    words, tok = note.words, note.words[i]
    if not (initial_gate(tok) and _is_initial(tok, note.text) and i + 1 < note.n):
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


def initial_gate(tok: lx.Token, *_: object) -> bool:
    """A single letter that is no English word ("a", "I"): it may be an initial."""
    return len(tok.text) == 1 and tok.lower not in {"a", "i"}
