"""The document's own identifiers, found again in its narrative (presidio-style context).

Why: the structured part of the message (PID, NK1, PV1 or the FHIR Patient) already tells us
the patient's names, MRNs, birth date, phones and address. Whatever form they take in the
text — "SMITH, JOHN", "Mr. Smith", "J. Smith", "Smith's", "john", MRN "00123-45" for
"12345", "Jan 2, 1950" for 1950-01-02 — they are PHI with near certainty. The spans come out
with confidence 1.0, so where another recognizer found the same words with a weaker guess
(a name with an unknown role) the merge keeps this one: the known identifier boosts it. The
name forms (with nicknames of first names from the ``nicknames`` package: "Peggy" for
Margaret, taken only where the text supports a name) are also left in
``doc.artifacts.known_names`` so the name recognizer can give a found name its role.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import date
from functools import cache
from typing import Any

from pipelines.document import Identifiers, PersonName
from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc, Recognizer
from pipelines.phi.registry import register
from pipelines.phi.wordlists import phrases
from pipelines.spans import Category, Span

SOURCE = "known"

# A name part this frequent in English ("Will", "Rose", "Hope") counts only where the text
# makes it a name: Title case in a mixed-case note, or next to a title / another known part.
_COMMON_WORD = 4.5

_TITLES = frozenset({"mr", "mrs", "ms", "miss", "dr", "mister"})
SHORT_NAME_PART = 2  # a known part this short needs name context (see ``_named_here``)

_DIGIT_RUN = re.compile(r"(?<![\w])[A-Za-z]{0,3}\d(?:[./-]?\d)*(?![\w])")
_PHONE = re.compile(r"(?<!\d)(?:\+?1[\s.-]?)?(?:\(\d{3}\)\s*|\d{3}[\s.-]?)?\d{3}[\s.-]?\d{4}(?!\d)")
# "(?<!\d)(\d{1,4})" written as "(\d(?<!\d\d)\d{0,3})" (the same matches): a pattern that opens
# with a digit class lets the stdlib search skip to the next digit in C, where a leading
# look-behind makes it try a match at every position of the note (slower)
_NUMERIC_DATE = re.compile(r"(\d(?<!\d\d)\d{0,3})([/.-])(\d{1,2})\2(\d{1,4})(?!\d)")
_COMPACT_DATE = re.compile(r"(\d(?<!\d\d)\d{7})(?!\d)")
_MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ]
    )
    for m in names
}
_MONTH_HEADS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
_ORD = r"(?:st|nd|rd|th)?"
_MONTH_FIRST = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}}){_ORD},?\s+(\d{{2,4}})\b", re.I)
_DAY_FIRST = re.compile(
    rf"\b(\d{{1,2}}){_ORD}[\s-]+(?:of\s+)?{_MONTH}\.?,?[\s-]+(\d{{2,4}})\b", re.I
)

# USPS street-suffix abbreviations (a handful; the full table has no maintained package).
_STREET_SUFFIX = {full: short for full, short in phrases("street_suffix_abbreviations")}


@register("known")
class KnownIdentifierRecognizer(Recognizer):
    """Every form of the document's known identifiers (names, MRNs, birth date, phones,
    email, address) found in its text."""

    categories = frozenset(
        {
            Category.NAME_PATIENT,
            Category.NAME_PROVIDER,
            Category.NAME_RELATIVE,
            Category.MRN,
            Category.SSN,
            Category.ACCOUNT,
            Category.ID,
            Category.DATE,
            Category.PHONE,
            Category.EMAIL,
            Category.LOCATION_STREET,
            Category.LOCATION_CITY,
            Category.LOCATION_ZIP,
        }
    )

    def detect(self, doc: Doc) -> list[Span]:
        ids = doc.identifiers
        if ids.is_empty() or not doc.text:
            return []
        out: list[Span] = []
        out.extend(self._names(doc))
        out.extend(_numbers(doc.text, ids))
        if ids.birth_date is not None:
            out.extend(_birth_dates(doc.text, ids.birth_date))
        out.extend(_phones(doc.text, ids.phones))
        out.extend(_literal(doc.text, ids.emails, Category.EMAIL))
        out.extend(_addresses(doc))
        return out

    def _names(self, doc: Doc) -> Iterator[Span]:
        forms = known_name_forms(doc)
        if not forms:
            return
        toks = lx.tokens(doc)
        ids = doc.identifiers
        people = (ids.provider_names, ids.relative_names, ids.patient_names)
        initials, wanted = _name_lookup(forms, people)
        lowers, present = toks.lowers, toks.lower_set
        if not doc.text.isascii() or not all(map(str.isascii, forms)):
            # "Núñez" in the note, "NUNEZ" in the message (or the other way round): both
            # sides are read with their accents set aside
            forms = {**forms, **{lx.folded(f): c for f, c in forms.items()}}
            wanted = wanted | frozenset(map(lx.folded, wanted))
            lowers = tuple(map(lx.folded, lowers))
            present = frozenset(lowers)
        if present.isdisjoint(wanted):
            return  # none of the known names (nor their initials) occurs in this note
        seen = _Seen(
            toks.words,
            doc.text,
            forms,
            doc.artifacts.known_nicknames or frozenset(),
            toks.mixed_case,
            lowers,
        )
        for i in lx.positions(lowers, present.intersection(wanted)):
            span = seen.part(i) or seen.initial(i, initials)
            if span is not None:
                yield span


class _Seen:
    """The words of a note, read for the known people's names."""

    def __init__(
        self,
        words: tuple[lx.Token, ...],
        text: str,
        forms: dict[str, Category],
        nicks: frozenset[str],
        mixed: bool,
        lowers: tuple[str, ...],
    ) -> None:
        self.words, self.text, self.forms, self.nicks, self.mixed = words, text, forms, nicks, mixed
        self.lowers = lowers  # the words' lower-case forms as looked up (accents set aside)

    def part(self, i: int) -> Span | None:
        """A known name part (or its possessive) at word ``i``, where the text allows it."""
        tok, low = self.words[i], self.lowers[i]
        base = _base(low)
        cat = self.forms.get(base)
        if cat is None:
            return None
        if len(base) <= SHORT_NAME_PART:
            if not _named_here(self.words, i, self.forms, self.mixed):
                return None
        # a common word, or a nickname ("Peg" is also a feeding tube), needs support
        elif (lx.zipf(base) >= _COMMON_WORD or base in self.nicks) and not _supported(
            self.words, i, self.forms, self.mixed
        ):
            return None
        return Span(tok.start, tok.end - (len(low) - len(base)), cat, 1.0, SOURCE)

    def initial(self, i: int, initials: dict[str, Category]) -> Span | None:
        """An initial: "J. Smith", "Ms. S." (a single letter with a period)."""
        words, tok, low = self.words, self.words[i], self.lowers[i]
        if len(tok.text) != 1 or self.text[tok.end : tok.end + 1] != "." or low not in initials:
            return None
        prev_title = i > 0 and words[i - 1].lower in _TITLES
        next_known = i + 1 < len(words) and _base(self.lowers[i + 1]) in self.forms
        if prev_title or next_known:
            return Span(tok.start, tok.end, initials[low], 0.95, SOURCE)
        return None


