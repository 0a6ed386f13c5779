"""The shared RE2::Set prefilter: a scan is skipped only where its pattern cannot match."""

from __future__ import annotations

import string
import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines import re2_boundary
from pipelines.phi import scan
from pipelines.phi.base import Doc
from pipelines.phi.recognizers import addresses, ages, contact, dates, identifiers, locations

_PATTERNS = [
    ages._AGES,
    identifiers._SCAN,
    contact._SCAN,
    contact._URL,
    dates._YEAR_SCAN,
    dates.word_scan(),
    addresses.address_scan(),
    locations.GLUED_NUMBER,
]
_PIECES = st.sampled_from(
    ["92", "yo", " ", "MRN", ":", "#", "1234567", "555-1212", "www.x.org", "'95", "1988",
     "MI", "Jan", "3rd", "Main St", "MD 21201", "Xyzward3", "y/o", "\n", "-", "/", "age"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=60))
def test_may_match_agrees_with_finditer(text: str) -> None:
    doc = Doc(text)
    for pattern in _PATTERNS:
        found = list(pattern.finditer(text))
        assert scan.may_match(doc, pattern) == bool(found)
        assert [_facts(m) for m in scan.finditer(doc, pattern)] == [_facts(m) for m in found]


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES | st.sampled_from(["Kelvin", "skis", "Dec", "to", "hemiarthroplasty"]),
                max_size=12).map("".join) | st.text(alphabet=string.printable, max_size=60))  # fmt: skip
def test_ascii_text_gets_the_latin1_sets_answers_which_are_the_utf8_sets(text: str) -> None:
    """ASCII text is asked of the Latin-1 set: each pattern matches there where it does in
    the UTF-8 set (a character beyond Latin-1 in a pattern stands for no ASCII character)."""
    doc = Doc(text)
    for pattern in _PATTERNS:
        scan.may_match(doc, pattern)
    parts = scan._search_sets(0)  # noqa: SLF001
    assert doc.artifacts.present is not None and doc.artifacts.present[0] is parts
    for utf8, latin1, _, _ in parts:
        assert latin1 is not utf8  # every watched pattern compiles as Latin-1
        assert sorted(latin1.Match(text.encode("ascii")) or ()) == sorted(utf8.Match(text) or ())


def test_a_character_beyond_latin1_becomes_a_byte_no_ascii_text_holds() -> None:
    assert scan._as_latin1("a[–-]b’") == b"a[\xff-]b\xff"  # noqa: SLF001


def _facts(match: Any) -> tuple[Any, ...]:
    """Everything the recognizers read from an re2 match: every group's span and text."""
    groups = range(match.re.groups + 1)
    return (match.pos, match.endpos, [match.span(g) for g in groups], match.groups())


def test_a_pattern_first_seen_later_rebuilds_the_set() -> None:
    doc = Doc("age 92, seen 1988")
    assert scan.may_match(doc, ages._AGES)
    late = scan.compile_words(r"\bseen\s+\d{4}\b")
    assert scan.may_match(doc, late)  # the cached answer of the old set is not reused
    assert not scan.may_match(Doc("nothing here"), late)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789١٢٣۴५/-. x", max_size=30))
def test_numeric_dates_are_never_skipped(text: str) -> None:
    """``_NUMERIC`` (stdlib re, any Unicode digit) runs only where its re2 shape matches."""
    if dates._NUMERIC.search(text):
        assert scan.may_match(Doc(text), dates._NUMERIC_SHAPE)


def test_patterns_first_seen_on_several_threads_each_get_their_own_answer() -> None:
    words = [f"zqx{n}word" for n in range(8)]
    patterns = [scan.compile_words(rf"\b{w}\b") for w in words]
    results: dict[int, tuple[bool, bool]] = {}

    def work(n: int) -> None:
        results[n] = (
            scan.may_match(Doc(f"a {words[n]} b"), patterns[n]),
            scan.may_match(Doc("a b"), patterns[n]),
        )

    threads = [threading.Thread(target=work, args=(n,)) for n in range(len(words))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {n: (True, False) for n in range(len(words))}


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789١٢٣.x ", max_size=30))
def test_ipv4_scan_is_never_skipped_where_it_matches(text: str) -> None:
    if contact._IPV4_TAIL.search(text):
        assert scan.may_match(Doc(text), contact._IPV4_SHAPE)


def _match_view(m: Any, groups: int) -> list[Any]:
    return [(m.span(g), m.start(g), m.end(g), m.group(g)) for g in range(groups + 1)]


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=12).map("".join) | st.text(max_size=60))
def test_ascii_matches_read_their_spans_as_re2_does(text: str) -> None:
    """``_AsciiMatch``'s own ``start``/``end``/``span`` against re2's, for every group."""
    for pattern in _PATTERNS:
        if not text.isascii():
            continue
        ours = [_match_view(m, pattern.groups) for m in re2_boundary.finditer(pattern, text)]
        public = [
            _match_view(m, pattern.groups) for m in re2_boundary.plain_finditer(pattern, text)
        ]
        assert ours == public
    m = next(re2_boundary.finditer(dates._YEAR_SCAN, "in 1999"))
    for bad in (-1, dates._YEAR_SCAN.groups + 1):
        for read in (m.start, m.end, m.span):
            try:
                read(bad)
            except IndexError:
                continue
            raise AssertionError(f"{read.__name__}({bad}) gave no IndexError")


