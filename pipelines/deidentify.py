"""The de-identification pipeline: detect → replace → leak guard.

``Deidentifier.deidentify(document, state)`` returns the output text, the spans of the
surrogates / redaction tags *in the output* (category and offsets: a ready training corpus)
and, when the leak guard finds a known identifier or a detected PHI string surviving outside
those spans, ``held_reason`` — categories and counts only, never the text. A held document
must not be published. ``Deidentifier.run(document, store)`` wraps it with the key store:
state fetched (or created once), maps saved when they grew.

Replacement rules per region (the detector merges overlaps into regions with equal bounds):
- any category of the region with action ``redact`` → one tag, ``[PHI]`` if the region's
  categories belong to several groups;
- else any with ``surrogate`` → the surrogate of the most confident such span;
- else (all ``keep``) the text stays and the guard ignores it.
No clock is read here: stage timing is measured only when the caller passes a ``timer``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

from keystore.api import PatientState, PatientStore
from pipelines.deadline import check
from pipelines.document import Address, ClinicalDocument, Identifiers, PersonName
from pipelines.phi.detector import Detector
from pipelines.phi.merge import merge_spans
from pipelines.policy import Action, Oversize, Policy
from pipelines.spans import Category, Span
from surrogates import ReplaceContext, SurrogateSettings, new_patient_state, redaction_tag
from surrogates import replacer_for as _replacer_for
from surrogates.names import SUFFIXES, TITLES

_EMPTY: Mapping[str, float] = MappingProxyType({})
# Categories whose surrogate may legitimately read like the original: a year-only date can
# stay in its year, an age under the ceiling is kept.
_MAY_EQUAL = frozenset({Category.DATE, Category.AGE})
MIN_ID_CHARS = 4  # shorter identifiers (e.g. "1") would match everywhere
MIN_NUMERIC_PHRASE = 4  # detected all-digit phrases shorter than this are not scanned
CHUNK_OVERLAP_CHARS = 2_000  # chunks of a split note share this much text (whole paragraphs)


@dataclass(frozen=True, slots=True)
class DeidResult:
    """What one document became. Field names match ``pipelines.process.Deidentified``."""

    text: str
    spans: tuple[Span, ...]  # surrogate / tag spans, offsets in ``text``
    held_reason: str | None  # set when the leak guard held the document back (no PHI)
    stage_seconds: Mapping[str, float] = field(default_factory=lambda: _EMPTY)
    state_changed: bool = False  # the patient's maps grew: save the state
    leaks: Mapping[str, int] = field(default_factory=dict)  # category → terms that survived
    detected: int = 0  # spans the detector (or the caller) gave
    acted: tuple[tuple[int, int, Span], ...] = ()  # (start, end in the input, chosen span)
    held_class: str = "leak_guard"  # why it was held: leak_guard | oversize_note

    @property
    def replaced(self) -> tuple[Span, ...]:
        """The spans acted on, offsets in the *input* text. Built when asked (tools and
        benchmarks ask; the service does not): a Span per region is not free."""
        return tuple(chosen.with_bounds(start, end) for start, end, chosen in self.acted)

    @property
    def held(self) -> bool:
        return self.held_reason is not None


@dataclass(frozen=True, slots=True)
class _Region:
    start: int
    end: int
    spans: tuple[Span, ...]


def surrogate_settings(policy: Policy) -> SurrogateSettings:
    return SurrogateSettings(
        age_ceiling=policy.age_ceiling,
        date_shift_min_days=policy.date_shift_min_days,
        date_shift_max_days=policy.date_shift_max_days,
    )


class Deidentifier:
    """Holds the policy and the detector; callable as ``(document, state) -> DeidResult``."""

    def __init__(
        self,
        policy: Policy | None = None,
        detector: Detector | None = None,
        timer: Callable[[], float] | None = None,
    ) -> None:
        self.policy = policy or Policy.load()
        self.detector = detector or Detector(self.policy)
        self.settings = surrogate_settings(self.policy)
        self.timer = timer

    def new_state(self) -> PatientState:
        return new_patient_state(self.settings)

    def state_factory(self, store: object) -> Callable[[], PatientState]:
        """A new patient's state; a store that mints pseudonyms (``new_state``) gets to."""
        mint = getattr(store, "new_state", None)
        if not callable(mint):
            return self.new_state

        def make() -> PatientState:
            fresh = self.new_state()
            state = mint(fresh.shift_days, fresh.seed)
            return state if isinstance(state, PatientState) else fresh

        return make

    def __call__(self, document: ClinicalDocument, state: PatientState) -> DeidResult:
        return self.deidentify(document, state)

    def run(
        self,
        document: ClinicalDocument,
        store: PatientStore,
        authority: str | None = None,
        patient_id: str | None = None,
    ) -> DeidResult:
        """Fetch or create the patient's state, de-identify, save the state if it grew."""
        auth = document.assigning_authority if authority is None else authority
        pid = document.patient_id if patient_id is None else patient_id
        state = store.get_or_create(auth, pid, self.state_factory(store))
        result = self.deidentify(document, state)
        if result.state_changed:
            store.save(auth, pid, state)
        return result

    def deidentify(
        self,
        document: ClinicalDocument,
        state: PatientState,
        spans: Sequence[Span] | None = None,
    ) -> DeidResult:
        """De-identify ``document``; ``spans`` replaces the detector when given."""
        times: dict[str, float] = {}
        tick = self.timer() if self.timer else 0.0
        text = document.text
        limit = self.policy.max_note_chars
        if len(text) > limit and self.policy.oversize is Oversize.HOLD:
            return DeidResult(
                text="",
                spans=(),
                held_reason=f"note longer than max_note_chars ({len(text)} > {limit} characters)",
                held_class="oversize_note",
            )
        found = (
            self._detect(document)
            if spans is None
            else merge_spans(s for s in spans if s.end <= len(text))
        )
        tick = self._lap(times, "detect", tick)
        known_given, known_family = _known_name_parts(document.identifiers)
        ctx = ReplaceContext(
            state=state,
            text=text,
            settings=self.settings,
            reference_date=_reference_date(document),
            known_given=known_given,
            known_family=known_family,
        )
        out_text, out_spans, replaced = self._replace(text, _regions(found), ctx)
        tick = self._lap(times, "replace", tick)
        check("replace")  # the per-document deadline, if the caller set one
        leaks = leak_guard(text, out_text, out_spans, replaced, document.identifiers, self.policy)
        self._lap(times, "guard", tick)
        held = None
        if leaks:
            held = "leak guard: " + ", ".join(f"{cat}={n}" for cat, n in sorted(leaks.items()))
        return DeidResult(
            text=out_text,
            spans=tuple(out_spans),
            held_reason=held,
            stage_seconds=MappingProxyType(times) if self.timer else _EMPTY,
            state_changed=ctx.changed,
            leaks=dict(leaks),
            detected=len(found),
            acted=tuple([(r.start, r.end, chosen) for r, chosen, _ in replaced]),
        )

    def _detect(self, document: ClinicalDocument) -> list[Span]:
        """The detector's spans; a note over ``max_note_chars`` is detected chunk by chunk
        (cut at paragraph boundaries, overlapping, so a span at a cut is whole in one chunk)
        and the chunks' spans merged, so detection costs the same per character at any size."""
        text = document.text
        limit = self.policy.max_note_chars
        if len(text) <= limit:
            return self.detector.detect(document)
        found: list[Span] = []
        for start, end in chunk_bounds(text, limit, min(CHUNK_OVERLAP_CHARS, limit // 4)):
            part = replace(document, text=text[start:end])
            found += [s.with_bounds(s.start + start, s.end + start) for s in self.detector.detect(part)]
        return merge_spans(found + recurrences(text, found))

    def _lap(self, times: dict[str, float], stage: str, since: float) -> float:
        if self.timer is None:
            return 0.0
        now = self.timer()
        times[stage] = now - since
        return now

    def _replace(
        self, text: str, regions: list[_Region], ctx: ReplaceContext
    ) -> tuple[str, list[Span], list[tuple[_Region, Span, str]]]:
        """Build the output; returns it, its spans and (region, chosen span, new text)."""
        parts: list[str] = []
        out_spans: list[Span] = []
        replaced: list[tuple[_Region, Span, str]] = []
        pos = 0
        shift = 0  # output offset minus input offset so far
        for region in regions:
            actions = {self.policy.action_for(s.category) for s in region.spans}
            if actions == {Action.KEEP}:
                continue
            if Action.REDACT in actions:
                new = redaction_tag(s.category for s in region.spans)
                chosen = max(region.spans, key=_rank)
                categories = sorted({s.category for s in region.spans}, key=lambda c: c.value)
            else:
                candidates = [
                    s
                    for s in region.spans
                    if self.policy.action_for(s.category) is Action.SURROGATE
                ]
                chosen = max(candidates, key=_rank)
                new = _replacer_for(chosen.category).replace(chosen, ctx)
                categories = [chosen.category]
            parts.append(text[pos : region.start])
            parts.append(new)
            start = region.start + shift
            if new:
                for category in categories:
                    out_spans.append(
                        Span(start, start + len(new), category, chosen.confidence, "surrogate")
                    )
            shift += len(new) - (region.end - region.start)
            pos = region.end
            replaced.append((region, chosen, new))
        parts.append(text[pos:])
        return "".join(parts), out_spans, replaced


PROPAGATED_SOURCES = frozenset({"names", "locations"})  # recognizers that propagate in a note
MIN_PROPAGATED_CHARS = 3


_RARE_PLACE_WORD = 3.5  # the locations recognizer's ceiling for a place word that recurs


def _propagated(text: str, span: Span) -> list[str]:
    """The phrase of a span, and its rare words, that recur wherever written the same way."""
    if span.source not in PROPAGATED_SOURCES:
        return []
    from pipelines.phi.lexicons import zipf

    phrase = text[span.start : span.end]
    if len(phrase) < MIN_PROPAGATED_CHARS or "\n" in phrase or not _is_word_char(phrase[0]):
        return []
    ceiling = _RARE_PLACE_WORD if span.source == "locations" else COMMON_WORD_ZIPF
    words = [w for w in _WORD_RUN.findall(phrase) if len(w) >= MIN_PROPAGATED_CHARS]
    out = [w for w in words if zipf(w.lower()) < ceiling]  # "Will", "May": not on their own
    if len(words) > 1 or (words and words[0] != phrase):
        out.append(phrase)
    return out


def recurrences(text: str, spans: Sequence[Span]) -> list[Span]:
    """Spans for the recurrences, anywhere in ``text``, of the names and places found.

    The name and place recognizers propagate what they find to the rest of the text they
    are given; a note detected in chunks would lose that across the cuts, so here a phrase
    they found, and each of its rare words, is found wherever it recurs written exactly the
    same way, as whole words. One pass over the words of the note.
    """
    phrases: dict[str, Span] = {}
    for span in spans:
        for phrase in _propagated(text, span):
            phrases.setdefault(phrase, span)
    if not phrases:
        return []
    by_first: dict[str, list[str]] = {}
    for phrase in phrases:
        first = _WORD_RUN.match(phrase)
        if first is not None:
            by_first.setdefault(first.group(), []).append(phrase)
    covered = bytearray(len(text))
    for span in spans:
        covered[span.start : span.end] = b"\x01" * (span.end - span.start)
    out: list[Span] = []
    for m in _WORD_RUN.finditer(text):
        for phrase in by_first.get(m.group(), ()):
            end = m.start() + len(phrase)
            if (
                text.startswith(phrase, m.start())
                and (end == len(text) or not _is_word_char(text[end]))
                and (m.start() == 0 or not _is_word_char(text[m.start() - 1]))
                and not any(covered[m.start() : end])
            ):
                seen = phrases[phrase]
                out.append(Span(m.start(), end, seen.category, min(seen.confidence, 0.7),
                                "recurrence"))
                covered[m.start() : end] = b"\x01" * (end - m.start())
    return out


_BREAKS = ("\n\n", "\n", " ")  # paragraph, then line, then word boundaries


def _cut(text: str, low: int, high: int) -> int:
    """The end of the last paragraph (else line, else word) ending in ``(low, high]``;
    ``high`` itself when there is none."""
    for sep in _BREAKS:
        at = text.rfind(sep, low, high)
        if at >= 0 and at + len(sep) > low:
            return at + len(sep)
    return high


def chunk_bounds(text: str, size: int, overlap: int) -> list[tuple[int, int]]:
    """``(start, end)`` of chunks of at most ``size`` characters covering ``text``, cut at
    paragraph boundaries where there are any; each chunk starts at a boundary at least
    ``overlap`` characters before the previous one's end, so any phrase shorter than
    ``overlap`` lies whole inside some chunk."""
    n = len(text)
    bounds: list[tuple[int, int]] = []
    start = 0
    while True:
        if n - start <= size:
            bounds.append((start, n))
            return bounds
        end = _cut(text, start + size // 2, start + size)
        bounds.append((start, end))
        start = max(_cut(text, max(start + 1, end - size // 2), end - overlap), start + 1)


def _rank(span: Span) -> tuple[float, int]:
    return (span.confidence, span.length)


def _regions(spans: Iterable[Span]) -> list[_Region]:
    """Group merged spans by their (equal) bounds; overlapping leftovers join the region."""
    regions: list[_Region] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if regions and span.start < regions[-1].end:
            last = regions[-1]
            end = max(last.end, span.end)
            members = tuple(s.with_bounds(last.start, end) for s in (*last.spans, span))
            regions[-1] = _Region(last.start, end, members)
            continue
        regions.append(_Region(span.start, span.end, (span,)))
    return regions


def _reference_date(document: ClinicalDocument) -> date | None:
    moment = document.document_date or document.version.filing_time
    return moment.date() if moment is not None else None


def _known_parts(identifiers: Identifiers, given: bool) -> frozenset[str]:
    # keyed by the names only: the other identifiers (visit, document ids) change per note
    return _name_parts(
        identifiers.patient_names, identifiers.provider_names, identifiers.relative_names, given
    )


def _known_name_parts(identifiers: Identifiers) -> tuple[frozenset[str], frozenset[str]]:
    """``(_known_parts(identifiers, True), _known_parts(identifiers, False))`` with one cache
    look-up (hashing the name tuples once: a dataclass hash runs in Python)."""
    return _both_name_parts(
        identifiers.patient_names, identifiers.provider_names, identifiers.relative_names
    )


@lru_cache(maxsize=2048)
def _both_name_parts(
    patient: tuple[PersonName, ...],
    provider: tuple[PersonName, ...],
    relative: tuple[PersonName, ...],
) -> tuple[frozenset[str], frozenset[str]]:
    parts = _name_parts.__wrapped__
    return parts(patient, provider, relative, True), parts(patient, provider, relative, False)


@lru_cache(maxsize=2048)
def _name_parts(
    patient: tuple[PersonName, ...],
    provider: tuple[PersonName, ...],
    relative: tuple[PersonName, ...],
    given: bool,
) -> frozenset[str]:
    out: set[str] = set()
    for name in (*patient, *provider, *relative):
        for part in name.given if given else (name.family,):
            out.update(p.lower() for p in re.split(r"[\s\-]+", part) if p)
    return frozenset(out)


# --------------------------------------------------------------------------- the leak guard

_SEPARATORS = r"[\s().\-/]*"


def word_pattern(term: str) -> str:
    """A whole-word pattern, whitespace-flexible (callers wrap it in ``(?i:…)``)."""
    body = r"\s+".join(re.escape(w) for w in term.split())
    # An apostrophe between letters continues the word ("Don" is not in "don't"), except
    # the possessive: "Don's" is Don.
    return rf"(?<!\w)(?<!\w['’]){body}(?!\w)(?!['’](?![sS]\b)\w)"


def _digits(digits: str) -> str:
    return r"(?<!\d)" + _SEPARATORS.join(digits) + r"(?!\d)"


def _alnum_id(value: str) -> str | None:
    chars = [c for c in value if c.isalnum()]
    if len(chars) < MIN_ID_CHARS:
        return None
    # re.escape leaves alphanumerics (any script) as they are: no escaping needed
    return r"(?<![A-Za-z0-9])" + r"[\s\-./]?".join(chars) + r"(?![A-Za-z0-9])"


def _alnum_needle(value: str) -> str:
    """The id's characters, lower-cased, for :data:`PROBE_SQUEEZED` ("" if not ASCII)."""
    chars = "".join(c for c in value if c.isalnum())
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


# How a term's needle is looked for in the (masked, lower-cased) output before its regex
# is compiled and run. Each is a necessary condition of a regex match, so skipping a term
# whose needle is absent never misses a leak; "text" is the plain substring test.
PROBE_TEXT = "text"  # anywhere
PROBE_WORD = "word"  # as a whole word: no word character right before or after it
PROBE_SQUEEZED = "squeezed"  # in the output without whitespace and - . / (alphanumeric ids)
PROBE_DIGITS = "digits"  # in the output's digits only (phone numbers)


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


def is_mixed_case(text: str) -> bool:
    """Does the text hold both a lower-case and an upper-case letter?

    ``str.isupper``/``islower`` answer the common all-caps / all-lower notes in C; only
    other texts are scanned (and those usually stop at the first few characters).
    """
    if text.isupper() or text.islower():
        return False
    if text.isascii():  # ASCII: a lower-case letter is a-z, which upper() changes (in C)
        return text.upper() != text and text.lower() != text
    return any(c.islower() for c in text) and any(c.isupper() for c in text)


# Compiled guard patterns, shared by documents: a patient's known names recur in every one
# of their notes. Bounded, and separate from ``re``'s own 512-entry cache, which the
# detector's libraries also use (misses there recompiled the same patterns per document).
_compiled = lru_cache(maxsize=2048)(re.compile)  # ~1.2 KB each


def known_terms(identifiers: Identifiers, policy: Policy, text: str = "") -> list[Term]:
    """(category, regex, needle) for each known identifier the policy does not keep.

    Patterns carry their own case flags (``(?i:…)``); ``text`` (the original note) tells
    whether the note is mixed-case, which common-word name parts need. Cached per group of
    identifiers (names of one kind, ids of one kind…): a patient's names recur in every note
    while the visit and document ids change, so the terms are built once per value group.
    """
    return list(_known_terms(identifiers, _kept(policy), is_mixed_case(text)))


def _kept(policy: Policy) -> tuple[Category, ...]:
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
        for part in name.parts:
            for piece in re.split(r"[\s\-]+", part):
                if len(piece.strip(".")) >= 2:
                    piece = piece.strip(".")
                    term = _term(
                        category, _name_part_pattern(piece, mixed_case), _needle(piece), PROBE_WORD
                    )
                    if term is not None:
                        terms.append(term)
    return tuple(terms)


@lru_cache(maxsize=8192)
def _id_term(value: str, category: Category) -> Term | None:
    return _term(category, _alnum_id(value), _alnum_needle(value), PROBE_SQUEEZED)


@lru_cache(maxsize=4096)
def _contact_terms(
    phones: tuple[str, ...], emails: tuple[str, ...], addresses: tuple[Address, ...]
) -> tuple[Term | None, ...]:
    terms: list[Term | None] = []
    for phone in phones:
        digits = "".join(c for c in phone if c.isdigit())
        if len(digits) == 11 and digits[0] == "1":
            digits = digits[1:]
        if len(digits) >= 7:
            needle = digits if digits.isascii() else ""
            terms.append(_term(Category.PHONE, _digits(digits), needle, PROBE_DIGITS))
            if len(digits) == 10:
                terms.append(_term(Category.PHONE, _digits(digits[3:]), needle[3:], PROBE_DIGITS))
    for email in emails:
        if email.strip():
            terms.append(
                _term(Category.EMAIL, re.escape(email.strip()), email.strip().lower(), PROBE_TEXT)
            )
    for address in addresses:
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
    return tuple(terms)


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
    optional: list[Term | None] = []
    for ids, category in (
        (identifiers.patient_ids, Category.MRN),
        (identifiers.other_ids, Category.ID),
    ):
        optional += [_id_term(ident.value, category) for ident in ids]
    for values, category in (
        (identifiers.account_numbers, Category.ACCOUNT),
        (identifiers.ssn, Category.SSN),
    ):
        optional += [_id_term(value, category) for value in values]
    if identifiers.phones or identifiers.emails or identifiers.addresses:
        optional += _contact_terms(identifiers.phones, identifiers.emails, identifiers.addresses)
    if identifiers.birth_date is not None:
        optional += _birth_terms(identifiers.birth_date)
    if kept:
        terms += [t for t in optional if t is not None and t.category not in kept]
    else:
        terms += [t for t in optional if t is not None]
    return terms


def _found_terms(text: str, replaced: Sequence[tuple[_Region, Span, str]]) -> list[Term]:
    """Every detected PHI string (and each part of a detected name), as whole words.

    Name words go through the same common-word rule as known names (see
    ``_name_part_pattern``): a detected "Will" must not make every "will" a leak.
    """
    return _found_terms_of(text, replaced, is_mixed_case(text))


def _found_terms_of(
    text: str, replaced: Sequence[tuple[_Region, Span, str]], mixed_case: bool
) -> list[Term]:
    terms: list[Term] = []
    for region, chosen, _ in replaced:
        phrase = " ".join(text[region.start : region.end].split())
        terms += _phrase_terms(phrase, chosen.category, mixed_case)
    return terms


@lru_cache(maxsize=8192)
def _phrase_terms(phrase: str, category: Category, mixed_case: bool) -> tuple[Term, ...]:
    """The terms of one detected phrase (cached: a patient's names and ids recur)."""
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
            pattern = _name_part_pattern(piece, mixed_case)
            terms.append(Term(value, pattern, piece.lower(), PROBE_WORD))
    return tuple(terms)


_ASCII_SPACE = "".join(chr(c) for c in range(128) if chr(c).isspace())  # what \s matches
# Deleted from the (ASCII) output by bytes.translate — C speed; str.translate with a table
# looks every character up in a dict.
_SQUEEZE = (_ASCII_SPACE + "-./").encode("ascii")
_NOT_DIGITS = bytes(c for c in range(128) if not chr(c).isdigit())


class _Probe:
    r"""Cheap tests on the masked output that a term's regex could match at all.

    Compiling a term's regex costs far more than running it, and most terms (ids, names,
    dates of this document) are absent from the output. The exact probes (whole word,
    squeezed, digits) are only used on ASCII output, where ``str.lower`` keeps offsets,
    ``\w``/``\s``/``\d`` are the ASCII classes and case folding is ASCII; otherwise the
    plain substring test of the lower-cased text is used, or none.
    """

    def __init__(self, scan: str) -> None:
        self.lowered = scan.lower()
        self.ascii = scan.isascii()
        self._squeezed: bytes | None = None
        self._digits: bytes | None = None

    def may_hold(self, needle: str, how: str) -> bool:
        low = self.lowered
        if how == PROBE_TEXT:
            return needle in low
        if how == PROBE_WORD:
            return _whole_word(low, needle) if self.ascii else needle in low
        if not self.ascii:
            return True
        if how in (PROBE_SQUEEZED, PROBE_DIGITS) and not needle.isascii():
            return False  # the output is ASCII here
        if how == PROBE_SQUEEZED:
            if self._squeezed is None:
                self._squeezed = low.encode("ascii").translate(None, _SQUEEZE)
            return needle.encode("ascii") in self._squeezed
        if how == PROBE_DIGITS:
            if self._digits is None:
                self._digits = low.encode("ascii").translate(None, _NOT_DIGITS)
            return needle.encode("ascii") in self._digits
        return True


# Above this length the detected phrases (whose number grows with the note) are looked for
# through a word index of the output instead of one scan of the output each.
GUARD_INDEX_CHARS = 50_000
_WORD_RUN = re.compile(r"\w+")
_WINDOW_SLACK = 256  # characters around a needle's occurrence a match may reach


class _WordIndex:
    """Where the detected phrases' words occur in the (masked, ASCII) output.

    A match of a detected phrase's pattern contains each word of the phrase (of a name
    part's pattern: the part) as a maximal word run, so the pattern is only tried in windows
    around the occurrences of its rarest such word. One pass over the output builds the
    index; each pattern then costs at most one pass over its windows, merged.
    """

    def __init__(self, scan: str, anchored: Mapping[str, tuple[str, ...]]) -> None:
        if not scan.isascii():
            raise ValueError("the word index is for ASCII output")  # lower() keeps offsets
        self.scan = scan
        self.size = len(scan)
        self.anchors = anchored
        wanted = {word for words in anchored.values() for word in words}
        self.at: dict[str, list[int]] = {}
        for m in _WORD_RUN.finditer(scan.lower()):
            if m.group() in wanted:
                self.at.setdefault(m.group(), []).append(m.start())

    def search(self, pattern: re.Pattern[str]) -> bool:
        words = self.anchors.get(pattern.pattern)
        if not words:  # no word to anchor on (or a non-ASCII one): the whole output
            return pattern.search(self.scan) is not None
        places = min((self.at.get(w, ()) for w in words), key=len)
        reach = len(pattern.pattern) + _WINDOW_SLACK  # the pattern is longer than its match
        windows: list[list[int]] = []
        for at in places:
            low, high = max(0, at - reach), min(self.size, at + reach)
            if windows and low <= windows[-1][1]:
                windows[-1][1] = high
            else:
                windows.append([low, high])
        for low, high in windows:
            m = pattern.search(self.scan, low, high)
            if m is None:
                continue
            if m.end() < high - _WINDOW_SLACK // 2 or high == self.size:
                return True
            # near the window's end the lookaheads saw a false end of text: look again
            if pattern.search(self.scan, m.start()) is not None:
                return True
        return False


def _anchored_terms(
    text: str, replaced: Sequence[tuple[_Region, Span, str]], mixed_case: bool
) -> dict[str, tuple[str, ...]]:
    """pattern → the lower-case words every match of it contains ((): none known)."""
    out: dict[str, tuple[str, ...]] = {}
    for region, chosen, _ in replaced:
        phrase = " ".join(text[region.start : region.end].split())
        for term in _phrase_terms(phrase, chosen.category, mixed_case):
            if term.pattern in out:
                continue
            whole = term.pattern == f"(?i:{word_pattern(phrase)})"
            words = _WORD_RUN.findall(phrase.lower() if whole else term.needle)
            out[term.pattern] = tuple(words) if all(w.isascii() for w in words) else ()
    return out


def _is_word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _whole_word(text: str, needle: str) -> bool:
    """Does ``needle`` occur in ``text`` with no word character right before or after it?"""
    at = text.find(needle)
    end = len(text)
    while at >= 0:
        after = at + len(needle)
        if (at == 0 or not _is_word_char(text[at - 1])) and (
            after >= end or not _is_word_char(text[after])
        ):
            return True
        at = text.find(needle, at + 1)
    return False


def leak_guard(
    original: str,
    output: str,
    out_spans: Sequence[Span],
    replaced: Sequence[tuple[_Region, Span, str]],
    identifiers: Identifiers,
    policy: Policy,
) -> Counter[str]:
    """Count, by category, the known identifiers and detected PHI strings left in ``output``.

    Text we generated (surrogates, tags) is masked first: a surrogate that happens to read
    like another original of the note is not a leak. A surrogate equal to its own original is.
    """
    pieces: list[str] = []
    pos = 0
    for span in sorted(out_spans, key=lambda s: s.start):
        start = max(pos, span.start)
        if span.end <= start:
            continue
        pieces += (output[pos:start], "\x00" * (span.end - start))
        pos = span.end
    pieces.append(output[pos:])
    scan = "".join(pieces)
    probe = _Probe(scan)
    leaks: Counter[str] = Counter()
    seen: set[str] = set()
    mixed_case = is_mixed_case(original)
    found = _found_terms_of(original, replaced, mixed_case)
    index = None
    if len(scan) > GUARD_INDEX_CHARS and scan.isascii():
        index = _WordIndex(scan, _anchored_terms(original, replaced, mixed_case))
    for category, pattern, needle, how in _known_terms(identifiers, _kept(policy), mixed_case):
        if pattern in seen or (needle and not probe.may_hold(needle, how)):
            continue
        seen.add(pattern)
        if _compiled(pattern).search(scan):
            leaks[category] += 1
    for category, pattern, needle, how in found:
        if pattern in seen:
            continue
        check("guard")  # the per-document deadline: once per distinct detected term
        if index is not None:
            seen.add(pattern)
            if index.search(_compiled(pattern)):
                leaks[category] += 1
            continue
        if needle and not probe.may_hold(needle, how):
            continue
        seen.add(pattern)
        if _compiled(pattern).search(scan):
            leaks[category] += 1
    for region, chosen, new in replaced:
        if chosen.category in _MAY_EQUAL:
            continue
        old = original[region.start : region.end]
        if new.casefold() == old.casefold():
            leaks[chosen.category.value] += 1
    return leaks


def deidentify_text(
    text: str,
    state: PatientState,
    spans: Sequence[Span],
    policy: Policy | None = None,
    identifiers: Identifiers | None = None,
) -> DeidResult:
    """Replace the given spans of ``text`` (no detector): for tests and re-annotation tools."""
    policy = policy or Policy()
    deidentifier = Deidentifier(policy, detector=Detector(Policy(actions=policy.actions)))
    document = ClinicalDocument(text=text, identifiers=identifiers or Identifiers())
    return deidentifier.deidentify(document, state, spans=spans)
