"""The leak guard: the last check before a de-identified document may be published.

``leak_guard(original, output, out_spans, replaced, identifiers, policy)`` counts, by
category, the known identifiers of the document (names, ids, phones, addresses, birth
date — from the message's structured part and the patient's remembered context) and the
detected PHI strings that are still in the output outside the text we generated
(surrogates and tags are masked first), plus surrogates equal to their own original. Any
count holds the document back (:mod:`pipelines.deidentify`); only categories and counts
leave this module, never the text.

Each term is a regex with a cheap necessary condition (its needle, tested by
:class:`_Probe` on the masked output) so most absent terms are never compiled; on long
ASCII outputs the detected phrases are looked for through a word index (:class:`_WordIndex`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import date
from functools import lru_cache
from operator import attrgetter
from typing import NamedTuple

from pipelines.deadline import check
from pipelines.document import Address, Identifiers, PersonName
from pipelines.leak_search import (
    GUARD_INDEX_CHARS,
    PROBE_DIGITS,
    PROBE_SQUEEZED,
    PROBE_TEXT,
    PROBE_WORD,
    WORD_RUN,
    _compiled,
    _Probe,
    _WordIndex,
)
from pipelines.policy import Action, Policy
from pipelines.spans import Category, Span
from surrogates.names import SUFFIXES, TITLES, folded

# Categories whose surrogate may legitimately read like the original: a year-only date can
# stay in its year, an age under the ceiling is kept.
MAY_EQUAL = frozenset({Category.DATE, Category.AGE})
MIN_ID_CHARS = 4  # shorter identifiers (e.g. "1") would match everywhere
MIN_NUMERIC_PHRASE = 4  # detected all-digit phrases shorter than this are not scanned


_SEPARATORS = r"[\s().\-/]*"


def word_pattern(term: str) -> str:
    """A whole-word pattern, whitespace-flexible (callers wrap it in ``(?i:…)``)."""
    body = r"\s+".join(re.escape(w) for w in term.split())
    # An apostrophe between letters continues the word ("Don" is not in "don't"), except
    # the possessive: "Don's" is Don.
    return rf"(?<!\w)(?<!\w['’]){body}(?!\w)(?!['’](?![sS]\b)\w)"


def _digits(digits: str) -> str:
    return r"(?<!\d)" + _SEPARATORS.join(digits) + r"(?!\d)"


def _alnum_chars(value: str) -> str:
    """The alphanumeric characters of ``value`` (filtered in C: an id is new per note)."""
    return "".join(filter(str.isalnum, value))


def _alnum_id(value: str, chars: str | None = None) -> str | None:
    """``chars``: ``_alnum_chars(value)`` if the caller has it."""
    if chars is None:
        chars = _alnum_chars(value)
    if len(chars) < MIN_ID_CHARS:
        return None
    # re.escape leaves alphanumerics (any script) as they are: no escaping needed
    return r"(?<![A-Za-z0-9])" + r"[\s\-./]?".join(chars) + r"(?![A-Za-z0-9])"


def _alnum_needle(value: str, chars: str | None = None) -> str:
    """The id's characters, lower-cased, for :data:`PROBE_SQUEEZED` ("" if not ASCII)."""
    if chars is None:
        chars = _alnum_chars(value)
    return chars.lower() if chars.isascii() else ""


def _date_forms(day: date) -> list[str]:
    m, d, y = day.month, day.day, day.year
    month = day.strftime("%B")
    return [
        f"{m:02d}/{d:02d}/{y}",
        f"{m}/{d}/{y}",
        f"{m:02d}/{d:02d}/{y % 100:02d}",
        f"{m}/{d}/{y % 100:02d}",
        f"{m}-{d}-{y}",
        f"{m:02d}-{d:02d}-{y}",
        day.isoformat(),
        f"{y}{m:02d}{d:02d}",
        f"{month} {d}, {y}",
        f"{month} {d} {y}",
        f"{month[:3]} {d}, {y}",
        f"{month[:3]} {d} {y}",
        f"{d} {month} {y}",
        f"{d} {month[:3]} {y}",
    ]


class Term(NamedTuple):
    category: str
    pattern: str  # the regex (carries its own case flags)
    needle: str = ""  # lower-case literal that must occur (see ``probe``), or "" (none)
    probe: str = PROBE_TEXT


