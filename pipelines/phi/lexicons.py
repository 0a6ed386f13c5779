"""Dictionaries the name and location recognizers look words up in, and the word tokens of a
text they are looked up against.

Every list comes from a well-kept package, loaded lazily on first use and cached for the life
of the process (never at import time, never per document):

- US census first names (``names``: dist.male.first, dist.female.first) and last names
  (dist.all.last), with their census frequency;
- English word frequencies (``wordfreq``, Zipf scale) — a census name that is also a common
  English word ("Will", "Care", "Floor") needs context before it counts as a name;
- US cities (``zipcodes``), US states (``us``) and countries (``pycountry``);
- drug names, generic and brand (``drug-named-entity-recognition``'s dictionary): a rare
  unknown capitalised word near a person cue is a name unless it is a drug ("Zosyn").

Clinical eponyms ("Foley", "Swan-Ganz", "Parkinson's") are census last names too; they are
kept out by rule in ``recognizers/name_words.py`` (the word followed by a device/disease head such
as "catheter", "'s disease", "sign"), not by a typed list.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from itertools import accumulate, compress, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from pipelines import compiled
from pipelines.memo import Memo
from pipelines.phi.casing import CAPITALS_SPAN, Case, capitals_common, capitals_counted
from pipelines.phi.slips import letter_dropped
from pipelines.phi.word_positions import positions as positions
from pipelines.phi.wordlists import word_list

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping

    from pipelines.phi.base import Doc
    from pipelines.phi.sorted_words import SortedWords


# Combining marks (the Unicode blocks of combining diacritics): a decomposed (NFD) "José" is
# "Jose" + U+0301, and the mark belongs to the word it follows.
MARKS: Final = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
_MARK: Final = re.compile(f"[{MARKS}]+")


class Token(NamedTuple):
    """One word of the text with the facts every recognizer asks about it."""

    start: int
    end: int
    text: str
    lower: str

    @property
    def is_title(self) -> bool:
        """ "Smith", "McDonald" (not "MD's", "SMITH")."""
        return is_title(self.text)

    @property
    def is_upper(self) -> bool:
        return self.text.isupper()


def is_title(text: str) -> bool:
    if not text[0].isupper():
        return False
    second = text[1:2]
    if second.islower():
        return True
    # "N\u0303unez" (decomposed): the letter after the first one's marks decides
    return bool(second) and not second.isascii() and _title_after_marks(text)


def _title_after_marks(text: str) -> bool:
    bare = _MARK.sub("", text)
    return bare != text and bare[0].isupper() and bare[1:2].islower()


@dataclass(frozen=True, slots=True)
class Tokens:
    """The word tokens of a text plus whether its letters are all one case (many nursing notes
    are written in all-uppercase or all-lowercase, where capitalisation tells nothing), and the
    set of lower-case words (so a recognizer can skip a note that holds none of its cues).

    ``texts`` and ``lowers`` repeat the tokens' text and lower-case text as plain tuples, so a
    recognizer can pick its candidate words with C-level ``map``/``compress`` instead of a
    Python loop over every token."""

    words: tuple[Token, ...]
    mixed_case: bool
    lower_set: frozenset[str]
    # a one-case note written in lower case: its few capitalised words are signals
    lower_note: bool = False
    texts: tuple[str, ...] = ()
    lowers: tuple[str, ...] = ()
    # the distinct words as written: a recognizer judges each once, then finds the few it
    # wants (``positions``)
    written: frozenset[str] = frozenset()
    # a lower-case note whose capitals are common all the same (``casing.capitals_common``:
    # sentence starts, abbreviations): a word's case tells there as in mixed case
    capitals_common: bool = False
    # every token as the learned tagger reads it (``Columns``): the words above are those
    # of its tokens that start with a letter (on ASCII text, taken from these)
    columns: Columns | None = field(default=None, compare=False)


class Columns(NamedTuple):
    """Every token of a text — a word (letters, inner apostrophes), a run of digits or any
    other visible character — column by column: starts, ends, texts (no tuple per token).
    The learned tagger's tokens (``pipelines.phi.tagger.features``)."""

    starts: list[int]
    ends: list[int]
    texts: list[str]