def known_name_forms(doc: Doc) -> dict[str, Category]:
    """Lower-case name parts of the document's known people -> their role (patient first)."""
    artifacts = doc.artifacts
    if artifacts.known_names is not None:
        return artifacts.known_names
    ids = doc.identifiers
    forms, nicks = _name_forms((ids.provider_names, ids.relative_names, ids.patient_names))
    artifacts.known_names, artifacts.known_nicknames = forms, nicks
    return forms


_People = tuple[tuple[PersonName, ...], tuple[PersonName, ...], tuple[PersonName, ...]]


def _name_forms(known: _People) -> tuple[dict[str, Category], frozenset[str]]:
    """Name forms and nicknames of the known people (providers, relatives, patients)."""
    providers, relatives, patients = known
    forms: dict[str, Category] = {}
    nicks: set[str] = set()
    for people, cat in (
        (providers, Category.NAME_PROVIDER),
        (relatives, Category.NAME_RELATIVE),
        (patients, Category.NAME_PATIENT),
    ):
        for part in _name_parts(people):
            forms[part] = cat  # later roles win: the patient's own name is the most sensitive
        for nick in _nicknames(people):
            if nick not in forms:  # "Bob" for Robert: a form, never over a real part
                forms[nick] = cat
                nicks.add(nick)
    return forms, frozenset(nicks)


