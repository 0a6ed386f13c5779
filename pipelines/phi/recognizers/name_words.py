"""Word-level judgments of the name recognizer: is this token plausibly (part of) a name given
the strength of its cue, is it an initial, a surname after a first name, an eponym, a typo?"""

from __future__ import annotations

import re
from collections.abc import Container
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.lexicons import Token
from pipelines.phi.recognizers.name_cues import _RARE, cues
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category


def _plausible(tok: Token, mixed: bool, strength: int, lowered: Container[str]) -> bool:
    """Can ``tok`` be (part of) a name given a cue of ``strength`` (3 title, 2 role, 1 none)?

    ``lowered`` holds the words this (mixed-case) note also writes in lower case: those are
    common nouns here ("Aline placed" … "aline dc'd"), whatever the census says.
    """
    verdict = _judge(tok.text, tok.lower, mixed, strength)
    return verdict is True or (verdict is None and _base(tok.lower) not in lowered)


def _judge(text: str, low: str, mixed: bool, strength: int) -> bool | None:
    """``_plausible`` of a word written ``text``, lower-case ``low``, before looking at the
    note: None for "yes, unless this mixed-case note also writes the word in lower case"."""
    word = _base(low)
    title = lx.is_title(text) or _title_after_prefix(text)
    if _too_short(word, mixed and title, strength):
        return False
    f = lx.zipf(word)
    ns = lx.name_score(word)
    if mixed:
        return _judge_mixed(word, f, ns, (title, text.isupper()), strength)
    return _by_strength(word, f, ns, False, strength)


def _title_after_prefix(text: str) -> bool:
    """A surname with an apostrophe prefix, in Title case: "O'Dwyer", "D'Arvelle"."""
    return len(text) > 3 and text[0].isupper() and text[1] in "'’" and lx.is_title(text[2:])


def _judge_mixed(
    word: str, f: float, ns: float, written: tuple[bool, bool], strength: int
) -> bool | None:
    """``_judge`` in a mixed-case note, of a word written in Title case or in capitals
    (``written``) or neither."""
    title, upper = written
    if not (title or upper):
        # a lower-case word in a mixed-case note is no name, except after a title: "dr smith"
        return strength >= 3 and ((ns > -9.0 and f < 5.6) or f < _RARE)
    if upper and len(word) < 4 and strength < 3:
        return False  # "HO", "ASA": abbreviations
    verdict = _by_strength(word, f, ns, title, strength)
    # a word the note also writes in lower case is a common noun there (below a title's cue)
    return None if verdict and strength < 3 else verdict


def _too_short(word: str, mixed_title: bool, strength: int) -> bool:
    """One letter is never a name here; two letters only as "Ed", "Al" in Title case in a
    mixed-case note, or after a title."""
    if len(word) < 2:
        return True
    return len(word) < 3 and strength < 3 and not (mixed_title and lx.is_first_name(word))


def _by_strength(word: str, f: float, ns: float, loose: bool, strength: int) -> bool:
    """The last questions of ``_judge``: how name-like the word must be after this cue (3 a
    title, 2 a role, 1 none). ``loose``: Title case in a mixed-case note, where the capital
    is evidence too."""
    if strength >= 3:
        return _after_title_word(f, ns, loose)
    if strength == 2:
        return _after_role_word(word, f, ns, loose)
    # no cue: a word used far more as a name than as an English word
    return loose and ((ns > 1.5 and f < 3.5) or (ns >= 2.5 and f < 4.0))


def _after_title_word(f: float, ns: float, loose: bool) -> bool:
    """After a title: a census name unless it is mostly a common word ("ms given", "dr check"),
    or a rare word."""
    if ns > -9.0:
        if f >= 4.5 and ns < -0.5 and not loose:
            return False
        return f < 5.5 or loose
    return f < _RARE or (loose and f < 3.5)


