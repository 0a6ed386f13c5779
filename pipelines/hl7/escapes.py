"""HL7 v2 escape sequences and formatting commands → plain text (HL7 v2.x chapter 2.7).

The detector must see the text a clinician wrote, so escapes are decoded before detection:
delimiter escapes (``\\F\\ \\S\\ \\T\\ \\R\\ \\E\\ \\P\\``) become the delimiter, ``\\Xhh..\\``
becomes the bytes it encodes (in the message charset), ``\\.br\\`` / ``\\.sp n\\`` / ``\\.ce\\``
become line breaks, ``\\.sk n\\`` spaces, and display-only sequences (``\\H\\ \\N\\ \\.fi\\
\\.nf\\ \\.in n\\ \\.ti n\\``, ``\\Z..\\``, ``\\C..\\``, ``\\M..\\``) are dropped. A sequence we do
not recognise, or one that is not closed, is kept literally: losing text would hide PHI.

Hand-written (hl7apy escapes when it builds ER7 but has no decoder); it is one ``str.split``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.hl7.er7 import Delimiters

_MAX_REPEAT = 20  # \.sp 999999\ must not blow up the text


def _count(arg: str, default: int) -> int:
    arg = arg.strip().lstrip("+")
    if not arg:
        return default
    if not (arg.isascii() and arg.isdigit()):  # int() refuses "²"
        return -1
    significant = arg.lstrip("0") or "0"  # and numbers of thousands of digits
    return _MAX_REPEAT if len(significant) > 3 else min(int(significant), _MAX_REPEAT)


def _hex(payload: str, charset: str) -> str | None:
    if not payload or len(payload) % 2:
        return None
    try:
        raw = bytes.fromhex(payload)
    except ValueError:
        return None
    try:
        text = raw.decode(charset)
    except (UnicodeDecodeError, LookupError):
        text = raw.decode("latin-1")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _sequence(seq: str, d: Delimiters, charset: str) -> str | None:
    """The text for one escape sequence body (between two escape characters), None if unknown."""
    if len(seq) == 1:
        c = seq
        if c == "F":
            return d.field
        if c == "S":
            return d.component
        if c == "T":
            return d.subcomponent or "&"
        if c == "R":
            return d.repetition
        if c == "E":
            return d.escape or "\\"
        if c == "P":
            return d.truncation or "#"
        if c in "HN":
            return ""
        return None
    head = seq[0]
    if head == "X":
        return _hex(seq[1:], charset)
    if head in "ZCM":
        return ""
    if head == ".":
        cmd, arg = seq[1:3], seq[3:]
        if cmd == "br" and not arg.strip():
            return "\n"
        if cmd == "sp":
            n = _count(arg, 1)
            return None if n < 0 else "\n" * max(n, 1)
        if cmd == "sk":
            n = _count(arg, 1)
            return None if n < 0 else " " * n
        if cmd == "ce" and not arg.strip():
            return "\n"
        if cmd in ("fi", "nf") and not arg.strip():
            return ""
        if cmd in ("in", "ti"):
            a = arg.strip().lstrip("+-")
            return "" if a.isdigit() or not a else None
    return None


def decode_escapes(value: str, d: Delimiters, *, charset: str = "utf-8") -> str:
    """Decode every escape sequence in one primitive value (a component or subcomponent)."""
    esc = d.escape
    if not esc or esc not in value:
        return value
    parts = value.split(esc)
    out = [parts[0]]
    last = len(parts) - 1
    i = 1
    while i <= last:
        if i == last:  # an escape character that is never closed: keep it
            out.append(esc + parts[i])
            break
        seq = parts[i]
        decoded = _sequence(seq, d, charset) if seq else None
        if decoded is None:
            # Not a sequence: keep the escape char literally and re-scan from the next one, so
            # "a\b \F\" keeps "\b " and still decodes "\F\".
            out.append(esc + seq)
            i += 1
            continue
        out.append(decoded)
        out.append(parts[i + 1])
        i += 2
    return "".join(out)