@cache
def _nicknamer() -> Any:
    from nicknames import NickNamer

    return NickNamer()


def _nicknames(people: Iterable[PersonName]) -> Iterator[str]:
    """Nicknames of the people's first names from the ``nicknames`` package's curated table
    ("Peggy" for Margaret), kept when they are census first names used more as names than as
    words ("Bill" stays, "Dob" — also date of birth — and "Daisy" the flower do not)."""
    for person in people:
        if person.given and person.given[0]:
            yield from _nicknames_of(person.given[0].lower().strip())


def _nicknames_of(first: str) -> tuple[str, ...]:
    return tuple(
        nick
        for nick in sorted(_nicknamer().nicknames_of(first))
        if len(nick) >= 3 and nick.isalpha() and lx.name_score(nick) >= 0.5
    )


def _name_parts(people: Iterable[PersonName]) -> Iterator[str]:
    for person in people:
        for part in person.parts:
            low = part.lower().strip()
            if not low:
                continue
            pieces = [p for p in re.split(r"[\s-]+", low) if len(p) >= 2]
            yield from pieces
            if "'" in low or "’" in low:
                yield low.replace("’", "'")


def _name_lookup(
    forms: dict[str, Category], people: _People
) -> tuple[dict[str, Category], frozenset[str]]:
    """The known names' initials, and every form a word of the note is looked up against
    (``forms``, the people's ``known_name_forms``, their possessives, initials)."""
    initials = _known_initials(*people)
    wanted = {*forms, *(f + "'s" for f in forms), *(f + "’s" for f in forms), *initials}
    return initials, frozenset(wanted)


def _known_initials(
    providers: tuple[PersonName, ...],
    relatives: tuple[PersonName, ...],
    patients: tuple[PersonName, ...],
) -> dict[str, Category]:
    out: dict[str, Category] = {}
    for people, cat in (
        (providers, Category.NAME_PROVIDER),
        (relatives, Category.NAME_RELATIVE),
        (patients, Category.NAME_PATIENT),
    ):
        for person in people:
            for part in person.parts:
                if part[:1].isalpha():
                    out[part[0].lower()] = cat
    return out


def _base(word: str) -> str:
    for suffix in ("'s", "’s"):
        if word.endswith(suffix) and len(word) > 2:
            return word[: -len(suffix)]
    return word


def _supported(
    words: tuple[lx.Token, ...], i: int, forms: dict[str, Category], mixed: bool
) -> bool:
    """A common-word name part ("Will") is a name here if the text says so."""
    if mixed and words[i].is_title:
        return True
    before = words[i - 1].lower if i > 0 else ""
    after = _base(words[i + 1].lower) if i + 1 < len(words) else ""
    return before in _TITLES or before in forms or after in forms


def _named_here(
    words: tuple[lx.Token, ...], i: int, forms: dict[str, Category], mixed: bool
) -> bool:
    """A known part of ``SHORT_NAME_PART`` letters ("Al", "Ed", "Jo": clinical abbreviations
    too) is a name only with name context: a title right before it, or — capitalised where
    the note is mixed-case — another known part of three letters or more right beside it
    ("Ed Quill", "QUILL, ED"). The leak guard asks the same of its known terms."""
    before = words[i - 1].lower if i > 0 else ""
    if before in _TITLES:
        return True
    if mixed and not words[i].is_title:
        return False
    after = _base(words[i + 1].lower) if i + 1 < len(words) else ""
    return any(len(w) > SHORT_NAME_PART and w in forms for w in (before, after))


def _norm_digits(value: str) -> str:
    return _NOT_ALNUM.sub("", value).upper().lstrip("0")