def _needle(term: str) -> str:
    """The longest word of a term: a cheap substring test before the regex runs."""
    return max(term.split(), key=len).lower() if term.split() else ""


# A name part that is a common English word and more a word than a name ("Will", "May",
# "Hope", "Young"); "Smith" and "Brown" are frequent words too but mostly names: strict.
COMMON_WORD_ZIPF = 4.5
NAME_OVER_WORD = 1.0  # pipelines.phi.lexicons.name_score threshold
_TITLE_BEFORE = r"(?i:\b(?:mr|mrs|ms|miss|mister|dr|doctor)\.?\s+)"


@lru_cache(maxsize=8192)
def _name_part_pattern(part: str, mixed_case: bool) -> str:
    """Whole word, case-insensitive — unless the part is a common English word.

    A common-word part ("Will", "May") counts where the text makes it a name: after a
    title anywhere, or capitalised ("Will", "WILL") in a mixed-case note. Otherwise every
    "will" and every "MAY" of an all-caps note would hold the document back.
    """
    from pipelines.phi.lexicons import name_score, zipf

    low = part.lower()
    if zipf(low) < COMMON_WORD_ZIPF or name_score(low) >= NAME_OVER_WORD:
        return f"(?i:{word_pattern(part)})"
    titled = _TITLE_BEFORE + "(?i:" + re.escape(part) + r")(?!\w)"
    if not mixed_case:
        return titled
    cased = "|".join(re.escape(form) for form in {part.capitalize(), part.upper()})
    return rf"{titled}|(?<!\w)(?:{cased})(?!\w)(?!['’](?![sS]\b)\w)"


_ASCII_LETTER = re.compile(rb"[A-Za-z]")


def is_mixed_case(text: str) -> bool:
    """Does the text hold both a lower-case and an upper-case letter?

    ``isupper``/``islower`` answer the common all-caps / all-lower notes in C; only other
    texts are scanned (and those usually stop at the first few characters). An ASCII text
    is asked as bytes: ``bytes.isupper`` reads a table per character, ``str.isupper`` the
    Unicode database (an all-caps note of 1,000 characters: ~11 µs as str, ~1 µs as bytes).
    """
    if text.isascii():
        raw = text.encode("ascii")
        if raw.isupper() or raw.islower():
            return False
        # neither: a lower-case letter and an upper-case one, or no letter at all; the
        # first letter tells (no lower-cased copy of the text to compare)
        return _ASCII_LETTER.search(raw) is not None
    if text.isupper() or text.islower():
        return False
    return any(c.islower() for c in text) and any(c.isupper() for c in text)


# Compiled guard patterns, shared by documents: a patient's known names recur in every one
# of their notes. Bounded, and separate from ``re``'s own 512-entry cache, which the
# detector's libraries also use (misses there recompiled the same patterns per document).


def known_terms(identifiers: Identifiers, policy: Policy, text: str = "") -> list[Term]:
    """(category, regex, needle) for each known identifier the policy does not keep.

    Patterns carry their own case flags (``(?i:…)``); ``text`` (the original note) tells
    whether the note is mixed-case, which common-word name parts need. Cached per group of
    identifiers (names of one kind, ids of one kind…): a patient's names recur in every note
    while the visit and document ids change, so the terms are built once per value group.
    (Used by the review tool to show what held a note.)
    """
    return list(_known_terms(identifiers, _kept(policy), is_mixed_case(text)))


def _kept(policy: Policy) -> tuple[Category, ...]:
    """The categories ``policy`` keeps, read once per policy object (not per note)."""
    last = _KEPT_OF[0]
    if last is not None and last[0] is policy:
        return last[1]
    kept = _kept_by(policy)
    _KEPT_OF[0] = (policy, kept)
    return kept


# the last policy asked of ``_kept`` and its answer (a policy is frozen: its actions too)
_KEPT_OF: list[tuple[Policy, tuple[Category, ...]] | None] = [None]


def _kept_by(policy: Policy) -> tuple[Category, ...]:
    if policy.default_action is Action.KEEP:
        return tuple(c for c in Category if policy.action_for(c) is Action.KEEP)
    return tuple(sorted(c for c, a in policy.actions.items() if a is Action.KEEP))


def _term(category: Category, pattern: str | None, needle: str, probe: str) -> Term | None:
    if not pattern:
        return None
    if not pattern.startswith("(?i:") and not category.is_name:
        pattern = f"(?i:{pattern})"
    return Term(category.value, pattern, needle, probe)


