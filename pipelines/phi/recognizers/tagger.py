"""The learned tagger as a recognizer: CRF spans, refined to a category by their words.

Options (policy ``[recognizers.tagger]``): ``model`` (path; default the shipped model),
``threshold`` (a token is PHI when the model gives it at least this probability),
``thresholds`` (a table of per-label overrides: ``{ NAME = 0.3, DATE = 0.7 }``) and
``labels`` (the classes reported, default :data:`REPORTED`: names, places and identifiers;
the others are left to the rules). The detector unites these spans with the rules'
(``pipelines.phi.combine``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Final

from pipelines.phi import clinical, lexicons
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.exclusions import veto
from pipelines.phi.recognizers.location_towns import town_openers
from pipelines.phi.recognizers.name_words import letter_pair, surname_letter
from pipelines.phi.registry import register
from pipelines.phi.tagger.features import BUILDING_PARTS, CUES
from pipelines.phi.tagger.model import Label, TaggedSpan, Tagger
from pipelines.phi.wordlists import role_map, word_set
from pipelines.spans import Category, Span

_HEADS: Final = CUES["head"]
_COMMON_ZIPF: Final = 3.3  # a word most adults know
_GENERIC_PLACE: Final = BUILDING_PARTS


# The classes the tagger reports by default: names, places and identifiers (an ID span
# passes the guards of ``_clinical_number`` first). Dates, phones, ages and contacts are the
# rules' (their shapes are exact; the model's labels there only give month names a place).
REPORTED: Final = (Label.NAME, Label.LOCATION, Label.ID)


@cache
def _shared(
    model: str,
    threshold: float,
    per_label: tuple[tuple[str, float], ...],
    labels: tuple[Label, ...] = REPORTED,
) -> Tagger:
    """One loaded model per (file, thresholds, labels) in a process."""
    thresholds = {Label(k.upper()): v for k, v in per_label}
    return Tagger(
        Path(model) if model else None,
        threshold=threshold,
        thresholds=thresholds,
        labels=frozenset(labels),
    )


def _category(text: str, tagged: TaggedSpan) -> Category:
    if tagged.label is not Label.LOCATION:
        return tagged.label.category
    words = text[tagged.start : tagged.end].lower().split()
    following = text[tagged.end : tagged.end + 30].lower().split()[:1]
    if any(w.strip(".,") in _HEADS for w in words + following):
        return Category.LOCATION_HOSPITAL
    if " ".join(words) in lexicons.us_cities() or (len(words) == 2 and words[0] in town_openers()):
        return Category.LOCATION_CITY  # a listed city, or a town and its opener ("New Bramford")
    return Category.LOCATION_OTHER


@register("tagger")
class TaggerRecognizer(Recognizer):
    categories: ClassVar[frozenset[Category]] = frozenset(label.category for label in Label)
    learned: ClassVar[bool] = True

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        super().__init__(options)
        per_label = self.options.get("thresholds", {})
        labels = self.options.get("labels", [label.value for label in REPORTED])
        self.tagger = _shared(
            str(self.options.get("model", "")),
            float(self.options.get("threshold", 0.5)),
            tuple(sorted((str(k), float(v)) for k, v in per_label.items())),
            tuple(sorted({Label(str(k).upper()) for k in labels})),
        )

    def detect(self, doc: Doc) -> list[Span]:
        text = doc.text
        # the document's one tokenization, shared with the rules
        toks = lexicons.tokens(doc)
        tagged = self.tagger.tag(text, toks.columns, lexicons.Case.of_words(toks))
        parts = (part for t in tagged for part in _list_parts(text, t))
        kept = (_opened(text, _lettered(text, _trimmed(text, t))) for t in parts)
        spans = [
            Span(t.start, _before_possessive(text, t), _category(text, t), t.confidence, "tagger")
            for t in kept
            if t is not None and not _not_phi(text, t)
        ]
        return veto(text, spans) if spans else spans

    def keeps(self, text: str, span: Span) -> bool:
        """A copy of a tagger span is judged by the tagger's own post-filters: a state, a
        country, a typing slip of a common word ... found again is still none."""
        group = span.category.group
        label = Label.NAME if group == "NAME" else Label.LOCATION if group == "LOCATION" else None
        tagged = TaggedSpan(span.start, span.end, label or Label.DATE, span.confidence)
        return not _not_phi(text, tagged)


_LEADING_WORD = re.compile(r"[A-Za-z]+")
# "and" between two names of a list the model took as one ("[HILLER AND BAKER]")
_JOINER: Final = re.compile(r"[ \t]+(?:and|AND|And|&)[ \t]+")


def _list_parts(text: str, tagged: TaggedSpan) -> tuple[TaggedSpan, ...]:
    """A name span cut at the "and" of a list ("Drs [Hiller] and [Baker]"), and a place
    span of one word each side of "and" (the model's place for "DRS [HILLER AND BAKER]"):
    the joiner is no one's name; each part keeps the span's label and confidence."""
    if tagged.label is Label.ID:
        return (tagged,)
    cuts = list(_JOINER.finditer(text, tagged.start, tagged.end))
    if not cuts:
        return (tagged,)
    bounds = [tagged.start, *(x for m in cuts for x in (m.start(), m.end())), tagged.end]
    pairs = list(zip(bounds[::2], bounds[1::2], strict=True))
    if tagged.label is not Label.NAME and any(" " in text[a:b].strip() for a, b in pairs):
        return (tagged,)  # a place's name with "and" in it
    return tuple(replace(tagged, start=a, end=b) for a, b in pairs if a < b)


_CODE_CHAR: Final = re.compile(r"[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*")


def _whole_code(text: str, tagged: TaggedSpan) -> TaggedSpan:
    """An ID span widened to the code it is part of: the model reads a code's letters only
    (digits are context to it), so "XZ" of "XZ-909243" stands for the whole code; a code is a
    run of letters and digits joined by hyphens, with no blank inside."""
    start, end = tagged.start, tagged.end
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "-"):
        start -= 1
    m = _CODE_CHAR.match(text, start)
    while m is not None and m.end() < end:  # the span's words lie inside one code
        m = _CODE_CHAR.match(text, m.end() + 1)
    if m is None or m.start() > tagged.start:
        return tagged
    return replace(tagged, start=m.start(), end=max(m.end(), end))


def _trimmed(text: str, tagged: TaggedSpan) -> TaggedSpan | None:
    """A name without the grammar words it starts with ("Later Ann" -> "Ann"): words that are
    never part of a person's name (``data/vocabulary/name_never_words.txt``); None when nothing
    is left. An identifier: the whole code (``_whole_code``)."""
    if tagged.label is Label.ID:
        return _whole_code(text, tagged)
    if tagged.label is not Label.NAME:
        start = _name_start(text, tagged, _place_never())
        return tagged if start == tagged.start else _rest(tagged, start, tagged.end)
    start = _name_start(text, tagged, _leading_never())
    end = _without_trailing(text, start, tagged.end)
    if start == tagged.start and end == tagged.end:
        return tagged
    return _rest(tagged, start, end)


def _rest(tagged: TaggedSpan, start: int, end: int) -> TaggedSpan | None:
    return replace(tagged, start=start, end=end) if start < end else None


def _name_start(text: str, tagged: TaggedSpan, words: tuple[frozenset[str], ...]) -> int:
    """Where a span's name starts, past the words it never starts with and the blanks and
    label marks after them (``words``: those words and, second, the titles among them); its
    end when nothing is left."""
    never, titles = words
    start = tagged.start
    while (m := _LEADING_WORD.match(text, start, tagged.end)) and m.group().lower() in never:
        stop = m.end()
        if stop < tagged.end and text[stop] == "." and m.group().lower() in titles:
            stop += 1  # "[Herr Hanlon]", "[Prof. Hanlon]": the title is no part of the name
        if stop < tagged.end and not text[stop].isspace():
            break  # "Thebes", "And-" : the letters run on into the name
        start = stop
        while start < tagged.end and (text[start].isspace() or text[start] in "-:="):
            start += 1
    return start


@cache
def _place_never() -> tuple[frozenset[str], frozenset[str]]:
    """The words a place span never starts with: credentials ("[APRN]" alone) and labels of
    people ("[Visitors - kathleen]") but words of a facility's name ("Family Practice"); no
    title ("Dr" is a drive too)."""
    labels = frozenset(role_map("name_people_labels")) - word_set("facility_modifiers")
    return word_set("name_credentials") | labels, frozenset()


@cache
def _leading_never() -> tuple[frozenset[str], frozenset[str]]:
    """The words a name span never starts with: grammar words, titles, credentials ("[APRN]"
    alone) and labels of people ("[Visitors - kathleen]"); and the titles."""
    titles = _titles()
    labels = frozenset(role_map("name_people_labels"))
    return word_set("name_never_words") | titles | word_set("name_credentials") | labels, titles


# Prepositions a name span runs on to in capitals ("ROLAND IN TO SEE PT", "DR HALL IN"):
# never a name's last word (other grammar words are trimmed at the start only: "Orla Then").
_TRAILING: Final = frozenset({"in", "to"})
_LAST_WORD = re.compile(r"\s([A-Za-z]+)\Z")


def _without_trailing(text: str, start: int, end: int) -> int:
    """The end of a name span without the prepositions it ends with ("Kirk [IN]")."""
    while (m := _LAST_WORD.search(text, start, end)) and m.group(1).lower() in _TRAILING:
        end = m.start()
        while end > start and text[end - 1].isspace():
            end -= 1
    return end


# A possessive ending a word: "Quonset's", "Quonset’s" (not "D'Sarno": letters run on).
_POSSESSIVE: Final = re.compile(r"['’][sS](?![A-Za-z])")


def _before_possessive(text: str, tagged: TaggedSpan) -> int:
    """A name's end before its first possessive: "Dr. [Hanley]'s office", "[Quonset]'s nurse"
    (the model takes the "'s" and the noun after it for the name's). Applied after the
    post-filters, so "Dr. Q's" keeps its letter; places keep theirs ("St. Agnes's")."""
    if tagged.label is not Label.NAME:
        return tagged.end
    m = _POSSESSIVE.search(text, tagged.start, tagged.end)
    return m.start() if m is not None and m.start() > tagged.start else tagged.end


def _lettered(text: str, tagged: TaggedSpan | None) -> TaggedSpan | None:
    """A name the model found without the capital after it that stands for its surname
    ("called [Bo] K at home"): the letter joins the span, since alone it is a lone letter the
    filter below drops (``surname_letter`` judges it, as the name recognizer does); a capital
    the model took that starts a pair of shorthand letters ("Hailey B and C") leaves it."""
    if tagged is None or tagged.label is not Label.NAME:
        return tagged
    end = tagged.end
    pair = end - 2 > tagged.start and text[end - 2 : end - 1] == " " and text[end - 1].isupper()
    if pair and letter_pair(text, end):
        return replace(tagged, end=end - 2)  # "Dr. [Hailey B] and C": shorthand letters
    nxt = text[end : end + 3]
    if len(nxt) < 2 or nxt[0] != " " or not nxt[1].isupper() or nxt[2:3].isalnum():
        return tagged  # most spans: no bare capital after them
    letter = lexicons.Token(end + 1, end + 2, nxt[1], nxt[1].lower())
    return replace(tagged, end=end + 2) if surname_letter(letter, text) else tagged


_WORD_BEFORE = re.compile(r"([A-Za-z]+) \Z")


def _opened(text: str, tagged: TaggedSpan | None) -> TaggedSpan | None:
    """A town the model found without the word it opens with ("New [Bramford]", "EAST
    [HOLLIS]"): the opener joins the span, since alone it is a building part the filter below
    drops ("New", "East") and the town is named by both words."""
    if tagged is None or tagged.label is not Label.LOCATION or tagged.start < 2:
        return tagged
    m = _WORD_BEFORE.search(text, max(0, tagged.start - 12), tagged.start)
    if m is None or m.group(1).lower() not in town_openers():
        return tagged
    opener, first = m.group(1), text[tagged.start]
    if not (opener[0].isupper() and first.isupper()):
        return tagged  # "the new Bramford office" is no town's name
    return replace(tagged, start=m.start(1))


def _not_phi(text: str, tagged: TaggedSpan) -> bool:
    """Post-filters from knowledge of PHI, not from the model."""
    words = text[tagged.start : tagged.end]
    if len(words.strip(".")) <= 1:  # a lone letter: too little to be anyone's name
        return True
    if tagged.label is Label.ID:
        return _clinical_number(text, tagged)
    if tagged.label is Label.LOCATION and set(words.lower().split()) <= _GENERIC_PLACE:
        return True  # "the West Wing", "North Tower": a part of a building, no one's address
    return (
        _state_or_country(text, tagged)
        or _eponym(text, tagged)
        or _typo(words, tagged)
        or _kin_and_word(text, tagged)
        or _score(text, tagged)
        or _person_word(words, tagged)
    )


def _person_word(words: str, tagged: TaggedSpan) -> bool:
    """A name or place span of one word for a person ("90, [LADY], S/P FALL", "[Gentleman]
    in no distress": ``age_apposition_people``), no one's name nor a place."""
    return tagged.label is not Label.ID and words.lower() in word_set("age_apposition_people")


_HEAD_AFTER: Final = re.compile(r"(?:['’]s)?[ \t]+([A-Za-z]+)")
# a score's value after its name: "Braden 18", "CIWA: 8", "Apache II 22", "Morse score 45"
_VALUE_AFTER: Final = re.compile(r"(?:[ \t]+(?:[IV]{1,3}|score|scale))?[ \t]*[:=]?[ \t]*\d")
_SCORE_BEFORE: Final = re.compile(r"([A-Za-z]+)\.?[ \t]+\Z")
_PLACE_PREPOSITIONS: Final = frozenset({"in", "from", "to", "at", "near", "of"})


def _score(text: str, tagged: TaggedSpan) -> bool:
    """An eponymous sign, score or scale ("Braden score", "Murphy's sign", "Glasgow coma
    scale", "Barthel index", "Braden 18", "CIWA 8"): a head of one after the span or as its
    last word (``name_score_heads``), or a score's name with its value after it
    (``name_score_eponyms``); not after a title ("Dr. Murphy") nor, for a value, after a
    place's preposition ("moved to Glasgow 10 years ago")."""
    if tagged.label is Label.ID:
        return False
    words = text[tagged.start : tagged.end].lower().split()
    heads = word_set("name_score_heads")
    after = _HEAD_AFTER.match(text, tagged.end)
    if words[-1] in heads or (after is not None and after.group(1).lower() in heads):
        return len(words) <= 3 and not _before_is(text, tagged.start, _titles())
    if words[0].strip(":") not in word_set("name_score_eponyms"):
        return False
    if len(words) > 1 or not _VALUE_AFTER.match(text, tagged.end):
        return len(words) == 2 and words[1] in {"ii", "iii", "iv"}  # "[Apache II] 22"
    return not _before_is(text, tagged.start, _titles() | _PLACE_PREPOSITIONS)


def _before_is(text: str, start: int, words: frozenset[str]) -> bool:
    m = _SCORE_BEFORE.search(text, max(0, start - 16), start)
    return m is not None and m.group(1).lower() in words


@cache
def _titles() -> frozenset[str]:
    return frozenset(role_map("name_titles"))


_KIN_BEFORE: Final = re.compile(r"([A-Za-z]+)(?:[ \t]+([A-Za-z]+))?[ \t]+\Z")


def _kin_and_word(text: str, tagged: TaggedSpan) -> bool:
    """A name span that is only a kin word and common English words or staff roles ("Son
    Home", "[Has]" after "Son", "Son Will", "Son Home [Care]", "Son Social [Work]", "HER SON
    [AIDE]"): a note's capitals at a line's start, a service or a role, no one's name. A
    word is common (Zipf 4 or more) and no more a name than a word ("Hope", not "Mark"), or
    a staff role (``exclusion_roles``)."""
    if tagged.label is not Label.NAME:
        return False
    words = text[tagged.start : tagged.end].split()
    kin = word_set("tagger_cues_kin")
    if len(words) == 2 and words[0].lower() in kin:
        rest = words[1:]
    elif len(words) <= 2:
        rest = _after_kin(text, tagged.start, words, kin)
    else:
        return False
    return bool(rest) and all(_common_or_role(w.lower()) for w in rest)


def _after_kin(text: str, start: int, words: list[str], kin: frozenset[str]) -> list[str]:
    """The words from a kin word one or two words before ``start`` to the span's end
    ("Son [Home Care]", "Son Home [Care]"), less the kin word; none when no kin word is there
    (or the span and the word between hold three words)."""
    m = _KIN_BEFORE.search(text, max(0, start - 32), start)
    if m is None:
        return []
    if m.group(2) and m.group(1).lower() in kin and len(words) == 1:
        return [m.group(2), *words]  # "Son Home [Care]": the word between counts too
    return words if (m.group(2) or m.group(1)).lower() in kin else []


def _common_or_role(low: str) -> bool:
    """A common English word no more a name than a word, or a staff role ("aide")."""
    if not low.isalpha():
        return False
    return (lexicons.zipf(low) >= 4.0 and lexicons.name_score(low) < 0.5) or low in word_set(
        "exclusion_roles"
    )


# A number that is a measurement, not a code: "3.4", "0.75", "120/80", "1,200", "3-4".
_MEASURE: Final = re.compile(r"[<>~+\-]?\d+(?:[.,/:\-]\d+)*%?")
_ID_MIN_DIGITS: Final = 4  # "#20 IV", "x3", "bed 12": too few digits for a record number


def _clinical_number(text: str, tagged: TaggedSpan) -> bool:
    """An ID span that is no identifier: too few digits, a number that reads as a
    measurement, a time or a date (a lab value, a dose, a clock time: the rules judge numeric
    dates), a unit after it or a vital / lab cue before it."""
    words = text[tagged.start : tagged.end].strip()
    if sum(ch.isdigit() for ch in words) < _ID_MIN_DIGITS:
        return True
    if _MEASURE.fullmatch(words) and not words.isdigit():
        return True  # "3.4", "120/80", "10:30", "1-2": a value or a date, not a code
    if clinical.is_hhmm(words) or clinical.time_follows(text, tagged.end):
        return True
    return clinical.clinical_number(text, tagged.start, tagged.end)


def _typo(words: str, tagged: TaggedSpan) -> bool:
    """One word a typing slip away from common English and in no census list ("husabnd")."""
    low = words.lower()
    return (
        tagged.label is Label.NAME
        and low.isalpha()
        and not lexicons.is_name(low)
        and (
            lexicons.near_english(low)
            or (
                lexicons.may_slip_common(low)
                and any(lexicons.zipf(v) >= _COMMON_ZIPF for v in lexicons.slips(low))
            )
        )
    )


def _eponym(text: str, tagged: TaggedSpan) -> bool:
    """A word inside a hyphenated medical eponym ("X-Y catheter", "X-Y syndrome")."""
    start, end = tagged.start, tagged.end
    while start > 0 and (text[start - 1].isalpha() or text[start - 1] == "-"):
        start -= 1
    while end < len(text) and (text[end].isalpha() or text[end] == "-"):
        end += 1
    return text[start:end].lower().strip("-") in word_set("eponyms")


def _state_or_country(text: str, tagged: TaggedSpan) -> bool:
    """HIPAA's Safe Harbor keeps states and countries: only smaller places are PHI."""
    if tagged.label is not Label.LOCATION:
        return False
    words = " ".join(text[tagged.start : tagged.end].lower().split())
    run_on = _RUN_ON.match(words)
    if run_on is not None and run_on.group(1) in lexicons.us_states():
        return True  # "FLORIDA FOR WINTER": a state and the words after it
    if words in lexicons.us_states():
        return not _before_a_state(text, tagged.end, words)
    return words in lexicons.countries()


# A place span run on past a function word ("florida for winter"): the words before it.
_RUN_ON: Final = re.compile(r"(.+?) (?:for|with|to|from|since|until|during|over) ")


_STATE_AFTER: Final = re.compile(r",[ \t]*([A-Za-z]{2}\b|[A-Z][A-Za-z]+(?:[ \t][A-Z][A-Za-z]+)?)")


def _before_a_state(text: str, end: int, words: str) -> bool:
    """A city named like a state is written with its state after it ("Washington, DC",
    "Nevada, MO", "New York, NY": a listed city in its own state too): then the name is the
    city, which is PHI."""
    m = _STATE_AFTER.match(text, end)
    if m is None:
        return False
    after = m.group(1).lower()
    states = lexicons.us_states()
    if after not in states:
        after = after.split()[0]  # "NEVADA, MISSOURI FOR": the state is one word
        if after not in states:
            return False
    return states[after] != states[words] or words in lexicons.us_cities()