_WORD_LETTERS: Final = rf"[^\W\d_](?:[^\W\d_]++|[{MARKS}]++)*+"
# a word (letters and the combining marks after them), a run of digits, or any other single
# visible character; as a splitter (one capturing group): gap, token, gap, token, …, gap in
# one C call
TOKEN: Final = re.compile(rf"({_WORD_LETTERS}(?:['’]{_WORD_LETTERS})*|\d+|[^\s])")
# The same on ASCII text, with plain character sets (the ASCII characters ``str.isspace``
# calls space) and possessive repeats: the matcher tests a set faster than a Unicode category
# and keeps no backtracking points.
ASCII_TOKEN: Final = re.compile(
    r"([A-Za-z][A-Za-z]*+(?:'[A-Za-z]++)*+|[0-9][0-9]*+|[^ \t\n\r\f\v\x1c-\x1f])"
)


def token_columns(text: str) -> Columns:
    """Every token of ``text`` (``Columns``), from one ``split`` (or, on ASCII text, the
    compiled loop that matches it: ``pipelines.compiled``)."""
    if text.isascii():
        fast = compiled.helper("tokens")
        if fast is not None:
            return Columns(*fast.columns(text))
        parts = ASCII_TOKEN.split(text)
    else:
        parts = TOKEN.split(text)
    offsets = list(accumulate(map(len, parts)))
    return Columns(offsets[0:-1:2], offsets[1::2], parts[1::2])


_new_token = tuple.__new__


def tokens(doc: Doc) -> Tokens:
    """Word tokens of ``doc.text``, computed once per document (``doc.artifacts.tokens``)."""
    artifacts = doc.artifacts
    found = artifacts.tokens
    if found is None:
        found = artifacts.tokens = _tokenize(doc.text)
    return found


def _tokenize(text: str) -> Tokens:
    """Built column by column (no match object and no Python-level loop per token: the
    tokenizer was a large share of the detector's time), from the text's one tokenization
    (``token_columns``): the words are its tokens that start with a letter, in any script
    ("José Núñez" is two words, not "Jos", "N", "ez"). On ASCII text, the compiled helper
    (``pipelines.compiled``) does it all in one loop (``_compiled_tokens``)."""
    if text.isascii():
        fast = compiled.helper("tokens")
        if fast is not None:
            return _compiled_tokens(fast.tokenize(text, Token, _FIRST_WORDS, CAPITALS_SPAN))
    columns = token_columns(text)
    is_word = list(map(str.isalpha, map(_first, columns.texts)))
    starts = list(compress(columns.starts, is_word))
    ends = list(compress(columns.ends, is_word))
    texts = tuple(compress(columns.texts, is_word))
    facts = _per_word if len(texts) >= _PER_WORD_FROM else _per_token
    lowers, lower_set, written, mixed = facts(text, starts, ends, texts)
    words = tuple(map(_new_token, repeat(Token), zip(starts, ends, texts, lowers, strict=True)))
    lower_note = not mixed and _mostly_lower(texts, _FIRST_WORDS)
    common = lower_note and capitals_common(starts, texts)
    return Tokens(words, mixed, lower_set, lower_note, texts, lowers, written, common, columns)


_first: Final = itemgetter(0)
# A one-case note is judged lower-case on this many of its first words (``_mostly_lower``).
_FIRST_WORDS: Final = 40


def _compiled_tokens(found: tuple[Any, ...]) -> Tokens:
    """``Tokens`` from the compiled helper's ``tokenize``: its columns, words and word sets,
    and the counts the case facts are decided from as ``_tokenize`` decides them."""
    starts, ends, all_texts, words, texts, lowers, written, lower_set, counts = found
    longer, lower, upper, seen, seen_lower, letters, capitals = counts
    mixed = _mixed_case(longer, lower, lambda: upper)
    lower_note = not mixed and 2 * seen_lower > seen  # as ``_mostly_lower``
    common = lower_note and capitals_counted(letters, capitals)
    columns = Columns(starts, ends, all_texts)
    return Tokens(words, mixed, lower_set, lower_note, texts, lowers, written, common, columns)


