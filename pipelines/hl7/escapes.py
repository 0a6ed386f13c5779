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

from collections.abc import Callable
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


def _blank_arg(result: str) -> Callable[[str], str | None]:
    """A formatting command that takes no argument: ``result``, or None when given one."""
    return lambda arg: None if arg.strip() else result


def _line_breaks(arg: str) -> str | None:
    n = _count(arg, 1)
    return None if n < 0 else "\n" * max(n, 1)


def _spaces(arg: str) -> str | None:
    n = _count(arg, 1)
    return None if n < 0 else " " * n


def _indent(arg: str) -> str | None:
    a = arg.strip().lstrip("+-")
    return "" if a.isdigit() or not a else None


# \F\ \S\ … : the text of each one-letter sequence (display-only \H\ \N\ give none)
_ONE_LETTER: dict[str, Callable[[Delimiters], str]] = {
    "F": lambda d: d.field,
    "S": lambda d: d.component,
    "T": lambda d: d.subcomponent or "&",
    "R": lambda d: d.repetition,
    "E": lambda d: d.escape or "\\",
    "P": lambda d: d.truncation or "#",
    "H": lambda d: "",
    "N": lambda d: "",
}
# \.br\ \.sp n\ … : the text of each formatting command, from its argument (None: unknown)
_FORMATTING: dict[str, Callable[[str], str | None]] = {
    "br": _blank_arg("\n"),
    "sp": _line_breaks,
    "sk": _spaces,
    "ce": _blank_arg("\n"),
    "fi": _blank_arg(""),
    "nf": _blank_arg(""),
    "in": _indent,
    "ti": _indent,
}


def _sequence(seq: str, d: Delimiters, charset: str) -> str | None:
    """The text for one escape sequence body (between two escape characters), None if unknown."""
    if len(seq) == 1:
        letter = _ONE_LETTER.get(seq)
        return None if letter is None else letter(d)
    head = seq[0]
    if head == "X":
        return _hex(seq[1:], charset)
    if head in "ZCM":
        return ""
    if head == ".":
        command = _FORMATTING.get(seq[1:3])
        return None if command is None else command(seq[3:])
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
