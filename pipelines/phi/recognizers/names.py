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

from collections.abc import Container
from functools import cache
from itertools import compress
from operator import itemgetter, or_
from string import ascii_lowercase

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.recognizers.known import known_name_forms
from pipelines.phi.recognizers.name_cues import (
    _CLINICAL_LETTERS,
    _CUE_WORDS,
    _JOINERS,
    _RARE,
    _SKIPPABLE,
    _TRIGGERS,
    CREDENTIALS,
    EPONYM_HEADS,
    OTHER,
    PT,
    ROLE_AFTER,
    ROLE_BEFORE,
    ROLE_POSSESSIVE,
    ROLE_SLIPS,
    TITLES,
    VERB_THEN_NAME,
    P,
    R,
)
from pipelines.phi.recognizers.name_passes import (
    _propagate,
    _signature,
    _spans,
)
from pipelines.phi.recognizers.name_words import (
    _base,
    _city_state,
    _common_first_name,
    _dotted_credential,
    _eponyms,
    _first_before_surname,
    _gap,
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


class _MayStart(dict[str, bool]):
    """Lower-case word -> may it start a rule whatever its case: a cue word, a single letter
    (an initial) or a census first name. Filled on first sight, bounded."""

    def __missing__(self, low: str) -> bool:
        verdict = low in _TRIGGERS or len(low) <= 1 or low in lx.first_names()
        if len(self) < 100_000:
            self[low] = verdict
        return verdict


_MAY_START = _MayStart()
_first_char = itemgetter(0)


@cache
def _start_words() -> frozenset[str]:
    """The lower-case words ``_MayStart`` says yes to, for ASCII notes (where a one-letter word
    is one of a-z): one set, so a note asks it once per distinct word, not once per token."""
    return frozenset({*_TRIGGERS, *ascii_lowercase, *lx.first_names()})


def _rule_starts(toks: lx.Tokens, capitals_count: bool, ascii_text: bool) -> list[int]:
    """Indices of the words the main loop must visit, picked with C-level ``map``: a word that
    may start a rule by itself, or (where case tells something) any capitalised word.

    Why the ASCII path: a per-token look-up in a big table misses the CPU cache once the other
    recognizers have run (~3x slower than in a tight loop), so the big set is asked once per
    distinct word and each token then asks only the note's few starters."""
    lows = toks.lowers
    if ascii_text:
        starters = toks.lower_set & _start_words()
        may = map(starters.__contains__, lows)
        if capitals_count:
            # an ASCII word sorts before "[" exactly when its first letter is a capital
            may = map(or_, may, map("[".__gt__, toks.texts))
    elif capitals_count:
        may = map(
            or_,
            map(_MAY_START.__getitem__, lows),
            map(str.isupper, map(_first_char, toks.texts)),
        )
    else:
        may = map(_MAY_START.__getitem__, lows)
    return list(compress(range(len(lows)), may))


@register("names")
class NameRecognizer(Recognizer):
    """Names of providers, relatives and patients found by cue words and capitalisation."""

    categories = frozenset({P, R, PT, OTHER})

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        words, mixed, text = toks.words, toks.mixed_case, doc.text
        if not words:
            return []
        eponyms = _eponyms(toks, text) if not toks.lower_set.isdisjoint(EPONYM_HEADS) else set()
        lowered: Container[str] = _Lowered(toks) if mixed else frozenset()
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
                elif gap.strip() == "/" and strength >= 3 and ok(j, 3):
                    take(j, cat, conf)  # "Drs. Smith/Jones" (not "Dr. Smith/Neuro": a service)
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
        title_case = lx.TITLE_CASE
        starts = _rule_starts(toks, mixed or lower_note, text.isascii())
        k, m = 0, len(starts)
        i = 0
        while True:
            # every word that is not in ``starts`` would only do ``i += 1`` below: jump over them
            while k < m and starts[k] < i:
                k += 1
            if k == m:
                break
            i = starts[k]
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
                    if ok(nxt, 3) or (
                        title is P and not mixed and _word_surname_after_dr(words[nxt])
                    ):
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
                role = ROLE_BEFORE.get(low)
                if role is None and low in ROLE_SLIPS:
                    role = _role_slip(low)
                if (  # "daughter's name is Ann" (not "wife's concerns")
                    role is None
                    and low in ROLE_POSSESSIVE
                    and i + 1 < n
                    and words[i + 1].lower in {"name", "names", "named"}
                ):
                    role = R
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
                    len(tok.text) == 1
                    and _is_initial(tok, text)
                    and i + 1 < n
                    and low not in {"a", "i"}
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
                                and low not in _CLINICAL_LETTERS  # "r > l. perl": left pupil
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
                        # "AMPHO B.", "VIT K.": a drug's letter is no initial
                        and not (i > 0 and lx.clinical_word(words[i - 1].lower))
                    ):
                        take(i, OTHER, 0.7)
                        i = run_right(i + 1, OTHER, 0.7, 2)
                        continue
            # no cue: two Title-case words that are each a name or rare ("Radu Crosson")
            if (
                (mixed or lower_note)
                and title_case[tok.text]
                and i + 1 < n
                and i not in taken
                and title_case[words[i + 1].text]
                and _tight(_gap(text, tok, words[i + 1]), tok)
                and _namey(tok)
                and _namey(words[i + 1])
                and (
                    low in first_names
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
                and title_case[tok.text]
                and i not in taken
                and low in first_names
                and (ok(i, 1) or _common_first_name(tok, text, lowered, eponyms))
            ):
                i = run_right(i, OTHER, 0.6, 2)
                continue
            # no cue, one-case note: "AGNES MUNROE" (first name + census surname). A first name
            # alone is not enough here: "MAE", "PERLA", "ALINE" are clinical abbreviations too.
            if not mixed and i not in taken and low in first_names and low not in eponyms:
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
        _propagate(words, toks.lowers, mixed, taken)
        known = known_name_forms(doc)
        if known:  # the structured part of the message tells the role
            for idx, (_, conf) in list(taken.items()):
                role = known.get(_base(words[idx].lower))
                if role is not None:
                    taken[idx] = (role, max(conf, 0.95))
        return _spans(words, taken, text)
