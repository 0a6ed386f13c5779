"""Person-name surrogates: consistent per patient, gender kept, case kept, forms kept.

Names are mapped part by part (``state.name_map``: normalised original part → surrogate part),
never as whole strings, so "John Smith", "SMITH, JOHN", "Mr. Smith" and "J. Smith" all use the
same surrogates. Initials follow a per-patient letter derangement derived from the seed, and
every surrogate part starts with the image of its original's initial, so "J. Smith" and "JS"
are the initials of the surrogate of "John Smith". Surrogates come from the US census lists
shipped by the ``names`` package, drawn in proportion to their census frequency: a given
name gets a first name of the original's gender (title, else census counts, else drawn
about evenly) that at least 90% of its bearers share and that is more a first name than a
surname; a first name never gets a surname, whatever its place ("Dr. John"). A surrogate
never equals any word of the note, the original part, another part's surrogate or a known
name of the document.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from surrogates.base import SpanLike, Surrogate, apply_edits
from surrogates.choice import Chooser
from surrogates.context import ReplaceContext, first_pronoun, pronoun_gender
from surrogates.identifiers import surrogate_chars
from surrogates.name_tables import (
    ACCENTLESS as ACCENTLESS,
)
from surrogates.name_tables import (
    GENDER_SHARE as GENDER_SHARE,
)
from surrogates.name_tables import (
    LAST_NAME_POOL as LAST_NAME_POOL,
)
from surrogates.name_tables import (
    SUFFIXES,
    TITLES,
    TITLES_FEMALE,
    TITLES_MALE,
    VOWELS,
    Pool,
    census,
    folded,
)
from surrogates.name_tables import (
    Census as Census,
)
from surrogates.name_tables import (
    NameTable as NameTable,
)

MAX_DRAWS = 64
_TOKEN = re.compile(r"[^\W\d_]+(?:['’\-][^\W\d_]+)*\.?")


@lru_cache(maxsize=4096)
def letter_map(seed: bytes) -> dict[str, str]:
    """A per-patient derangement of a-z: no letter maps to itself, so initials never survive."""
    chooser = Chooser(seed, "initials", "")
    letters = list(string.ascii_lowercase)
    while True:
        perm = letters[:]
        for i in range(len(perm) - 1, 0, -1):
            j = chooser.below(i + 1)
            perm[i], perm[j] = perm[j], perm[i]
        if all(a != b for a, b in zip(letters, perm, strict=True)):
            return dict(zip(letters, perm, strict=True))


def case_like(word: str, model: str) -> str:
    letters = [c for c in model if c.isalpha()]
    if len(letters) > 1 and all(c.isupper() for c in letters):
        return word.upper()
    if letters and all(c.islower() for c in letters):
        return word.lower()
    return re.sub(r"(^|['’\-\s])([a-z])", lambda m: m.group(1) + m.group(2).upper(), word.lower())


@dataclass
class _Token:
    start: int
    end: int
    core: str  # without trailing period / possessive
    kind: str  # part | initial | initials | title | suffix
    role: str = ""  # given | family


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    for m in _TOKEN.finditer(text):
        word = m.group()
        core = word[:-1] if word.endswith(".") else word
        if core.lower().endswith(("'s", "’s")) and len(core) > 3:
            core = core[:-2]
        out.append(_Token(m.start(), m.start() + len(core), core, _kind(word, core, bool(out))))
    return out


def _kind(word: str, core: str, after_first: bool) -> str:
    """part | initial | initials | title | suffix, of a word and its core (no period, no
    possessive); ``after_first``: a word comes before it in the span."""
    low = core.lower()
    if low in TITLES and (word.endswith(".") or not after_first):
        return "title"
    if low in SUFFIXES and after_first:
        return "suffix"
    if len(core) == 1:
        return "initial"
    return "initials" if _are_initials(core, low) else "part"


def _are_initials(core: str, low: str) -> bool:
    """Two or three capitals without a vowel that are no census name ("JS", "KLM")."""
    if not (2 <= len(core) <= 3 and core.isupper()) or VOWELS & set(core):
        return False
    c = census()
    return low not in c.male and low not in c.female and low not in c.last


def _assign_roles(text: str, tokens: list[_Token], ctx: ReplaceContext) -> None:
    parts = [t for t in tokens if t.kind == "part"]
    if not parts:
        return
    comma = text.find(",")
    if comma != -1 and parts[0].end <= comma:
        for t in parts:
            t.role = "family" if t.end <= comma else "given"
    elif len(parts) > 1:
        _roles_by_place(parts, ctx)
    else:
        parts[0].role = _lone_role(parts[0].core.lower(), tokens, ctx)


def _roles_by_place(parts: list[_Token], ctx: ReplaceContext) -> None:
    """Given names first, the family name last — unless the document's known names say
    otherwise: "SMITH JOHN" is family-first."""
    for t in parts[:-1]:
        t.role = "given"
    parts[-1].role = "family"
    for t in parts:
        low = t.core.lower()
        if low in ctx.known_family and low not in ctx.known_given:
            t.role = "family"
        elif low in ctx.known_given and low not in ctx.known_family:
            t.role = "given"


def _lone_role(low: str, tokens: list[_Token], ctx: ReplaceContext) -> str:
    """The role of a span's only name part: a family name after a title or an initial,
    else as the document knows it, else as the census counts it."""
    if any(t.kind in ("title", "initial") for t in tokens):
        return "family"
    if low in ctx.known_given:
        return "given"
    if low in ctx.known_family:
        return "family"
    c = census()
    low = folded(low)
    first = max(c.male.get(low, 0.0), c.female.get(low, 0.0))
    return "given" if first > c.last.get(low, 0.0) else "family"


_TITLE_BEFORE = re.compile(
    r"\b(" + "|".join(sorted(TITLES_MALE | TITLES_FEMALE)) + r")\.?\s*$", re.I
)


def _title_gender(titles: Iterable[str]) -> str:
    found = {t.lower() for t in titles}
    if found & TITLES_MALE:
        return "M"
    if found & TITLES_FEMALE:
        return "F"
    return ""


def _census_gender(low: str) -> str:
    low = folded(low)
    c = census()
    male, female = c.male.get(low, 0.0), c.female.get(low, 0.0)
    if male or female:
        return "M" if male >= female else "F"
    return ""


def span_title_gender(ctx: ReplaceContext, titles: Iterable[str], start: int) -> str:
    """M, F or "": the span's own titles, else a title just before it ("Mr. [Olivia
    Green]"). Read once per span: a span of thousands of words must not ask every title
    for every word."""
    found = _title_gender(titles)
    if found or start <= 0:
        return found
    before = _TITLE_BEFORE.search(ctx.text, max(0, start - 12), start)
    return _title_gender([before.group(1)]) if before else ""


def given_gender(ctx: ReplaceContext, low: str, titled: str, end: int) -> str:
    """The gender of a given name ending at ``end``, from the best evidence there is:

    1. the patient's recorded sex (PID-8, ``Patient.gender``), for the patient's own names;
    2. a title in the name's span or just before it (``titled``: ``span_title_gender``);
    3. the note's pronouns, for the patient's own names;
    4. the census counts of the name;
    5. the first pronoun after the name, then the note's pronouns;
    6. a draw in the census share (the lists hold about as many men as women).
    """
    own = low in ctx.patient_given
    evidence = (
        lambda: ctx.recorded_sex if own else "",
        lambda: titled,
        lambda: ctx.pronoun_gender if own else "",
        lambda: _census_gender(low),
        lambda: pronoun_gender(first_pronoun(ctx.text, end)) if end else "",
        lambda: ctx.pronoun_gender,
    )
    for read in evidence:
        found = read()
        if found in ("M", "F"):
            return found
    return ctx.chooser("gender", low).pick(("M", "F"))


def pool_role(ctx: ReplaceContext, low: str, role: str) -> str:
    """Which list a surrogate for ``low`` comes from. A first name never gets a surname:
    a part in a given name's place, or known as a given name of the document, or more
    often a first name than a surname in the census ("Dr. John") draws a first name; the
    rest draw surnames."""
    if low in ctx.known_family and low not in ctx.known_given:
        return "family"
    if role == "given" or low in ctx.known_given or census().is_first_name(low):
        return "given"
    return "family"


def _draw(ctx: ReplaceContext, low: str, role: str, gender: str) -> str:
    c = census()
    chooser = ctx.chooser(f"name:{role}", low)
    pool_name = gender if role == "given" else "L"
    initial = letter_map(ctx.state.seed).get(low[0], "")
    for key in ((pool_name, initial), (pool_name, "")):
        pool = c.pools.get(key)
        found = None if pool is None else _draw_free(ctx, key, pool, chooser, low)
        if found is not None:
            return found
    # Practically unreachable (thousands of names); still never return the original.
    return (initial or "x") + "".join(chooser.letter(False) for _ in range(max(3, len(low) - 1)))


def _draw_free(
    ctx: ReplaceContext, key: tuple[str, str], pool: Pool, chooser: Chooser, low: str
) -> str | None:
    """A name of ``pool`` drawn by census weight; where the draw is refused (a word of the
    note, a known name, a surrogate already given), the next name of the pool that is not.
    One draw a name: what is refused stays refused for the document (``ctx.refused``), so
    however full the pool, a name costs amortised constant time (redrawing until a free
    name came up cost up to 2 × 64 draws a name once the pools filled)."""
    refused = ctx.refused(("name", key), len(pool.names))
    taken = ctx.taken(ctx.state.name_map)
    forbidden = ctx.known_given | ctx.known_family
    at = refused.next_free(pool.index(chooser))
    own = -1  # the original's own index, passed over (not refused: it is free for others)
    while at >= 0:
        candidate = pool.names[at]
        if candidate == low:
            if own == at:
                return None  # only the original itself is left
            own = at
            at = refused.next_free((at + 1) % len(pool.names))
            continue
        if (
            candidate not in taken
            and candidate not in forbidden
            and not ctx.is_note_word(candidate)
        ):
            return candidate
        refused.refuse(at)
        at = refused.next_free(at)
    return None


def surrogate_part(ctx: ReplaceContext, low: str, role: str, gender_hint: str) -> str:
    """The surrogate of one normalised name part (lower-case), made and stored on first use.

    A given name without a gender hint gets the census gender of the original, else one
    drawn in the census share (the lists hold about as many men as women)."""

    def make() -> str:
        pool = pool_role(ctx, low, role)
        gender = gender_hint
        if pool == "given" and gender not in ("M", "F"):
            gender = given_gender(ctx, low, "", 0)
        return _draw(ctx, low, pool, gender)

    return ctx.mapped(ctx.state.name_map, low, make)


class NameSurrogate(Surrogate):
    categories = frozenset({"NAME_PATIENT", "NAME_PROVIDER", "NAME_RELATIVE", "NAME_OTHER"})

    def replace(self, span: SpanLike, ctx: ReplaceContext) -> str:
        text = ctx.original(span)
        tokens = _tokens(text)
        _assign_roles(text, tokens, ctx)
        letters = letter_map(ctx.state.seed)
        titled = span_title_gender(ctx, [t.core for t in tokens if t.kind == "title"], span.start)
        edits: list[tuple[int, int, str]] = []
        for t in tokens:
            if t.kind in ("initial", "initials"):
                edits.append((t.start, t.end, _initials(t.core, letters)))
            elif t.kind == "part":
                edits.append((t.start, t.end, _part(ctx, t, titled, span.end)))
        for m in re.finditer(r"\d+", text):  # digits in a name span (rare): reshaped, never kept
            edits.append((m.start(), m.end(), surrogate_chars(ctx, "name-digits", m.group())))
        return apply_edits(text, edits)


def _initials(core: str, letters: dict[str, str]) -> str:
    """Initials through the patient's letter derangement, case kept."""
    new = "".join(letters.get(ch.lower(), ch.lower()) for ch in core)
    return "".join(n.upper() if o.isupper() else n for n, o in zip(new, core, strict=True))


def _part(ctx: ReplaceContext, t: _Token, titled: str, end: int) -> str:
    """A name part's surrogate, hyphenated pieces one by one ("Smith-Jones")."""
    out = []
    for piece in re.split(r"([\-])", t.core):
        if piece == "-" or not piece:
            out.append(piece)
            continue
        low = piece.lower().replace("’", "'")
        gender = given_gender(ctx, low, titled, end) if t.role == "given" else ""
        out.append(case_like(surrogate_part(ctx, low, t.role or "family", gender), piece))
    return "".join(out)
