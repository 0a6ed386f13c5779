"""Person names from context cues, capitalisation and census name lists.

Why context first: in nursing notes half the names are written in all-uppercase or
all-lowercase, and many census names are English words ("Will", "Bean") or clinical eponyms
("Foley", "Parkinson"). So a word becomes a name when a cue says so — a title before it
("Dr.", "Mrs."), a credential after it ("RN", "MD", "RRT"), a role word ("wife", "son",
"per", "spoke with") — and the cue also gives the role: provider, relative or patient.
Without a cue only a word that is far more a name than an English word counts, and only
where capitalisation supports it. Eponym heads ("X catheter", "X's disease", "X sign") veto
a word for the whole note unless a title stands before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.known import known_name_forms
from pipelines.phi.registry import register
from pipelines.spans import Category, Span

P, R, PT, OTHER = (
    Category.NAME_PROVIDER,
    Category.NAME_RELATIVE,
    Category.NAME_PATIENT,
    Category.NAME_OTHER,
)


def _words(spaced: str) -> list[str]:
    """A word list written as one spaced string (easier to read and extend)."""
    return spaced.split()


# Titles: the next word is a name whatever it looks like (unless it is a plain English word).
TITLES: Final = {
    "dr": P,
    "drs": P,
    "doctor": P,
    "dr's": P,
    "drs'": P,
    "mr": PT,
    "mrs": PT,
    "ms": PT,
    "miss": PT,
    "mister": PT,
}
# Credentials written after a name ("Jane Doe, RN").
CREDENTIALS: Final = frozenset(
    _words("rn md np pa rrt bsn msn lpn cna crna phd pharmd rph np-c aprn licsw msw lcsw")
)
# Role words before a name ("daughter Jane", "per Smith", "spoke with Jones").
ROLE_BEFORE: Final = {
    **dict.fromkeys(
        _words(
            "wife husband daughter daughters dtr dtrs son sons sister sisters sis brother brothers "
            "bro mother mom father dad friend friends niece nephew grandson granddaughter "
            "grandaughter granddtr grandchild grandmother grandfather aunt uncle cousin fiance "
            "fiancee boyfriend girlfriend partner companion proxy hcp neighbor neighbour "
            "son-in-law daughter-in-law sister-in-law brother-in-law stepson stepdaughter "
            "spouse children child relative"
        ),
        R,
    ),
    **dict.fromkeys(
        _words(
            "per attending resident fellow intern nurse np rn md pa rrt surgeon cardiologist "
            "covering paged notified oncall physician physicians neurologist pcp"
        ),
        P,
    ),
    **dict.fromkeys(
        _words(
            "contact contacts contacted caseworker chaplain rabbi priest pastor reverend rev "
            "meet reach reached "
            "caregiver sitter aide "
            "lawyer attorney guardian interpreter"
        ),
        OTHER,
    ),
}
# Kinship words written with one slip ("daugher", "husabnd"); a form that is an English word
# ("bother") is checked away where it is used (``_role_slip``).
ROLE_SLIPS: Final = {
    slip: R
    for word, cat in ROLE_BEFORE.items()
    if cat is R and len(word) >= 7 and "-" not in word  # shorter ones slip into words
    for slip in lx.slips(word)
}
# "with" / "by" / "to" cue a name only after a verb of talking or seeing ("spoke with Jones").
VERB_THEN_NAME: Final = {
    **dict.fromkeys(
        _words(
            "spoke spoken speak speaking talked talk talking met meet discussed discussion conversation "
            "conversed updated update called call contacted contact visit visited accompanied "
            "work working consult consulting meet meeting explained explain reach reached"
        ),
        OTHER,
    ),
    **dict.fromkeys(_words("seen evaluated examined consulted followed"), P),
}
# Words after a name that make it a provider ("Smith aware", "J. Smith notified").
ROLE_AFTER: Final = {
    **dict.fromkeys(_words("aware notified paged informed consulted"), P),
}
# Device, disease and sign heads that make the word before them an eponym, not a person.
EPONYM_HEADS: Final = frozenset(
    _words(
        "catheter cath catheters disease diseases sign signs syndrome line lines test maneuver "
        "manuever reflex score scale criteria tube drain bag stocking stockings boots boot collar "
        "procedure operation repair ulcer lymphoma palsy fracture balloon pump valve shunt "
        "classification phenomenon respiration breathing position dressing mask tip "
        "needle dementia chorea aneurysm tumor tumour ring "
        # what is done to a device, not to a person: "X placed", "X d/c'd", "X site"
        "placed inserted removed pulled dc'd discontinued intact flushed draining clamped "
        "sutured site sites insertion insertions correlating waveform dampened"
    )
)
# Grammar words that may sit between a role word and the name ("son is Jim", "dtr named Ann").
_SKIPPABLE: Final = frozenset(_words("is was named name in law ho person"))
# Clinical services that are "seen by" / "per" like people ("per Neuro", "Renal consulted").
# Written by hand: the usual hospital service names, which no package lists.
SERVICES: Final = frozenset(
    _words(
        "neuro neurology nsurg neurosurg neurosurgery csurg cardiology cards renal nephrology "
        "pulm pulmonary gi surgery surg ortho ortho's id psych psychiatry team service heme "
        "onc oncology derm ent urology uro vascular ctsurg hepatology micu sicu ccu ns"
    )
)
# Words that are cues themselves are never the name ("updated by MD, Husband called").
_CUE_WORDS: Final = frozenset(
    {*TITLES, *CREDENTIALS, *ROLE_BEFORE, *ROLE_AFTER, *VERB_THEN_NAME, *SERVICES}
)
# Words that may start a rule wherever they stand.
_TRIGGERS: Final = frozenset(
    {
        *TITLES,
        *CREDENTIALS,
        *ROLE_BEFORE,
        *ROLE_AFTER,
        *ROLE_SLIPS,
        "with",
        "w",
        "by",
        "to",
        "other",
        "r",
        "m",
        "is",
    }
)
# Single letters that are clinical shorthand, not initials: right, left, with (c-bar),
# without (s-bar), after (p-bar), times, every, discontinue, and the pronoun/article.
_CLINICAL_LETTERS: Final = frozenset(_words("a i o r l c s p x q w d e"))
# Joiners inside a list of names ("Drs. Smith and Jones", "sons Al, Bob and Carl").
_JOINERS: Final = frozenset({"and", "&", "or"})

_VERY_COMMON = 5.0  # Zipf: a word this frequent is a name only after a title, in Title case
_COMMON = 4.3  # Zipf: above this a lexicon name after a weak cue needs Title case
_RARE = 2.6  # Zipf: an unknown word this rare after a strong cue is taken as a name


def _plausible(tok: Token, mixed: bool, strength: int, lowered: frozenset[str]) -> bool:
    """Can ``tok`` be (part of) a name given a cue of ``strength`` (3 title, 2 role, 1 none)?

    ``lowered`` holds the words this (mixed-case) note also writes in lower case: those are
    common nouns here ("Aline placed" … "aline dc'd"), whatever the census says.
    """
    word = _base(tok.lower)
    if len(word) < 2:
        return False
    if len(word) < 3 and strength < 3 and not (mixed and tok.is_title and lx.is_first_name(word)):
        return False  # two letters: a name only as "Ed", "Al" in Title case, or after a title
    f = lx.zipf(word)
    ns = lx.name_score(word)
    named = ns > -9.0
    titled = tok.is_title or (tok.is_upper and not mixed)
    if mixed:
        if not (tok.is_title or tok.is_upper):
            # a lower-case word in a mixed-case note is no name, except after a title: "dr smith"
            return strength >= 3 and ((named and f < 5.6) or f < _RARE)
        if tok.is_upper and len(word) < 4 and strength < 3:
            return False  # "HO", "ASA": abbreviations
        if word in lowered and strength < 3:
            return False
    if strength >= 3:
        if named:
            if f >= 4.5 and ns < -0.5 and not (mixed and titled):  # "ms given", "dr check"
                return False
            return f < 5.5 or (mixed and titled)
        return f < _RARE or (mixed and titled and f < 3.5)
    if strength == 2:
        if mixed and titled:
            return (named and f < 5.6) or f < 3.5
        # one-case note: a census name, or a word English never uses that is no drug
        return (ns >= 0.5 and f < 5.6) or (lx.rare_unknown(word) and not lx.near_english(word))
    # no cue: a word used far more as a name than as an English word
    return mixed and titled and ((ns > 1.5 and f < 3.5) or (ns >= 2.0 and f < 4.0))


def _is_initial(tok: Token, text: str) -> bool:
    """A single letter standing alone and followed by a period ("J. Smith", not "20's.")."""
    return (
        len(tok.text) == 1
        and text[tok.end : tok.end + 1] == "."
        and (tok.start == 0 or text[tok.start - 1] in " \t\n(,-")
    )


def _base(word: str) -> str:
    """The word without a possessive "'s"."""
    for suffix in ("'s", "’s"):
        if word.endswith(suffix) and len(word) > len(suffix):
            return word[: -len(suffix)]
    return word


def _gap(text: str, left: Token, right: Token) -> str:
    return text[left.end : right.start]


def _tight(gap: str, left: Token | None = None) -> bool:
    """Two words of one name: separated by spaces, a hyphen or an initial's period."""
    if len(gap) > 3 or "\n" in gap:
        return False
    mark = gap.strip()
    return mark in {"", "-"} or (mark == "." and (left is None or len(left.text) == 1))


