"""Every stage grows linearly on adversarial input shapes (issue 24, item 1).

Not a speed test: each case times a stage on a shape at 16 and at 64 KiB and asserts the
ratio, so the machine's speed cancels out. Linear work gives ~4, quadratic ~16; the bound is
a generous 8. CPU time (``time.process_time``), the minimum of a few alternated runs with the
collector off (noise on a shared machine only ever slows a run down). A 64 KiB run under
``NEGLIGIBLE`` decides nothing: quadratic work on these sizes takes seconds (the stdlib HTML
parser took 69 s on 64 KiB of ``<a ``). ``bench/adversarial.py`` prints the whole table.

The shapes of the recognizers themselves are in tests/phi/test_linear_time.py.
"""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Callable
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keystore.api import PatientState
from pipelines import leak_guard
from pipelines.deidentify import Deidentifier
from pipelines.document import ClinicalDocument
from pipelines.ingest import ingest
from pipelines.markup import _BLOCK, _INLINE, _SKIP, markup_to_text, rtf_text
from pipelines.memo import memos
from pipelines.occurrences import occurrences
from pipelines.phi import lexicons
from pipelines.spans import Category, Span
from surrogates import ReplaceContext, names

LIMIT = 8.0  # 16 → 64 KiB: linear ~4, quadratic ~16
REPEATS = 3
NEGLIGIBLE = 0.02  # seconds at 64 KiB
SMALL, LARGE = 16 * 1024, 64 * 1024


