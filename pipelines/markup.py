"""Embedded documents → plain text: HTML/XHTML/XML and RTF, in one forward pass each.

Both HL7 OBX ED payloads and FHIR attachments arrive as markup. The detector works on the
text a reader sees, so tags go, block elements become line breaks, entities are resolved and
script/style bodies are dropped.

Linear time for every input (issue 24): the stdlib ``html.parser`` re-scans to the end of the
input from every unclosed ``<`` (quadratic), and the tree builders measured in its place
(lxml's libxml2, selectolax's Lexbor; bench/README.md) are quadratic on deep nesting with
unmatched end tags, because each one searches the open-element stack. Text extraction needs
no tree, only the tokens, so this module tokenises as the HTML5 tokenizer does — forward,
never re-reading what it passed — with one anchored regex per tag (possessive, so a tag's
match never backtracks) and ``str.find`` for comments and raw text; character references
go through the stdlib's ``html.unescape``. A construct left open at the end of the input
(tag, comment, declaration) is kept as text: losing text would hide it from the detector.

RTF: a control-word reader over striprtf's tables (destinations, special characters, code
pages) with the same single-pass loop, without striprtf's pre-passes (its hyperlink and font
table regexes backtrack quadratically on unclosed groups; bench/README.md).
"""

from __future__ import annotations

import codecs
import re
from html import unescape

from striprtf.striprtf import charset_map, destinations, sectionchars, specialchars

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


# A tag after "<" or "</" and a letter: its name, then anything up to the ">" that ends it, an
# attribute value in quotes (after "=") may hold ">". Possessive throughout: no backtracking.
_TAG = re.compile(
    r"""<(/?)([A-Za-z][^\t\n\f\r />]*+)"""
    r"""(?:[^>="']++|=[\t\n\f\r ]*+(?:"[^"]*+"|'[^']*+')?+|["'])*+>"""
)
# script and style bodies are raw text: they end at the first "</script" (or "</style")
_RAW_END = {
    name: re.compile(rf"</{name}[\t\n\f\r />]", re.IGNORECASE) for name in ("script", "style")
}
# a numeric character reference of 8+ significant digits (7+ hex) is past U+10FFFF: U+FFFD,
# as html.unescape gives it, without int() of thousands of digits (which it refuses)
_HUGE_CHARREF = re.compile(r"&#(?:[xX]0*+[0-9a-fA-F]{7,}+|0*+[1-9][0-9]{7,}+);?")


def _text(raw: str) -> str:
    if "&" not in raw:
        return raw
    return unescape(_HUGE_CHARREF.sub("\ufffd", raw))


