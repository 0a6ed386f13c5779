"""Bytes → HL7 v2 messages: MLLP frames, batch envelopes (FHS/BHS/BTS/FTS), segment lines.

Works on bytes so every message of a batch can then be decoded in the charset its own MSH-18
declares (CR and LF are never trail bytes of the multi-byte charsets HL7 allows, so splitting
lines before decoding is safe). Segment terminators CR, LF and CRLF are all accepted; trailing
spaces/tabs at the end of a segment are dropped; blank lines are skipped.

A line that does not start like a segment (three upper-case letters/digits then the field
separator) is a *continuation* of the segment before it — senders wrap long OBX-5 values (one
sample breaks a base64 payload with a stray CR after 4096 bytes) or put raw line breaks in
text. It is joined back with ``"\\n"``: base64 decoding ignores it and in text it is the line
break the author typed. Hand-written: no library does this splitting on bytes.

On a connection (the MLLP gateway), :class:`FrameDecoder` cuts frames as bytes arrive; on a
whole input (a file, a Kafka record), :func:`unframe_mllp` removes the framing, forgiving a
missing start or end byte. Hand-written too: the MLLP libraries on PyPI are unmaintained or
wrap HL7 parsing done here already.
"""

from __future__ import annotations

import re

from pipelines.errors import NoMSH, NotHL7

MLLP_START = 0x0B
MLLP_END = b"\x1c"
_FRAME_END = b"\x1c\x0d"  # what ends a frame on a connection (0x1C alone may be payload)
BATCH_SEGMENTS = frozenset((b"FHS", b"BHS", b"BTS", b"FTS"))
_LINES = re.compile(rb"\r\n|\r|\n")
# One message, CR-terminated, every line after MSH an ordinary segment of it (head, then
# MSH's field separator), none ending in a space or tab: what nearly every sender sends.
# Possessive quantifiers: no shorter run could match instead (a line ends at a CR, a head
# never starts with one), so the engine keeps no backtracking state per byte.
_ONE_PLAIN_MESSAGE = re.compile(
    rb"MSH([^A-Za-z0-9\s])[^\r]*+(?<![ \t])"
    rb"(?:\r++(?!FHS|BHS|BTS|FTS|MSH)[A-Z][A-Z0-9]{2}\1[^\r]*+(?<![ \t]))*+\r*+"
)


def unframe_mllp(raw: bytes) -> list[bytes]:
    """Remove MLLP framing (0x0B … 0x1C 0x0D); several frames give several chunks."""
    stripped = raw.lstrip(b" \t\r\n")
    if not stripped or stripped[0] != MLLP_START:
        end = raw.rfind(MLLP_END)
        if end != -1 and not raw[end + 1 :].strip():
            return [raw[:end]]
        return [raw]
    frames = []
    for chunk in stripped.split(b"\x0b"):
        end = chunk.find(MLLP_END)
        body = chunk if end == -1 else chunk[:end]
        if body.strip():
            frames.append(body)
    return frames


def _is_segment_start(line: bytes, fs: bytes) -> bool:
    head = line[:3]
    if len(head) != 3 or not head.isalnum() or not head.isupper() or not head[:1].isalpha():
        return False
    return len(line) == 3 or line[3:4] == fs


def looks_like_hl7(data: bytes) -> bool:
    """True when the first non-blank line starts like an HL7 segment (MSH, FHS, BHS, PID…)."""
    first = data.lstrip(b" \t\r\n")[:4]
    sep = first[3:4]
    if sep.isalnum() or sep.isspace():
        return False
    return _is_segment_start(first, sep)


def split_messages(data: bytes) -> list[bytes]:
    """Split one chunk (a file, a frame, a batch) into messages, each as CR-separated bytes.

    Raises NotHL7 when nothing looks like a segment and NoMSH when segments come without a
    message header (or before the first one: they would otherwise be lost silently).
    """
    if b"\n" not in data and _ONE_PLAIN_MESSAGE.fullmatch(data):
        # the loop below would keep every line as it is: skip its per-line cost
        return [_plain_body(data)]
    split = _Split()
    first = True
    # CR only (the usual case): bytes.split gives what the regex gives, faster
    lines = _LINES.split(data) if b"\n" in data else data.split(b"\r")
    for raw_line in lines:
        line = raw_line.rstrip(b" \t")
        if not line:
            continue
        current = split.current
        if current is not None and line[3:4] == split.fs and _ordinary_head(line[:3]):
            current.append(line)  # an ordinary segment of the current message
            continue
        if first:
            first = False
            _check_first(line)
        split.take(line)
    return split.messages_or_raise()