@lru_cache(maxsize=4096)
def _name_terms(
    names: tuple[PersonName, ...], category: Category, mixed_case: bool
) -> tuple[Term, ...]:
    terms: list[Term] = []
    for name in names:
        pieces = [p.strip(".") for part in name.parts for p in re.split(r"[\s\-]+", part)]
        others = [p for p in pieces if len(p) > SHORT_NAME_PART]
        for piece in pieces:
            if len(piece) < 2:
                continue
            pattern = _part_pattern(piece, tuple(others), mixed_case)
            term = _term(category, pattern, _needle(piece), PROBE_WORD)
            if term is not None:
                terms.append(term)
    return tuple(terms)


# A known name part this short ("Al", "Ed", "Jo": also clinical abbreviations) counts only
# with name context, as the detector's known-name recognizer requires: a title before it,
# or — capitalised in a mixed-case note — another part of the same name beside it.
SHORT_NAME_PART = 2


def _part_pattern(piece: str, others: tuple[str, ...], mixed_case: bool) -> str:
    """A name part's pattern: a short one needs name context (``_short_part_pattern``)."""
    if len(piece) <= SHORT_NAME_PART:
        return _short_part_pattern(piece, others, mixed_case)
    return _name_part_pattern(piece, mixed_case)


@lru_cache(maxsize=4096)
def _short_part_pattern(part: str, others: tuple[str, ...], mixed_case: bool) -> str:
    titled = _TITLE_BEFORE + "(?i:" + re.escape(part) + r")(?!\w)"
    if not others:
        return titled
    forms = {part.capitalize(), part.upper()} if mixed_case else {part}
    cased = "(?:" + "|".join(re.escape(f) for f in sorted(forms)) + ")"
    if not mixed_case:
        cased = f"(?i:{cased})"
    beside = "(?i:" + "|".join(re.escape(o) for o in others) + ")"
    return rf"{titled}|(?<!\w){cased}\s+{beside}(?!\w)|(?<!\w){beside},?\s+{cased}(?!\w)"


@lru_cache(maxsize=8192)
def _id_term(value: str, category: Category) -> Term | None:
    chars = _alnum_chars(value)
    return _term(category, _alnum_id(value, chars), _alnum_needle(value, chars), PROBE_SQUEEZED)


@lru_cache(maxsize=4096)
def _contact_terms(
    phones: tuple[str, ...], emails: tuple[str, ...], addresses: tuple[Address, ...]
) -> tuple[Term | None, ...]:
    terms: list[Term | None] = []
    for phone in phones:
        terms += _phone_terms(phone)
    for email in emails:
        if email.strip():
            terms.append(
                _term(Category.EMAIL, re.escape(email.strip()), email.strip().lower(), PROBE_TEXT)
            )
    for address in addresses:
        terms += _address_terms(address)
    return tuple(terms)


def _phone_terms(phone: str) -> list[Term | None]:
    """A phone number's digits (a leading US country code dropped); a ten-digit number
    also without its area code."""
    digits = "".join(c for c in phone if c.isdigit())
    if len(digits) == 11 and digits[0] == "1":
        digits = digits[1:]
    if len(digits) < 7:
        return []
    needle = digits if digits.isascii() else ""
    terms = [_term(Category.PHONE, _digits(digits), needle, PROBE_DIGITS)]
    if len(digits) == 10:
        terms.append(_term(Category.PHONE, _digits(digits[3:]), needle[3:], PROBE_DIGITS))
    return terms


def _address_terms(address: Address) -> list[Term | None]:
    """Street lines, city and 5-digit ZIP of one address."""
    terms: list[Term | None] = []
    for line in address.street:
        if len(line.strip()) >= 4:
            terms.append(
                _term(
                    Category.LOCATION_STREET,
                    word_pattern(line.strip()),
                    _needle(line),
                    PROBE_WORD,
                )
            )
    if len(address.city.strip()) >= 2:
        terms.append(
            _term(
                Category.LOCATION_CITY,
                word_pattern(address.city.strip()),
                _needle(address.city),
                PROBE_WORD,
            )
        )
    if len(address.postal_code.strip()) >= 5:
        zip5 = address.postal_code.strip()[:5]
        terms.append(_id_term(zip5, Category.LOCATION_ZIP))
    return terms


