"""split_messages (with its fast path for ordinary segments) against the plain rules.

The reference below is the straightforward reading of docs/ingest.md (segment starts,
continuation lines, batch envelopes, orphans); the real function must give the same
messages, or the same error class, for any soup of such lines and terminators.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import InputError, NoMSH, NotHL7
from pipelines.hl7.framing import BATCH_SEGMENTS, _is_segment_start, split_messages

_LINES = re.compile(rb"\r\n|\r|\n")


def reference_split(data: bytes) -> list[bytes]:
    messages: list[list[bytes]] = []
    current: list[bytes] | None = None
    fs = b"|"
    orphans = 0
    first = True
    for raw_line in _LINES.split(data):
        line = raw_line.rstrip(b" \t")
        if not line:
            continue
        if first:
            first = False
            sep = line[3:4]
            if sep.isalnum() or sep.isspace() or not _is_segment_start(line, sep):
                raise NotHL7("input does not start with an HL7 segment")
        if line.startswith(b"MSH") and len(line) > 3:
            fs = line[3:4]
            current = [line]
            messages.append(current)
            continue
        head = line[:3]
        if head in BATCH_SEGMENTS and (len(line) == 3 or not line[3:4].isalnum()):
            if head in (b"FHS", b"BHS") and len(line) > 3:
                fs = line[3:4]
            current = None
            continue
        if current is None:
            orphans += 1
            continue
        if _is_segment_start(line, fs):
            current.append(line)
        else:
            current[-1] = current[-1] + b"\n" + line
    if orphans:
        raise NoMSH("orphans")
    if not messages:
        raise NoMSH("no MSH")
    return [b"\r".join(m) for m in messages]


_HEADS = ["MSH", "PID", "OBX", "NTE", "FHS", "BHS", "BTS", "FTS", "ZZ1", "1AB", "obx", "OB", "MSHX"]
_SEPS = ["|", "#", "^", " ", "", "A"]
_line = st.tuples(
    st.sampled_from(_HEADS), st.sampled_from(_SEPS), st.text(alphabet="ab|#^ \t1", max_size=6)
).map(lambda t: "".join(t))
_soup = st.tuples(
    st.lists(_line, min_size=1, max_size=12),
    st.lists(st.sampled_from(["\r", "\n", "\r\n", "\r\r"]), min_size=12, max_size=12),
).map(lambda t: "".join(line + end for line, end in zip(t[0], t[1], strict=False)).encode())


def _outcome(fn: object, data: bytes) -> object:
    try:
        return fn(data)  # type: ignore[operator]
    except InputError as e:
        return type(e)


@settings(max_examples=400, deadline=None)
@given(_soup)
def test_split_messages_matches_the_plain_rules(data: bytes) -> None:
    assert _outcome(split_messages, data) == _outcome(reference_split, data)


# one CR-terminated message: the shape split_messages takes a whole-input fast path for
_cr_soup = st.tuples(
    st.sampled_from(["MSH|", "MSH#", "MSH ", "MSHA", "MSH|^~\\&|A", "MSH|x \t"]),
    st.lists(_line, max_size=10),
    st.lists(st.sampled_from(["\r", "\r\r", "\r\r\r"]), min_size=11, max_size=11),
).map(
    lambda t: "".join(line + end for line, end in zip([t[0], *t[1]], t[2], strict=False)).encode()
)


@settings(max_examples=400, deadline=None)
@given(_cr_soup)
def test_split_messages_of_one_cr_message_matches_the_plain_rules(data: bytes) -> None:
    assert _outcome(split_messages, data) == _outcome(reference_split, data)


@pytest.mark.parametrize(
    "data",
    [
        b"MSH|^~\\&|A\rPID|1\rOBX|1|TX|||x\rcontinued\r",
        b"FHS|^~\\&\rBHS|^~\\&\rMSH|^~\\&|A\rPID|1\rBTS|1\rFTS|1\r",
        b"MSH#^~\\&#A\nPID#1\r\nOBX|not a segment here\r",
        b"MSH|^~\\&|A\r\rPID|1\rOBX|1|TX|||x\r\r",
        b"MSH|^~\\&|A\rPID|1 \rOBX|1|TX|||x\r",
        b"MSH|^~\\&|A\rPID|1\rMSH|^~\\&|B\rPID|2\r",
    ],
)
def test_split_messages_examples(data: bytes) -> None:
    assert split_messages(data) == reference_split(data)