def case_of(text: str) -> Case:
    """The case model of ``text`` (``Case.of`` its tokens), for a caller that has the text
    but not its ``Doc`` (training, tests)."""
    return Case.of(_tokenize(text))


def words_case_of(text: str) -> Case:
    """``Case.of_words`` the tokens of ``text``, for a caller that has the text but not its
    ``Doc`` (training, tests)."""
    return Case.of_words(_tokenize(text))


# The words' lower-case forms, their set, the distinct words as written, mixed case?
_Facts = tuple[tuple[str, ...], frozenset[str], frozenset[str], bool]
# From this many words on, a text's words are asked once per distinct word (``_per_word``);
# a shorter one (most notes of a stream) asks each word: counting costs more there.
_PER_WORD_FROM: Final = 256


def _per_token(text: str, starts: list[int], ends: list[int], texts: tuple[str, ...]) -> _Facts:
    """Each word asked its lower-case form and case."""
    lowers = tuple(map(str.lower, texts))  # each word alone: "İ" lower-cases to two
    longer = [t for t in texts if len(t) > 1]
    upper = lambda: sum(map(str.isupper, longer))  # noqa: E731 - asked in a few notes only
    mixed = _mixed_case(len(longer), sum(map(str.islower, longer)), upper)
    return lowers, frozenset(lowers), frozenset(texts), mixed


def _per_word(text: str, starts: list[int], ends: list[int], texts: tuple[str, ...]) -> _Facts:
    """Each distinct word asked once: a long note repeats its words (a 50,000-character piece
    writes some 7,000, a few hundred of them distinct). The words'
    lower-case forms are then one object per distinct word, so each recognizer's set look-ups
    reuse its hash instead of hashing every token."""
    counts = Counter(texts)  # the distinct words as written, and how often each occurs
    lower_of = {word: word.lower() for word in counts}
    lowers = tuple(map(lower_of.__getitem__, texts))
    lower_set = frozenset(lower_of.values())
    n = lower = 0
    for word, count in counts.items():
        if len(word) > 1:
            n += count
            if word.islower():
                lower += count
    upper = lambda: sum(  # noqa: E731 - asked in a few notes only
        count for word, count in counts.items() if len(word) > 1 and word.isupper()
    )
    return lowers, lower_set, frozenset(counts), _mixed_case(n, lower, upper)


def _mixed_case(longer: int, lower: int, upper: Callable[[], int]) -> bool:
    """Are fewer than 85% of the ``longer`` words (two or more letters) in one case, ``lower``
    of them lower-case and ``upper()`` upper-case?"""
    n = longer or 1
    # No word is both upper and lower case, so upper <= n - lower: where that bound is under
    # 85% (most notes) the upper case words need no count
    if lower / n >= 0.85:
        return False
    if (n - lower) / n < 0.85:
        return True
    return upper() / n < 0.85


def _mostly_lower(texts: tuple[str, ...], first: int) -> bool:
    """Are most of the ``first`` first words of two or more letters lower-case? A short text
    (a query, a one-line note: fewer such words) is judged on the words it has, so "a
    61-year-old man, Hal Q., asks" is a lower-case text whose capitals are signals."""
    seen = lower = 0
    for word in texts:
        if len(word) > 1:
            lower += word.islower()
            seen += 1
            if seen == first:
                break
    return 2 * lower > seen


def where(toks: Tokens, wanted: Collection[str]) -> list[int]:
    """Indices, ascending, of the words whose lower-case form is in ``wanted``: the same as
    ``list(compress(range(len(toks.lowers)), map(wanted.__contains__, toks.lowers)))``.

    Most of the words a recognizer looks for again (an eponym head, a place or a name found
    once, a known name) occur in a note as one to four distinct words. Each is then found
    by comparing string lengths and bytes (``positions``: ``tuple.index``, or the compiled
    loop), cheaper than a set look-up per word of the note; more are looked up in the set."""
    return positions(toks.lowers, toks.lower_set.intersection(wanted))


