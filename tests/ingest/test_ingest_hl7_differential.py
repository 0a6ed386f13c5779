"""The fast ER7 reader against hl7apy, field by field (repetition, component, subcomponent).

hl7apy parses each segment with the message's version and encoding characters; every field,
repetition, component and subcomponent it exposes must equal what our reader returns at the
same coordinates (raw ER7, escapes kept — hl7apy does not decode them). Run on every shared
sample, on our fixtures, and on Hypothesis-generated segments.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hl7apy.core import Segment as ApySegment
from hl7apy.parser import parse_segment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.hl7.er7 import Delimiters, Er7Message, Segment, decode_message, pick
from pipelines.hl7.framing import split_messages
from tests.conftest import FIXTURES, SAMPLES

_VERSIONS = ("2.3", "2.3.1", "2.4", "2.5", "2.5.1", "2.6", "2.7", "2.8")


# hl7apy escapes the escape character of sequences it does not know (formatting commands,
# hex): '\\.br\\' comes back as '\\E\\.br\\E\\'. Undo that before comparing.
_REESCAPED = re.compile(r"\\E\\(\.[a-z]{2}[^\\]*|[XZCM][^\\]*)\\E\\")


def _same(ours: str, theirs: str) -> bool:
    """Equal, or the same number (hl7apy re-serialises NM values: '0070007' → '70007').

    hl7apy also drops whitespace-only values: those count as empty.
    """
    theirs = _REESCAPED.sub(lambda m: "\\" + m.group(1) + "\\", theirs)
    if ours == theirs or (not ours.strip() and not theirs.strip()):
        return True
    try:
        return float(ours) == float(theirs)
    except ValueError:
        return False


def _parts(er7: str, d: Delimiters) -> list[list[str]]:
    comps = [c.split(d.subcomponent or "\0") for c in er7.split(d.component)]
    comps = [[x if x.strip() else "" for x in c] for c in comps]
    for c in comps:
        while len(c) > 1 and not c[-1]:
            c.pop()
    while len(comps) > 1 and comps[-1] == [""]:
        comps.pop()
    return comps


def _same_er7(ours: str, theirs: str, d: Delimiters) -> bool:
    a, b = _parts(ours, d), _parts(theirs, d)
    if len(a) != len(b):
        return False
    for xs, ys in zip(a, b, strict=True):
        if len(xs) != len(ys) or not all(_same(p, q) for p, q in zip(xs, ys, strict=True)):
            return False
    return True


def _enc(d: Delimiters) -> dict[str, str]:
    return {
        "FIELD": d.field,
        "COMPONENT": d.component,
        "REPETITION": d.repetition,
        "ESCAPE": d.escape,
        "SUBCOMPONENT": d.subcomponent,
    }


def _position(name: str) -> int | None:
    m = re.search(r"_(\d+)$", name or "")
    return int(m.group(1)) if m else None


def compare_segment(ours: Segment, theirs: ApySegment, d: Delimiters) -> int:
    """Assert equality at every coordinate hl7apy names; return how many were compared.

    hl7apy's own re-serialisation (``to_er7``) of a composite field is not a reliable
    reference (in 2.6 it shifts XTN components, it drops leading zeros of NM values), so the
    comparison is per named component/subcomponent, numbers compared as numbers. Components
    beyond hl7apy's datatype definition stay unnamed there: their count must match ours.
    """
    compared = 0
    seen: dict[int, int] = {}
    for f in theirs.children:
        n = _position(f.name)
        if n is None or (ours.name == "MSH" and n <= 2):
            continue
        rep = seen.get(n, 0)
        seen[n] = rep + 1
        reps = ours.repetitions(n)
        where = f"{ours.name}-{n}({rep})"
        assert rep < len(reps), where
        raw = reps[rep]
        children = list(f.children)
        if children and all(c.name and _position(c.name) is None for c in children):
            if len(children) == 1:  # a primitive datatype: the whole value
                assert _same_er7(raw, children[0].to_er7(), d), where
            else:  # a field of unknown type (Z-segments): positional ST components
                for j, c in enumerate(children, 1):
                    assert _same_er7(pick(raw, d, j), c.to_er7(), d), f"{where}.{j}"
            compared += len(children)
            continue
        named = set()
        for c in children:
            j = _position(c.name)
            if j is None:
                continue
            named.add(j)
            assert _same_er7(pick(raw, d, j), c.to_er7(), d), f"{where}.{j}"
            compared += 1
            for sc in getattr(c, "children", ()):
                k = _position(sc.name)
                if k is None or not d.subcomponent:
                    continue
                assert _same(pick(raw, d, j, k), sc.to_er7()), f"{where}.{j}.{k}"
                compared += 1
        ours_comps = [j for j, c in enumerate(raw.split(d.component), 1) if c.strip()]
        unnamed = sum(1 for c in children if _position(c.name) is None)
        assert len([j for j in ours_comps if j not in named]) == unnamed, where
    start = 3 if ours.name == "MSH" else 1
    ours_fields = {n for n in range(start, len(ours.fields)) if ours.field(n).strip()}
    assert set(seen) <= ours_fields, ours.name
    # fields hl7apy does not define for that version (withdrawn, or added later) stay unnamed
    # there: each of our extra fields must have (at least) one unnamed counterpart
    unnamed_fields = sum(1 for f in theirs.children if _position(f.name) is None)
    assert len(ours_fields - set(seen)) <= unnamed_fields, ours.name
    return compared


def compare_message(data: bytes) -> int:
    text, _ = decode_message(data)
    msg = Er7Message(text)
    d = msg.delimiters
    version = msg.segments[0].raw(12, 0, 1)
    version = version if version in _VERSIONS else "2.5"
    compared = 0
    for seg, line in zip(msg.segments, [x for x in text.split("\r") if x], strict=True):
        if "\n" in line:  # a continuation we joined; hl7apy would see two segments
            continue
        theirs = parse_segment(line, version=version, encoding_chars=_enc(d))
        compared += compare_segment(seg, theirs, d)
    return compared


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.hl7") if not p.name.startswith("err-"))


@pytest.mark.corpus
@pytest.mark.parametrize(
    "path", _files(SAMPLES / "hl7v2") if SAMPLES.exists() else [], ids=lambda p: p.name
)
def test_reader_matches_hl7apy_on_samples(path: Path) -> None:
    raw = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    assert sum(compare_message(m) for m in split_messages(raw)) > 10


@pytest.mark.parametrize("path", _files(FIXTURES / "hl7v2"), ids=lambda p: p.name)
def test_reader_matches_hl7apy_on_fixtures(path: Path) -> None:
    assert sum(compare_message(m) for m in split_messages(path.read_bytes())) > 5


_TEXT = st.text(alphabet=st.sampled_from("abcXYZ019 .-/:\\"), max_size=6)
_SUB = _TEXT.filter(lambda s: "\\" not in s)
_COMP = st.lists(_SUB, min_size=1, max_size=3).map("&".join)
_REP = st.lists(_COMP, min_size=1, max_size=4).map("^".join)
_FIELD = st.lists(_REP, min_size=1, max_size=3).map("~".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seg=st.sampled_from(["PID", "NK1", "PV1", "OBR", "TXA", "NTE"]),
    fields=st.lists(_FIELD, min_size=1, max_size=12),
    version=st.sampled_from(_VERSIONS),
)
def test_reader_matches_hl7apy_on_generated_segments(
    seg: str, fields: list[str], version: str
) -> None:
    msh = f"MSH|^~\\&|A|B|C|D|20240101||ORU^R01|1|P|{version}"
    line = "|".join([seg, *fields])
    data = (msh + "\r" + line).encode()
    compare_message(data)