def _eponyms(words: tuple[Token, ...], text: str) -> set[str]:
    """Words used as eponyms in this note: followed by an eponym head ("foley catheter")."""
    found: set[str] = set()
    for i in range(len(words) - 1):
        nxt = words[i + 1]
        head = nxt.lower
        if head == "s" and i + 2 < len(words):  # "Parkinson's disease" tokenises as one word
            head = words[i + 2].lower
        if head in EPONYM_HEADS and "\n" not in _gap(text, words[i], nxt):
            found.add(words[i].lower.removesuffix("'s").removesuffix("’s"))
    return found


@register("names")
class NameRecognizer(Recognizer):
    """Names of providers, relatives and patients found by cue words and capitalisation."""

    categories = frozenset({P, R, PT, OTHER})

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        words, mixed, text = toks.words, toks.mixed_case, doc.text
        if not words:
            return []
        eponyms = _eponyms(words, text) if not toks.lower_set.isdisjoint(EPONYM_HEADS) else set()
        lowered = frozenset([t[3] for t in words if t[2].islower()]) if mixed else frozenset()
        # a lower-case note: its few capitalised words are as telling as in a mixed-case one
        lower_note = toks.lower_note
        taken: dict[int, tuple[Category, float]] = {}

        def take(i: int, cat: Category, conf: float) -> None:
            old = taken.get(i)
            if old is None or old[1] < conf:
                taken[i] = (cat, conf)

        def ok(i: int, strength: int) -> bool:
            tok = words[i]
            if lower_note and tok.is_title:  # a capital in a lower-case note is a signal
                return _plausible(tok, True, strength, lowered) and _base(tok.lower) not in (
                    _CUE_WORDS if strength >= 3 else _CUE_WORDS | eponyms
                )
            base = _base(tok.lower)
            if base in _CUE_WORDS or (base in eponyms and strength < 3):
                return False
            return _plausible(tok, mixed, strength, lowered)

        def run_right(i: int, cat: Category, conf: float, strength: int) -> int:
            """Take the name starting at word ``i`` (first word already judged); return next index."""
            take(i, cat, conf)
            j = i + 1
            count = 1
            while (
                j < len(words)
                and count < 4
                and _tight(_gap(text, words[j - 1], words[j]), words[j - 1])
            ):
                if (
                    _is_initial(words[j], text)
                    or ok(j, max(strength - 1, 2))
                    or _surname_after_first(words[j - 1], words[j], mixed)
                ) and words[j].lower not in CREDENTIALS:
                    take(j, cat, conf)
                    count += 1
                    j += 1
                else:
                    break
            # a list: "Drs. Smith and Jones", "sons Al, Bob and Carl"
            while j + 1 < len(words):
                gap = _gap(text, words[j - 1], words[j])
                if "\n" in gap:
                    break
                if words[j].lower in _JOINERS and ok(j + 1, 3 if mixed and strength >= 3 else 2):
                    take(j + 1, cat, conf)
                    j += 2
                elif gap.strip() == "," and cat is R and lx.is_name(words[j].lower) and ok(j, 2):
                    take(j, cat, conf)
                    j += 1
                else:
                    break
            return j

        def run_left(i: int, cat: Category, conf: float, credential: str = "") -> None:
            """Take up to three name words ending at word ``i - 1`` (before a credential)."""
            j = i - 1
            got = 0
            while j >= 0 and got < 3:
                gap = _gap(text, words[j], words[j + 1])
                if "\n" in gap or (got and not _tight(gap, words[j])):
                    break
                if not got and gap.strip() not in {"", ",", "(", "/"}:
                    break
                if not got and credential == "pa" and gap.strip() not in {"", ","}:
                    break
                # after an initial or a first name, any rare word before "RN" is a surname;
                # a signature line ("Jane Doe RN" alone on its line) is sure as well
                strength = 2
                if credential and j > 0:
                    prev = words[j - 1]
                    if _is_initial(prev, text) or lx.name_score(prev.lower) >= 1.5:
                        strength = 3
                if credential and got and _line_start(text, words[j].start):
                    strength = 3  # a signature line: "Jane Doe RN" alone on its line
                if (
                    _is_initial(words[j], text)
                    or ok(j, strength)
                    or (got and _first_before_surname(words[j], mixed))
                ):
                    take(j, cat, conf)
                    got += 1
                    j -= 1
                else:
                    break

        n = len(words)
        first_names = lx.first_names()
        i = 0
        while i < n:
            tok = words[i]
            low = tok.lower
            # fast path: a word that is no cue, no initial, not capitalised in a mixed-case note
            # and no census first name in a one-case note can start no rule
            if (
                low not in _TRIGGERS
                and len(low) > 1
                and (
                    (not tok.text[0].isupper())
                    if mixed
                    else (low not in first_names and not (lower_note and tok.text[0].isupper()))
                )
            ):
                if (
                    mixed
                    and low in first_names
                    and i not in taken
                    and i + 1 < n
                    and _lower_full_name(tok, words[i + 1], text, eponyms)
                ):
                    take(i, OTHER, 0.6)  # "john kowalski in to visit", no cue at all
                    i = run_right(i + 1, OTHER, 0.6, 3)
                    continue
                i += 1
                continue
            if low in _TRIGGERS or len(low) == 1:  # cue words and initials
                title = TITLES.get(low)
                if title is not None:
                    gap1 = _gap(text, tok, words[i + 1]) if i + 1 < n else "\n"
                    if "\n" in gap1 or gap1.strip() not in {"", ".", "'"}:
                        title = None
                if title is PT and mixed and tok.is_upper:
                    title = None  # "MS." in a mixed-case note is mental status / multiple sclerosis
                if title is PT and not mixed and i + 1 < n:
                    # "ms" in a one-case note may be morphine or mental status: need a real name
                    nw = words[i + 1].lower
                    if lx.name_score(nw) < 0.5 and not (
                        lx.name_score(nw) == -9.0 and lx.zipf(nw) < _RARE
                    ):
                        title = None
                if title is not None:
                    nxt = i + 1
                    if _is_initial(words[nxt], text) and title is PT:  # "Ms. S." patient initial
                        take(nxt, PT, 0.85)
                        i = nxt + 1
                        continue
                    bare = len(words[nxt].text) == 1 and nxt + 1 < n and words[nxt].text.isalpha()
                    if (_is_initial(words[nxt], text) or bare) and nxt + 1 < n:
                        nxt += 1  # "Dr. J. Smith", "Dr B Smith"
                    elif (  # "Dr Will Cole": a common first name, then a surname
                        nxt + 1 < n
                        and lx.is_first_name(words[nxt].lower)
                        and _tight(_gap(text, words[nxt], words[nxt + 1]), words[nxt])
                        and ok(nxt + 1, 3)
                        and (words[nxt + 1].is_title or not mixed)
                    ):
                        take(nxt, title, 0.85)
                        nxt += 1
                    if ok(nxt, 3):
                        if nxt != i + 1:
                            take(i + 1, title, 0.9)
                        i = run_right(nxt, title, 0.9, 3)
                        continue
                if low in CREDENTIALS or (low in {"r", "m"} and _dotted_credential(text, tok)):
                    after = text[tok.end : tok.end + 3].strip()
                    if not (low == "pa" and after[:1].isdigit()) and not _city_state(
                        words, i, text
                    ):
                        run_left(i, P, 0.85, low)
                role = ROLE_AFTER.get(low)
                if role is not None and i > 0 and _tight(_gap(text, words[i - 1], tok)):
                    j = i - 1
                    after_initial = j > 0 and (
                        _is_initial(words[j - 1], text)
                        or _surname_after_first(words[j - 1], words[j], mixed)
                    )
                    if (after_initial and ok(j, 3)) or (
                        ok(j, 2) and (words[j].is_title or lx.name_score(words[j].lower) >= 1.5)
                    ):
                        run_left(i, role, 0.75, "initial" if after_initial else "")
                role = ROLE_BEFORE.get(low) or _role_slip(low)
                if (  # "Jane Doe (daughter)", "J. Doe (resident)": the role in parentheses
                    role is not None
                    and i > 0
                    and text[words[i - 1].end : tok.start].strip() == "("
                    and text[tok.end : tok.end + 1] == ")"
                ):
                    run_left(i, role, 0.75, "paren")
                if (  # "Anne is family contact", "Jim is the HCP"
                    low == "is"
                    and 0 < i < n - 1
                    and _tight(_gap(text, words[i - 1], tok))
                    and (
                        ROLE_BEFORE.get(words[i + 1].lower) is R
                        or words[i + 1].lower in {"family", "contact", "spokesperson"}
                    )
                ):
                    run_left(i, R, 0.7)
                if role is None and low in {"with", "w", "by", "to"} and i > 0:
                    # "spoke (at length / extensively) with X", "explained to X"
                    role = VERB_THEN_NAME.get(words[i - 1].lower)
                    if role is None and i > 1:
                        role = VERB_THEN_NAME.get(words[i - 2].lower)
                if (
                    role is None
                    and low == "other"
                    and i > 0
                    and words[i - 1].lower == "significant"
                ):
                    role = R
                if role is not None and i + 1 < n:
                    j = i + 1
                    while j < n and words[j].lower in _SKIPPABLE and j - i < 3:
                        j += 1
                    gap = text[words[j - 1].end : words[j].start] if j < n else "\n"
                    if j < n and len(gap) < 6 and "\n" not in gap and "." not in gap.strip(" ,:(-"):
                        strength = 2
                        if (  # "per d ross": a bare lower-case initial and a census surname
                            len(words[j].text) == 1
                            and j + 1 < n
                            and words[j].lower not in _CLINICAL_LETTERS - {"d", "s", "e", "p", "c"}
                            and text[words[j].end : words[j + 1].start] == " "
                            and lx.name_score(words[j + 1].lower) >= 1.5
                            and ok(j + 1, 3)
                        ):
                            take(j, role, 0.7)
                            i = run_right(j + 1, role, 0.7, 3)
                            continue
                        if (  # "per E. Welsh"
                            _is_initial(words[j], text)
                            and j + 1 < n
                            and _tight(_gap(text, words[j], words[j + 1]))
                            and ok(j + 1, 3)
                        ):
                            take(j, role, 0.8)
                            i = run_right(j + 1, role, 0.8, 3)
                            continue
                        # "per protocol", "per Carevue": after "per" only a census name counts
                        weak = low == "per" and lx.name_score(words[j].lower) < 1.0
                        if role is R and not mixed and _rare_unknown(words[j]):
                            i = run_right(j, role, 0.7, strength)  # "BROTHER VINNY"
                            continue
                        if not weak and ok(j, strength):
                            i = run_right(j, role, 0.8 if role is not OTHER else 0.7, strength)
                            continue
                        if (  # "son: Vladimir Erickson": two capitalised words make a full name
                            (mixed or lower_note)
                            and j + 1 < n
                            and words[j].is_title
                            and words[j + 1].is_title
                            and _tight(_gap(text, words[j], words[j + 1]), words[j])
                            and lx.zipf(words[j].lower) < 4.5
                            and _namey(words[j + 1])
                            and words[j].lower not in _CUE_WORDS
                        ):
                            take(j, role, 0.7)
                            i = run_right(j + 1, role, 0.7, strength)
                            continue
                if (
                    _is_initial(tok, text)
                    and i + 1 < n
                    and low not in {"a", "i"}
                    # "AMPHO B.", "VIT K.": a drug's letter is no initial
                    and not (i > 0 and lx.clinical_word(words[i - 1].lower))
                ):
                    sur = words[i + 1]
                    if (
                        _tight(_gap(text, tok, sur))
                        and (
                            (lx.name_score(sur.lower) >= 1.5 and lx.zipf(sur.lower) < 5.0)
                            or (
                                mixed
                                and sur.is_title
                                and ok(i + 1, 2)
                                and (lx.name_score(sur.lower) >= 1.0 or lx.zipf(sur.lower) < _RARE)
                            )
                            # "M. PEPPLER" in a one-case note: a surname English never uses
                            or (
                                not mixed
                                and (tok.text.isupper() or lower_note)
                                and text[tok.end : sur.start] == ". "
                                and (
                                    (
                                        lx.rare_unknown(_base(sur.lower))
                                        and (tok.text.isupper() or not lx.near_english(sur.lower))
                                    )
                                    or (
                                        lx.name_score(_base(sur.lower)) >= 0.5
                                        and lx.zipf(_base(sur.lower)) < 4.0
                                    )
                                )
                            )
                        )
                        and ok(i + 1, 3)
                    ):
                        take(i, OTHER, 0.7)
                        i = run_right(i + 1, OTHER, 0.7, 2)
                        continue
            # no cue: two Title-case words that are each a name or rare ("Radu Crosson")
            if (
                (mixed or lower_note)
                and tok.is_title
                and i + 1 < n
                and i not in taken
                and words[i + 1].is_title
                and _tight(_gap(text, tok, words[i + 1]), tok)
                and _namey(tok)
                and _namey(words[i + 1])
                and (
                    lx.is_first_name(low)
                    or _rare_unknown(tok)
                    or (lx.zipf(low) < 2.5 and not _sentence_start(text, tok.start))
                )
                and low not in eponyms
                and _base(words[i + 1].lower) not in eponyms
                and ok(i, 2)
                and ok(i + 1, 2)
            ):
                take(i, OTHER, 0.6)
                i = run_right(i + 1, OTHER, 0.6, 2)
                continue
            # "J SMITH": a bare capital initial and a surname that is far more a name than a word
            if (
                len(tok.text) == 1
                and tok.text.isupper()
                and low not in _CLINICAL_LETTERS
                and (tok.start == 0 or text[tok.start - 1] in " \n\t(")
                and i + 1 < n
                and text[tok.end : words[i + 1].start] == " "
                and lx.name_score(words[i + 1].lower) >= 1.8
                and lx.zipf(words[i + 1].lower) < 5.0
                and (words[i + 1].is_upper or words[i + 1].is_title)
            ):
                take(i, OTHER, 0.6)
                i = run_right(i + 1, OTHER, 0.6, 2)
                continue
            # no cue: a rare census first name in Title case, maybe with its last name
            if (
                (mixed or lower_note)
                and tok.is_title
                and i not in taken
                and lx.is_first_name(low)
                and (ok(i, 1) or _common_first_name(tok, text, lowered, eponyms))
            ):
                i = run_right(i, OTHER, 0.6, 2)
                continue
            # no cue, one-case note: "AGNES MUNROE" (first name + census surname). A first name
            # alone is not enough here: "MAE", "PERLA", "ALINE" are clinical abbreviations too.
            if not mixed and i not in taken and lx.is_first_name(low) and low not in eponyms:
                ns = lx.name_score(low)
                nxt_ok = (
                    i + 1 < n
                    and _tight(_gap(text, tok, words[i + 1]))
                    and lx.name_score(_base(words[i + 1].lower)) >= 1.5
                    and _surname_after_first(tok, words[i + 1], mixed)
                )
                f = lx.zipf(low)
                if ((ns >= 1.5 and f < 4.5) or (ns >= 2.0 and f < 5.5)) and nxt_ok:
                    take(i, OTHER, 0.6)
                    i = run_right(i + 1, OTHER, 0.6, 2)
                    continue
            i += 1

        _signature(words, text, mixed, take)
        _propagate(words, mixed, taken)
        known = known_name_forms(doc)
        if known:  # the structured part of the message tells the role
            for idx, (_, conf) in list(taken.items()):
                role = known.get(_base(words[idx].lower))
                if role is not None:
                    taken[idx] = (role, max(conf, 0.95))
        return _spans(words, taken, text)