class _Collector:
    """The text of the tokens: what ``markup_to_text`` joins (see the module doc)."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.skip = 0

    def data(self, text: str) -> None:
        if text and not self.skip:
            self.parts.append(text)

    def tag(self, closing: bool, name: str, self_closing: bool) -> None:
        local = name.rsplit(":", 1)[-1]
        if self_closing:
            if local in _BLOCK:
                self.parts.append("\n")
        elif local in _SKIP:
            self.skip = max(0, self.skip - 1) if closing else self.skip + 1
        elif local in _BLOCK:
            self.parts.append("\n")
        elif local not in _INLINE:
            self.parts.append(" ")


def _markup_step(markup: str, lt: int, out: _Collector) -> int:
    """Read the construct that starts with the "<" at ``lt``; the position after it, or -1
    when it is left open to the end of the input (the caller keeps the rest as text)."""
    nxt = markup[lt + 1 : lt + 2]
    after = markup[lt + 2 : lt + 3]
    if nxt.isascii() and (nxt.isalpha() or (nxt == "/" and after.isascii() and after.isalpha())):
        return _tag_step(markup, lt, out)
    if markup.startswith("<!--", lt):
        end = markup.find("-->", lt + 4)
        return -1 if end < 0 else end + 3
    if markup.startswith("<![CDATA[", lt):
        return _cdata_step(markup, lt, out)
    if nxt in ("!", "?", "/"):  # declaration, processing instruction, bogus end tag
        end = markup.find(">", lt + 2)
        return -1 if end < 0 else end + 1
    out.data("<")  # a "<" that starts nothing is text
    return lt + 1


def _tag_step(markup: str, lt: int, out: _Collector) -> int:
    """A start or end tag at ``lt`` (and the raw body of a script or style it opens)."""
    m = _TAG.match(markup, lt)
    if m is None:  # no ">" closes it
        return -1
    closing, name = m.group(1) == "/", m.group(2).lower()
    self_closing = not closing and markup[m.end() - 2] == "/"
    out.tag(closing, name, self_closing)
    raw_end = None if closing or self_closing else _RAW_END.get(name)
    if raw_end is None:
        return m.end()
    found = raw_end.search(markup, m.end())
    return len(markup) if found is None else found.start()  # its body is not text


def _cdata_step(markup: str, lt: int, out: _Collector) -> int:
    end = markup.find("]]>", lt + 9)
    if end < 0:
        return -1
    out.data(markup[lt + 9 : end])
    return end + 3


def markup_to_text(markup: str) -> str:
    """HTML, XHTML or XML → text with line breaks where blocks end (one forward pass)."""
    out = _Collector()
    pos = 0
    while True:
        lt = markup.find("<", pos)
        if lt < 0:
            break
        out.data(_text(markup[pos:lt]))
        pos = _markup_step(markup, lt, out)
        if pos < 0:
            pos = lt
            break
    out.data(_text(markup[pos:]))
    text = "".join(out.parts)
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


# RTF: control word (and its number), hex byte, control symbol, group brace, line break, or a
# run of plain text (a lone backslash at the end is text too)
_RTF_TOKEN = re.compile(
    r"\\([a-z]{1,32})(-?\d{1,10})?[ ]?|\\'([0-9a-f]{2})|\\([^a-z])|([{}])|[\r\n]+"
    r"|([^\\{}\r\n]+|\\)",
    re.IGNORECASE,
)


class _RtfState:
    """striprtf's reader state, with the font table read as the groups come."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.stack: list[tuple[int, bool, bool, str | None]] = []
        self.fonts: dict[str, str] = {}
        self.encoding = "cp1252"
        self.font: str | None = None
        self.default_font: str | None = None
        self.defining: str | None = None  # the font being defined in the font table
        self.font_table = 0  # the depth of the font table group while inside it, else 0
        self.ignorable = False
        self.suppress = False
        self.ucskip = 1
        self.curskip = 0
        self.hexes: list[str] = []
        self.depth = 0
        self.in_document = False
        self.binary_end = 0  # \binN: the next N characters are data

    def flush_hex(self) -> None:
        if self.hexes:
            enc = self.fonts.get(self.font or "", self.encoding)
            self.out.append(bytes.fromhex("".join(self.hexes)).decode(enc, errors="ignore"))
            self.hexes = []

    def brace(self, brace: str) -> bool:
        """False once the document's outer group has closed (the rest is discarded)."""
        self.curskip = 0
        if brace == "{":
            self.depth += 1
            self.in_document = True
            self.stack.append((self.ucskip, self.ignorable, self.suppress, self.font))
            return True
        self.depth -= 1
        if self.depth < self.font_table:
            self.font_table = 0
        if self.stack:
            self.ucskip, self.ignorable, self.suppress, self.font = self.stack.pop()
        else:
            self.ucskip, self.ignorable = 0, True
        return not (self.in_document and self.depth <= 0)

    def symbol(self, char: str) -> None:
        self.curskip = 0
        if char in specialchars:
            if char in sectionchars:
                self.font = self.default_font
            if not self.ignorable:
                self.out.append(specialchars[char])
        elif char == "*":
            self.ignorable = True

    def word(self, word: str, arg: str | None, end: int) -> None:
        self.curskip = 0
        if word in destinations:
            self.ignorable = True
        elif word == "ansicpg":
            self.encoding = _codepage(f"cp{arg}")
        elif word == "bin" and arg and not arg.startswith("-"):
            self.binary_end = end + int(arg)
        if word == "fonttbl":
            self.font_table = self.depth
        elif self.font_table:
            self._font_table(word, arg)
        if not (self.ignorable or self.suppress):
            self._visible_word(word, arg)

    def _visible_word(self, word: str, arg: str | None) -> None:
        """A control word outside an ignored or suppressed group: text, or reader state."""
        if word in specialchars:
            self.out.append(specialchars[word])
        elif word == "uc" and arg is not None:
            self.ucskip = max(0, int(arg))
        elif word == "u":
            self._unicode(arg)
        elif word == "f":
            self.font = arg
        elif word == "deff":
            self.default_font = arg
        elif word in ("fonttbl", "colortbl"):
            self.suppress = True

    def _unicode(self, arg: str | None) -> None:
        """\\uN: the character N (negative N counts from 65536), then \\ucN fallbacks skipped."""
        if arg is not None:
            code = int(arg)
            code += 0x10000 if code < 0 else 0
            self.out.append(chr(code) if 0 <= code <= 0x10FFFF else "\ufffd")
        self.curskip = self.ucskip

    def _font_table(self, word: str, arg: str | None) -> None:
        if word == "f":
            self.defining = arg
        elif word == "fcharset" and arg is not None and self.defining is not None:
            self.fonts[self.defining] = charset_map.get(int(arg), self.encoding)

    def hex_byte(self, pair: str) -> None:
        if self.curskip > 0:
            self.curskip -= 1
        elif not self.ignorable:
            self.hexes.append(pair)

    def text(self, run: str) -> None:
        if self.curskip > 0:
            skipped = min(self.curskip, len(run))
            self.curskip -= skipped
            run = run[skipped:]
        if run and not self.ignorable and not self.suppress:
            self.out.append(run)


def _codepage(encoding: str) -> str:
    try:
        codecs.lookup(encoding)
    except LookupError:
        return "utf8"
    return encoding


def rtf_text(rtf: str) -> str:
    """RTF → text, one pass over the control words (pictures, objects and other
    destinations are skipped, as striprtf skips them)."""
    st = _RtfState()
    for m in _RTF_TOKEN.finditer(rtf):
        word, arg, hex_pair, char, brace, run = m.groups()
        if m.start() < st.binary_end:  # data of a \bin word (its braces are not groups)
            if run and m.end() > st.binary_end:
                st.text(run[st.binary_end - m.start() :])
            continue
        if hex_pair is None:
            st.flush_hex()
        if brace:
            if not st.brace(brace):
                break
        elif char:
            st.symbol(char)
        elif word:
            st.word(word, arg, m.end())
        elif hex_pair:
            st.hex_byte(hex_pair)
        elif run:
            st.text(run)
    st.flush_hex()
    return "".join(st.out).strip()


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


_CHARSET = re.compile(r"charset\s*=\s*\"?([A-Za-z0-9_.:-]+)")


def decode_bytes(data: bytes, media_type: str = "") -> str:
    """Bytes of an embedded document → str: the declared charset, else UTF-8, else cp1252."""
    m = _CHARSET.search(media_type)
    candidates = [m.group(1)] if m else []
    candidates += ["utf-8", "cp1252"]
    for enc in candidates:
        try:
            return data.decode(enc).lstrip("\ufeff")
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1")