@cache
def first_names() -> dict[str, float]:
    """Census first names (male and female), lower-case -> percent of the population (read
    from ``names``' files as ``surrogates.name_tables.census`` reads them)."""
    from surrogates.name_tables import census_rows

    percents: dict[str, float] = {}
    male = dict(census_rows("dist.male.first", percents))
    female = dict(census_rows("dist.female.first", percents))
    names = sorted(male.keys() | female.keys())  # a set's order follows the string hash seed
    return {k: max(male.get(k, 0.0), female.get(k, 0.0)) for k in names}


@cache
def last_names() -> Mapping[str, float]:
    """Census last names, lower-case -> percent of the population, from the copy shipped
    beside this package (``pipelines.phi.census_words``: sorted, nothing hashed at load;
    the surrogates' own table, ``census().last``, answers the same)."""
    from pipelines.phi import census_words

    return census_words.shipped()


# Zipf 3.3, a word most adults know: computed as the lexicon's values are (frequency, then
# log10 + 9), so the bucket at exactly 3.3 compares as it did against frequencies
_COMMON_ZIPF: Final = math.log10(10 ** (3.3 - 9.0)) + 9.0


@dataclass(frozen=True, slots=True)
class English:
    """wordfreq's English list: a dict of the common words (Zipf >= ``_COMMON_ZIPF``: most
    look-ups, and every one ``near_english`` makes), and the long rare tail, most of the
    list, as ``SortedWords`` (sorted lines of words, read from a shipped copy:
    ``pipelines.phi.english_words``; bench/README.md, "Session 15")."""

    common: dict[str, float]
    rare: SortedWords
    # the longest common word: a word longer by two or more is no slip of one (a bound that
    # keeps the slip tests linear on a 16 KiB "word")
    longest: int