_NUMERIC_TEXT = st.text(alphabet="0123456789١٢/-. x\n", max_size=40) | st.lists(
    st.sampled_from(["3", "12", " / ", " - ", " . ", "19", "2019", "x", "/", " "]), max_size=12
).map("".join)


@settings(max_examples=500, deadline=None)
@given(_NUMERIC_TEXT | st.lists(_PIECES, max_size=12).map("".join))
def test_led_finditer_is_the_stdlib_finditer(text: str) -> None:
    """The re2-led search finds the stdlib's matches: numeric dates and IPv4 tails."""
    for lead, pattern in (
        (dates._NUMERIC_SHAPE, dates._NUMERIC),
        (contact._IPV4_SHAPE, contact._IPV4_TAIL),
        (dates._SPACED_SHAPE, dates._SPACED),
    ):
        ours = [(m.span(), m.group()) for m in scan.led_finditer(text, lead, pattern)]
        plain = [
            (m.span(), m.group()) for m in re2_boundary.plain_led_finditer(text, lead, pattern)
        ]
        assert ours == plain


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.sampled_from(["5", " ", "\t", "\n", "%", "mg", "MG", "x", "é", "/", "'", "min", "-"]),
        max_size=10,
    ).map("".join)
    | st.text(max_size=20),
    st.integers(0, 3),
)
def test_unit_follows_reads_the_next_word_as_defined(tail: str, end: int) -> None:
    from pipelines.phi import clinical

    text = "12" + tail
    for pos in range(min(end, len(text)) + 1):
        assert clinical.unit_follows(text, pos) == clinical._unit_follows_plain(text, pos)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["BP", " ", "\n", "on", "7/22", "é", "x", ".", "MRN:"]), max_size=12)
    .map("".join)
    .filter(bool),
    st.integers(0, 3),
    st.integers(1, 30),
    st.data(),
)
def test_words_before_is_the_last_words_of_the_line(
    text: str, count: int, window: int, data: Any
) -> None:
    pos = data.draw(st.integers(0, len(text)))
    lo = max(0, pos - window, text.rfind("\n", max(0, pos - window), pos) + 1)
    plain = [w.lower() for w in scan._WORD.findall(text, lo, pos)[-count:]]
    assert scan.words_before(text, pos, count, window) == plain


# The watched patterns split over several RE2::Sets answer as one set of them all would.


def test_the_runs_cover_every_index_once_in_order() -> None:
    for lengths in ([5], [5, 5], [100, 1, 1, 1], [1, 1, 1, 100], [3, 40, 2, 2, 7, 90, 1]):
        patterns = ["x" * n for n in lengths]
        runs = scan._runs(patterns)  # noqa: SLF001
        assert [i for run in runs for i in run] == list(range(len(patterns)))
        assert all(runs) and len(runs) <= scan._SET_PARTS  # noqa: SLF001


@settings(max_examples=200, deadline=None)
@given(
    st.lists(_PIECES | st.sampled_from(["é", "–"]), max_size=12).map("".join) | st.text(max_size=60)
)
def test_the_parts_answer_as_one_set_of_every_pattern(text: str) -> None:
    doc = Doc(text)
    for pattern in _PATTERNS:
        scan.may_match(doc, pattern)
    parts = scan._search_sets(0)  # noqa: SLF001
    assert parts[0].first == 0 and parts[-1].end == len(scan._WATCHED)  # noqa: SLF001
    whole = scan._compiled(list(scan._WATCHED), latin1=False)  # noqa: SLF001
    assert doc.artifacts.present is not None
    assert doc.artifacts.present[1] == frozenset(whole.Match(text) or ())