def _plain_body(data: bytes) -> bytes:
    """The one message of an input ``_ONE_PLAIN_MESSAGE`` matches, its blank lines dropped."""
    body = data.rstrip(b"\r")
    if b"\r\r" in body:  # blank lines are skipped
        body = b"\r".join([line for line in body.split(b"\r") if line])
    return body


def _ordinary_head(head: bytes) -> bool:
    """A segment id of an ordinary segment (not MSH, not a batch envelope):
    :func:`_is_segment_start` for a line whose separator is already checked."""
    return (
        head.isalnum()
        and head.isupper()
        and head[:1].isalpha()
        and head not in BATCH_SEGMENTS
        and head != b"MSH"
    )


def _check_first(line: bytes) -> None:
    sep = line[3:4]
    if sep.isalnum() or sep.isspace() or not _is_segment_start(line, sep):
        raise NotHL7("input does not start with an HL7 segment")


class _Split:
    """The messages of :func:`split_messages` so far, and the segment it is in."""

    __slots__ = ("current", "fs", "messages", "orphans")

    def __init__(self) -> None:
        self.messages: list[list[bytes]] = []
        self.current: list[bytes] | None = None
        self.fs = b"|"
        self.orphans = 0

    def take(self, line: bytes) -> None:
        """A line that is not an ordinary segment of the current message."""
        head = line[:3]
        if head == b"MSH" and len(line) > 3:
            self.fs = line[3:4]
            self.current = [line]
            self.messages.append(self.current)
        elif head in BATCH_SEGMENTS and (len(line) == 3 or not line[3:4].isalnum()):
            if head in (b"FHS", b"BHS") and len(line) > 3:
                self.fs = line[3:4]
            self.current = None
        elif self.current is None:
            self.orphans += 1
        elif _is_segment_start(line, self.fs):
            self.current.append(line)
        else:  # a continuation line
            self.current[-1] = self.current[-1] + b"\n" + line

    def messages_or_raise(self) -> list[bytes]:
        if self.orphans:
            raise NoMSH(
                "segments outside any message (no MSH before them)",
                orphan_lines=self.orphans,
                messages=len(self.messages),
            )
        if not self.messages:
            raise NoMSH("no MSH segment in the input")
        return [b"\r".join(m) for m in self.messages]


def mllp_frame(payload: bytes) -> bytes:
    """Wrap one message for MLLP: 0x0B payload 0x1C 0x0D."""
    return bytes((MLLP_START,)) + payload + _FRAME_END


class FrameTooLarge(Exception):  # noqa: N818 - a condition of the stream, named as such
    """A frame grew past the limit before its end marker arrived."""

    def __init__(self, size: int, limit: int, head: bytes) -> None:
        super().__init__(f"MLLP frame over {limit} bytes")
        self.size = size
        self.limit = limit
        self.head = head  # the first bytes (to address the NAK), never logged


class FrameDecoder:
    """Incremental MLLP decoder: ``feed(chunk)`` returns the frames completed by it.

    Robust to any chunking (a frame over many reads, several frames in one read, the end
    marker split across reads). Bytes outside a frame (blank lines some senders put between
    frames) are skipped and counted in ``skipped``. A frame that grows past
    ``max_frame_bytes`` sets ``too_large`` (the frames completed before it are still
    returned) and the decoder takes nothing more: the connection is to be closed.
    """

    def __init__(self, max_frame_bytes: int) -> None:
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._scan = 0  # where to resume looking for the end marker
        self.skipped = 0
        self.too_large: FrameTooLarge | None = None

    def _refuse(self, size: int) -> None:
        self.too_large = FrameTooLarge(size, self.max_frame_bytes, bytes(self._buf[1:4097]))
        self._buf.clear()
        self._scan = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        if self.too_large is not None:
            return []
        buf = self._buf
        buf += chunk
        frames: list[bytes] = []
        while buf:
            if buf[0] != MLLP_START:
                start = buf.find(MLLP_START)
                cut = len(buf) if start == -1 else start
                self.skipped += cut
                del buf[:cut]
                self._scan = 0
                if not buf:
                    break
            end = buf.find(_FRAME_END, max(1, self._scan))
            if end == -1:
                if len(buf) - 1 > self.max_frame_bytes:
                    self._refuse(len(buf) - 1)
                else:
                    self._scan = max(1, len(buf) - 1)  # 0x1C may be the last byte so far
                break
            if end - 1 > self.max_frame_bytes:
                self._refuse(end - 1)
                break
            frames.append(bytes(buf[1:end]))
            del buf[: end + 2]
            self._scan = 0
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held (0 between frames)."""
        return len(self._buf)
