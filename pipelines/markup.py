"""Embedded documents → plain text: HTML/XHTML/XML (stdlib html.parser) and RTF (striprtf).

Both HL7 OBX ED payloads and FHIR attachments arrive as markup. The detector works on the
text a reader sees, so tags go, block elements become line breaks, entities are resolved and
script/style bodies are dropped. Hand-written only the small HTMLParser subclass (the stdlib
parser does the tokenising); RTF goes through the ``striprtf`` library.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import cast

from striprtf.striprtf import rtf_to_text

_BLOCK = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "br",
        "caption",
        "dd",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "li",
        "main",
        "nav",
        "ol",
        "p",
        "pre",
        "section",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "title",
        "paragraph",
        "item",
        "list",
        "row",
    ]
)
_SKIP = frozenset(("script", "style", "head"))
# HTML/CDA inline elements: no word boundary at their edges ("<b>W</b>ord" stays one word).
# Any other element (XML such as CDA <given>John</given><family>Doe</family>) is a boundary.
_INLINE = frozenset(
    [
        "a",
        "abbr",
        "b",
        "bdi",
        "bdo",
        "cite",
        "code",
        "data",
        "dfn",
        "em",
        "font",
        "i",
        "kbd",
        "mark",
        "q",
        "s",
        "samp",
        "small",
        "span",
        "strong",
        "sub",
        "sup",
        "time",
        "u",
        "var",
        "wbr",
        "content",
        "html",
        "body",
    ]
)
_SPACES = re.compile(r"[ \t\f\v\u00a0]+")
_BLANKS = re.compile(r"\n{3,}")


class _TextCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        tag = tag.rsplit(":", 1)[-1]
        if tag in _SKIP:
            self.skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag not in _INLINE:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag.rsplit(":", 1)[-1] in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        tag = tag.rsplit(":", 1)[-1]
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag not in _INLINE:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def markup_to_text(markup: str) -> str:
    """HTML, XHTML or XML → text with line breaks where blocks end."""
    parser = _TextCollector()
    parser.feed(markup)
    parser.close()
    text = "".join(parser.parts)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


def rtf_text(rtf: str) -> str:
    """Simple RTF → text (striprtf ignores what it does not know: pictures, objects)."""
    convert = cast(Callable[..., str], rtf_to_text)  # striprtf has no type hints
    return convert(rtf, errors="ignore").strip()


HTML_TYPES = frozenset(
    (
        "text/html",
        "html",
        "htm",
        "application/xhtml+xml",
        "application/xhtml",
        "xhtml",
        "text/xml",
        "application/xml",
        "xml",
        "application/hl7-v3+xml",
        "application/cda+xml",
    )
)
PLAIN_TYPES = frozenset(("text/plain", "plain", "text", "txt", "text/markdown", "markdown"))
RTF_TYPES = frozenset(("text/rtf", "application/rtf", "rtf"))


def is_text_type(media_type: str) -> bool:
    t = media_type.split(";", 1)[0].strip().lower()
    return t in PLAIN_TYPES or t in HTML_TYPES or t in RTF_TYPES


def to_text(content: str, media_type: str) -> str:
    """Text of an embedded document of ``media_type`` (callers check :func:`is_text_type`)."""
    t = media_type.split(";", 1)[0].strip().lower()
    if t in HTML_TYPES:
        return markup_to_text(content)
    if t in RTF_TYPES:
        return rtf_text(content)
    return content.replace("\r\n", "\n").replace("\r", "\n").strip()


def decode_bytes(data: bytes, media_type: str = "") -> str:
    """Bytes of an embedded document → str: the declared charset, else UTF-8, else cp1252."""
    m = re.search(r"charset\s*=\s*\"?([A-Za-z0-9_.:-]+)", media_type)
    candidates = [m.group(1)] if m else []
    candidates += ["utf-8", "cp1252"]
    for enc in candidates:
        try:
            return data.decode(enc).lstrip("\ufeff")
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1")