def _after_role_word(word: str, f: float, ns: float, loose: bool) -> bool:
    """After a role word: a census name or a rare word; in a one-case note a census name or a
    word English never uses that is no drug."""
    if loose:
        return (ns > -9.0 and f < 5.6) or f < 3.5
    return (ns >= 0.5 and f < 5.6) or (lx.rare_unknown(word) and not lx.near_english(word))


def _is_initial(tok: Token, text: str) -> bool:
    """A single letter standing alone and followed by a period ("J. Smith", not "20's.")."""
    return (
        len(tok.text) == 1
        and text[tok.end : tok.end + 1] == "."
        and (tok.start == 0 or text[tok.start - 1] in " \t\n(,-")
    )


def surname_letter(tok: Token, text: str) -> bool:
    """A capital standing for a surname, after a first name or a title: "Greta Q.", "Dr. Q.",
    "Margaret K in to visit". A single capital but "A" or "I"; written without its period,
    followed by punctuation, a line's end or a lower-case word ("K 3.4", "B/P", "C DIFF" are
    no initials); a clinical shorthand letter ("L", "R", "Q") or a letter in capitals before a
    word in capitals only before a word that tells an initial ("Dr Q to see pt", "GRETA K IN
    TO VISIT": ``name_initial_after``; not "Hanlon R arm")."""
    if len(tok.text) != 1 or not tok.text.isupper() or tok.lower in {"a", "i"}:
        return False
    after = text[tok.end : tok.end + 3]
    if after[:1] in {".", "", ",", ";", ")", "\n"}:
        return True
    if after[:1] == ":":  # "Spoke with Greta Q: she agrees" (not "K: 3.4", "Q:4h")
        return after[1:2] == " " and (after[2:3].islower() or _pronoun_after(text, tok.end + 1))
    if after[:1] not in {" ", "\t"}:
        return False
    if after[1:2] in {"", "\n"}:
        return True
    if after[1].islower() and tok.lower not in cues().clinical_letters:
        return not letter_pair(text, tok.end)  # "Hanlon B and C": two lone letters
    return _initial_word_after(text, tok.end)


_NEXT_WORD: Final = re.compile(r"[ \t]+([A-Za-z]+)\b")
# what follows "GRETA Q:" in capitals when the letter is her initial: a pronoun or a verb of
# saying ("SPOKE WITH GRETA Q: SHE AGREES")
_SAYS: Final = frozenset({"she", "he", "they", "states", "says", "said", "agrees", "reports"})


def _pronoun_after(text: str, end: int) -> bool:
    m = _NEXT_WORD.match(text, end)
    return m is not None and m.group(1).lower() in _SAYS


_LETTER_NEXT: Final = re.compile(r"[ \t]+[A-Za-z](?![A-Za-z0-9])")


def letter_pair(text: str, end: int) -> bool:
    """A short word then another lone letter after a capital ending at ``end``: "B and C",
    "R to L", letters of shorthand, no initial."""
    m = _NEXT_WORD.match(text, end)
    return m is not None and len(m.group(1)) <= 3 and _LETTER_NEXT.match(text, m.end()) is not None


def _initial_word_after(text: str, end: int) -> bool:
    """The word after a bare capital ending at ``end`` tells the capital is an initial: a
    function word or a verb of being, coming or saying, in lower case or in capitals."""
    m = _NEXT_WORD.match(text, end)
    if m is None:
        return False
    word = m.group(1)
    low = word.lower()
    if not (word == low or word.isupper()):
        return False
    if _LETTER_NEXT.match(text, m.end()):
        return False  # "R to L shunt", "C and S": a pair of shorthand letters
    c = cues()
    return low in word_set("name_initial_after") or low in c.presence_after or low in c.role_after


