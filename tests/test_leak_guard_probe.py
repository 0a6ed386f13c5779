"""The leak guard's needle probes must never skip a term whose regex would match.

The probes (whole word, squeezed id, digits) decide whether a term's regex is compiled and
run at all; they are a speed device, so a probe saying "absent" while the regex matches
would be a missed leak. Checked here against the regexes themselves.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.leak_guard import (
    _alnum_id,
    _alnum_needle,
    _digits,
    _name_part_pattern,
    _needle,
    word_pattern,
)
from pipelines.leak_search import PROBE_DIGITS, PROBE_SQUEEZED, PROBE_WORD, _Probe

_ALPHABET = st.sampled_from(list("abAB01 -./'’()\n\t_éÉſK\x00İ"))
_TEXT = st.text(_ALPHABET, max_size=40)
_WORDISH = st.text(st.sampled_from(list("abAB01-./'é")), min_size=1, max_size=6)


def _holds(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


@settings(max_examples=400, deadline=None)
@given(words=st.lists(_WORDISH, min_size=1, max_size=3), before=_TEXT, after=_TEXT)
def test_word_probe_never_skips_a_phrase_match(words: list[str], before: str, after: str) -> None:
    term = " ".join(words)
    pattern = f"(?i:{word_pattern(term)})"
    for text in (before + term + after, before + term.upper() + after, before + after):
        if _holds(pattern, text):
            assert _Probe(text).may_hold(_needle(term), PROBE_WORD)


@settings(max_examples=300, deadline=None)
@given(
    part=st.sampled_from(["will", "may", "Smith", "Hope", "O'Neil"]),
    before=_TEXT,
    after=_TEXT,
    mixed=st.booleans(),
)
def test_word_probe_never_skips_a_name_part_match(
    part: str, before: str, after: str, mixed: bool
) -> None:
    pattern = _name_part_pattern(part, mixed)
    for text in (before + part + after, before + "Dr. " + part.upper() + after):
        if _holds(pattern, text):
            assert _Probe(text).may_hold(part.lower(), PROBE_WORD)


@settings(max_examples=400, deadline=None)
@given(
    value=st.text(st.sampled_from(list("AB12cd9")), min_size=4, max_size=8),
    seps=st.lists(st.sampled_from(["", " ", "-", ".", "/", "\t"]), min_size=8, max_size=8),
    before=_TEXT,
    after=_TEXT,
)
def test_squeezed_probe_never_skips_an_id_match(
    value: str, seps: list[str], before: str, after: str
) -> None:
    pattern = _alnum_id(value)
    assert pattern is not None
    written = "".join(c + s for c, s in zip(value, seps, strict=False))
    for text in (before + written + after, before + written.lower() + after):
        if _holds(f"(?i:{pattern})", text):
            assert _Probe(text).may_hold(_alnum_needle(value), PROBE_SQUEEZED)


@settings(max_examples=300, deadline=None)
@given(
    digits=st.text(st.sampled_from(list("0123456789")), min_size=7, max_size=10),
    seps=st.lists(st.sampled_from(["", " ", "-", "(", ")", ".", "/"]), min_size=10, max_size=10),
    before=_TEXT,
    after=_TEXT,
)
def test_digits_probe_never_skips_a_phone_match(
    digits: str, seps: list[str], before: str, after: str
) -> None:
    written = "".join(c + s for c, s in zip(digits, seps, strict=False))
    text = before + written + after
    if _holds(f"(?i:{_digits(digits)})", text):
        assert _Probe(text).may_hold(digits, PROBE_DIGITS)


def test_probes_reject_what_cannot_match() -> None:
    probe = _Probe("annual review, id 12-34 5x, call 555 0100")
    assert not probe.may_hold("ann", PROBE_WORD)  # only inside "annual"
    assert probe.may_hold("review", PROBE_WORD)
    assert probe.may_hold("12345x", PROBE_SQUEEZED)
    assert not probe.may_hold("12346", PROBE_SQUEEZED)
    assert probe.may_hold("5550100", PROBE_DIGITS)


_SPACE = "".join(chr(c) for c in range(128) if chr(c).isspace())


def _plain_probe(scan: str, needle: str, how: str) -> bool:
    """The squeezed / digits probes as first written (str.translate on the ASCII output)."""
    low = scan.lower()
    if not scan.isascii():
        return True
    if how == PROBE_SQUEEZED:
        return needle in low.translate(str.maketrans("", "", _SPACE + "-./"))
    return needle in "".join(c for c in low if c.isdigit())


@settings(max_examples=400, deadline=None)
@given(
    scan=_TEXT,
    needle=st.text(_ALPHABET, max_size=5),
    how=st.sampled_from([PROBE_SQUEEZED, PROBE_DIGITS]),
)
def test_byte_probes_answer_as_the_plain_definition(scan: str, needle: str, how: str) -> None:
    assert _Probe(scan).may_hold(needle, how) == _plain_probe(scan, needle, how)


def test_known_terms_find_the_known_identifiers_in_a_text() -> None:
    from pipelines.document import Identifiers, PersonName
    from pipelines.leak_guard import known_terms
    from pipelines.policy import Policy

    ids = Identifiers(
        patient_names=(PersonName(family="Quellmark", given=("Odalys",)),),
        phones=("(217) 555-0142",),
    )
    text = "Odalys QUELLMARK called from 217.555.0142 today."
    terms = known_terms(ids, Policy.load(), text)
    found = {t.category for t in terms if re.search(t.pattern, text)}
    assert found == {"NAME_PATIENT", "PHONE"}
    assert not [t for t in terms if re.search(t.pattern, "Seen today, no calls.")]


def _reference_mask(output: str, spans: list[tuple[int, int]]) -> str:
    chars = list(output)
    for start, end in spans:
        chars[start:end] = ["\x00"] * (end - start)
    return "".join(chars)


@settings(deadline=None)
@given(
    st.text(st.sampled_from(list("ab \n\x00é")), min_size=1, max_size=40),
    st.lists(st.tuples(st.integers(0, 39), st.integers(1, 8)), max_size=6),
)
def test_masking_writes_nul_over_every_span(output: str, bounds: list[tuple[int, int]]) -> None:
    from pipelines.leak_guard import masked
    from pipelines.spans import Category, Span

    spans = [Span(a, min(a + n, len(output)), Category.DATE) for a, n in bounds if a < len(output)]
    expected = _reference_mask(output, [(s.start, s.end) for s in spans])
    assert masked(output, spans) == expected
    assert masked(output.replace("é", "e"), spans) == expected.replace("é", "e")


def test_the_guard_sees_a_known_name_with_or_without_its_accents() -> None:
    """A message writes "NUNEZ^JOSE" and the note "Núñez", or the other way round: the
    guard sets accents aside on both sides, so a known name that survives is held either
    way; a note without the name is not."""
    from pipelines.document import Identifiers, PersonName
    from pipelines.leak_guard import leak_guard
    from pipelines.policy import Policy

    policy = Policy.load()
    plain = Identifiers(patient_names=(PersonName(family="NUNEZ", given=("JOSE",)),))
    accented = Identifiers(patient_names=(PersonName(family="Núñez", given=("José",)),))
    for ids in (plain, accented):
        for output in ("Seen today; Núñez to follow up.", "Seen today; Nunez to follow up."):
            assert leak_guard(output, output, [], [], ids, policy)["NAME_PATIENT"] >= 1, output
        clean = "Seen today; Ms. Quell to follow up. Temp 38°C."
        assert not leak_guard(clean, clean, [], [], ids, policy), ids