@lru_cache(maxsize=1024)
def _birth_terms(birth_date: date) -> tuple[Term | None, ...]:
    return tuple(
        _term(Category.DATE, word_pattern(form), _needle(form), PROBE_WORD)
        for form in _date_forms(birth_date)
    )


def _known_terms(
    identifiers: Identifiers, kept: tuple[Category, ...], mixed_case: bool
) -> list[Term]:
    """The known terms in a fixed order: names (patient, provider, relative), MRNs, other
    ids, accounts, SSNs, phones, emails, addresses, birth date. The order decides which
    category a pattern shared by two kinds is counted under."""
    terms: list[Term] = []
    for names, category in (
        (identifiers.patient_names, Category.NAME_PATIENT),
        (identifiers.provider_names, Category.NAME_PROVIDER),
        (identifiers.relative_names, Category.NAME_RELATIVE),
    ):
        if names and category not in kept:
            terms += _name_terms(names, category, mixed_case)
    optional = _optional_terms(identifiers)
    if kept:
        terms += [t for t in optional if t is not None and t.category not in kept]
    else:
        terms += [t for t in optional if t is not None]
    return terms


def _optional_terms(identifiers: Identifiers) -> list[Term | None]:
    """The terms of the known identifiers other than names, in :func:`_known_terms`'s
    order (None for a value too short or plain to be a term)."""
    optional: list[Term | None] = []
    # each kind asked only when present: most documents have an MRN and a visit at most
    if identifiers.patient_ids:
        optional += [_id_term(ident.value, Category.MRN) for ident in identifiers.patient_ids]
    if identifiers.other_ids:
        optional += [_id_term(ident.value, Category.ID) for ident in identifiers.other_ids]
    if identifiers.account_numbers:
        optional += [_id_term(value, Category.ACCOUNT) for value in identifiers.account_numbers]
    if identifiers.ssn:
        optional += [_id_term(value, Category.SSN) for value in identifiers.ssn]
    if identifiers.phones or identifiers.emails or identifiers.addresses:
        optional += _contact_terms(identifiers.phones, identifiers.emails, identifiers.addresses)
    if identifiers.birth_date is not None:
        optional += _birth_terms(identifiers.birth_date)
    return optional


def _detected_phrases(
    text: str, replaced: Sequence[tuple[Span, str]]
) -> list[tuple[str, Category]]:
    """Each detected phrase (whitespace runs made one space) with its category, once, in
    the order of the text: a long note repeats its names and places many times."""
    written = dict.fromkeys((text[c.start : c.end], c.category) for c, _ in replaced)
    return list(dict.fromkeys((" ".join(phrase.split()), c) for phrase, c in written))


def _found_terms_of(phrases: Sequence[tuple[str, Category]], mixed_case: bool) -> list[Term]:
    terms: list[Term] = []
    for phrase, category in phrases:
        terms += _phrase_terms(phrase, category, mixed_case)
    return terms


@lru_cache(maxsize=8192)
def _phrase_terms(phrase: str, category: Category, mixed_case: bool) -> tuple[Term, ...]:
    """The terms of one detected phrase (cached: a patient's names and ids recur)."""
    if category.group == "LOCATION" and phrase.lower() in _role_words():
        return (_placed_role(phrase, category.value),)
    return _plain_phrase_terms(phrase, category, mixed_case)


def _plain_phrase_terms(phrase: str, category: Category, mixed_case: bool) -> tuple[Term, ...]:
    """The terms of a detected phrase: the whole phrase, and a name's parts."""
    if len(phrase) < 2:
        return ()
    if phrase.isdigit() and len(phrase) < MIN_NUMERIC_PHRASE:
        return ()
    value = category.value
    whole = Term(value, f"(?i:{word_pattern(phrase)})", _needle(phrase), PROBE_WORD)
    if not category.is_name:
        return (whole,)
    terms: list[Term] = []
    pieces = [
        p
        for p in re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)?", phrase)
        if len(p) >= 2 and p.lower() not in TITLES and p.lower() not in SUFFIXES
    ]
    if len(pieces) > 1 or (pieces and pieces[0] != phrase):
        terms.append(whole)
    for piece in pieces:
        if len(piece) >= 3 or piece == phrase:
            pattern = _part_pattern(piece, (), mixed_case)
            terms.append(Term(value, pattern, piece.lower(), PROBE_WORD))
    return tuple(terms)


