"""Very long notes (issue 15 item 14): ``max_note_chars`` splits detection into overlapping
chunks cut at paragraph boundaries (no span lost at a cut) or holds the note; the leak
guard's word index finds exactly what a scan of the whole output finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pipelines.leak_guard as guard
import pipelines.leak_search as search
from keystore.api import PatientState
from pipelines.deidentify import Deidentifier, chunk_bounds
from pipelines.document import ClinicalDocument, Identifiers, PersonName
from pipelines.leak_guard import word_pattern
from pipelines.phi.detector import Detector
from pipelines.policy import Oversize, Policy
from pipelines.spans import Category as C
from pipelines.spans import Span

# invented phrases, rule-detected without any document context
PARAGRAPHS = (
    "Seen in clinic on 03/14/2021; call back at (612) 555-0143 with results.",
    "Follow-up booked for 11/02/2022, fax the summary to 651-555-0199 today.",
    "Renal function stable, no new complaints, continue the current plan.",
    "Pharmacy line 952-555-0112 confirmed the refill on 7/8/2020 by phone.",
)
RULES = {"dates": {}, "phone": {}}


def _state() -> PatientState:
    return PatientState(shift_days=-30, pseudonym="p", seed=b"z" * 32)


def _doc(text: str) -> ClinicalDocument:
    return ClinicalDocument(
        text=text,
        patient_id="7",
        assigning_authority="LONGNOTE",
        identifiers=Identifiers(patient_names=(PersonName("Quillfeather", ("Orla",)),)),
    )


def _note(n: int, sep: str = "\n\n") -> str:
    return sep.join(PARAGRAPHS[i % len(PARAGRAPHS)] for i in range(n))


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(st.sampled_from(list("ab \n")), min_size=0, max_size=3000),
    size=st.integers(1000, 1600),
    overlap=st.integers(10, 250),
)
def test_chunks_cover_the_text_overlap_and_keep_every_short_phrase_whole(
    text: str, size: int, overlap: int
) -> None:
    bounds = chunk_bounds(text, size, overlap)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    for (s1, e1), (s2, e2) in zip(bounds, bounds[1:], strict=False):
        assert e1 - s1 <= size and s1 < s2 <= e1 - overlap and e2 > e1
    # any phrase shorter than the overlap lies whole inside one chunk
    for start in range(0, max(0, len(text) - overlap), 37):
        end = start + overlap - 1
        assert any(s <= start and end <= e for s, e in bounds), (start, end)


def test_chunks_start_and_end_at_paragraph_boundaries_when_there_are_some() -> None:
    text = _note(200)
    bounds = chunk_bounds(text, 2000, 300)
    assert len(bounds) > 5
    for start, _ in bounds[1:]:
        assert text[start - 2 : start] == "\n\n"
    for _, end in bounds[:-1]:
        assert text[end - 2 : end] == "\n\n"


class _Spy(Detector):
    def __init__(self, policy: Policy) -> None:
        super().__init__(policy)
        self.sizes: list[int] = []

    def detect(self, document: object) -> list[Span]:
        assert isinstance(document, ClinicalDocument)
        self.sizes.append(len(document.text))
        return super().detect(document)


@pytest.mark.parametrize("sep", ["\n\n", "\n", " "])
def test_a_split_note_loses_no_span_at_the_cuts(sep: str) -> None:
    text = _note(120, sep)
    whole = Deidentifier(Policy(recognizers=RULES, max_note_chars=10**7))
    policy = Policy(recognizers=RULES, max_note_chars=1000)
    spy = _Spy(policy)
    split = Deidentifier(policy, detector=spy)
    expected = whole.deidentify(_doc(text), _state())
    got = split.deidentify(_doc(text), _state())
    assert len(spy.sizes) > 8 and max(spy.sizes) <= 1000
    assert got.replaced == expected.replaced
    assert len(got.replaced) == 120 // 4 * 6
    assert got.text == expected.text and got.held_reason is None


def test_a_name_or_place_found_in_one_chunk_is_found_where_it_recurs_in_another() -> None:
    """The recognizers propagate a name or place found once to the rest of the text they
    see; a split note keeps that across the cuts (and adds nothing the whole note lacks)."""
    text = "\n\n".join(
        (
            "Seen by Dr. Brackenridge today at Quarrytown Clinic.",
            _note(60),
            "Later Brackenridge called back; Quarrytown sent the records.",
        )
    )
    rules = {"names": {}, "locations": {}, **RULES}
    whole = Deidentifier(Policy(recognizers=rules, max_note_chars=10**7))
    split = Deidentifier(Policy(recognizers=rules, max_note_chars=1000))
    expected = whole.deidentify(_doc(text), _state())
    got = split.deidentify(_doc(text), _state())
    last = text.rindex("Later")
    assert [text[a:b] for a, b, _ in got.acted if a > last] == ["Brackenridge", "Quarrytown"]
    assert [(a, b, s.category) for a, b, s in got.acted] == [
        (a, b, s.category) for a, b, s in expected.acted
    ]
    assert got.held_reason is None


def test_an_oversize_note_is_held_with_a_reason_when_the_policy_says_hold() -> None:
    text = _note(60)
    policy = Policy(recognizers=RULES, max_note_chars=1000, oversize=Oversize.HOLD)
    spy = _Spy(policy)
    result = Deidentifier(policy, detector=spy).deidentify(_doc(text), _state())
    assert result.held_reason == f"note longer than max_note_chars ({len(text)} > 1000 characters)"
    assert result.text == "" and spy.sizes == []
    short = Deidentifier(policy, detector=spy).deidentify(_doc(PARAGRAPHS[0]), _state())
    assert short.held_reason is None and "03/14/2021" not in short.text


def test_the_policy_file_reads_the_limits() -> None:
    default = Policy.load()
    assert default.max_note_chars == 50_000 and default.oversize is Oversize.SPLIT
    policy = Policy.from_mapping({"limits": {"max_note_chars": 4000, "oversize": "hold"}})
    assert policy.max_note_chars == 4000 and policy.oversize is Oversize.HOLD
    with pytest.raises(ValueError, match="max_note_chars"):
        Policy.from_mapping({"limits": {"max_note_chars": 10}})
    with pytest.raises(ValueError):
        Policy.from_mapping({"limits": {"oversize": "truncate"}})


_PAD = st.text(st.sampled_from(list("ab AB01-.'\n_")), max_size=700)  # ASCII output
_WORDISH = st.text(st.sampled_from(list("abAB01-.'")), min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORDISH, min_size=1, max_size=3),
    before=_PAD,
    after=_PAD,
    spaces=st.integers(1, 3),
    upper=st.booleans(),
)
def test_the_word_index_finds_what_a_whole_scan_finds(
    words: list[str], before: str, after: str, spaces: int, upper: bool
) -> None:
    phrase = " ".join(words)
    pattern = re.compile(f"(?i:{word_pattern(phrase)})")
    anchors = {pattern.pattern: tuple(re.findall(r"\w+", phrase.lower()))}
    written = (" " * spaces).join(words)
    for scan in (before + (written.upper() if upper else written) + after, before + after):
        expected = pattern.search(scan) is not None
        index = search._WordIndex(scan, anchors)
        assert index.search(pattern.pattern) == expected
        # and with the term's needle (its longest word), told per run of windows by str.find
        assert index.search(pattern.pattern, guard._needle(phrase)) == expected
        # any one of the words anchors it alike (the guard keeps the least common)
        for word in anchors[pattern.pattern]:
            alone = search._WordIndex(scan, {pattern.pattern: (word,)})
            assert alone.search(pattern.pattern) == expected


def test_a_word_as_common_as_and_anchors_a_phrase_only_alone() -> None:
    # the index would list every "and" of a long note for windows "Brackenridge" narrows
    assert guard._anchors(["smith", "and", "brackenridge"]) == ("brackenridge", "smith")
    assert guard._anchors(["3", "8", "2093"]) == ("2093", "3", "8")  # a date's numbers stay
    assert guard._anchors(["and", "with"]) == ("with",)  # the least common of common words


def test_windows_without_the_needle_are_not_searched() -> None:
    scan = ("x 3 y " * 2000) + "on 3/8/2093 seen" + (" z 3 w" * 2000)
    pattern = f"(?i:{word_pattern('3/8/2093')})"
    index = search._WordIndex(scan, {pattern: ("2093", "3", "8")})
    assert index.search(pattern, "3/8/2093")
    gone = scan.replace("3/8/2093", "4/1/2101")
    index = search._WordIndex(gone, {pattern: ("3",)})
    assert list(index._windows(index.at["3"], [], 300, "3/8/2093")) == []
    assert not index.search(pattern, "3/8/2093")


def test_the_guard_on_a_long_note_holds_a_leak_and_passes_a_clean_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # leaks of common words, which pipelines.deidentify.occurrences leaves to the guard
    # (a rare word such as the surname is replaced wherever it recurs)
    head = "Dr. Will Brackenridge saw her at General Hospital.\n\n"
    body = _note(800)
    name = (4, 21, C.NAME_PROVIDER)
    place = (head.index("General"), head.index(".\n"), C.LOCATION_HOSPITAL)
    spans = [Span(s, e, c, 0.9, "test") for s, e, c in (name, place)]
    policy = Policy(max_note_chars=5000)
    leaky = _doc(head + body + "\n\nAsk Will, at General Hospital.")
    clean = _doc(head + body + "\n\nAsk the attending.")
    assert len(body) > guard.GUARD_INDEX_CHARS
    indexed = [Deidentifier(policy).deidentify(d, _state(), spans=spans) for d in (leaky, clean)]
    monkeypatch.setattr(guard, "GUARD_INDEX_CHARS", 10**9)
    scanned = [Deidentifier(policy).deidentify(d, _state(), spans=spans) for d in (leaky, clean)]
    assert indexed[0].leaks == scanned[0].leaks == {"NAME_PROVIDER": 1, "LOCATION_HOSPITAL": 1}
    assert indexed[1].leaks == scanned[1].leaks == {}


def test_the_processor_holds_an_oversize_note_with_its_own_reason_class() -> None:
    from datetime import UTC, datetime

    from keystore.memory import InMemoryStore
    from keystore.pseudonyms import Pseudonyms
    from pipelines.process import Processor

    policy = Policy(recognizers=RULES, max_note_chars=1000, oversize=Oversize.HOLD)
    proc = Processor(policy=policy, store=InMemoryStore(), pseudonyms=Pseudonyms.random())
    now = datetime(2026, 1, 1, tzinfo=UTC)
    long = ClinicalDocument(
        text=_note(60), patient_id="7", assigning_authority="LONGNOTE", document_id="D1"
    )
    out = proc.process_document(long, now=now)
    assert out.kind == "held" and out.value is None
    assert out.reason_class == "oversize_note" and "max_note_chars" in (out.reason or "")
    short = ClinicalDocument(
        text=_note(3), patient_id="7", assigning_authority="LONGNOTE", document_id="D2"
    )
    assert proc.process_document(short, now=now).kind == "publish"


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(st.sampled_from(list("ab_1 .\n\x00")), max_size=80),
    words=st.sets(st.text(st.sampled_from(list("ab_1")), max_size=3), max_size=5),
    piece=st.integers(1, 12),
    accent=st.booleans(),
)
def test_word_runs_are_the_word_runs_equal_to_a_word(
    text: str, words: set[str], piece: int, accent: bool
) -> None:
    text = text + "é" if accent else text  # not ASCII: the plain scan
    expected = [(m.start(), m.group()) for m in re.finditer(r"\w+", text) if m.group() in words]
    assert list(search.word_runs(text, words, piece)) == expected


def _recurrences_reference(text: str, spans: list[Span]) -> list[Span]:
    """``deidentify.recurrences`` written plainly: every word run of the text, every phrase
    that starts with it, checked character by character."""
    from pipelines.phi.propagate import RULES, _wanted

    phrases = _wanted(text, spans, RULES["chunks"], True, None)
    covered = [False] * len(text)
    for span in spans:
        covered[span.start : span.end] = [True] * (span.end - span.start)
    out: list[Span] = []
    for m in re.finditer(r"\w+", text):
        at = m.start()
        for phrase, seen in phrases.items():
            first = re.match(r"\w+", phrase)
            if first is None or first.group() != m.group():
                continue
            end = at + len(phrase)
            if not text.startswith(phrase, at):
                continue
            whole = end == len(text) or not search.is_word_char(text[end])
            if whole and not any(covered[at:end]):
                out.append(Span(at, end, seen.category, min(seen.confidence, 0.7), "recurrence"))
                covered[at:end] = [True] * (end - at)
    return out


_RECURRING = ("Quillfeather", "Brackenridge", "Lowfield", "Memorial", "the", "saw", "at", "3")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(_RECURRING), st.sampled_from([" ", " ", ", ", ".\n", "-"])),
        min_size=1,
        max_size=16,
    ),
    st.lists(
        st.tuples(st.integers(0, 15), st.integers(1, 2), st.sampled_from(["names", "locations"])),
        max_size=5,
    ),
)
def test_recurrences_are_those_of_a_plain_scan(
    words: list[tuple[str, str]], picks: list[tuple[int, int, str]]
) -> None:
    from pipelines.deidentify import recurrences

    starts, text = [], ""
    for word, gap in words:
        starts.append(len(text))
        text += word + gap
    spans = []
    for first, count, source in picks:
        if first < len(words):
            last = min(first + count, len(words)) - 1
            end = starts[last] + len(words[last][0])
            category = C.NAME_PATIENT if source == "names" else C.LOCATION_HOSPITAL
            spans.append(Span(starts[first], end, category, 0.9, source))
    assert recurrences(text, spans) == _recurrences_reference(text, spans)


def test_word_runs_of_thousands_of_words_scan_the_text_once_without_re2(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 24: the strings found in a 5 MB note make an alternation that outgrows re2's
    DFA memory (re2 then logs to stderr and slows by 10x); past the budget the word runs are
    filtered instead, with the same answer."""
    words = {f"w{k:05d}x" for k in range(5000)}
    text = " ".join(f"w{k:05d}x other" for k in range(0, 10000, 3))
    compiled: list[int] = []
    real = search.re2.compile
    monkeypatch.setattr(search.re2, "compile", lambda p, *a: compiled.append(len(p)) or real(p, *a))
    expected = [(m.start(), m.group()) for m in re.finditer(r"\w+", text) if m.group() in words]
    assert list(search.word_runs(text, words)) == expected
    assert all(n <= search._ALTERNATION_CHARS + 10 for n in compiled)
    few = set(sorted(words)[:50])
    assert [w for _, w in search.word_runs(text, few)] == [w for _, w in expected if w in few]
    assert compiled  # a short alternation still takes the one re2 scan
