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
The leak guard itself is :mod:`pipelines.leak_guard`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from operator import attrgetter
from types import MappingProxyType
from typing import Any, cast

from keystore.api import MintingStore, PatientState, StateMinter
from pipelines.deadline import check
from pipelines.document import ClinicalDocument, Identifiers, PersonName
from pipelines.leak_guard import is_mixed_case, leak_guard
from pipelines.memo import memoized
from pipelines.occurrences import occurrences
from pipelines.phi.detector import Detector
from pipelines.phi.merge import merge_spans
from pipelines.phi.propagate import RULES, spread
from pipelines.policy import Action, Oversize, Policy
from pipelines.spans import Category, Span
from surrogates import ReplaceContext, SurrogateSettings, new_patient_state, redaction_tag
from surrogates import replacer_for as _replacer_for
from surrogates.names import SUFFIXES, TITLES

_EMPTY: Mapping[str, float] = MappingProxyType({})
_NAME_WORDS = frozenset(TITLES | SUFFIXES)  # parts of a name that are no one's name
CHUNK_OVERLAP_CHARS = 2_000  # chunks of a split note share this much text (whole paragraphs)


@dataclass(frozen=True, slots=True, init=False)
class DeidResult:
    """What one document became. Field names match ``pipelines.process.Deidentified``."""

    text: str
    spans: tuple[Span, ...]  # surrogate / tag spans, offsets in ``text``
    held_reason: str | None  # set when the leak guard held the document back (no PHI)
    stage_seconds: Mapping[str, float] = field(default_factory=lambda: _EMPTY)
    state_changed: bool = False  # the patient's maps grew: save the state
    leaks: Mapping[str, int] = field(default_factory=dict)  # category → terms that survived
    detected: int = 0  # spans the detector (or the caller) gave
    # per region acted on, its chosen span, which has the region's bounds in the input
    chosen: tuple[Span, ...] = ()
    held_class: str = "leak_guard"  # why it was held: leak_guard | oversize_note

    def __init__(
        self,
        text: str,
        spans: tuple[Span, ...],
        held_reason: str | None,
        stage_seconds: Mapping[str, float] = _EMPTY,
        state_changed: bool = False,
        leaks: Mapping[str, int] | None = None,
        detected: int = 0,
        chosen: tuple[Span, ...] = (),
        held_class: str = "leak_guard",
    ) -> None:
        """The dataclass's ``__init__`` written out: a frozen dataclass sets each field
        through ``object.__setattr__``; this writes the slots directly (as ``Span``)."""
        _set_text(self, text)
        _set_spans(self, spans)
        _set_held_reason(self, held_reason)
        _set_stage_seconds(self, stage_seconds)
        _set_state_changed(self, state_changed)
        _set_leaks(self, {} if leaks is None else leaks)
        _set_detected(self, detected)
        _set_chosen(self, chosen)
        _set_held_class(self, held_class)

    @property
    def replaced(self) -> tuple[Span, ...]:
        """The spans acted on, offsets in the *input* text."""
        return self.chosen

    @property
    def acted(self) -> tuple[tuple[int, int, Span], ...]:
        """(start, end in the input, chosen span) per region acted on."""
        return tuple((s.start, s.end, s) for s in self.chosen)

    @property
    def held(self) -> bool:
        return self.held_reason is not None


def _setter(name: str) -> Callable[[DeidResult, Any], None]:
    """The slot ``name``'s own setter (its member descriptor), taken by name."""
    setter: Callable[[DeidResult, Any], None] = cast("Any", vars(DeidResult)[name]).__set__
    return setter