_PLACE_BEFORE = r"(?i:\b(?:in|from|to|at|near|of|outside|around)\s+(?:the\s+)?)"


def _placed_role(phrase: str, value: str) -> Term:
    """ "Marine" the town beside "RETIRED MARINE" the role: the detector's exclusions read such
    a word as a place only after a place's preposition, and so does the guard."""
    return Term(value, _PLACE_BEFORE + f"(?i:{re.escape(phrase)})(?!\\w)", phrase.lower())


@lru_cache(maxsize=1)
def _role_words() -> frozenset[str]:
    """Roles, trades and services that are place names too ("marine"): ``exclusion_roles``."""
    from pipelines.phi.wordlists import word_set

    return word_set("exclusion_roles")


def _anchored_terms(
    phrases: Sequence[tuple[str, Category]], mixed_case: bool
) -> dict[str, tuple[str, ...]]:
    """pattern → lower-case words every match of it contains ((): none known).

    Any such word finds the same matches, and the index searches around the one the output
    holds least often. Up to ``_ANCHORS`` are kept, the least common first (``_commonness``),
    so the index need not list the output's every "the" or "3" ("the General Hospital",
    "3 West"): the note's frequent words are most of the index's work otherwise. One word
    alone is not enough: a date's numbers are in no English list, and "10" of "10/12" was
    written 1,446 times in the 5 MB dev note, each a window searched, for every such date."""
    out: dict[str, tuple[str, ...]] = {}
    for phrase, category in phrases:
        terms = _phrase_terms(phrase, category, mixed_case)
        # the phrase's own pattern, made once: per term it made a long phrase quadratic
        whole_pattern = f"(?i:{word_pattern(phrase)})" if terms else ""
        for term in terms:
            if term.pattern in out:
                continue
            whole = term.pattern == whole_pattern
            words = WORD_RUN.findall(phrase.lower() if whole else term.needle)
            ascii_words = bool(words) and all(w.isascii() for w in words)
            out[term.pattern] = _anchors(words) if ascii_words else ()
    return out


_ANCHORS = 3  # words kept per pattern to anchor its search on
# A word this common ("and", "with", "s" of "Mary's") is no anchor beside a rarer one: the
# index would list its every occurrence in the output (most of its work on a long note)
# for windows the rarer word alone narrows enough; "July", "general", a one-digit number
# (5.0) still are.
_ANCHOR_COMMONNESS = 5.5


def _anchors(words: Sequence[str]) -> tuple[str, ...]:
    """Up to ``_ANCHORS`` of ``words``, the least common first: the first always, the
    others only while no commoner than ``_ANCHOR_COMMONNESS``."""
    ranked = sorted(set(words), key=_commonness)[:_ANCHORS]
    return tuple(
        w for k, w in enumerate(ranked) if k == 0 or _commonness(w)[0] <= _ANCHOR_COMMONNESS
    )


def _commonness(word: str) -> tuple[float, str]:
    """How common a lower-case word is likely to be in a note: its English frequency
    (Zipf); a number by its length (in no English list: "10" is common, "2093" less so)."""
    from pipelines.phi.lexicons import zipf

    if word.isdigit():
        return (max(0.0, 6.0 - len(word)), word)
    return (zipf(word), word)


def masked(output: str, spans: Sequence[Span]) -> str:
    """``output`` with the characters of ``spans`` replaced by NUL: the text we generated."""
    if output.isascii():
        # one buffer written in place: not a slice of the output per span
        buffer = bytearray(output, "ascii")
        for span in spans:
            buffer[span.start : span.end] = bytes(span.end - span.start)
        return buffer.decode("ascii")
    pieces: list[str] = []
    pos = 0
    for span in sorted(spans, key=lambda s: s.start):
        start = max(pos, span.start)
        if span.end <= start:
            continue
        pieces += (output[pos:start], "\x00" * (span.end - start))
        pos = span.end
    pieces.append(output[pos:])
    return "".join(pieces)