def set_off_short_name(tok: Token, text: str, gap: str) -> bool:
    """ "son, jo, at bedside", "WIFE, BO, CALLED": a two-letter first name set off by commas
    right after a kin word (``gap``: what stands between them), in any case (a two-letter word
    needs a title otherwise). Not a state ("pa", "ma"), a cue word ("np") or a clinical word;
    a word English uses much ("al", "ed") only before a verb of being there or of talking
    ("wife, al, called", "son, ed, visiting"; never "in", "ok", "so": no census name)."""
    low = tok.lower
    if not (
        len(low) == 2
        and gap.strip(" ") == ","
        and text[tok.end : tok.end + 1] == ","
        and lx.is_first_name(low)
        and low not in cues().cue_words
        and not lx.clinical_word(low)
    ):
        return False
    if lx.zipf(low) < 4.5 and low not in lx.us_states():
        return True
    return lx.name_score(low) >= 0.0 and lx.zipf(low) < 5.5 and _verb_after(text, tok.end + 1)


_WORD_AFTER: Final = re.compile(r"[ \t]*([A-Za-z]+)")
# Words after "wife, al," that are no verb of being there or of talking
_NOT_VERBS: Final = frozenset({"at", "in", "here", "present", "work", "working", "meet"})


def _verb_after(text: str, at: int) -> bool:
    """A verb of being there or of talking at ``at`` ("called", "visiting", "spoke")."""
    m = _WORD_AFTER.match(text, at)
    if m is None:
        return False
    low = m.group(1).lower()
    c = cues()
    return low not in _NOT_VERBS and (low in c.presence_after or low in c.verb_then_name)


def _base(word: str) -> str:
    """The word without a possessive "'s"."""
    return word[:-2] if word[-2:] in _POSSESSIVE and len(word) > 2 else word


_POSSESSIVE: Final = ("'s", "’s")


def _gap(text: str, left: Token, right: Token) -> str:
    return text[left.end : right.start]


def _tight(gap: str, left: Token | None = None) -> bool:
    """Two words of one name: separated by spaces, a hyphen or an initial's period."""
    if len(gap) > 3 or "\n" in gap:
        return False
    mark = gap.strip()
    return mark in {"", "-"} or (mark == "." and (left is None or len(left.text) == 1))


def _eponyms(toks: lx.Tokens, text: str) -> set[str]:
    """Words used as eponyms in this note: followed by an eponym head ("foley catheter").

    Only the positions of head words are visited (picked with ``compress``), not every word."""
    words, lows = toks.words, toks.lowers
    found: set[str] = set()
    for h in lx.where(toks, cues().eponym_heads):
        # the word before the head, or before an "s" before it ("Parkinson's disease"
        # tokenises as "Parkinson", "s"); "s" itself is no head
        for nxt in (h, h - 1) if h >= 2 and lows[h - 1] == "s" else (h,):
            if nxt >= 1 and "\n" not in _gap(text, words[nxt - 1], words[nxt]):
                found.add(lows[nxt - 1].removesuffix("'s").removesuffix("’s"))
    return found


def _surname_after_first(first: Token, word: Token, mixed: bool) -> bool:
    """``word`` right after a census first name is its surname: a census surname far more a name
    than a word, or a rare unknown word ("Leslie Wrzosvany")."""
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
        and s_low not in cues().cue_words
        and not lx.clinical_word(s_low)
    )


def _role_slip(low: str) -> Category | None:
    """A kinship word with a typing slip ("daugher"), unless the form is an English word."""
    role = cues().role_slips.get(low)
    return role if role is not None and lx.zipf(low) < 2.0 else None


def _first_before_surname(tok: Token, mixed: bool) -> bool:
    """ "DICK SMITH (RESIDENT)": a census first name right before a surname already taken."""
    low = tok.lower
    return (
        lx.is_first_name(low)
        and lx.zipf(low) < 5.5
        and lx.name_score(low) > -0.5
        and low not in cues().cue_words
        and (not mixed or tok.is_title or tok.is_upper)
    )


def _common_first_name(tok: Token, text: str, lowered: Container[str], eponyms: set[str]) -> bool:
    """ "supportive to pt, John.": a census first name used far more as a name than as a word
    ("John", "Mary"; not "Will", "Rose"), in Title case inside a sentence of a mixed-case note."""
    low = _base(tok.lower)
    return (
        len(low) >= 3
        and lx.name_score(low) >= 2.0
        and lx.zipf(low) < 5.5
        and low not in lowered
        and low not in eponyms
        and low not in cues().cue_words
        and not _sentence_start(text, tok.start)
    )