def _surname_after_first(first: Token, word: Token, mixed: bool) -> bool:
    """``word`` right after a census first name is its surname: a census surname far more a name
    than a word, or a rare unknown word ("Leslie Kiezulas")."""
    if not lx.is_first_name(first.lower) or lx.name_score(first.lower) < 1.0:
        return False
    if mixed and not (word.is_title or word.is_upper):
        return False
    low = _base(word.lower)
    if len(low) < 3:
        return False
    ns = lx.name_score(low)
    return (ns >= 1.5 and lx.zipf(low) < 4.5) or (ns == -9.0 and lx.zipf(low) < 2.0)


def _lower_full_name(first: Token, sur: Token, text: str, eponyms: set[str]) -> bool:
    """ "john kowalski" in lower case in a mixed-case note: a first name that is no common word
    and a surname that is far more a name than a word, both lower case, one space apart."""
    if not (first.text.islower() and sur.text.islower()) or text[first.end : sur.start] != " ":
        return False
    f_low, s_low = first.lower, _base(sur.lower)
    return (
        len(f_low) >= 3
        and len(s_low) >= 3
        and (
            (lx.name_score(f_low) >= 1.0 and lx.zipf(f_low) < 4.5)
            or (lx.name_score(f_low) >= 2.0 and lx.zipf(f_low) < 5.5)
        )
        and lx.name_score(s_low) >= 1.5
        and lx.zipf(s_low) < 3.5
        and s_low not in eponyms
        and s_low not in _CUE_WORDS
        and not lx.clinical_word(s_low)
    )