# used by ``DeidResult.__init__`` only; one per field, each by its field's name
_set_text = _setter("text")
_set_spans = _setter("spans")
_set_held_reason = _setter("held_reason")
_set_stage_seconds = _setter("stage_seconds")
_set_state_changed = _setter("state_changed")
_set_leaks = _setter("leaks")
_set_detected = _setter("detected")
_set_chosen = _setter("chosen")
_set_held_class = _setter("held_class")


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
        keep_chosen: bool = True,
    ) -> None:
        """``keep_chosen=False``: results leave ``chosen`` (hence ``acted``, ``replaced``)
        empty — the service never reads them, and a long note has tens of thousands."""
        self.policy = policy or Policy.load()
        self.detector = detector or Detector(self.policy)
        self.settings = surrogate_settings(self.policy)
        self.timer = timer
        self.keep_chosen = keep_chosen
        self._actions: dict[Category, Action] = {}
        self._actions_of: Policy | None = None  # the policy ``_actions`` was read from

    def _action_map(self) -> Mapping[Category, Action]:
        """Each category's action under the current policy, read once (not per note)."""
        policy = self.policy
        if self._actions_of is not policy:
            self._actions = {category: policy.action_for(category) for category in Category}
            self._actions_of = policy
        return self._actions

    def new_state(self) -> PatientState:
        return new_patient_state(self.settings)

    def state_factory(self, store: StateMinter) -> Callable[[], PatientState]:
        """A new patient's state: surrogates draw the shift and seed, the store mints the
        state (its pseudonym derived from the seed under the store's key)."""

        def make() -> PatientState:
            fresh = self.new_state()
            return store.new_state(fresh.shift_days, fresh.seed)

        return make

    def __call__(self, document: ClinicalDocument, state: PatientState) -> DeidResult:
        return self.deidentify(document, state)

    def run(
        self,
        document: ClinicalDocument,
        store: MintingStore,
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
        identifiers = document.identifiers
        known_given, known_family, patient_given = _name_contexts(identifiers)
        ctx = ReplaceContext(
            state=state,
            text=text,
            settings=self.settings,
            reference_date=_reference_date(document),
            known_given=known_given,
            known_family=known_family,
            recorded_sex=str(identifiers.sex),  # a StrEnum's str is its value (in C)
            patient_given=patient_given,
        )
        mixed_case = is_mixed_case(text)  # asked once: the occurrences and the guard need it
        acted = found + occurrences(text, found, self._acts, mixed_case)
        out_text, out_spans, replaced = self._replace(text, _regions(acted), ctx)
        tick = self._lap(times, "replace", tick)
        check("replace")  # the per-document deadline, if the caller set one
        leaks = leak_guard(
            text, out_text, out_spans, replaced, identifiers, self.policy, mixed_case
        )
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
            chosen=tuple([chosen for chosen, _ in replaced]) if self.keep_chosen else (),
        )

    def _acts(self, category: Category) -> bool:
        return self._action_map()[category] is not Action.KEEP

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
            found += [
                s.with_bounds(s.start + start, s.end + start) for s in self.detector.detect(part)
            ]
        return merge_spans(found + recurrences(text, found))

    def _lap(self, times: dict[str, float], stage: str, since: float) -> float:
        if self.timer is None:
            return 0.0
        now = self.timer()
        times[stage] = now - since
        return now

    def _replace(
        self, text: str, regions: Iterable[tuple[Span, ...]], ctx: ReplaceContext
    ) -> tuple[str, list[Span], list[tuple[Span, str]]]:
        """Build the output; returns it, its spans and (chosen span, new text) per region
        acted on (the chosen span has the region's bounds)."""
        parts: list[str] = []
        joined: list[str] = []  # the parts so far, joined a batch at a time
        out_spans: list[Span] = []
        replaced: list[tuple[Span, str]] = []
        action = self._action_map()
        # A surrogate is a function of its category and original text (what it draws is
        # remembered in the patient's maps), so a phrase that recurs is made once per note.
        made: dict[tuple[Category, str], str] = {}
        pos = 0
        shift = 0  # output offset minus input offset so far
        for spans in regions:
            choice = _choose(spans, action)
            if choice is None:
                continue
            chosen, categories, redact = choice
            start, end = spans[0].start, spans[0].end
            if redact:
                new = redaction_tag(categories)
            else:
                key = (chosen.category, text[start:end])
                found = made.get(key)
                if found is None:
                    found = made[key] = _replacer_for(chosen.category).replace(chosen, ctx)
                    if len(made) % _CHECK_EVERY == 0:  # the budget, inside a long stage too
                        check("replace")
                new = found
            parts += (text[pos:start], new)
            if len(parts) >= _JOIN_EVERY:  # a long note's slices are never all held at once
                joined.append("".join(parts))
                parts.clear()
            at = start + shift
            if new:
                for category in categories:
                    out_spans.append(
                        Span(at, at + len(new), category, chosen.confidence, "surrogate")
                    )
            shift += len(new) - (end - start)
            pos = end
            replaced.append((chosen, new))
        parts.append(text[pos:])
        joined.append("".join(parts))
        return "".join(joined), out_spans, replaced