def _numbers(text: str, ids: Identifiers) -> Iterator[Span]:
    """MRN, SSN, account and other ids with or without leading zeros and separators."""
    wanted: dict[str, Category] = {}
    for ident in ids.patient_ids:
        code = ident.type_code.upper()
        cat = {"MR": Category.MRN, "SS": Category.SSN, "AN": Category.ACCOUNT}.get(
            code, Category.MRN if not code else Category.ID
        )
        wanted[_norm_digits(ident.value)] = cat
    for value in ids.ssn:
        wanted[_norm_digits(value)] = Category.SSN
    for value in ids.account_numbers:
        wanted[_norm_digits(value)] = Category.ACCOUNT
    for ident in ids.other_ids:
        wanted[_norm_digits(ident.value)] = Category.ID
    wanted.pop("", None)
    if not wanted or not _may_hold_number(text, wanted):
        return
    for m in _DIGIT_RUN.finditer(text):
        found = wanted.get(_norm_digits(m.group()))
        if found is not None:
            yield Span(m.start(), m.end(), found, 1.0, SOURCE)


# compiled once: a module-level ``re.sub`` call looks its pattern up on every call
_NOT_ALNUM = re.compile(r"[^0-9A-Za-z]")
_NON_DIGIT = re.compile(r"\D")


def _may_hold_number(text: str, wanted: Iterable[str]) -> bool:
    """False when no ``_DIGIT_RUN`` match of ``text`` can normalise to a wanted value.

    Why: the scan has a leading look-behind, so the stdlib search tries a match at every
    character, and most notes do not hold the patient's numbers. In ASCII text
    a match without its separators, upper-cased, is a substring of the text so squeezed.
    """
    if not text.isascii():
        return True
    squeezed = text.replace(".", "").replace("/", "").replace("-", "").upper()
    return any(value in squeezed for value in wanted)


def _years(value: int) -> set[int]:
    return {value} if value >= 100 else {value, 1900 + value, 2000 + value}


def _is_birth(birth: date, y: int, m: int, d: int) -> bool:
    return m == birth.month and d == birth.day and birth.year in _years(y)


def _may_hold_numeric_birth(text: str, birth: date) -> bool:
    """False when no ``_NUMERIC_DATE`` match of ASCII ``text`` can be ``birth``: in each of the
    three readings the middle number (one or two digits, between two equal delimiters) is the
    month or the day, so the text holds "/7/", "-07-", ".14." or the like."""
    middles = {str(birth.month), f"{birth.month:02d}", str(birth.day), f"{birth.day:02d}"}
    return any(f"{sep}{mid}{sep}" in text for mid in middles for sep in "/.-")


def _compact_forms(birth: date) -> set[str]:
    """``birth`` as %Y%m%d, %m%d%Y and %d%m%Y. Formatted directly (cheaper than three
    ``strftime`` calls); a year before 1000 goes through ``strftime``, whose %Y padding differs
    between C libraries."""
    if birth.year < 1000:
        return {birth.strftime("%Y%m%d"), birth.strftime("%m%d%Y"), birth.strftime("%d%m%Y")}
    y, m, d = str(birth.year), f"{birth.month:02d}", f"{birth.day:02d}"
    return {y + m + d, m + d + y, d + m + y}


def _birth_dates(text: str, birth: date) -> Iterator[Span]:
    """The birth date in numeric (any order, any delimiter), compact or month-name form.

    Each scan is skipped where the note cannot hold the date (most notes): a numeric date
    writes its year, whose digits end in the year's last two ("31" for 1931, "5" for 2005;
    ASCII digits only in ASCII text), and a compact date is one of three strings."""
    ascii_text = text.isascii()
    year_digits = str(birth.year % 100) in text
    if not ascii_text or (year_digits and _may_hold_numeric_birth(text, birth)):
        yield from _numeric_births(text, birth)
    yield from _compact_births(text, birth)
    # a month-name date of the birthday names its month and writes its year (whose last two
    # digits then appear, as for a numeric date): skip both scans where (in ASCII text) the
    # year's digits or the month's first three letters appear nowhere
    if ascii_text and (not year_digits or _MONTH_HEADS[birth.month - 1] not in text.lower()):
        return
    yield from _month_births(text, birth)