def _role_slip(low: str) -> Category | None:
    """A kinship word with a typing slip ("daugher"), unless the form is an English word."""
    role = ROLE_SLIPS.get(low)
    return role if role is not None and lx.zipf(low) < 2.0 else None


def _first_before_surname(tok: Token, mixed: bool) -> bool:
    """ "DICK SMITH (RESIDENT)": a census first name right before a surname already taken."""
    low = tok.lower
    return (
        lx.is_first_name(low)
        and lx.zipf(low) < 5.5
        and lx.name_score(low) > -0.5
        and low not in _CUE_WORDS
        and (not mixed or tok.is_title or tok.is_upper)
    )


def _common_first_name(tok: Token, text: str, lowered: frozenset[str], eponyms: set[str]) -> bool:
    """ "supportive to pt, John.": a census first name used far more as a name than as a word
    ("John", "Mary"; not "Will", "Rose"), in Title case inside a sentence of a mixed-case note."""
    low = _base(tok.lower)
    return (
        len(low) >= 3
        and lx.name_score(low) >= 2.0
        and lx.zipf(low) < 5.5
        and low not in lowered
        and low not in eponyms
        and low not in _CUE_WORDS
        and not _sentence_start(text, tok.start)
    )


def _namey(tok: Token) -> bool:
    """A word that is more a name than an English word, or is almost never seen in English."""
    low = _base(tok.lower)
    return (lx.name_score(low) >= 1.0 and lx.zipf(low) < 5.0) or (
        lx.name_score(low) == -9.0 and lx.zipf(low) < 2.5 and len(low) >= 3
    )


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
    for idx in range(first, k + 1):
        if words[idx].lower not in CREDENTIALS and lx.zipf(words[idx].lower) < 5.5:
            take(idx, P, 0.6)