_JOIN_EVERY = 4096  # output parts joined in one go
# surrogates drawn between two checks of the per-document deadline (a check costs ~0.1 µs,
# a draw tens of µs): a note with thousands of phrases is abandoned part way at its budget
_CHECK_EVERY = 64


def recurrences(text: str, spans: Sequence[Span]) -> list[Span]:
    """Spans for the recurrences, anywhere in ``text``, of the names and places found.

    The detector propagates what the name and place rules find to the rest of the text it
    is given; a note detected in chunks would lose that across the cuts, so here a phrase
    they found, and each of its rare words, is found wherever it recurs written exactly the
    same way, as whole words (``propagate.RULES["chunks"]``).
    """
    return spread(text, spans, RULES["chunks"], mixed=True)


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


def _choose(
    spans: tuple[Span, ...], action: Mapping[Category, Action]
) -> tuple[Span, list[Category], bool] | None:
    """What a region becomes: the chosen span, the categories of its output span(s) and
    whether it is redacted; None where every span of it is kept. Most regions hold one
    span, answered without building sets."""
    if len(spans) == 1:
        span = spans[0]
        act = action[span.category]
        if act is Action.KEEP:
            return None
        return span, [span.category], act is Action.REDACT
    actions = {action[s.category] for s in spans}
    if actions == {Action.KEEP}:
        return None
    if Action.REDACT in actions:
        categories = sorted({s.category for s in spans}, key=lambda c: c.value)
        return _most_confident(spans), categories, True
    chosen = _most_confident([s for s in spans if action[s.category] is Action.SURROGATE])
    return chosen, [chosen.category], False


def _rank(span: Span) -> tuple[float, int]:
    return (span.confidence, span.length)


def _most_confident(spans: Sequence[Span]) -> Span:
    """The first of the most confident (then longest) spans; most regions hold one."""
    return spans[0] if len(spans) == 1 else max(spans, key=_rank)


def _regions(spans: Iterable[Span]) -> Iterator[tuple[Span, ...]]:
    """The spans of each region, in order, all with the region's bounds: merged spans
    overlap only with equal bounds; overlapping leftovers join the region."""
    group: list[Span] = []
    end = -1
    ordered = sorted(spans, key=attrgetter("end"), reverse=True)
    ordered.sort(key=attrgetter("start"))  # by start, the longest first (stable: C keys)
    for span in ordered:
        if group and span.start < end:
            group.append(span)
            end = max(end, span.end)
            continue
        if group:
            yield _bounded(group, end)
        group, end = [span], span.end
    if group:
        yield _bounded(group, end)


def _bounded(group: list[Span], end: int) -> tuple[Span, ...]:
    start = group[0].start
    if len(group) == 1:
        return (group[0],)
    return tuple(
        s if (s.start, s.end) == (start, end) else s.with_bounds(start, end) for s in group
    )


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


def _name_contexts(
    identifiers: Identifiers,
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """``_known_name_parts(identifiers)`` and the patient's own given-name parts
    (``_name_parts(identifiers.patient_names, (), (), True)``) with one cache look-up: the
    name tuples hashed and compared once a document, not once per set."""
    return _all_name_parts(
        identifiers.patient_names, identifiers.provider_names, identifiers.relative_names
    )


@memoized("deidentify.all_name_parts", 2048)
def _all_name_parts(
    patient: tuple[PersonName, ...],
    provider: tuple[PersonName, ...],
    relative: tuple[PersonName, ...],
) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    parts = _name_parts.__wrapped__
    return (
        parts(patient, provider, relative, True),
        parts(patient, provider, relative, False),
        parts(patient, (), (), True),
    )


@memoized("deidentify.both_name_parts", 2048)
def _both_name_parts(
    patient: tuple[PersonName, ...],
    provider: tuple[PersonName, ...],
    relative: tuple[PersonName, ...],
) -> tuple[frozenset[str], frozenset[str]]:
    parts = _name_parts.__wrapped__
    return parts(patient, provider, relative, True), parts(patient, provider, relative, False)


@memoized("deidentify.name_parts", 2048)
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
