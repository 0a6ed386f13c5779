"""A small exact ER7 reader: encoding characters from MSH-1/MSH-2, fields by path.

Why our own: hl7apy builds a typed tree of every element (slow: bench/ingest.py); the hot
path needs a dozen fields of a few segments. This reader splits strings only — segments into
fields eagerly (one ``str.split`` each), repetitions/components/subcomponents on demand — and
is checked field by field against hl7apy in tests/ingest/test_hl7_differential.py.

Numbering follows the standard: ``MSH-1`` is the field separator, ``MSH-2`` the encoding
characters, so ``MSH-9`` is the message type in both MSH and every other segment's scheme.
Paths look like ``PID-5``, ``PID-5.1``, ``PID-11.1.1``, with an optional 0-based repetition
``PID-3(1).4`` and segment occurrence ``OBX[2]-5``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.errors import BadEncoding, BadEncodingCharacters, NoMSH
from pipelines.hl7.escapes import decode_escapes
from pipelines.memo import memoized

_HEADER_SEGMENTS = frozenset(("MSH", "FHS", "BHS"))

# MSH-18 character set labels (HL7 table 0211) → Python codecs. UTF-16/32 are not
# ASCII-compatible, so an MSH declaring them could not have been read: not listed.
CHARSETS: dict[str, str] = {
    "ASCII": "ascii",
    "ISO IR6": "ascii",
    "8859/1": "latin-1",
    "ISO IR100": "latin-1",
    "8859/2": "iso8859-2",
    "ISO IR101": "iso8859-2",
    "8859/3": "iso8859-3",
    "ISO IR109": "iso8859-3",
    "8859/4": "iso8859-4",
    "ISO IR110": "iso8859-4",
    "8859/5": "iso8859-5",
    "ISO IR144": "iso8859-5",
    "8859/6": "iso8859-6",
    "ISO IR127": "iso8859-6",
    "8859/7": "iso8859-7",
    "ISO IR126": "iso8859-7",
    "8859/8": "iso8859-8",
    "ISO IR138": "iso8859-8",
    "8859/9": "iso8859-9",
    "ISO IR148": "iso8859-9",
    "8859/15": "iso8859-15",
    "UNICODE": "utf-8",
    "UNICODE UTF-8": "utf-8",
    "UTF-8": "utf-8",
    "ISO IR87": "iso2022_jp",
    "ISO IR159": "iso2022_jp_2",
    "ISO IR14": "shift_jis",
    "KS X 1001": "euc_kr",
    "GB 18030-2000": "gb18030",
    "BIG-5": "big5",
}
DEFAULT_CHARSET = "utf-8"  # MSH-18 empty: UTF-8 (a superset of the standard's ASCII default)


@dataclass(frozen=True, slots=True)
class Delimiters:
    field: str = "|"
    component: str = "^"
    repetition: str = "~"
    escape: str = "\\"
    subcomponent: str = "&"
    truncation: str = ""

    @classmethod
    def from_msh(cls, msh: str) -> Delimiters:
        """Read MSH-1 and MSH-2; raise BadEncodingCharacters when they cannot be delimiters."""
        if not msh.startswith(("MSH", "FHS", "BHS")):
            raise NoMSH("message does not start with MSH")
        if len(msh) < 5:
            raise BadEncodingCharacters("MSH-1/MSH-2 missing")
        fs = msh[3]
        end = msh.find(fs, 4)
        enc = msh[4:] if end == -1 else msh[4:end]
        if fs == "|" and enc == "^~\\&":  # the standard's set (nearly every message): valid
            return _STANDARD
        chars = fs + enc
        if not 2 <= len(enc) <= 5:
            raise BadEncodingCharacters(
                "MSH-2 must hold 2 to 5 encoding characters", length=len(enc)
            )
        if len(set(chars)) != len(chars):
            raise BadEncodingCharacters("MSH-1/MSH-2 encoding characters are not distinct")
        if any(c.isalnum() or c.isspace() or not c.isprintable() for c in chars):
            raise BadEncodingCharacters(
                "MSH-1/MSH-2 encoding characters must be printable non-alphanumeric"
            )
        enc = enc.ljust(5, "\0")
        return cls(
            field=fs,
            component=enc[0],
            repetition=enc[1],
            escape=enc[2].strip("\0"),
            subcomponent=enc[3].strip("\0"),
            truncation=enc[4].strip("\0"),
        )


_STANDARD = Delimiters()  # "|^~\\&", what from_msh reads from "MSH|^~\\&|"


def msh_charset(msh_line: bytes) -> str:
    """The Python codec for MSH-18 (first repetition) of a raw MSH line; BadEncoding if unknown."""
    if len(msh_line) < 8:
        return DEFAULT_CHARSET
    fs = msh_line[3:4]
    fields = msh_line.split(fs)
    if len(fields) < 18:
        return DEFAULT_CHARSET
    rep = fields[1][1:2] or b"~"
    label = fields[17].split(rep)[0].strip().decode("ascii", "replace").upper()
    if not label:
        return DEFAULT_CHARSET
    return CHARSETS.get(label, UNKNOWN_CHARSET)


UNKNOWN_CHARSET = "unknown"  # MSH-18 label not in table 0211: decoded as UTF-8, strictly


def decode_message(data: bytes) -> tuple[str, str]:
    """Decode one message (CR-separated bytes) with its MSH-18 charset → (text, codec)."""
    first = data.split(b"\r", 1)[0]
    codec = msh_charset(first)
    try:
        if codec == UNKNOWN_CHARSET:
            # A label we do not know (senders put free text there): if the bytes are valid
            # UTF-8 (so also when they are plain ASCII) the label cannot change the reading.
            return data.decode("utf-8"), "utf-8"
        return data.decode(codec), codec
    except UnicodeDecodeError as e:
        seg_index = data.count(b"\r", 0, e.start)
        line_start = data.rfind(b"\r", 0, e.start) + 1
        seg = data[line_start : line_start + 3].decode("ascii", "replace")
        raise BadEncoding(
            "bytes are not valid in the message character set",
            charset=codec,
            segment=f"{seg}#{seg_index}",
            offset=e.start,
        ) from None


class Segment:
    """One segment: raw fields split eagerly; deeper levels split on demand."""

    __slots__ = ("name", "fields", "delimiters", "position")

    def __init__(self, line: str, delimiters: Delimiters, position: int) -> None:
        fields = line.split(delimiters.field)
        self.name = fields[0]
        if self.name in _HEADER_SEGMENTS:
            fields.insert(1, delimiters.field)  # MSH-1 is the field separator itself
        self.fields = fields
        self.delimiters = delimiters
        self.position = position

    def __repr__(self) -> str:  # no content: coordinates only
        return f"Segment({self.name}#{self.position}, fields={len(self.fields) - 1})"

    def field(self, n: int) -> str:
        """Raw field ``n`` (all repetitions, escapes kept)."""
        f = self.fields
        return f[n] if n < len(f) else ""

    def repetitions(self, n: int) -> list[str]:
        raw = self.field(n)
        if not raw:
            return []
        if n <= 2 and self.name in _HEADER_SEGMENTS:
            return [raw]
        return raw.split(self.delimiters.repetition)

    def components(self, n: int, rep: int = 0) -> list[str]:
        reps = self.repetitions(n)
        if rep >= len(reps):
            return []
        return split_components(reps[rep], self.delimiters)

    def raw(self, n: int, rep: int = 0, comp: int = 0, sub: int = 0) -> str:
        """Raw value at field n, repetition rep (0-based), component/subcomponent (1-based).

        ``comp=0`` / ``sub=0`` mean the whole repetition / the whole component.
        """
        f = self.fields  # field(n), inlined: the mapping calls this ~50 times a message
        if n >= len(f):
            return ""
        raw = f[n]
        if not raw:
            return ""
        d = self.delimiters
        if n <= 2 and self.name in _HEADER_SEGMENTS:
            return raw if rep == 0 and comp <= 1 and sub <= 1 else ""
        if d.repetition in raw:
            reps = raw.split(d.repetition)
            if rep >= len(reps):
                return ""
            raw = reps[rep]
        elif rep:
            return ""
        return pick(raw, d, comp, sub) if comp else raw

    def first_component(self, n: int) -> str:
        """``raw(n, 0, 1)``: the raw first component of the first repetition (codes, types,
        times), without the general path."""
        f = self.fields
        if n >= len(f):
            return ""
        raw = f[n]
        if not raw or (n <= 2 and self.name in _HEADER_SEGMENTS):
            return raw
        d = self.delimiters
        if d.repetition in raw:  # test before splitting: most codes are one component
            raw = raw.split(d.repetition, 1)[0]
        if d.component in raw:
            raw = raw.split(d.component, 1)[0]
        return raw

    def value(
        self, n: int, rep: int = 0, comp: int = 0, sub: int = 0, charset: str = "utf-8"
    ) -> str:
        """Decoded (escapes resolved) value; the unit the detector and mapping use."""
        return decode_escapes(self.raw(n, rep, comp, sub), self.delimiters, charset=charset)


def split_components(rep: str, d: Delimiters) -> list[str]:
    return rep.split(d.component)


def pick(raw: str, d: Delimiters, comp: int = 0, sub: int = 0) -> str:
    """Component ``comp`` / subcomponent ``sub`` (1-based; 0 = whole) of one raw repetition."""
    if comp == 0:
        return raw
    if d.component in raw:
        comps = raw.split(d.component)
        if comp > len(comps):
            return ""
        raw = comps[comp - 1]
    elif comp != 1:
        return ""
    if sub == 0:
        return raw
    if d.subcomponent and d.subcomponent in raw:
        subs = raw.split(d.subcomponent)
        return subs[sub - 1] if sub <= len(subs) else ""
    return raw if sub == 1 else ""


_PATH = re.compile(
    r"^(?P<seg>[A-Z][A-Z0-9]{2})(?:\[(?P<occ>\d+)\])?-(?P<field>\d+)(?:\((?P<rep>\d+)\))?"
    r"(?:\.(?P<comp>\d+))?(?:\.(?P<sub>\d+))?$"
)


@memoized("er7.parse_path", 1024)
def parse_path(path: str) -> tuple[str, int, int, int, int, int]:
    """``OBX[2]-5(1).3.1`` → (segment, occurrence, field, repetition, component, subcomponent)."""
    m = _PATH.match(path)
    if m is None:
        raise ValueError(f"not an ER7 path: {path!r}")
    return (
        m["seg"],
        int(m["occ"] or 0),
        int(m["field"]),
        int(m["rep"] or 0),
        int(m["comp"] or 0),
        int(m["sub"] or 0),
    )


class Er7Message:
    """One message: delimiters and segments, with lookups by name and path."""

    __slots__ = ("delimiters", "segments", "charset", "_by_name")

    def __init__(self, text: str, charset: str = DEFAULT_CHARSET) -> None:
        lines = text.split("\r")
        self.delimiters = d = Delimiters.from_msh(lines[0])
        self.charset = charset
        self.segments, self._by_name = _segments(lines, d)

    def _index(self, segments: list[Segment]) -> None:
        self.segments = segments
        by_name: dict[str, list[Segment]] = {}
        for seg in segments:
            by_name.setdefault(seg.name, []).append(seg)
        self._by_name = by_name

    def subset(self, segments: list[Segment]) -> Er7Message:
        """A message made of some of these segments (same delimiters, charset, positions)."""
        sub = object.__new__(Er7Message)
        sub.delimiters = self.delimiters
        sub.charset = self.charset
        sub._index(segments)
        return sub

    def all(self, name: str) -> list[Segment]:
        return self._by_name.get(name, [])

    def first(self, name: str) -> Segment | None:
        segs = self._by_name.get(name)
        return segs[0] if segs else None

    def get(self, path: str) -> str:
        """Decoded value at ``path`` ('' when absent)."""
        name, occ, n, rep, comp, sub = parse_path(path)
        segs = self._by_name.get(name, [])
        if occ >= len(segs):
            return ""
        return segs[occ].value(n, rep, comp, sub, charset=self.charset)

    def raw(self, path: str) -> str:
        name, occ, n, rep, comp, sub = parse_path(path)
        segs = self._by_name.get(name, [])
        if occ >= len(segs):
            return ""
        return segs[occ].raw(n, rep, comp, sub)


def _segments(lines: list[str], d: Delimiters) -> tuple[list[Segment], dict[str, list[Segment]]]:
    """``[Segment(line, d, i) for i, line in enumerate(lines) if line]`` and those segments by
    name (what ``Er7Message._index`` makes of them), each segment built here rather than by a
    call to its class: one frame and one loop for the message, not a frame a line."""
    fs = d.field
    new = object.__new__
    segments: list[Segment] = []
    by_name: dict[str, list[Segment]] = {}
    for i, line in enumerate(lines):
        if line:
            seg = new(Segment)
            seg.fields = fields = line.split(fs)
            seg.name = name = fields[0]
            if name in _HEADER_SEGMENTS:
                fields.insert(1, fs)  # MSH-1 is the field separator itself
            seg.delimiters = d
            seg.position = i
            segments.append(seg)
            same = by_name.get(name)
            if same is None:
                by_name[name] = [seg]
            else:
                same.append(seg)
    return segments, by_name


def read_message(data: bytes) -> Er7Message:
    """Decode (MSH-18) and read one message given as CR-separated bytes."""
    text, codec = decode_message(data)
    return Er7Message(text, codec)
