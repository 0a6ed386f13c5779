"""Tokens and their features for the learned tagger.

Every feature is a string (python-crfsuite's binary attributes). What a word *is* (its shape,
case, affixes, lexicon membership) is computed once per distinct word and kept in a bounded
memo; what surrounds it (neighbours' words and classes, gazetteer phrases, line position) is
added per note. Lexicons come from packages (census names, wordfreq, zipcodes, us, pycountry,
drug names) and from the facility gazetteer shipped in ``pipelines/phi/data/hospitals.txt``.
Cue words are written by hand from knowledge of how notes name people and places (titles,
credentials, kinship, movement words): they are general English, not corpus strings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Final

from pipelines.phi import lexicons

# a word (letters, inner apostrophes), a run of digits, or any other single visible character
_TOKEN: Final = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*|\d+|[^\s]")

_MEMO_LIMIT: Final = 300_000
_CONTEXT: Final = (-2, -1, 1, 2)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Cue words by class. General knowledge of clinical writing, not taken from any corpus.
CUES: Final[dict[str, frozenset[str]]] = {
    "title": _words("dr dr. doctor mr mrs ms miss mx prof professor sir madam rev father sister"),
    "cred": _words(
        "md m.d do rn lpn np pa pa-c crnp cnm phd pharmd dds dmd rd rt rrt pt ot slp msw lcsw "
        "lics cna emt np-c aprn fnp dnp mph facp facc facs"
    ),
    "kin": _words(
        "wife husband son daughter mother father mom dad brother sister sibling siblings aunt "
        "uncle niece nephew cousin grandson granddaughter grandmother grandfather grandchild "
        "grandchildren spouse partner fiance fiancee friend neighbor neighbour boyfriend "
        "girlfriend stepson stepdaughter stepmother stepfather guardian proxy hcp dtr"
    ),
    "staff": _words(
        "attending resident intern fellow nurse rn np pcp physician surgeon cardiologist "
        "neurologist oncologist team service covering fellow consult consulted paged page "
        "notified informed aware discussed spoke called per by with seen evaluated signed "
        "dictated cc attn"
    ),
    "prep": _words("in at from to of near via into"),
    "move": _words(
        "transferred transfer admitted discharged returned return sent lives living resides "
        "moved visiting visited born home rehab rehabilitation nursing facility"
    ),
    "head": _words(
        "hospital hospitals hosp medical center centre clinic clinics memorial regional "
        "general health healthcare rehab rehabilitation infirmary institute university univ "
        "nursing home manor sanatorium hospice care unit ward campus pavilion"
    ),
    "place": _words(
        "street st avenue ave road rd drive dr lane ln boulevard blvd court ct way place pl "
        "county city town village township state"
    ),
    "id": _words(
        "mrn id acct account acc no number # ssn license lic insurance policy member unit "
        "record rec med medicaid medicare plan"
    ),
    "age": _words("age aged yo y/o year years yr old"),
}
_KIN: Final = CUES["kin"]
_MONTHS: Final = _words(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec"
)
_WEEKDAYS: Final = _words(
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thur thurs "
    "fri sat sun"
)
_GENERIC_HEADS: Final = _words(
    "hospital hospitals medical center centre clinic memorial regional general health "
    "healthcare rehabilitation rehab infirmary institute nursing home care and of the for "
    "services service county community"
)


# A token of the tagger: (start, end, text). Plain tuples: a note has hundreds of them.
Tok = tuple[int, int, str]


def tokenize(text: str) -> list[Tok]:
    return [(m.start(), m.end(), m.group()) for m in _TOKEN.finditer(text)]


def word_positions(tokens: list[Tok]) -> list[int]:
    """Indices of the word tokens: the items the CRF labels. Digits and punctuation are left
    to the rules (dates, phones, identifiers) and seen by the CRF only as context."""
    return [i for i, t in enumerate(tokens) if t[2][0].isalpha()]


def _bucket(value: float, edges: tuple[float, ...]) -> int:
    for i, edge in enumerate(edges):
        if value < edge:
            return i
    return len(edges)


def _shape(word: str) -> str:
    out: list[str] = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)[:6]


# --------------------------------------------------------------------------- gazetteers


@dataclass(frozen=True)
class Gazetteer:
    """Multi-word phrases by their first word: a phrase matches where its words follow."""

    by_first: dict[str, tuple[tuple[str, ...], ...]]
    words: frozenset[str]

    def matches(
        self, lowers: list[str], candidates: list[int] | None = None
    ) -> list[tuple[int, int]]:
        """``(start, end)`` token ranges of the longest phrase starting at each token (of
        ``candidates``, the positions where some phrase may start, when given)."""
        by_first = self.by_first
        out: list[tuple[int, int]] = []
        end = 0
        if candidates is None:
            candidates = list(range(len(lowers)))
        for i in [i for i in candidates if lowers[i] in by_first]:
            if i < end:
                continue
            best = 0
            for phrase in by_first[lowers[i]]:
                k = len(phrase)
                if k > best and tuple(lowers[i : i + k]) == phrase:
                    best = k
            if best:
                out.append((i, i + best))
                end = i + best
        return out


def _gazetteer(phrases: set[tuple[str, ...]]) -> Gazetteer:
    by_first: dict[str, list[tuple[str, ...]]] = {}
    words: set[str] = set()
    for phrase in phrases:
        if phrase:
            by_first.setdefault(phrase[0], []).append(phrase)
            words.update(phrase)
    return Gazetteer({k: tuple(v) for k, v in by_first.items()}, frozenset(words))


def _lower_tokens(text: str) -> tuple[str, ...]:
    return tuple(t[2].lower() for t in tokenize(text))


@cache
def facility_names() -> tuple[str, ...]:
    """The US facility gazetteer (MITRE MIST's hospitals.txt, BSD; see README-hospitals.md)."""
    raw = resources.files("pipelines.phi").joinpath("data/hospitals.txt").read_text("utf-8")
    return tuple(line.strip() for line in raw.splitlines() if line.strip() and line[0] != "#")


def facility_core(name: str) -> str:
    """A facility name without its generic head words: "X Y Memorial Hospital" -> "X Y"."""
    words = name.split()
    while words and words[-1].lower() in _GENERIC_HEADS:
        words.pop()
    return " ".join(words)


@cache
def facilities() -> Gazetteer:
    phrases = {_lower_tokens(n) for n in facility_names()}
    return _gazetteer(phrases)


@cache
def facility_cores() -> Gazetteer:
    cores = {_lower_tokens(facility_core(n)) for n in facility_names()}
    return _gazetteer({c for c in cores if c and not (len(c) == 1 and lexicons.zipf(c[0]) > 4.5)})


@cache
def cities() -> Gazetteer:
    return _gazetteer({_lower_tokens(c) for c in lexicons.us_cities() if " " in c})


_GAZETTEERS: Final = {"gf": facilities, "gc": facility_cores, "gt": cities}

# --------------------------------------------------------------------------- word features


def _number_features(word: str) -> list[str]:
    n = len(word)
    out = [f"nd={min(n, 6)}"]
    value = int(word) if n <= 6 else -1
    if 0 < value <= 12:
        out.append("n<=12")
    elif 12 < value <= 31:
        out.append("n<=31")
    if n == 4 and 1900 <= value <= 2099:
        out.append("n=yr")
    if 90 <= value <= 125:
        out.append("n=old")
    return out


def _lexicon_features(low: str) -> list[str]:
    out: list[str] = []
    first = lexicons.first_names().get(low, 0.0)
    last = lexicons.last_names().get(low, 0.0)
    if first:
        out.append(f"fn={_bucket(first, (0.005, 0.05, 0.3))}")
    if last:
        out.append(f"ln={_bucket(last, (0.001, 0.01, 0.1))}")
    out.append(f"zf={_bucket(lexicons.zipf(low), (1.0, 2.0, 3.0, 4.0, 5.0))}")
    if first or last:
        out.append(f"ns={_bucket(lexicons.name_score(low), (-2.0, -1.0, 0.0, 1.0))}")
    if low in lexicons.us_cities():
        out.append("city")
    if low in lexicons.city_first_words():
        out.append("city1")
    if low in lexicons.us_states():
        out.append("state")
    if low in lexicons.countries():
        out.append("country")
    if low in facilities().words and low not in _GENERIC_HEADS:
        out.append("facw")
    if low in _MONTHS:
        out.append("month")
    if low in _WEEKDAYS:
        out.append("wday")
    if len(low) >= 4 and lexicons.clinical_word(low):
        out.append("clin")
    return out


def _word_features(word: str, one_case: bool) -> tuple[str, ...]:
    """What a word is, alone: computed once per (word, note case)."""
    low = word.lower()
    out = [f"w={low}" if len(low) <= 24 else "w=<long>", f"sh={_shape(word)}"]
    if word.isalpha() or "'" in word or "’" in word:
        out += [f"p2={low[:2]}", f"p3={low[:3]}", f"s2={low[-2:]}", f"s3={low[-3:]}"]
        out.append(f"len={_bucket(len(word), (2, 3, 4, 6, 9))}")
        if not one_case:
            case = (
                "U" if word.isupper() else "T" if word[0].isupper() and word[1:].islower()
                else "L" if word.islower() else "M"
            )
            out.append(f"c={case}")
        out += _lexicon_features(low)
    elif word.isdecimal():  # int() reads every decimal digit; "²" is a digit, not decimal
        out += _number_features(word)
    for cls, words in CUES.items():
        if low in words:
            out.append(f"cue={cls}")
    return tuple(out)


# The few features of a word its neighbours see (a subset of ``_word_features``).
_CONTEXT_KEEP: Final = ("w=", "c=", "cue=", "fn=", "ln=", "month", "city", "state", "facw", "sh=")


class Featurizer:
    """Turns a note into one feature list per item (bounded memo per distinct word).

    ``keep``: the attributes a trained model knows. Others carry no weight, so they are
    dropped when first made (per distinct word), not looked up by crfsuite every time.
    Training passes ``None`` (every attribute is a candidate).
    """

    def __init__(self, keep: frozenset[str] | None = None) -> None:
        self.keep = keep
        self._own: dict[tuple[str, bool], tuple[str, ...]] = {}
        self._ctx: dict[tuple[str, bool], tuple[tuple[str, ...], ...]] = {}

    def warm(self) -> None:
        lexicons.warm()
        facilities()
        facility_cores()
        cities()

    def _kept(self, features: list[str] | tuple[str, ...]) -> tuple[str, ...]:
        keep = self.keep
        return tuple(features) if keep is None else tuple(f for f in features if f in keep)

    def own(self, word: str, one_case: bool) -> tuple[str, ...]:
        key = (word, one_case)
        found = self._own.get(key)
        if found is None:
            found = self._kept(_word_features(word, one_case))
            if len(self._own) < _MEMO_LIMIT:
                self._own[key] = found
        return found

    def around(self, word: str, one_case: bool) -> tuple[tuple[str, ...], ...]:
        """What the tokens around ``word`` see of it: for each offset in ``_CONTEXT``, the
        features of ``word`` as seen from a token at that distance (prefixed by the offset)."""
        key = (word, one_case)
        found = self._ctx.get(key)
        if found is None:
            kept = [f for f in _word_features(word, one_case) if f.startswith(_CONTEXT_KEEP)]
            found = tuple(self._kept([f"{o}{f}" for f in kept]) for o in _CONTEXT)
            if len(self._ctx) < _MEMO_LIMIT:
                self._ctx[key] = found
        return found

    def features(
        self, text: str, tokens: list[Tok], items: list[int] | None = None
    ) -> list[list[str]]:
        """Feature rows of the tokens at ``items`` (default: every token); every token is
        context for its neighbours."""
        if items is None:
            items = list(range(len(tokens)))
        words = [t[2] for t in tokens]
        lowers = [w.lower() for w in words]
        one_case = _one_case(text)
        n = len(words)
        own = self.own
        ctx = [self.around(w, one_case) for w in words]
        extras = _extras(text, tokens, lowers)
        keep = self.keep
        pad = [self._kept(p) for p in _PAD]
        rows: list[list[str]] = []
        for i in items:
            row = list(own(words[i], one_case))
            for k, j in enumerate((i - 2, i - 1, i + 1, i + 2)):
                row += ctx[j][k] if 0 <= j < n else pad[k]
            # own and context features are filtered once per word; these per note
            local = [
                f"bl={lowers[i - 1] if i else '<s>'}|{lowers[i]}",
                f"br={lowers[i]}|{lowers[i + 1] if i + 1 < n else '</s>'}",
                *extras.get(i, ()),
            ]
            row += local if keep is None else [f for f in local if f in keep]
            rows.append(row)
        return rows


_PAD: Final = tuple((f"{o}pad",) for o in _CONTEXT)


def _extras(text: str, tokens: list[Tok], lowers: list[str]) -> dict[int, list[str]]:
    """Features of a token that depend on the note around it: line starts, gazetteer
    phrases, a kinship word a few tokens back ("wife of 30 years, Ann")."""
    extras: dict[int, list[str]] = {}
    _add_line_features(text, tokens, extras)
    _add_gazetteer_features(lowers, extras)
    n = len(lowers)
    for i in [i for i, w in enumerate(lowers) if w in _KIN]:
        for j in range(i + 3, min(i + 6, n)):
            extras.setdefault(j, []).append("kin<")
    return extras


def _one_case(text: str) -> bool:
    """A note written in one case (all capitals, or all lower): case tells nothing there."""
    sample = text[:2000]
    letters = sum(map(str.isalpha, sample))
    if letters < 20:
        return False
    upper = sum(map(str.isupper, sample)) / letters
    return upper > 0.85 or upper < 0.02


def _add_line_features(text: str, tokens: list[Tok], extras: dict[int, list[str]]) -> None:
    if tokens:
        extras.setdefault(0, []).append("bol")
    at = text.find("\n")
    k = 0
    while at >= 0:  # the first token after each newline opens a line
        while k < len(tokens) and tokens[k][0] < at:
            k += 1
        if k == len(tokens):
            break
        extras.setdefault(k, []).append("bol")
        at = text.find("\n", tokens[k][0])


@cache
def _any_first_word() -> frozenset[str]:
    return frozenset().union(*(g().by_first.keys() for g in _GAZETTEERS.values()))


def _add_gazetteer_features(lowers: list[str], extras: dict[int, list[str]]) -> None:
    n = len(lowers)
    firsts = _any_first_word()
    candidates = [i for i, w in enumerate(lowers) if w in firsts]
    for name, gazetteer in _GAZETTEERS.items():
        for start, end in gazetteer().matches(lowers, candidates):
            extras.setdefault(start, []).append(f"{name}=B")
            for k in range(start + 1, end):
                extras.setdefault(k, []).append(f"{name}=I")
            if start > 0:
                extras.setdefault(start - 1, []).append(f"{name}=next")
            if end < n:
                extras.setdefault(end, []).append(f"{name}=prev")