def _propagate(
    words: tuple[Token, ...], mixed: bool, taken: dict[int, tuple[Category, float]]
) -> None:
    """A name found once in a note is a name wherever the same word recurs in that note."""
    found: dict[str, tuple[Category, float]] = {}
    for idx, (cat, conf) in taken.items():
        low = _base(words[idx].lower)
        if len(low) >= 3 and (lx.zipf(low) < 4.5 or lx.name_score(low) >= 1.5):
            found.setdefault(low, (cat, min(conf, 0.7)))
    if not found:
        return
    for idx, tok in enumerate(words):
        if tok[3] not in found and _base(tok[3]) not in found:
            continue
        if idx in taken:
            continue
        hit = found.get(_base(tok.lower))
        if hit is not None and (not mixed or tok.is_title or tok.is_upper):
            taken[idx] = hit


def _city_state(words: tuple[Token, ...], i: int, text: str) -> bool:
    """ "Silver Spring, MD": a listed city before ", MD" / ", PA" makes it a state."""
    if i < 1 or text[words[i - 1].end : words[i].start] != ", ":
        return False
    if words[i].lower not in {"md", "pa"}:
        return False
    one = words[i - 1].lower
    two = f"{words[i - 2].lower} {one}" if i > 1 else ""
    # "Jones, MD" is a doctor although Jones is also a town: a surname wins for one word
    return two in lx.us_cities() or (one in lx.us_cities() and lx.name_score(one) < 1.0)


def _sentence_start(text: str, pos: int) -> bool:
    """The word at ``pos`` opens a sentence, a line or a heading (so its capital says nothing)."""
    before = text[max(0, pos - 4) : pos].rstrip(" \t")
    return not before or before[-1] in ".:;!?\n-(\"'"


def _line_start(text: str, pos: int) -> bool:
    """Only spaces between the last line break (or the start) and ``pos``."""
    line = text.rfind("\n", 0, pos)
    return not text[line + 1 : pos].strip()


def _rare_unknown(tok: Token) -> bool:
    """A word in no census list and (almost) never seen in English: a foreign or rare name."""
    low = _base(tok.lower)
    return (
        len(low) >= 3
        and lx.name_score(low) == -9.0
        and lx.zipf(low) < 1.5
        and not lx.clinical_word(low)
        and not lx.near_english(low)
    )


def _dotted_credential(text: str, tok: Token) -> bool:
    """``R.N.`` / ``M.D.`` written with periods."""
    return text[tok.end : tok.end + 3].upper() in {".N.", ".D."}


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
