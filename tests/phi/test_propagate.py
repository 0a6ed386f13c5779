"""The one propagation step (``pipelines.phi.propagate``): its rows against plain scans of
every word of a note (the cases the former per-recognizer copies were tested with), and
properties every row keeps. Invented notes only."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc
from pipelines.phi.propagate import RULES, Blocked, Case, Gap, in_note, spread, strings
from pipelines.spans import Category, Span

_PLACES = frozenset({Category.LOCATION_CITY, Category.LOCATION_HOSPITAL, Category.LOCATION_OTHER})


def _places_reference(spans: list[Span], text: str) -> list[Span]:
    """The plain definition of the ``places`` row: every word and every phrase of the note
    is compared with the places found once (the former ``location_places.propagate``, less
    the spans given: only the copies, none overlapping a place found)."""
    from pipelines.phi.recognizers import locations as loc

    toks = lx.tokens(Doc(text))
    words, mixed = toks.words, toks.mixed_case
    found: dict[str, Category] = {}
    phrases: dict[str, Category] = {}
    for span in spans:
        phrase = text[span.start : span.end]
        if "\n" in phrase or span.category not in _PLACES:
            continue
        low = phrase.lower()
        if " " in phrase:
            if span.confidence >= 0.7 and len(low) >= 6:
                phrases.setdefault(" ".join(low.split()), span.category)
            continue
        if span.confidence < 0.6:
            continue
        ceiling = 4.6 if span.category is Category.LOCATION_CITY and span.confidence >= 0.7 else 3.5
        if lx.zipf(low) < ceiling and low not in loc.UNITS and not lx.is_first_name(low):
            found.setdefault(low, span.category)
    covered = [False] * len(text)
    for span in spans:
        if span.category in _PLACES:
            covered[span.start : span.end] = [True] * (span.end - span.start)
    out: list[Span] = []
    for i, first in enumerate(words):
        if covered[first.start]:
            continue
        for size in sorted({p.count(" ") + 1 for p in phrases} | {1}, reverse=True):
            part = words[i : i + size]
            if len(part) < size or any(covered[part[0].start : part[-1].end]):
                continue
            if any(text[a.end : b.start] != " " for a, b in zip(part, part[1:], strict=False)):
                continue
            if mixed and not all(p.is_title or p.is_upper for p in part):
                continue
            key = " ".join(p.lower for p in part)
            cat = phrases.get(key) if size > 1 else found.get(key)
            if cat is not None:
                out.append(Span(part[0].start, part[-1].end, cat, 0.65, "locations.propagated"))
                covered[part[0].start : part[-1].end] = [True] * (part[-1].end - part[0].start)
                break
    return sorted(out, key=lambda s: s.start)


_PLACE_WORDS = ("Holy", "Cross", "holy", "CROSS", "Frostburg", "frostburg", "Rome", "icu")
_PLACE_GAPS = (" ", " ", " ", "  ", "\n", ", ")


def _picked(text: str, picks: list[tuple[int, int, Category, float]], source: str) -> list[Span]:
    words = lx.tokens(Doc(text)).words
    return [
        Span(words[i].start, words[min(i + size, len(words)) - 1].end, cat, conf, source)
        for i, size, cat, conf in picks
        if i < len(words)
    ]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_PLACE_WORDS), st.sampled_from(_PLACE_GAPS)), max_size=12),
    st.lists(
        st.tuples(
            st.integers(0, 11),
            st.integers(1, 2),
            st.sampled_from(list(Category)[:3] + [Category.LOCATION_CITY]),
            st.sampled_from((0.55, 0.6, 0.65, 0.7, 0.75, 0.8)),
        ),
        max_size=6,
    ),
)
def test_places_found_again_match_a_scan_of_every_word(
    parts: list[tuple[str, str]], picks: list[tuple[int, int, Category, float]]
) -> None:
    text = "Seen today. " + "".join(w + g for w, g in parts)
    spans = _picked(text, picks, "locations")
    mixed = lx.tokens(Doc(text)).mixed_case
    got = spread(text, spans, RULES["places"], mixed)
    assert [(s.start, s.end, s.category) for s in got] == [
        (s.start, s.end, s.category) for s in _places_reference(spans, text)
    ]


def _words_reference(text: str, spans: list[Span], row: str) -> list[tuple[int, int, Category]]:
    """The ``names`` and ``learned`` rows written plainly: every token of the note against
    the words of the spans found (a possessive "'s" left out of the span)."""
    rule = RULES[row]
    toks = lx.tokens(Doc(text))
    found: dict[str, Span] = {}
    for span in spans:
        for word in strings(text, span, rule, toks.mixed_case):
            found.setdefault(word.lower(), span)
    blocking = [s for s in spans if rule.blocked is Blocked.ANY or s.category.group == "NAME"]
    out: list[tuple[int, int, Category]] = []
    for tok in toks.words:
        low = tok.lower[:-2] if tok.lower.endswith("'s") else tok.lower
        seed = found.get(low)
        end = tok.start + len(low)
        if seed is None or any(s.start < end and tok.start < s.end for s in blocking):
            continue
        if rule.case is Case.NAME and toks.mixed_case and not (tok.is_title or tok.is_upper):
            continue
        out.append((tok.start, end, seed.category))
    return out


_NAME_WORDS = ("Vantmoor", "VANTMOOR", "vantmoor", "Vantmoor's", "Ann", "the", "Brackenridge")
_NAME_GAPS = (" ", ", ", ".\n", "; ", " and ")


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(_NAME_WORDS), st.sampled_from(_NAME_GAPS)), max_size=10),
    st.lists(
        st.tuples(
            st.integers(0, 9),
            st.just(1),
            st.sampled_from((Category.NAME_PATIENT, Category.NAME_PROVIDER)),
            st.sampled_from((0.6, 0.8, 0.9)),
        ),
        max_size=4,
    ),
    st.sampled_from(("names", "learned")),
)
@example(
    parts=[("Vantmoor", " "), ("Vantmoor", " ")],
    picks=[(1, 1, Category.NAME_PATIENT, 0.9)],
    row="names",
)
def test_name_words_found_again_match_a_scan_of_every_token(
    parts: list[tuple[str, str]], picks: list[tuple[int, int, Category, float]], row: str
) -> None:
    """One-word seeds, apart (the joining of adjacent words is tested below)."""
    text = "Seen today. " + "".join(w + g for w, g in parts)
    source = "names.after_title" if row == "names" else "tagger"
    spans = _picked(text, picks, source)
    mixed = lx.tokens(Doc(text)).mixed_case
    rule = RULES[row]
    got = spread(text, spans, rule, mixed)
    expected = _words_reference(text, spans, row)
    if not rule.joins:
        assert [(s.start, s.end, s.category) for s in got] == expected
        return
    # a copy beside a seed or a copy of its role joins it: the same words, joined
    words = sorted([(e[0], e[1]) for e in expected] + [(p.start, p.end) for p in spans])
    for start, end in [(e[0], e[1]) for e in expected]:
        assert any(s.start <= start and end <= s.end for s in got)
    for span in got:
        inside = [w for w in words if span.start <= w[0] and w[1] <= span.end]
        assert inside and inside[0][0] == span.start and inside[-1][1] == span.end


def test_a_name_s_words_found_apart_are_one_name_again() -> None:
    text = "Dr. Orvand Quillfeather saw her. Later Orvand Quillfeather called."
    at = text.index("Orvand")
    seed = Span(at, at + len("Orvand Quillfeather"), Category.NAME_PROVIDER, 0.9, "names.x")
    got = spread(text, [seed], RULES["names"], mixed=True)
    assert [text[s.start : s.end] for s in got] == ["Orvand Quillfeather"]
    assert got[0].source == "names.propagated" and got[0].confidence == 0.7


def test_a_copy_beside_a_name_joins_it() -> None:
    text = "Seen by Dr. Quillfeather. Orvand Quillfeather called back."
    at = text.index("Quillfeather")
    first = text.index("Orvand")
    spans = [
        Span(at, at + 12, Category.NAME_PROVIDER, 0.9, "names.after_title"),
        Span(first, first + 6, Category.NAME_PROVIDER, 0.6, "names.lone_first_name"),
    ]
    got = spread(text, spans, RULES["names"], mixed=True)
    assert [text[s.start : s.end] for s in got] == ["Orvand Quillfeather"]


def test_detector_rows_run_once_on_rules_and_learned_spans() -> None:
    text = "Dr. Vantmoor saw him. vantmoor to call. From Frostburg; back to Frostburg."
    v = text.index("Vantmoor")
    f = text.index("Frostburg")
    kept = [Span(v, v + 8, Category.NAME_PROVIDER, 0.9, "names.after_title")]
    learned = [Span(f, f + 9, Category.LOCATION_CITY, 0.8, "tagger")]
    rules, tagged = in_note(text, True, kept, learned)
    assert rules == []  # lower case in a mixed-case note: not written as a name
    assert [(text[s.start : s.end], s.source) for s in tagged] == [("Frostburg", "tagger")]


# ---------------------------------------------------------------- properties of every row

_ANY_WORDS = (
    "Vantmoor", "VANTMOOR", "vantmoor", "Vantmoor's", "Holy", "Cross", "Quillfeather", "the",
    "don't", "Don", "ICU", "4/19/2087", "ZX-40291", "Vantmoorx", "xVantmoor", "O'Brackenridge",
)  # fmt: skip
_ANY_GAPS = (" ", "  ", "\n", ", ", "-", "'", "_", "2", ".\n\n", " ")


def _spans_of(text: str, picks: list[tuple[int, int, tuple[Category, str]]]) -> list[Span]:
    """Spans over whitespace-separated runs, none overlapping another (as the merged spans
    of a note)."""
    runs = [m.span() for m in re.finditer(r"\S+", text)]
    out: list[Span] = []
    for i, size, (cat, source) in picks:
        if i < len(runs):
            end = runs[min(i + size, len(runs)) - 1][1]
            if all(end <= s.start or s.end <= runs[i][0] for s in out):
                out.append(Span(runs[i][0], end, cat, 0.8, source))
    return out


_SEEDS = (
    (Category.NAME_PATIENT, "names.x"),
    (Category.NAME_PROVIDER, "names.y"),
    (Category.LOCATION_HOSPITAL, "locations.y"),
    (Category.LOCATION_CITY, "locations.z"),
    (Category.NAME_OTHER, "tagger"),
    (Category.MRN, "identifiers"),
    (Category.DATE, "dates"),
)
_CASES = st.tuples(
    st.lists(st.tuples(st.sampled_from(_ANY_WORDS), st.sampled_from(_ANY_GAPS)), max_size=14),
    st.lists(st.tuples(st.integers(0, 13), st.integers(1, 3), st.sampled_from(_SEEDS)), max_size=5),
    st.booleans(),
)


def _case(case: tuple[list[tuple[str, str]], list[tuple[int, int, tuple[Category, str]]], bool]):  # type: ignore[no-untyped-def]
    parts, picks, upper = case
    text = "Seen today. " + "".join(w + g for w, g in parts)
    if upper:
        text = text.upper()
    return text, _spans_of(text, picks)


def _written(rule_case: Case, got: str, string: str) -> bool:
    if rule_case is Case.AS_WRITTEN:
        return got == string
    return " ".join(got.split()).lower() == " ".join(string.split()).lower()


@pytest.mark.parametrize("row", sorted(RULES))
@settings(max_examples=150, deadline=None)
@given(case=_CASES)
def test_every_copy_is_a_whole_word_occurrence_of_a_found_string(row: str, case) -> None:  # type: ignore[no-untyped-def]
    text, spans = _case(case)
    rule = RULES[row]
    mixed = lx.tokens(Doc(text)).mixed_case
    wanted = {s for seed in spans for s in strings(text, seed, rule, mixed)}
    got = spread(text, spans, rule, mixed, acts=lambda c: True)
    for span in got:
        found = text[span.start : span.end]
        # at a word boundary: no word character, nor letters after an apostrophe, runs on
        assert span.start == 0 or not (
            text[span.start - 1].isalnum() or text[span.start - 1] == "_"
        )
        after = text[span.end : span.end + 3]
        assert not after[:1].isalnum() and after[:1] != "_"
        if after[:1] in "'’" and after[1:2].isalnum():
            assert after[1:2] in "sS" and not after[2:3].isalnum()
        if rule.joins:
            continue  # a joined name holds found words and the name beside them
        assert any(_written(rule.case, found, s) for s in wanted), found
        if rule.case is Case.NAME and mixed:
            # a word runs on over an apostrophe: the possessive in "Vantmoor's" is no word
            words = re.findall(r"[^\W\d_]+(?:['’][^\W\d_]+)*", found)
            assert all(w[0].isupper() for w in words)
        if rule.gap is not Gap.WHITESPACE:
            assert "\n" not in found  # a copy never crosses a line unless the row says so
        assert span.confidence <= rule.ceiling and span.source == rule.source


@pytest.mark.parametrize("row", sorted(RULES))
@settings(max_examples=150, deadline=None)
@given(case=_CASES)
def test_copies_never_overlap_what_blocks_them_and_spreading_twice_adds_nothing(
    row: str,
    case,  # type: ignore[no-untyped-def]
) -> None:
    text, spans = _case(case)
    rule = RULES[row]
    mixed = lx.tokens(Doc(text)).mixed_case
    got = spread(text, spans, rule, mixed, acts=lambda c: True)
    blocking = [
        s
        for s in spans
        if rule.blocked is Blocked.ANY or rule.groups is None or s.category.group in rule.groups
    ]
    for copy in got:
        inside = [s for s in blocking if s.start < copy.end and copy.start < s.end]
        if rule.joins:  # a joined name holds the seeds it joins, whole
            assert all(copy.start <= s.start and s.end <= copy.end for s in inside)
        else:
            assert inside == []
    assert all(a.end <= b.start for a, b in zip(got, got[1:], strict=False))
    again = spread(text, [*spans, *got], rule, mixed, acts=lambda c: True)
    assert [s for s in again if not any(g.start <= s.start < g.end for g in got)] == []