def _numeric_births(text: str, birth: date) -> Iterator[Span]:
    for mt in _NUMERIC_DATE.finditer(text):
        a, b, c = int(mt.group(1)), int(mt.group(3)), int(mt.group(4))
        if _is_birth(birth, c, a, b) or _is_birth(birth, c, b, a) or _is_birth(birth, a, b, c):
            yield Span(mt.start(), mt.end(), Category.DATE, 1.0, SOURCE)


def _compact_births(text: str, birth: date) -> Iterator[Span]:
    compact = _compact_forms(birth)
    if any(value in text for value in compact):
        for mt in _COMPACT_DATE.finditer(text):
            if mt.group(1) in compact:
                yield Span(mt.start(), mt.end(), Category.DATE, 1.0, SOURCE)


def _month_births(text: str, birth: date) -> Iterator[Span]:
    for mt in _MONTH_FIRST.finditer(text):
        # ``_MONTH`` also takes a slip such as "Sepember" (no month here): skip it, do not fail
        month = _MONTHS.get(mt.group(1).lower())
        if month is not None and _is_birth(birth, int(mt.group(3)), month, int(mt.group(2))):
            yield Span(mt.start(), mt.end(), Category.DATE, 1.0, SOURCE)
    for mt in _DAY_FIRST.finditer(text):
        month = _MONTHS.get(mt.group(2).lower())
        if month is not None and _is_birth(birth, int(mt.group(3)), month, int(mt.group(1))):
            yield Span(mt.start(), mt.end(), Category.DATE, 1.0, SOURCE)


def _phones(text: str, phones: Iterable[str]) -> Iterator[Span]:
    wanted: set[str] = set()
    for phone in phones:
        digits = _NON_DIGIT.sub("", phone)
        if len(digits) >= 7:
            wanted.add(digits[-10:])
            wanted.add(digits[-7:])
    # a match ends in four digits written together: the wanted number's last four
    if not wanted or not any(value[-4:] in text for value in wanted):
        return
    for m in _PHONE.finditer(text):
        digits = _NON_DIGIT.sub("", m.group())
        if digits[-10:] in wanted or (len(digits) == 7 and digits in wanted):
            yield Span(m.start(), m.end(), Category.PHONE, 1.0, SOURCE)


def _literal(text: str, values: Iterable[str], cat: Category) -> Iterator[Span]:
    for value in values:
        value = value.strip()
        if len(value) < 3:
            continue
        for m in re.finditer(re.escape(value), text, re.I):
            yield Span(m.start(), m.end(), cat, 1.0, SOURCE)


def _street_pattern(street: str) -> re.Pattern[str] | None:
    parts = re.findall(r"[A-Za-z0-9]+", street)
    if len(parts) < 2:
        return None
    pieces = []
    for part in parts:
        low = part.lower()
        alts = {re.escape(low)}
        for full, short in _STREET_SUFFIX.items():
            if low in {full, short}:
                alts |= {full, short}
        pieces.append("(?:" + "|".join(sorted(alts)) + ")")
    return re.compile(r"\b" + r"[\s,.#]+".join(pieces) + r"\b\.?", re.I)


def _addresses(doc: Doc) -> Iterator[Span]:
    text = doc.text
    for address in doc.identifiers.addresses:
        for street in address.street:
            pattern = _street_pattern(street)
            if pattern is not None:
                for m in pattern.finditer(text):
                    yield Span(m.start(), m.end(), Category.LOCATION_STREET, 1.0, SOURCE)
        city = address.city.strip()
        if len(city) >= 3:
            words = lx.tokens(doc)
            common = lx.zipf(city.lower()) >= _COMMON_WORD
            pattern = re.compile(r"\b" + r"\s+".join(map(re.escape, city.split())) + r"\b", re.I)
            for m in pattern.finditer(text):
                if common and words.mixed_case and not m.group()[:1].isupper():
                    continue
                yield Span(m.start(), m.end(), Category.LOCATION_CITY, 1.0, SOURCE)
        zip5 = re.sub(r"\D", "", address.postal_code)[:5]
        if len(zip5) == 5:
            for m in re.finditer(rf"(?<!\d){zip5}(?:-\d{{4}})?(?!\d)", text):
                yield Span(m.start(), m.end(), Category.LOCATION_ZIP, 1.0, SOURCE)