def leak_guard(
    original: str,
    output: str,
    out_spans: Sequence[Span],
    replaced: Sequence[tuple[Span, str]],
    identifiers: Identifiers,
    policy: Policy,
    mixed_case: bool | None = None,
) -> Counter[str]:
    """Count, by category, the known identifiers and detected PHI strings left in ``output``.

    Text we generated (surrogates, tags) is masked first: a surrogate that happens to read
    like another original of the note is not a leak. A surrogate equal to its own original is.
    ``mixed_case``: ``is_mixed_case(original)`` if the caller has it.
    """
    scan = masked(output, out_spans)
    probe = _Probe(scan)
    leaks: Counter[str] = Counter()
    seen: set[str] = set()
    if mixed_case is None:
        mixed_case = is_mixed_case(original)
    phrases = _detected_phrases(original, replaced)
    found = _found_terms_of(phrases, mixed_case)
    index = None
    if len(scan) > GUARD_INDEX_CHARS and scan.isascii():
        index = _WordIndex(scan, _anchored_terms(phrases, mixed_case), probe.lowered)
    known = _known_terms(identifiers, _kept(policy), mixed_case)
    _count_known(known, scan, probe, seen, leaks, _plain_copy(scan, known))
    _count_found(found, scan, probe, index, seen, leaks)
    _count_echoed(original, replaced, leaks)
    return leaks


def _count_known(
    terms: list[Term],
    scan: str,
    probe: _Probe,
    seen: set[str],
    leaks: Counter[str],
    plain: str | None = None,
) -> None:
    """Count the known identifiers' terms found in ``scan`` (each pattern once); with
    ``plain`` (``_plain_copy``), also a term found there with the accents set aside on
    both sides ("NUNEZ" in the message, "Núñez" in the note, or the other way round)."""
    if plain is None:  # no accent on either side: the scan alone
        for category, pattern, needle, how in terms:
            if pattern in seen:
                continue
            seen.add(pattern)
            if (not needle or probe.may_hold(needle, how)) and _compiled(pattern).search(scan):
                leaks[category] += 1
        return
    plain_probe = _Probe(plain)
    same_text = plain == scan  # the output has no accent: only a folded pattern differs
    for category, pattern, needle, how in terms:
        if pattern in seen:
            continue
        hit = _holds(scan, probe, pattern, needle, how)
        if not hit:
            plain_pattern = _plain_pattern(pattern)
            if not same_text or plain_pattern != pattern:  # else the same search again
                hit = _holds(plain, plain_probe, plain_pattern, folded(needle), how)
        seen.add(pattern)
        if hit:
            leaks[category] += 1


def _holds(scan: str, probe: _Probe, pattern: str, needle: str, how: str) -> bool:
    if needle and not probe.may_hold(needle, how):
        return False
    return _compiled(pattern).search(scan) is not None


def _plain_copy(scan: str, known: list[Term]) -> str | None:
    """The output with its accents set aside, where the output or a known identifier has
    any (else None: nothing to compare that the plain scan has not). A pattern is not
    ASCII for its apostrophes alone (``word_pattern``'s "’"): it counts only where folding
    changes it."""
    if scan.isascii() and all(map(_is_plain, map(_PATTERN, known))):
        return None
    return folded(scan)


_plain_pattern = lru_cache(maxsize=4096)(folded)  # a known term's pattern, accents aside
_PATTERN = attrgetter("pattern")


@lru_cache(maxsize=4096)
def _is_plain(pattern: str) -> bool:
    """Does folding the accents leave ``pattern`` as it is?"""
    return _plain_pattern(pattern) == pattern


def _count_found(
    terms: list[Term],
    scan: str,
    probe: _Probe,
    index: _WordIndex | None,
    seen: set[str],
    leaks: Counter[str],
) -> None:
    """Count the detected phrases' terms found in ``scan`` (by ``index`` on a long ASCII
    output), each pattern once, under the per-document deadline."""
    for category, pattern, needle, how in terms:
        if pattern in seen:
            continue
        check("guard")  # the per-document deadline: once per distinct detected term
        if index is not None:
            seen.add(pattern)
            if index.search(pattern, needle):
                leaks[category] += 1
            continue
        if needle and not probe.may_hold(needle, how):
            continue
        seen.add(pattern)
        if _compiled(pattern).search(scan):
            leaks[category] += 1


def _count_echoed(original: str, replaced: Sequence[tuple[Span, str]], leaks: Counter[str]) -> None:
    """Count the replacements equal (case aside) to their own original."""
    for chosen, new in replaced:
        if chosen.category in MAY_EQUAL:
            continue
        old = original[chosen.start : chosen.end]
        if new.casefold() == old.casefold():
            leaks[chosen.category.value] += 1