def _fill(unit: str) -> Callable[[int], str]:
    return lambda n: unit * max(1, n // len(unit))


def _cpu(fn: Callable[[str], object], text: str) -> float:
    start = time.process_time()
    fn(text)
    return time.process_time() - start


def growth(
    fn: Callable[[str], object],
    make: Callable[[int], str],
    repeats: int = REPEATS,
    sizes: tuple[int, int] = (SMALL, LARGE),
) -> float:
    """t(64 KiB) / t(16 KiB), each the best of ``repeats`` alternated runs (1.0 if the large
    run is too short to tell anything)."""
    small_text, large_text = make(sizes[0]), make(sizes[1])
    small = large = float("inf")
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            large = min(large, _cpu(fn, large_text))
            small = min(small, _cpu(fn, small_text))
    finally:
        gc.enable()
    if large < NEGLIGIBLE:
        return 1.0
    return large / max(small, 1e-6)


def _nested_unmatched(n: int) -> str:
    k = n // 7
    return "<b>" * k + "</x>" * k


HTML_SHAPES: dict[str, Callable[[int], str]] = {
    "unclosed_a": _fill("<a "),
    "unclosed_attr": _fill('<p class="x" '),
    "unclosed_quote": lambda n: '<a href="' + "x y " * (n // 4),
    "deep_unmatched_end": _nested_unmatched,
    "deep_div": lambda n: "<div>" * (n // 11) + "x" + "</div>" * (n // 11),
    "lt_runs": _fill("<"),
    "unclosed_comment": lambda n: "<!--" + "a -" * (n // 3),
    "unclosed_script": lambda n: "<script>" + "a<b " * (n // 4),
    "entities": _fill("&amp;&#169;&lt;&Eacute;&#x41;&am &#9999999999; "),
    "tags_and_text": _fill("<b>Ab</b> <td>c</td>"),
}

RTF_SHAPES: dict[str, Callable[[int], str]] = {
    "font_table": lambda n: "{\\rtf1{\\fonttbl" + _fill("\\f1 x")(n) + "}}",
    "fields": lambda n: "{\\rtf1 " + _fill("{\\field{\\*\\fldinst{HYPERLINK ")(n) + "}",
    "nested_groups": lambda n: "{\\rtf1 " + "{" * (n // 2) + "x" + "}" * (n // 2) + "}",
    "unclosed_groups": lambda n: "{\\rtf1 " + _fill("{\\i a ")(n),
    "control_words": lambda n: "{\\rtf1 " + _fill("\\b x\\b0 \\'e9\\u233?")(n) + "}",
}


@pytest.mark.parametrize("shape", sorted(HTML_SHAPES))
def test_html_text_grows_linearly(shape: str) -> None:
    assert growth(markup_to_text, HTML_SHAPES[shape]) <= LIMIT


@pytest.mark.parametrize("shape", sorted(RTF_SHAPES))
def test_rtf_text_grows_linearly(shape: str) -> None:
    assert growth(rtf_text, RTF_SHAPES[shape]) <= LIMIT


def _oru(field: str) -> bytes:
    return (
        "MSH|^~\\&|A|B|C|D|20240305101500||ORU^R01|M1|P|2.5\r"
        "PID|1||P1^^^BENCH^MR||Quenby^Orla\r"
        "OBR|1||R1|11506-3^Progress note^LN\r" + field
    ).encode()


HL7_SHAPES: dict[str, Callable[[int], str]] = {
    "escapes": lambda n: "OBX|1|TX|N^N^L|1|" + _fill("\\F\\\\S\\\\T\\\\E\\\\R\\ab")(n) + "\r",
    "unclosed_escape": lambda n: "OBX|1|TX|N^N^L|1|\\" + "a" * n + "\r",
    "repetitions": lambda n: "OBX|1|TX|N^N^L|1|" + _fill("Ab~")(n) + "\r",
    "many_segments": lambda n: _fill("OBX|1|TX|N^N^L|1|Seen.\r")(n),
    "ed_html": lambda n: "OBX|1|ED|N^N^L|1|^text^html^A^" + _fill("<a ")(n) + "\r",
}


@pytest.mark.parametrize("shape", sorted(HL7_SHAPES))
def test_hl7_ingest_grows_linearly(shape: str) -> None:
    make = HL7_SHAPES[shape]
    assert growth(lambda text: ingest(_oru(text)), make) <= LIMIT


def test_slip_tests_grow_linearly_in_one_long_word() -> None:
    lexicons.zipf("warm")  # the word list loads outside the timed runs
    assert growth(lexicons.near_english, lambda n: "ab" + "c" * (n - 2)) <= LIMIT
    assert not lexicons.may_slip_common("ab" + "c" * 100)
    assert lexicons.may_slip_common("husabnd")


def _capitalised(n: int) -> str:
    syll = ("ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "be", "do", "fu", "gi")
    words: list[str] = []
    size = i = 0
    while size < n:
        j, parts = i, []
        for _ in range(3):
            parts.append(syll[j % len(syll)])
            j //= len(syll)
        word = ("".join(parts) + syll[i % 5]).capitalize()
        words.append(word)
        size += len(word) + 1
        i += 1
    return " ".join(words)


def test_guard_terms_grow_linearly_in_one_long_name_phrase() -> None:
    def terms(text: str) -> object:
        leak_guard._phrase_terms.cache_clear()
        return leak_guard._anchored_terms([(text, Category.NAME_PATIENT)], True)

    assert growth(terms, _capitalised) <= LIMIT


@pytest.mark.slow
@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(_capitalised, id="capitalised_words"),
        pytest.param(lambda n: "Ab" + "c" * (n - 2), id="one_long_word"),
        pytest.param(_fill("Dr. Ab Cd, "), id="title_names"),
    ],
)
def test_deidentify_grows_linearly(shape: Callable[[int], str]) -> None:
    """Detection, surrogates and the leak guard together (a fresh patient each run), one
    run a size: 64 KiB of distinct names costs seconds. (From 4 to 16 KiB the name draws
    ramp up as the census pools of each initial fill, up to their bound of draws a name:
    bench/README.md.)"""
    deid = Deidentifier()
    deid.deidentify(ClinicalDocument(text="Seen by Dr. Quill."), _state())  # loads here

    def run(text: str) -> object:
        # memos emptied per run: the 16 KiB text is the 64 KiB one's start, and the detector's
        # memos filled by the large run made the small one cheap (a ratio of ~9 once the
        # name surrogates stopped dominating both)
        with memos(True):
            return deid.deidentify(ClinicalDocument(text=text), _state())

    assert growth(run, shape, 1) <= LIMIT


def _titled_twice(n: int) -> str:
    """Distinct names behind one title, each written twice: "Dr Kaloka came. ... Dr
    Kaloka left." — every string found shares its first word with all the others."""
    names_ = _capitalised(n // 2).split()
    return (
        " ".join(f"Dr {w} came." for w in names_) + "\n" + " ".join(f"Dr {w} left." for w in names_)
    )


def test_other_occurrences_grow_linearly_when_found_strings_share_a_first_word() -> None:
    """Each "Dr <name>" found in the first half recurs in the second: at each place a
    "Dr" starts, every found string starting with "Dr" was tried (×16 for ×4 text, 20 s of
    the 5 MB note); the strings' trie tries only those the next tokens allow."""

    def run(text: str) -> object:
        half = text.index("\n")
        found = [
            Span(m.start(), m.end(), Category.NAME_PROVIDER)
            for m in re.finditer(r"Dr \w+", text[:half])
        ]
        again = occurrences(text, found, lambda _: True)
        assert len(again) >= 0.9 * len(found)  # the names again (a few are English words)
        return again

    assert growth(run, _titled_twice) <= LIMIT


def test_name_surrogates_grow_linearly_in_distinct_names() -> None:
    """Thousands of distinct names, a span each, through the name surrogate. Where a drawn
    name was refused (the pools of each initial fill as names are given), drawing again up to
    2 × 64 times a name made 4 → 16 KiB grow ×8 to ×31: the ramp this test measures."""
    names.census()  # the census lists load outside the timed runs
    surrogate = names.NameSurrogate()

    def run(text: str) -> object:
        ctx = ReplaceContext(state=_state(), text=text)
        return [
            surrogate.replace(Span(m.start(), m.end(), Category.NAME_PATIENT), ctx)
            for m in re.finditer(r"\w+", text)
        ]

    assert growth(run, _capitalised, sizes=(4 * 1024, 16 * 1024)) <= LIMIT


def _state() -> PatientState:
    return PatientState(shift_days=-40, pseudonym="p", seed=b"s" * 32)


# -- the tokenizer against the stdlib parser it replaced, on well-formed markup ------------


_BLOCK_TAGS = ("p", "div", "br", "td", "li", "h1")
_INLINE_TAGS = ("b", "span", "i", "a")
_OTHER_TAGS = ("given", "family", "cda:name", "x")


class _Reference(HTMLParser):
    """The collector the module used on the stdlib parser (for well-formed input)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._edge(tag, opening=True)

    def handle_endtag(self, tag: str) -> None:
        self._edge(tag, opening=False)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag.rsplit(":", 1)[-1] in _BLOCK:
            self.parts.append("\n")

    def _edge(self, tag: str, opening: bool) -> None:
        local = tag.rsplit(":", 1)[-1]
        if local in _SKIP:
            self.skip = self.skip + 1 if opening else max(0, self.skip - 1)
        elif local in _BLOCK:
            self.parts.append("\n")
        elif local not in _INLINE:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def _reference_text(markup: str) -> str:
    import re

    parser = _Reference()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    lines = (re.sub(r"[ \t\f\v\u00a0]+", " ", line).strip() for line in text.splitlines())
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


_words = st.text(alphabet="abcXYZ 09.,;&", min_size=0, max_size=8).map(
    lambda t: t.replace("&", "&amp;")
)


@st.composite
def _markup(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.integers(0, 4 if depth < 3 else 1))
        if kind <= 1:
            parts.append(draw(_words))
        elif kind == 2:
            tag = draw(st.sampled_from(("br", "hr", "given")))
            parts.append(f"<{tag}/>")
        else:
            tag = draw(st.sampled_from(_BLOCK_TAGS[:-1] + _INLINE_TAGS + _OTHER_TAGS))
            attr = draw(st.sampled_from(("", ' class="a>b"', " id=x", " title='q'")))
            parts.append(f"<{tag}{attr}>{draw(_markup(depth + 1))}</{tag}>")
    return "".join(parts)


@settings(max_examples=150, deadline=None)
@given(_markup())
def test_tokenizer_gives_the_stdlib_parsers_text(markup: str) -> None:
    assert markup_to_text(markup) == _reference_text(markup)


def test_open_constructs_keep_their_text_and_huge_references_do_not_raise() -> None:
    assert markup_to_text("<p>Seen <a href='x") == "Seen <a href='x"
    assert markup_to_text("a <!-- b") == "a <!-- b"
    assert markup_to_text("x &#" + "1" * 5000 + "; y") == "x \ufffd y"
    assert markup_to_text("<![CDATA[Orla <b>]]> after") == "Orla <b> after"
    assert markup_to_text("<script>var a = '</b>';</script>after") == "after"


def test_rtf_reader_reads_fonts_bin_and_unicode() -> None:
    rtf = (
        "{\\rtf1\\ansi{\\fonttbl{\\f0\\fcharset0 A;}{\\f1\\fcharset238 B;}}"
        "\\f0 caf\\'e9 \\f1 \\'b9 {\\pict\\bin2 {}}x\\u8364? \\u99999999?}"
    )
    assert rtf_text(rtf) == "café ą x€ \ufffd"