def _english_buckets() -> list[list[str]]:
    """wordfreq's large English list as its buckets of words, bucket ``i`` holding the words
    of frequency ``10 ** (-i / 100)`` (``wordfreq.cB_to_freq(-i)``): what the shipped copy
    ``pipelines.phi.english_words`` is written from.

    Read from the package's data file without importing ``wordfreq``: its import brings
    ftfy, langcodes, regex and wcwidth's tables, which the detector does not use (figures:
    bench/README.md, "Memory"). The file is in wordfreq's documented cBpack format: gzipped
    msgpack, a header, then the buckets; tests/test_third_party_internals.py checks every
    value against wordfreq's own dictionary (the data path is bounded in pyproject.toml)."""
    import gzip
    import importlib.util
    from pathlib import Path

    import msgpack

    spec = importlib.util.find_spec("wordfreq")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("wordfreq is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "large_en.msgpack.gz"
    with gzip.open(path, "rb") as raw:
        pack = msgpack.load(raw, raw=False)
    header = pack[0] if pack else None
    if not isinstance(header, dict) or header.get("format") != "cB" or header.get("version") != 1:
        raise ValueError(f"{path.name}: not a cBpack version 1 file")
    buckets: list[list[str]] = pack[1:]
    return buckets


@cache
def _english() -> English:
    """Read from the copy shipped beside this package (``pipelines.phi.english_words``): the
    values are those of ``_english_buckets``, each bucket's ``log10`` of its frequency plus
    9 (one float object per bucket)."""
    from pipelines.phi import english_words

    common, rare = english_words.shipped()
    longest = max(map(len, common), default=0)
    return English(common, rare, longest)


def zipf(word: str) -> float:
    """English frequency of a lower-case word on the Zipf scale (0 = unseen, 7 = "the")."""
    english = _english()
    value = english.common.get(word)
    if value is None:  # the rare tail, searched each time (a memo saved under 1 %)
        value = english.rare.get(word)
    return value


def common_zipf(word: str) -> float:
    """``zipf(word)`` for a common word (Zipf >= 3.3), else 0.0: the same answer to a test
    against a bound of 3.3 or more ("zipf(w) < 6.0" is "common_zipf(w) < 6.0"), without a
    look-up in the rare tail. For the tables built at start-up that test thousands of
    words so (bench/README.md, "Session 15")."""
    return _english().common.get(word, 0.0)


def common_words(at_least: float) -> frozenset[str]:
    """The words of Zipf ``at_least`` or more (a bound of 3.3 or more: all in the common list)."""
    return frozenset(w for w, f in _english().common.items() if f >= at_least)


# English month names, for the invented texts and augmentation that write dates out
MONTH_NAMES: Final = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


UNLISTED_SCORE: Final = -9.0  # the ``name_score`` of a word in no census list


def name_score(word: str) -> float:
    return _NAME_SCORE(word)


def _name_score(word: str) -> float:
    """How much more a word is used as a name than as an English word.

    Census share (percent) turned into a Zipf-like number minus the word's English Zipf
    frequency: "smith" ~ +2, "will" ~ -0.5, "patient" ~ -3. Words in no census list get -9.
    """
    if not word.isascii():  # "josé", "núñez": the census lists write names without accents
        word = folded(word)
    share = max(first_names().get(word, 0.0), last_names().get(word, 0.0))
    if share <= 0.0 and ("'" in word or "’" in word):  # "o'donnell" is listed as "odonnell"
        word = word.replace("'", "").replace("’", "")
        share = last_names().get(word, 0.0)
    if share <= 0.0:
        return UNLISTED_SCORE
    return listed_name_score(word, share)


def listed_name_score(word: str, share: float) -> float:
    """``name_score`` of a census-listed word as the lists write it (``folded``), given its
    census share (percent, above 0): the one formula."""
    return math.log10(share * 1e5) + 2.0 - zipf(word)


_NAME_SCORE: Final = Memo("lexicons.name_score", _name_score, 200_000)


def folded(word: str) -> str:
    """A word without its accents, for look-ups in the census lists (ASCII);
    ``surrogates.name_tables.folded``, imported only for a word that is not ASCII."""
    if word.isascii():
        return word
    from surrogates.name_tables import folded as fold

    # a decomposed "jose\u0301" loses its marks (a look-up, not an offset: any length)
    return _MARK.sub("", fold(word))


def is_first_name(word: str) -> bool:
    return folded(word) in first_names()


def is_last_name(word: str) -> bool:
    return folded(word) in last_names()


def is_name(word: str) -> bool:
    word = folded(word)
    return (
        word in first_names()
        or word in last_names()
        or ("'" in word and word.replace("'", "") in last_names())
    )


@cache
def us_states() -> dict[str, str]:
    """Lower-case state/territory names and postal abbreviations -> postal abbreviation."""
    import us

    out: dict[str, str] = {}
    for state in us.states.STATES_AND_TERRITORIES + [us.states.DC]:
        out[state.name.lower()] = state.abbr
        out[state.abbr.lower()] = state.abbr
    return out


@cache
def us_cities() -> frozenset[str]:
    """Lower-case US city names (one or more words) from the zipcodes database (its shipped
    copy, ``surrogates.zipdata``)."""
    from surrogates import zipdata

    return frozenset(map(str.lower, filter(None, zipdata.column(3))))


@cache
def city_first_words() -> frozenset[str]:
    """First words of multi-word city names, so a scanner only tries a phrase where one may start."""
    return frozenset(c.split(" ", 1)[0] for c in us_cities())


@cache
def countries() -> frozenset[str]:
    """Lower-case country names (common and official) from ISO 3166 via pycountry."""
    import pycountry

    out: set[str] = set()
    for country in pycountry.countries:
        for attr in ("name", "common_name", "official_name"):
            value = getattr(country, attr, None)
            if value:
                out.add(value.lower())
    return frozenset(out)


@cache
def drug_words() -> SortedWords:
    """Lower-case one-word drug names (generic and brand) and their 5-6 letter heads, the
    way notes shorten them ("vanco", "ceftaz"); from drug-named-entity-recognition's data.
    Each has the value 1.0 (``SortedWords``: a long list, asked about a few times a note,
    read sorted). Read from the copy shipped beside this package (``pipelines.phi.drugs``),
    with the brands the package lacks (``drug_brands``)."""
    from bisect import insort

    from pipelines.phi import drugs
    from pipelines.phi.sorted_words import one_value

    words = drugs.shipped()  # sorted
    for brand in word_list("drug_brands"):  # the brands the package lacks: kept sorted
        insort(words, brand)
    return one_value(words, 1.0)


def drug_variants() -> set[str]:
    """The words of ``drug_words`` as strings, derived from the package's data (read anew
    on each call; what ``python -m pipelines.phi.drugs`` writes to the shipped copy)."""
    import bz2
    import gc
    import importlib.util
    import pickle
    from pathlib import Path

    # locate the data file without importing the package: its __init__ loads the dictionary
    # and builds n-gram indexes at import time (seconds, and ~300k objects kept alive)
    spec = importlib.util.find_spec("drug_named_entity_recognition")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("drug-named-entity-recognition is not installed")
    data = Path(next(iter(spec.submodule_search_locations))) / "drug_ner_dictionary.pkl.bz2"
    with bz2.open(data, "rb") as fh:
        table = pickle.load(fh)["drug_variant_to_canonical"]  # noqa: S301 - packaged data
    gc.collect()  # drop the rest of the loaded tables now, not in the middle of a note
    out: set[str] = set()
    for variant in table:
        if variant.isalpha() and len(variant) >= 4:
            out.add(variant)
            if len(variant) >= 8:
                out.add(variant[:5])
                out.add(variant[:6])
    return out


# Endings of drug, anatomy, disease and procedure words (INN stems and Greek/Latin morphology).
_CLINICAL_ENDINGS: Final = word_list("clinical_endings")


def clinical_word(word: str) -> bool:
    """A lower-case word that looks like clinical vocabulary: a listed drug, or a word with a
    drug stem / medical suffix ("metoprolol", "pancreatitis", "thoracotomy")."""
    return bool(drug_words().get(word)) or (len(word) >= 6 and word.endswith(_CLINICAL_ENDINGS))


def rare_unknown(word: str, max_zipf: float = 1.8) -> bool:
    """A lower-case word of 4+ letters almost never seen in English and not clinical
    vocabulary: in a note that is mostly a surname or a place name ("brazzolini")."""
    return (
        len(word) >= 4
        and word.isalpha()
        and zipf(word) < max_zipf
        and first_names().get(word, 0.0) == 0.0
        and not clinical_word(word)
    )


def may_slip_common(word: str) -> bool:
    """Could one typing slip (a letter dropped, added or swapped) make ``word`` a common
    English word? Not when it is longer than any by two letters or more: the slip tests
    (``near_english``, ``slips``) build a variant per letter, quadratic in the word's length."""
    return len(word) <= _english().longest + 1


def slips(word: str) -> set[str]:
    """The forms of ``word`` with one typing slip: a letter dropped (not the first) or two
    neighbours swapped ("daugher", "husabnd"). Callers drop the forms that are English words."""
    out = {word[:i] + word[i + 1 :] for i in range(1, len(word))}
    out |= {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(1, len(word) - 1)}
    out.discard(word)
    return out


def near_english(word: str) -> bool:
    """A lower-case word one typing slip (a letter dropped or added) away from a common English
    word: "notifed", "awating", "dertermine" — typos, not names. A letter dropped is some 26
    variants a letter to look up, a compiled filter asked first (``slips``): rare words only,
    a memo saved under 1 % (bench/README.md, "Memos"). The variants are looked up in wordfreq
    directly (no index kept: a 100k-entry index of variants slowed every note through the
    garbage collector)."""
    if len(word) < 4 or not may_slip_common(word):
        return False
    english = _english().common  # every word of Zipf >= _COMMON_ZIPF
    if english.get(word, 0.0) >= _COMMON_ZIPF:
        return True
    for i in range(len(word) if len(word) > 4 else 0):  # a letter added ("dertermine")
        if english.get(word[:i] + word[i + 1 :], 0.0) >= _COMMON_ZIPF:
            return True
    return letter_dropped(word, english, _COMMON_ZIPF)  # a letter dropped (not the first)


def warm() -> None:
    """Load every lexicon now (a service calls this at start-up instead of on the first note)."""
    drug_words()
    first_names()
    last_names()
    _english()
    us_states()
    us_cities()
    countries()
