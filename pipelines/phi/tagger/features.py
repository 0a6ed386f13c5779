"""Tokens and their features for the learned tagger.

Every feature is a string (crfsuite's binary attributes). A note's rows are handed to
crfsuite packed: each attribute as the record crfsuite holds (its id in the model, value 1.0;
``crf.ATTRIBUTE``), a row its records end to end (``Attributes``). What a word *is* (its
shape, case, affixes, lexicon membership) is computed once per distinct word and kept, packed,
in a bounded memo; what surrounds it (neighbours' words and classes, gazetteer phrases, line position) is
added per note. Lexicons come from packages (census names, wordfreq, zipcodes, us, pycountry,
drug names) and from the facility gazetteer shipped in ``pipelines/phi/data/hospitals.txt``.
Cue words are written by hand from knowledge of how notes name people and places (titles,
credentials, kinship, movement words): they are general English, not corpus strings.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from itertools import accumulate, chain, compress, count, pairwise, repeat
from operator import floordiv, itemgetter
from typing import Final, TypeVar

from pipelines import compiled
from pipelines.memo import Memo
from pipelines.phi import lexicons
from pipelines.phi.lexicons import Case
from pipelines.phi.tagger.bounds import BEGIN, END
from pipelines.phi.tagger.crf import ATTRIBUTE
from pipelines.phi.tagger.extras import _extras, _marked_words, _plan
from pipelines.phi.tagger.gazetteers import Gazetteer as Gazetteer
from pipelines.phi.tagger.gazetteers import _any_first_word as _any_first_word
from pipelines.phi.tagger.gazetteers import cities as cities
from pipelines.phi.tagger.gazetteers import facilities as facilities
from pipelines.phi.tagger.gazetteers import facility_core as facility_core
from pipelines.phi.tagger.gazetteers import facility_cores as facility_cores
from pipelines.phi.tagger.gazetteers import facility_names as facility_names
from pipelines.phi.wordlists import word_set

# a word (letters, inner apostrophes), a run of digits, or any other single visible
# character: the text's one tokenization, shared with the rules (``lexicons.token_columns``)
_TOKEN: Final = lexicons.TOKEN
_ASCII_TOKEN: Final = lexicons.ASCII_TOKEN

T = TypeVar("T")

_MEMO_LIMIT: Final = 300_000
_CONTEXT: Final = (-2, -1, 1, 2)
_CONTEXT_PREFIXES: Final = tuple(str(o) for o in _CONTEXT)


# Cue words by class. General knowledge of clinical writing, not taken from any corpus.
CUES: Final[dict[str, frozenset[str]]] = {
    "title": word_set("tagger_cues_title"),
    "cred": word_set("tagger_cues_credential"),
    "kin": word_set("tagger_cues_kin"),
    "staff": word_set("tagger_cues_staff"),
    "prep": frozenset({"in", "at", "from", "to", "of", "near", "via", "into"}),
    "move": word_set("tagger_cues_move"),
    "head": word_set("tagger_cues_facility_head"),
    "place": word_set("tagger_cues_place"),
    "id": word_set("tagger_cues_identifier") | {"#"},
    "age": frozenset({"age", "aged", "yo", "y/o", "year", "years", "yr", "old"}),
}
# Parts of a building: no one's address on their own ("the West Wing", "North Tower"). Used
# by the recognizer's post-filter, not as a feature.
BUILDING_PARTS: Final = word_set("building_parts")
_KIN: Final = CUES["kin"]
_MONTHS: Final = word_set("tagger_months")
_WEEKDAYS: Final = word_set("tagger_weekdays")
_GENERIC_HEADS: Final = word_set("tagger_facility_generic_words")


# A token of the tagger: (start, end, text). Plain tuples: a note has hundreds of them.
Tok = tuple[int, int, str]


def tokenize(text: str) -> list[Tok]:
    return list(zip(*token_columns(text), strict=True))


def token_columns(text: str) -> tuple[list[int], list[int], list[str]]:
    """The tokens' starts, ends and texts, column by column (no tuple per token); a
    recognizer takes them from the analysed document instead (``lexicons.tokens``)."""
    return lexicons.token_columns(text)


# Where the CRF looks (``Featurizer.items``). A name or a place in a note written in mixed
# case is capitalised; a word in lower case there, or any word of a one-case note, that is
# common English (Zipf >= this), used more as a word than as a name, and no word of a
# facility or city name, is context for its neighbours but never labelled itself. About
# half the words of a clinical note are such; labelling them cost half the tagger's time.
ITEM_MIN_ZIPF: Final = 3.5
# Function words ("of", "the") occur in facility names but are context all the same: the
# tagger joins the two sides of them (``model.CONNECTORS``).
_PLACE_WORD_MAX_ZIPF: Final = 6.0


@cache
def _place_words() -> frozenset[str]:
    words = facilities().words | CUES["head"] | lexicons.city_first_words()
    return frozenset(w for w in words if lexicons.common_zipf(w) < _PLACE_WORD_MAX_ZIPF)


def may_be_phi(word: str, case: Case) -> bool:
    """Whether the CRF labels ``word`` (see ``ITEM_MIN_ZIPF``)."""
    if not word[0].isalpha():
        return False
    if case is Case.MIXED and not word.islower():
        return True  # capitals tell something
    low = word.lower()
    return (
        lexicons.zipf(low) < ITEM_MIN_ZIPF
        or lexicons.name_score(low) >= 0.0
        or low in _place_words()
    )


def _bucket(value: float, edges: tuple[float, ...]) -> int:
    """The index of the first of the (sorted) ``edges`` above ``value``; ``len(edges)``
    when none is."""
    return bisect.bisect_right(edges, value)


def _shape(word: str) -> str:
    if word.isalpha() and word.isascii():  # most words: one of three shapes
        if word.islower():
            return "x"
        if word.isupper():
            return "X"
        if word[0].isupper() and word[1:].islower():
            return "Xx"
    out: list[str] = []
    for ch in word:
        c = "X" if ch.isupper() else "x" if ch.isalpha() else "d" if ch.isdigit() else ch
        if not out or out[-1] != c:
            out.append(c)
    return "".join(out)[:6]


# --------------------------------------------------------------------------- gazetteers


def _number_features(word: str) -> list[str]:
    n = len(word)
    out = [f"nd={min(n, 6)}"]
    value = int(word) if n <= 6 else -1
    if 0 < value <= 12:
        out.append("n<=12")
    elif 12 < value <= 31:
        out.append("n<=31")
    if n == 4 and 1900 <= value <= 2099:
        out.append("n=yr")
    if 90 <= value <= 125:
        out.append("n=old")
    return out


# The bucketed features, made once: the bucket of a value is its index
_FN_EDGES: Final = (0.005, 0.05, 0.3)
_FN: Final = tuple(f"fn={i}" for i in range(len(_FN_EDGES) + 1))
_LN_EDGES: Final = (0.001, 0.01, 0.1)
_LN: Final = tuple(f"ln={i}" for i in range(len(_LN_EDGES) + 1))
_ZF_EDGES: Final = (1.0, 2.0, 3.0, 4.0, 5.0)
_ZF: Final = tuple(f"zf={i}" for i in range(len(_ZF_EDGES) + 1))
_NS_EDGES: Final = (-2.0, -1.0, 0.0, 1.0)
_NS: Final = tuple(f"ns={i}" for i in range(len(_NS_EDGES) + 1))
# ``len=`` by the word's length: 9 letters and more are the last bucket
_LEN: Final = tuple(f"len={_bucket(n, (2, 3, 4, 6, 9))}" for n in range(10))


def _lexical(low: str) -> tuple[tuple[str, ...], bool]:
    """What the lexicons say of a lower-case word: its features, and whether ``may_be_phi``
    takes it in a note where its case tells nothing (rare, a name, or a place word), each
    lexicon asked once."""
    zipf = lexicons.zipf(low)
    out, score = _census(low, zipf)
    if low in lexicons.us_cities():
        out.append("city")
    if low in lexicons.city_first_words():
        out.append("city1")
    if low in lexicons.us_states():
        out.append("state")
    if low in lexicons.countries():
        out.append("country")
    if low in facilities().words and low not in _GENERIC_HEADS:
        out.append("facw")
    if low in _MONTHS:
        out.append("month")
    if low in _WEEKDAYS:
        out.append("wday")
    if len(low) >= 4 and lexicons.clinical_word(low):
        out.append("clin")
    item = zipf < ITEM_MIN_ZIPF or score >= 0.0 or low in _place_words()
    return tuple(out), item


def _census(low: str, zipf: float) -> tuple[list[str], float]:
    """A word's census and frequency features (``zipf``: its Zipf frequency), and its
    ``lexicons.name_score`` from the shares read for them."""
    out: list[str] = []
    plain = lexicons.folded(low)  # the census lists write names in ASCII
    first = lexicons.first_names().get(plain, 0.0)
    last = lexicons.last_names().get(plain, 0.0)
    if first:
        out.append(_FN[bisect.bisect_right(_FN_EDGES, first)])
    if last:
        out.append(_LN[bisect.bisect_right(_LN_EDGES, last)])
    out.append(_ZF[bisect.bisect_right(_ZF_EDGES, zipf)])
    if first or last:
        score = lexicons.listed_name_score(plain, max(first, last))
        out.append(_NS[bisect.bisect_right(_NS_EDGES, score)])
    elif "'" in plain or "’" in plain:  # "o'donnell" is listed as "odonnell"
        score = lexicons.name_score(low)
    else:
        score = lexicons.UNLISTED_SCORE
    return out, score


# a word's lexicon facts, per lower-case word: a note's "Smith", "SMITH" and "smith", and
# the same word in notes of each case, ask them once
_LEXICAL: Final = Memo("tagger.lexicon", _lexical, _MEMO_LIMIT)


def _word_facts(word: str, case: Case) -> tuple[tuple[str, ...], str, bool]:
    """What a word is, alone (computed once per (word, note case)), its lower-case form,
    and whether the CRF labels it (``may_be_phi``). Its case (``c=``) in a note read as
    mixed case (``Case.of_words``: a lower-case note whose capitals are common is); in one
    case, none."""
    low = word.lower()
    out = [f"w={low}" if len(low) <= 24 else "w=<long>", f"sh={_shape(word)}"]
    if word.isalpha() or "'" in word or "’" in word:
        out += (f"p2={low[:2]}", f"p3={low[:3]}", f"s2={low[-2:]}", f"s3={low[-3:]}")
        out.append(_LEN[min(len(word), 9)])
        if case is Case.MIXED:
            out.append(_case_feature(word))
        lexical, item = _LEXICAL(low)
        out += lexical
        # may_be_phi, the lexicons asked above
        if not word[0].isalpha():
            item = False
        elif case is Case.MIXED and not word.islower():
            item = True  # capitals tell something
    else:
        if word.isdecimal():  # int() reads every decimal digit; "²" is a digit, not decimal
            out += _number_features(word)
        item = may_be_phi(word, case)
    out += _cue_features().get(low, ())
    return tuple(out), low, item


def _case_feature(word: str) -> str:
    if word.isupper():
        return "c=U"
    if word[0].isupper() and word[1:].islower():
        return "c=T"
    return "c=L" if word.islower() else "c=M"


@cache
def _cue_features() -> dict[str, tuple[str, ...]]:
    """Word -> its ``cue=`` features (one dict lookup instead of one per cue class)."""
    out: dict[str, tuple[str, ...]] = {}
    for cls, words in CUES.items():
        for word in words:
            out[word] = (*out.get(word, ()), f"cue={cls}")
    return out


# The few features of a word its neighbours see (a subset of ``_word_facts``).
_CONTEXT_KEEP: Final = ("w=", "c=", "cue=", "fn=", "ln=", "month", "city", "state", "facw", "sh=")


class Attributes:
    """Attribute strings and the ids crfsuite knows them by, and rows packed with them.

    ``ids``: a model's attributes (``crf.CrfModel.attribute_ids``); the others carry no
    weight and are dropped when a row is packed. ``None``: every attribute, numbered as first
    made (training and tests read rows back as strings with ``names``).
    """

    def __init__(self, ids: Mapping[str, int] | None = None) -> None:
        self.open = ids is None
        self._ids: dict[str, int] = dict(ids or {})
        self._names: dict[int, str] = {i: a for a, i in self._ids.items()}
        # a closed set's records, made once: a row is then packed by lookups in C
        self._records = {a: _pack(i, 1.0) for a, i in self._ids.items()}

    def __contains__(self, attribute: str) -> bool:
        return self.open or attribute in self._ids

    def _id(self, attribute: str) -> int:
        found = self._ids.get(attribute)
        if found is None:  # only when open: a known model's others are filtered before
            found = self._ids[attribute] = len(self._ids)
            self._names[found] = attribute
        return found

    def pack(self, attributes: Iterable[str]) -> bytes:
        """The kept ``attributes``' records end to end, in their order."""
        if self.open:
            return b"".join([_pack(self._id(a), 1.0) for a in attributes])
        return b"".join(filter(None, map(self._records.get, attributes)))

    def word_ids(self, prefixes: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
        """A closed set's ids of each feature of a word: its own, then that of the attribute
        ``{prefix}{feature}`` for each of ``prefixes`` where the feature is one a neighbour
        sees (``_CONTEXT_KEEP``); -1 where an attribute is not kept. Listed: the features
        kept one way or another."""
        tables = [self._ids]
        for prefix in prefixes:
            tables.append(
                {
                    a[len(prefix) :]: i
                    for a, i in self._ids.items()
                    if a.startswith(prefix) and a[len(prefix) :].startswith(_CONTEXT_KEEP)
                }
            )
        return {
            feature: tuple(table.get(feature, -1) for table in tables)
            for feature in set().union(*tables)
        }

    def ids(self, attributes: Iterable[str]) -> list[int]:
        """The kept ``attributes``' ids, in their order (numbered as first met when open)."""
        if self.open:
            return [self._id(a) for a in attributes]
        return [i for i in map(self._ids.get, attributes) if i is not None]

    def kept(self) -> list[str]:
        """The attributes a closed set keeps (none listed when open)."""
        return list(self._ids)

    def one(self, attribute: str) -> bytes:
        """One attribute's record (the caller tested it is kept)."""
        return _pack(self._id(attribute), 1.0)

    def names(self, row: bytes) -> list[str]:
        """A packed row read back as attribute strings."""
        return [self._names[i] for i, _ in ATTRIBUTE.iter_unpack(row)]


_pack: Final = ATTRIBUTE.pack
_RECORD: Final = ATTRIBUTE.size


class Featurizer:
    """Turns a note into one packed feature row per item (bounded memo per distinct word).

    ``keep``: the attributes a trained model knows, with their ids (a mapping) or without (a
    set: numbered here). Others carry no weight, so they are dropped when first made (per
    distinct word), not looked up by crfsuite every time. Training passes ``None`` (every
    attribute is a candidate).
    """

    def __init__(self, keep: Mapping[str, int] | Collection[str] | None = None) -> None:
        if keep is not None and not isinstance(keep, Mapping):
            keep = {a: i for i, a in enumerate(sorted(keep))}
        self.attributes = Attributes(keep)
        # a word's facts tell mixed case from one case only (``_word_facts``): one memo each
        mixed = Memo("tagger.words", partial(self._made, Case.MIXED), _MEMO_LIMIT)
        one_case = Memo("tagger.words", partial(self._made, Case.UPPER), _MEMO_LIMIT)
        self._words = {Case.MIXED: mixed, Case.LOWER: one_case, Case.UPPER: one_case}
        pads = [self.attributes.ids(p) for p in _PAD]
        # a closed set: a feature -> its own id and what a neighbour at each offset sees of
        # it (``_CONTEXT_KEEP``); None: every attribute (training)
        self._word_ids = (
            None if self.attributes.open else self.attributes.word_ids(_CONTEXT_PREFIXES)
        )
        self._pad: _Entry = _entry([[], *pads], "", False)  # beyond either end of the note
        self._template = _pack(0, 1.0)  # a record: its id is written over the first bytes
        self._pairs = (
            None
            if self.attributes.open
            else (_pairs(self.attributes, "bl="), _pairs(self.attributes, "br="))
        )
        self._plan = _plan(self.attributes)
        # the pairs as first word -> second word -> record (``_rows_c.rows``)
        self._nested_pairs = (
            None if self._pairs is None else (_nested(self._pairs[0]), _nested(self._pairs[1]))
        )

    def warm(self) -> None:
        lexicons.warm()
        facilities()
        facility_cores()
        cities()
        _place_words()
        _marked_words()

    def items(self, text: str, tokens: list[Tok], case: Case | None = None) -> list[int]:
        """Indices of the tokens the CRF labels (``may_be_phi``; memo per distinct word)."""
        if case is None:
            case = lexicons.words_case_of(text)
        return _items(self._entries([t[2] for t in tokens], case))

    def features(
        self,
        text: str,
        tokens: list[Tok],
        items: list[int] | None = None,
        case: Case | None = None,
    ) -> list[list[str]]:
        """Feature rows of the tokens at ``items`` (default: every token); every token is
        context for its neighbours. ``case``: ``lexicons.words_case_of(text)``, when known."""
        if items is None:
            items = list(range(len(tokens)))
        if case is None:
            case = lexicons.words_case_of(text)
        entries = self._entries([t[2] for t in tokens], case)
        lowers = list(map(_lower, entries))
        rows = self._rows(text, [t[0] for t in tokens], entries, lowers, items)
        return list(map(self.attributes.names, rows.each()))

    def encode(self, text: str, starts: list[int], words: list[str], case: Case) -> Encoded:
        """``items`` and ``features`` in one pass over the columns of ``token_columns``."""
        entries = self._entries(words, case)
        fast = compiled.helper("rows")
        if fast is not None:  # ``_items`` and the lower cases in one C loop
            items, lowers = fast.scan(entries)
        else:
            items, lowers = _items(entries), list(map(_lower, entries))
        rows = self._rows(text, starts, entries, lowers, items) if items else Rows(b"", [])
        return Encoded(items, rows, lowers)

    def word(self, word: str, case: Case) -> _Entry:
        """What ``word`` is (its own features, whether the CRF labels it) and what tokens
        at each offset of ``_CONTEXT`` see of it (a subset, prefixed by the offset); memo
        per distinct word."""
        return self._words[case](word)

    def _made(self, case: Case, word: str) -> _Entry:
        """:meth:`word` worked out."""
        features, low, item = _word_facts(word, case)
        table = self._word_ids
        if table is None:  # every attribute, numbered as first made: what neighbours see first
            ids = self.attributes.ids
            seen = [f for f in features if f.startswith(_CONTEXT_KEEP)]
            kinds = [ids(features), *(ids([p + f for f in seen]) for p in _CONTEXT_PREFIXES)]
            return _entry(kinds, low, item)
        fast = compiled.helper("words")
        if fast is not None:  # the lines below, compiled
            return fast.entry(features, table, low, item)
        found = list(filter(None, map(table.get, features)))  # each kept feature's ids
        columns = zip(*found, strict=True) if found else repeat((), _KINDS)
        return _entry([[i for i in column if i >= 0] for column in columns], low, item)

    def _entries(self, words: list[str], case: Case) -> list[_Entry]:
        return self._words[case].many(words)

    def _rows(
        self,
        text: str,
        starts: list[int],
        entries: list[_Entry],
        lowers: list[str],
        items: list[int],
    ) -> Rows:
        """The items' rows, built column by column in C (no Python step per item): a row
        is its word's own records, what its neighbours at -2, -1, +1, +2 show of
        themselves, its word pairs, and its ``_extras``, in that order."""
        extras = _extras(text, starts, lowers, self._plan)
        fast, nested = compiled.helper("rows"), self._nested_pairs
        if fast is not None and nested is not None:  # one C loop: the records into one buffer
            bl, br = nested
            packed, counts = fast.rows(
                entries, items, lowers, self._pad, bl, br, extras, self._template
            )
            return Rows(packed, counts)
        pick = _picker(items)
        # padded[k + 2] is token k's records by kind; two sentinels either side stand for
        # beyond the note
        pad = _records(self._pad)
        padded = [pad, pad, *map(_records, entries), pad, pad]
        left = [BEGIN, *lowers, END]  # left[k + 1] is token k
        before, low, after = pick(left), pick(left[1:]), pick(left[2:])
        columns = (
            map(_own, pick(padded[2:])),
            map(_seen[0], pick(padded)),  # token i sees offset -2 of token i-2, …
            map(_seen[1], pick(padded[1:])),
            map(_seen[2], pick(padded[3:])),
            map(_seen[3], pick(padded[4:])),
            self._pair_column(0, before, low),
            self._pair_column(1, low, after),
            map(extras.get, items, repeat(b"")),
        )
        rows = list(map(b"".join, zip(*columns, strict=True)))
        return Rows(b"".join(rows), list(map(floordiv, map(len, rows), repeat(_RECORD))))

    def _pair_column(
        self, side: int, first: Sequence[str], second: Sequence[str]
    ) -> Iterable[bytes]:
        """Each item's word-pair record (``bl=`` its word and the one before, ``br=`` it and
        the one after), or nothing where the model does not know the pair."""
        if self._pairs is None:  # every attribute (training): every pair
            prefix = _PAIR_PREFIXES[side]
            one = self.attributes.one
            return [one(f"{prefix}{a}|{b}") for a, b in zip(first, second, strict=True)]
        return map(self._pairs[side].get, zip(first, second, strict=True), repeat(b""))


def _picker(items: list[int]) -> Callable[[Sequence[T]], Sequence[T]]:
    """The elements at ``items`` of a sequence, in one C call (a tuple even for one)."""
    if not items:
        return lambda seq: ()
    if len(items) == 1:
        only = items[0]
        return lambda seq: (seq[only],)
    return itemgetter(*items)


def _items(entries: list[_Entry]) -> list[int]:
    return list(compress(count(), map(_item, entries)))


def _pairs(attributes: Attributes, prefix: str) -> dict[tuple[str, str], bytes]:
    """(first word, second word) -> the record of the kept word-pair attribute
    ``{prefix}{first}|{second}``; every split at a bar is listed ("|" is a token too)."""
    found: dict[tuple[str, str], bytes] = {}
    for attribute in attributes.kept():
        if attribute.startswith(prefix):
            pair = attribute.removeprefix(prefix)
            for j, c in enumerate(pair):
                if c == "|":
                    found[pair[:j], pair[j + 1 :]] = attributes.one(attribute)
    return found


def _nested(pairs: dict[tuple[str, str], bytes]) -> dict[str, dict[str, bytes]]:
    nested: dict[str, dict[str, bytes]] = {}
    for (first, second), record in pairs.items():
        nested.setdefault(first, {})[second] = record
    return nested


_PAIR_PREFIXES: Final = ("bl=", "br=")


# What a word is (``Featurizer.word``) as the memo keeps it: a plain tuple of three fields
# (``_FIELDS``) the rows read by index in C. Not a tuple subclass: the garbage collector stops
# tracking a plain tuple of bytes, a string and a bool, where a subclass's stays tracked,
# walked by every full collection while remembered. The ids are one object, and four bytes an
# attribute where its record is sixteen: a note's rows touch a few cache lines per word.
_Entry = tuple[bytes, str, bool]
# its ids (``_entry``); its lower case; ``may_be_phi`` (the CRF labels it)
_FIELDS: Final = ("ids", "lower", "item")
_KINDS: Final = 5  # its own, then what the tokens at offsets -2, -1, +1, +2 see of it


def _entry(kinds: Sequence[Sequence[int]], low: str, item: bool) -> _Entry:
    """An entry from the attribute ids of each kind (its own, then those seen at the offsets
    of ``_CONTEXT``): where the first four kinds end among the ids, then the ids in order,
    all native ints."""
    ends = accumulate(map(len, kinds[: _KINDS - 1]))
    ids = array("i", [*ends, *chain.from_iterable(kinds)])
    return (ids.tobytes(), low, item)


def _kinds(entry: _Entry) -> list[array[int]]:
    """An entry's ids by kind (``_entry`` read back)."""
    ids = array("i")
    ids.frombytes(entry[0])
    head = _KINDS - 1
    bounds = [head, *(head + end for end in ids[:head]), len(ids)]
    return [ids[a:b] for a, b in pairwise(bounds)]


def _records(entry: _Entry) -> tuple[bytes, ...]:
    """An entry's records by kind, packed (``Attributes``): what the rows join."""
    return tuple(b"".join(map(_pack, ids, repeat(1.0))) for ids in _kinds(entry))


@dataclass(frozen=True, slots=True)
class Rows:
    """Feature rows packed end to end (``Attributes``), and the number of records of each."""

    packed: bytes
    counts: list[int]

    def each(self) -> list[bytes]:
        """The rows one by one."""
        ends = accumulate(count * _RECORD for count in self.counts)
        return [
            bytes(self.packed[end - count * _RECORD : end])
            for count, end in zip(self.counts, ends, strict=True)
        ]


@dataclass(frozen=True, slots=True)
class Encoded:
    """A note for the CRF: the indices of the tokens it labels, their feature rows, and
    every token lower-cased."""

    items: list[int]
    rows: Rows
    lowers: list[str]


_PAD: Final = tuple((f"{o}pad",) for o in _CONTEXT)
_field: Final = _FIELDS.index
# an entry's records by kind (``_records``): its own, then seen at -2, -1, +1, +2
_own: Final = itemgetter(0)
_seen: Final = tuple(itemgetter(k) for k in range(1, _KINDS))
_lower: Final = itemgetter(_field("lower"))
_item: Final = itemgetter(_field("item"))