def _namey(tok: Token) -> bool:
    """A word that is more a name than an English word, or is almost never seen in English."""
    return namey_zipf(_base(tok.lower)) is not None


def namey_zipf(low: str) -> float | None:
    """``_namey`` of a word without its possessive (``low``): its Zipf frequency when it is
    more a name than an English word or almost never seen in English, else None. The word's
    name score and frequency asked once each (the frequency of a rare word is a search in
    wordfreq's rare tail), and the frequency not at all when the score rules it out."""
    ns = lx.name_score(low)
    if ns >= 1.0:
        f = lx.zipf(low)
        return f if f < 5.0 else None
    if ns != -9.0 or len(low) < 3:
        return None
    f = lx.zipf(low)
    return f if f < 2.5 else None


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


def _word_surname_after_dr(tok: Token) -> bool:
    """ "dr small", "DR. PRICE" in a one-case note: after a doctor's title a census surname
        that is also an everyday word is still the surname — but not a function word or a modal
        verb ("dr will see", "dr may change": Zipf 5.9 and above), a rare surname that is mostly a
    word ("dr check", "dr call back") nor a cue ("dr aware")."""
    low = _base(tok.lower)
    return (
        len(low) >= 3
        and low not in cues().cue_words
        and lx.last_names().get(low, 0.0) >= 0.01  # a surname at least 1 in 10,000 carry
        and lx.zipf(low) < 5.9
    )


# what may follow a lower-case surname initial in a message note: "lm for bea r to call back"
_AFTER_MESSAGE_INITIAL: Final = frozenset({"to", "re", "about", "regarding", "at", "pls", "please"})


def message_initial(words: tuple[Token, ...], text: str, taken: Container[int], k: int) -> bool:
    """Is word ``k``, right after a first name taken after a message cue, a lone lower-case
    letter for the surname ("lm for bea r to call back", "msg for hal q re labs"): a first
    name before it, and the line's end, punctuation or a word of the message after it."""
    if k >= len(words) or k - 1 not in taken or text[words[k - 1].end : words[k].start] != " ":
        return False
    tok = words[k]
    if len(tok.text) != 1 or not tok.text.islower() or tok.lower in {"a", "i"}:
        return False
    if not lx.is_first_name(words[k - 1].lower):
        return False
    after = text[tok.end : tok.end + 1]
    if after in {"", ".", ",", ";", ")", "\n"}:
        return True
    return after == " " and k + 1 < len(words) and words[k + 1].lower in _AFTER_MESSAGE_INITIAL


# a census name this much more a name than an English word ("hilda", "harry"; not "will")
_NAME_OVER_WORD: Final = 1.5


def name_before_age(low: str, strict: bool) -> bool:
    """A word (lower-case ``low``) that names the person before an age set apart ("Hilda,
    95,", "Hollis (91)", "Walker (92) seen"): a census name far more a name than a word and
    no very common word. ``strict`` (before brackets, unless the word is capitalised and a
    person's verb follows: ``person_after``): an everyday word only when it is mostly a
    first name ("Harry (97)"; not "Walker (92) ordered": a device's setting as often)."""
    if lx.name_score(low) < _NAME_OVER_WORD:
        return False
    f = lx.zipf(low)
    if f >= 5.0:
        return False
    return not strict or f < 4.0 or first_name_mostly(low)


def first_name_mostly(low: str) -> bool:
    """A census word given more as a first name than as a surname ("laura", "harry"; not
    "walker", "miller")."""
    return lx.first_names().get(low, 0.0) > lx.last_names().get(low, 0.0)


def person_after(text: str, at: int) -> bool:
    """A verb of a person at ``at`` ("seen", "lives": ``age_person_after``), after an age in
    brackets ("Walker (92) seen in clinic")."""
    m = _WORD_AFTER.match(text, at)
    return m is not None and m.group(1).lower() in word_set("age_person_after")
