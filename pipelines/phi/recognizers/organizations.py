"""Employers and other organisations named in the narrative ("works for Acme Corp", "CEO of
ACME", "retired from Blue Door LLC", "her employer, Xyz Foods,").

Why by context: an employer is an identifier of the patient or a relative (i2b2's
ORGANIZATION, under LOCATION), but its name is any string; what gives it away is the
employment word before it and either a legal-form word after it ("Corp", "LLC", "Inc") or,
where capitals tell something, a run of capitalised words that are not all common English.
Written as three declared passes on the pass driver (:mod:`pipelines.phi.passes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import compress
from typing import Final

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.lexicons import Token
from pipelines.phi.passes import Case, Pass, Passes, declare
from pipelines.phi.registry import register
from pipelines.phi.wordlists import word_set
from pipelines.spans import Category, Span

OTHER: Final = Category.LOCATION_OTHER
WORK_WORDS: Final = word_set("org_work_verbs")
JOB_TITLES: Final = word_set("org_job_titles") | word_set("org_occupations")
SUFFIXES: Final = word_set("org_suffixes")
# legal forms, which may follow a comma ("Halvex, LLC")
_LEGAL: Final = word_set("org_legal_forms")
_AFTER_WORK: Final = frozenset({"for", "at", "by", "from"})
_AFTER_TITLE: Final = frozenset({"of", "at", "for"})
_ARTICLES: Final = frozenset({"the", "a", "an"})
# words that end a name read forwards: articles, prepositions, conjunctions
_STOPS: Final = _ARTICLES | _AFTER_WORK | _AFTER_TITLE | {"and", "in", "as", "on", "since"}
_GAP: Final = 2  # words allowed between the employment word and its preposition
_JOB_GAP: Final = 4  # … when they start "as": "works as a night clerk for"
# Words naming the employer itself, before a comma, a colon or "is" ("her employer, Xyz
# Foods,", "Employer: Globex")
_EMPLOYER: Final = frozenset({"employer", "employers", "employer's"})
_APPOSITION: Final = frozenset({"is", "was"})
_LONGEST: Final = 4  # words of a name before its legal-form word
_RARE_LOWER: Final = 3.0  # a lower-case name alone must be rarer than this (Zipf)
_COMMON: Final = 4.0  # a name needs a word rarer than this (Zipf) unless a suffix ends it


@dataclass(frozen=True, slots=True)
class _Note:
    words: tuple[Token, ...]
    text: str
    case: Case


def _gap_ok(note: _Note, left: int, right: int) -> bool:
    """Only blanks (or an "&", a dot after an abbreviation: a word of four letters or fewer,
    "Co.", "Bros.") between two words of a name; "Globex. Employer" is two sentences."""
    gap = note.text[note.words[left].end : note.words[right].start]
    if gap.strip(" .&") != "" or "\n" in gap:
        return False
    dots = gap.count(".")
    return dots == 0 or (dots == 1 and len(note.words[left].text) <= 4)


def _connector(note: _Note, i: int, wanted: frozenset[str]) -> int | None:
    """The word after the preposition that follows word ``i`` within ``_GAP`` words, or
    within ``_JOB_GAP`` words past "as" and a job ("works as a clerk for Xyz Foods")."""
    words, n = note.words, len(note.words)
    gap = _JOB_GAP if i + 1 < n and words[i + 1].lower == "as" else _GAP
    for j in range(i + 1, min(i + 2 + gap, n - 1)):
        if not _gap_ok(note, j - 1, j) or note.text[words[j - 1].end : words[j].start].strip():
            return None
        if words[j].lower in wanted:
            k = j + 1
            if k < n and words[k].lower in _ARTICLES and _gap_ok(note, j, k):
                k += 1
            return k if k < n and _gap_ok(note, k - 1, k) else None
    return None


def _suffixed(note: _Note, k: int) -> int | None:
    """The legal-form word ending a name that starts at word ``k`` ("acme corp", "Blue Door
    LLC"), written in any case, when a name word before it is rare or, where capitals tell,
    every name word is capitalised ("the construction company" is no name)."""
    words, n = note.words, len(note.words)
    for j in range(k + 1, min(k + _LONGEST + 1, n)):
        if _legal_after_comma(note, j) and words[j - 1].lower not in _STOPS:
            return _named(note, k, j)  # "works for quorvane, inc."
        if not _gap_ok(note, j - 1, j) or words[j - 1].lower in _STOPS:
            return None
        if words[j].lower in SUFFIXES:
            last = _named(note, k, j)
            legal = last is not None and last + 1 < n and _legal_after_comma(note, last + 1)
            return last + 1 if legal and last is not None else last  # "Halvex Foods, LLC"
    return None


def _legal_after_comma(note: _Note, j: int) -> bool:
    """A legal-form word after a comma: "Halvex, LLC", "quorvane, inc."."""
    gap = note.text[note.words[j - 1].end : note.words[j].start]
    return gap in (", ", ",") and note.words[j].lower in _LEGAL


def _named(note: _Note, k: int, j: int) -> int | None:
    """``j`` when the words ``k`` to ``j`` (the last a legal-form word) name an organisation:
    a name word rare, or every name word capitalised in a mixed-case note."""
    name = note.words[k:j]
    rare = any(lx.zipf(t.lower) < _COMMON for t in name)
    capitals = note.case is Case.MIXED and all(t.is_title or t.is_upper for t in name)
    return j if rare or capitals else None


def _capitalised(note: _Note, k: int) -> int | None:
    """The last word of a run of name words from ``k`` with no legal-form word, where it can
    be told from its words: in a mixed-case note a capitalised run with a word that is not
    common English ("works at Home Depot", not "works for the City"); in a one-case note in
    capitals a single rare word ("CEO OF ACME"); a single rare lower-case word that ends its
    clause ("employed by initech since 2001": ``_lower_rare``)."""
    words, n = note.words, len(note.words)
    last = k - 1
    while last + 1 < min(k + _LONGEST, n) and _name_word(note, last + 1, k):
        last += 1
    if last < k:
        return k if _lower_rare(note, k) else None
    if note.case is Case.MIXED:
        rare = any(lx.zipf(words[j].lower) < _COMMON for j in range(k, last + 1))
        return last if rare else None
    if note.case is not Case.UPPER:
        return k if _lower_rare(note, k) else None  # a note in lower case
    single = last == k
    return last if single and lx.zipf(words[k].lower) < 3.0 else None


def _lower_rare(note: _Note, k: int) -> bool:
    """A single lower-case word after an employment word that English hardly knows and that is
    no clinical word nor a typo of a common one, ending its clause ("employed by initech
    since 2001", "works for vandelay."; not "works at night", "retired from teaching")."""
    words, n = note.words, len(note.words)
    tok = words[k]
    if not tok.text.islower() or not lx.rare_unknown(tok.lower, _RARE_LOWER):
        return False
    if k + 1 < n and _gap_ok(note, k, k + 1) and words[k + 1].lower not in _STOPS:
        return False  # more words follow: a phrase this pass cannot bound
    return not lx.near_english(tok.lower)


def _name_word(note: _Note, j: int, k: int) -> bool:
    tok = note.words[j]
    if j > k and not _gap_ok(note, j - 1, j):
        return False
    if tok.lower in _STOPS or not tok.text[0].isalpha():
        return False
    return note.case is not Case.MIXED or tok.is_title or tok.is_upper


def _organisation(note: _Note, k: int | None, source: str) -> Span | None:
    if k is None:
        return None
    words = note.words
    last = _suffixed(note, k)
    if last is not None:
        return Span(words[k].start, words[last].end, OTHER, 0.8, source)
    last = _capitalised(note, k)
    if last is None:
        return None
    return Span(words[k].start, words[last].end, OTHER, 0.6, source)


def _after_work_word(note: _Note, i: int) -> Span | None:
    """ "works for Acme Corp", "employed by Blue Door LLC", "retired from Harbor Freight"."""
    return _organisation(note, _connector(note, i, _AFTER_WORK), "organizations.after_work_word")


def _after_employer(note: _Note, i: int) -> Span | None:
    """ "her employer, Xyz Foods,", "Employer: Globex", "employer is Vandelay Industries"."""
    words, n = note.words, len(note.words)
    k = i + 1
    if k >= n or "\n" in note.text[words[i].end : words[k].start]:
        return None
    mark = note.text[words[i].end : words[k].start].strip()
    if mark == "" and words[k].lower in _APPOSITION:
        k += 1
    elif mark not in {",", ":"}:
        return None
    if k < n and words[k].lower in _ARTICLES:
        return None  # "her employer, the state": a common noun
    return _organisation(note, k if k < n else None, "organizations.employer")


def _after_job_title(note: _Note, i: int) -> Span | None:
    """ "CEO of ACME", "owner of Maple Leaf Construction", "partner at Dunmore Associates"."""
    return _organisation(note, _connector(note, i, _AFTER_TITLE), "organizations.after_job_title")


PASSES: Final = declare(
    Passes[_Note, Span](
        "organizations",
        [
            Pass(
                "organizations.after_work_word",
                _after_work_word,
                words=WORK_WORDS,
                after=_JOB_GAP + 2 + _LONGEST,
                vocabulary=("org_work_verbs", "org_suffixes", "org_legal_forms"),
            ),
            Pass(
                "organizations.employer",
                _after_employer,
                words=_EMPLOYER,
                after=2 + _LONGEST,
                vocabulary=("org_suffixes", "org_legal_forms"),
            ),
            Pass(
                "organizations.after_job_title",
                _after_job_title,
                words=JOB_TITLES,
                after=_GAP + 2 + _LONGEST,
                vocabulary=("org_job_titles", "org_occupations", "org_suffixes", "org_legal_forms"),
            ),
        ],
    )
)


@register("organizations")
class OrganizationRecognizer(Recognizer):
    """Employers and organisations after an employment word or an executive title."""

    categories = frozenset({OTHER})

    def detect(self, doc: Doc) -> list[Span]:
        toks = lx.tokens(doc)
        if toks.lower_set.isdisjoint(PASSES.triggers):
            return []
        note = _Note(toks.words, doc.text, Case.of(toks))
        starts = compress(range(len(toks.lowers)), map(PASSES.triggers.__contains__, toks.lowers))
        out: list[Span] = []
        for i in starts:
            found = PASSES.first(note, i, note.case)
            if found is not None:
                out.append(found[1])
        return out
