"""Lexicons: loaded from packages, lazily and once; frequency facts the rules rely on."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi import lexicons as lx
from pipelines.phi.base import Doc


def test_census_names_are_loaded_from_the_names_package() -> None:
    assert lx.is_first_name("mary") and lx.is_first_name("james")
    assert lx.is_last_name("smith") and not lx.is_first_name("smith")
    assert len(lx.first_names()) > 5000 and len(lx.last_names()) > 80000


def test_name_score_separates_names_from_english_words() -> None:
    assert lx.name_score("smith") > 1.5
    assert lx.name_score("will") < 0 and lx.name_score("patient") < 0
    assert lx.name_score("o'donnell") > 0  # listed without the apostrophe
    assert lx.name_score("zzqx") == -9.0


def test_english_frequency() -> None:
    assert lx.zipf("the") > 7 > lx.zipf("patient") > lx.zipf("kerlix")
    assert lx.zipf("notawordatall") == 0.0


def test_places() -> None:
    assert "baltimore" in lx.us_cities() and "silver spring" in lx.us_cities()
    assert "silver" in lx.city_first_words()
    assert lx.us_states()["maryland"] == "MD" and lx.us_states()["md"] == "MD"
    assert "italy" in lx.countries()


def test_lexicons_are_cached_objects() -> None:
    assert lx.first_names() is lx.first_names()
    assert lx.us_cities() is lx.us_cities()


def test_importing_loads_nothing() -> None:
    code = (
        "import sys, pipelines.phi.lexicons as lx, pipelines.phi.recognizers.names, "
        "pipelines.phi.recognizers.locations, pipelines.phi.recognizers.known;"
        "print(lx.first_names.cache_info().currsize, 'wordfreq' in sys.modules, "
        "'zipcodes' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "False", "False"]


def test_tokens_are_shared_through_the_doc_cache() -> None:
    doc = Doc("Dr. O'Donnell saw pt-x")
    first = lx.tokens(doc)
    assert lx.tokens(doc) is first
    assert [t.text for t in first.words] == ["Dr", "O'Donnell", "saw", "pt", "x"]


def test_one_case_notes_are_recognised() -> None:
    assert not lx.tokens(Doc("PT RESTING IN BED, WIFE AT BEDSIDE.")).mixed_case
    assert not lx.tokens(Doc("pt resting in bed, wife at bedside.")).mixed_case
    assert lx.tokens(Doc("Pt resting in bed, wife Mary at bedside.")).mixed_case


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_tokens_are_words_of_the_text(text: str) -> None:
    for tok in lx.tokens(Doc(text)).words:
        assert text[tok.start : tok.end] == tok.text and tok.lower == tok.text.lower()


def _words(text: str) -> list[re.Match[str]]:
    """The words, written plainly: the tokens that start with a letter, in any script
    ("José", "Núñez"; a word is letters, maybe joined by an apostrophe: "O'Neil", "pt's";
    hyphens split words)."""
    return [m for m in lx.TOKEN.finditer(text) if m.group()[0].isalpha()]


def _reference_tokens(text: str) -> list[tuple[int, int, str, str]]:
    """The tokenizer's contract written plainly: the words, each lower-cased alone."""
    return [(m.start(), m.end(), m.group(), m.group().lower()) for m in _words(text)]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="abXY '’-.\n19İKéß", max_size=40) | st.text(max_size=80))
def test_token_columns_match_the_plain_tokenizer(text: str) -> None:
    toks = lx.tokens(Doc(text))
    assert [tuple(t) for t in toks.words] == _reference_tokens(text)
    assert toks.texts == tuple(t.text for t in toks.words)
    assert toks.lowers == tuple(t.lower for t in toks.words)
    assert toks.lower_set == frozenset(toks.lowers)


def test_decomposed_accents_stay_inside_their_word() -> None:
    """NFD text ("Jose" + U+0301): each combining mark belongs to the word before it, the
    offsets are the original text's, a Title-case word stays Title case and the census
    look-ups see the plain letters."""
    text = "Dr. Jose\u0301 Nu\u0303n\u0303ez, O\u0301\u2019Brien 42"
    words = lx.tokens(Doc(text)).words
    assert [w.text for w in words] == [
        "Dr",
        "Jose\u0301",
        "Nu\u0303n\u0303ez",
        "O\u0301\u2019Brien",
    ]
    assert all(text[w.start : w.end] == w.text for w in words)
    assert lx.is_title("N\u0303u\u0301nez") and not lx.is_title("N\u0303U")
    assert lx.folded("jose\u0301") == "jose" and lx.is_first_name("jose\u0301")


def test_clinical_words_from_the_drug_dictionary_and_morphology() -> None:
    assert lx.clinical_word("zosyn") and lx.clinical_word("lasix")  # brands, listed
    assert lx.clinical_word("vanco")  # a listed drug's head, as notes shorten it
    assert lx.clinical_word("pancreatitis") and lx.clinical_word("thoracotomy")  # suffixes
    assert not lx.clinical_word("smith") and not lx.clinical_word("quellamott")


def test_rare_unknown_and_typos() -> None:
    assert lx.rare_unknown("quellamott") and not lx.rare_unknown("patient")
    assert not lx.rare_unknown("levophed")  # a drug
    assert not lx.rare_unknown("robert")  # a first name is judged as a name, not as rare
    assert lx.near_english("notifed") and lx.near_english("dertermine")
    assert lx.near_english("patient")
    assert not lx.near_english("quellamott")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz'", min_size=0, max_size=14))
def test_word_judgments_never_raise_and_agree(word: str) -> None:
    for slip in lx.slips(word):
        assert slip != word and len(slip) in {len(word), len(word) - 1}
    assert isinstance(lx.near_english(word), bool)
    if lx.rare_unknown(word):
        assert not lx.clinical_word(word) and len(word) >= 4 and word.isalpha()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="aBcD'’xY", min_size=1, max_size=6))
def test_title_case_memo_and_the_token_property_agree_with_the_rule(word: str) -> None:
    title = word[0].isupper() and word[1:2].islower()  # "Smith", "McDonald"; not "SMITH"
    assert lx.is_title(word) == title
    assert lx.Token(0, len(word), word, word.lower()).is_title == title


def _reference_case(text: str) -> tuple[bool, bool]:
    """``mixed_case`` and ``lower_note`` written plainly: both counts, then the 85% rule; a
    lower-case note has most of its first 40 longer words (all of a shorter text's) lower."""
    longer = [m.group() for m in _words(text) if len(m.group()) > 1]
    n = len(longer) or 1
    upper = sum(t.isupper() for t in longer)
    lower = sum(t.islower() for t in longer)
    mixed = upper / n < 0.85 and lower / n < 0.85
    first = longer[:40]
    return mixed, not mixed and 2 * sum(t.islower() for t in first) > len(first)


@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(["AB", "ab", "Ab", "aB", "A", "a", "o'Ne", "É", "12"]), max_size=60),
    st.integers(0, 60),
    st.integers(0, 60),
)
def test_the_case_census_matches_the_plain_rule(words: list[str], lowers: int, uppers: int) -> None:
    # many same-case words push the shares around the 85% line from both sides
    text = " ".join(words + ["ab"] * lowers + ["AB"] * uppers)
    toks = lx.tokens(Doc(text))
    assert (toks.mixed_case, toks.lower_note) == _reference_case(text)


def test_a_short_lower_case_text_is_a_lower_note() -> None:
    # a one-line query: its few capitals are signals, as in a long lower-case note
    toks = lx.tokens(Doc("a 61-year-old man, Abel Q., asks about his meds."))
    assert (toks.mixed_case, toks.lower_note) == (False, True)
    toks = lx.tokens(Doc("A 61-YEAR-OLD MAN ASKS ABOUT HIS MEDS."))
    assert (toks.mixed_case, toks.lower_note) == (False, False)


@pytest.mark.parametrize("lowers, uppers", [(17, 3), (3, 17), (16, 4), (4, 16), (16, 3), (3, 16)])
def test_the_case_census_at_the_85_percent_line(lowers: int, uppers: int) -> None:
    text = " ".join(["ab"] * lowers + ["AB"] * uppers)  # 17 of 20: exactly 85%
    toks = lx.tokens(Doc(text))
    assert (toks.mixed_case, toks.lower_note) == _reference_case(text)


def test_words_whose_hashes_coincide_are_kept_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two words with one hash cannot be told apart in the arrays of ``HashedWords`` (the
    census surnames, the drug names): both go to the dict with their own values (``hash``
    is the builtin everywhere but here)."""
    from surrogates import wordtable

    one, other = "kerlixes", "quellamotts"
    fake = lambda w: 7 if w in (one, other) else len(w)  # noqa: E731
    monkeypatch.setattr(wordtable, "hash", fake, raising=False)
    words = wordtable.hashed_words([["aaa", one], [other]], (2.5, 1.0))
    assert len(words.hashes) == 1 and set(words.apart) == {one, other}
    assert words.get(one) == 2.5 and words.get(other) == 1.0
    assert words.get("aaa") == 2.5 and words.get("notlisted") == 0.0


def test_the_shipped_english_copy_equals_the_installed_package() -> None:
    """Fails when wordfreq changes its data: run ``python -m pipelines.phi.english_words``."""
    import gzip
    from importlib import resources

    from pipelines.phi import english_words

    shipped = resources.files("pipelines.phi").joinpath("data", english_words.FILENAME)
    assert gzip.decompress(shipped.read_bytes()) == english_words.from_package()


def test_the_shipped_census_copy_equals_the_installed_package() -> None:
    """Fails when the names package changes its data: run ``python -m pipelines.phi.census_words``."""
    import gzip
    from importlib import resources

    from pipelines.phi import census_words

    shipped = resources.files("pipelines.phi").joinpath("data", census_words.FILENAME)
    assert gzip.decompress(shipped.read_bytes()) == census_words.from_package()


def test_the_detector_s_surnames_answer_as_the_surrogates_table() -> None:
    """``last_names`` (the shipped copy) and ``census().last`` (``HashedWords``): the same
    names in the same order, the same figures, 0.0 listed too, and no other name."""
    from surrogates.name_tables import census

    ours, theirs = lx.last_names(), census().last
    names = list(theirs)
    assert list(ours) == names and len(ours) == len(theirs) > 80_000
    assert all(ours[n] == theirs[n] and n in ours for n in names)
    near = ({f"{n}q" for n in names} | {n[1:] for n in names} | {n.upper() for n in names}) - {
        *names
    }
    assert not any(n in ours or ours.get(n) is not None for n in near | {"", " ", "a b"})


def test_the_shipped_drug_copy_equals_the_installed_package() -> None:
    """Fails when the drug package changes its data: run ``python -m pipelines.phi.drugs``."""
    from pipelines.phi import drugs

    assert drugs.shipped() == drugs.from_package()


def test_drug_words_hold_every_variant_and_no_other_word() -> None:
    variants = lx.drug_variants()
    assert len(variants) > 40_000
    assert all(lx.drug_words().get(w) == 1.0 for w in variants)
    absent = ({w + "q" for w in variants} | {w[1:] for w in variants}) - variants
    assert not any(map(lx.drug_words().get, absent))


@settings(max_examples=400, deadline=None)
@given(
    st.text(alphabet="abAB 'é.\n", max_size=80),
    st.sets(st.sampled_from(["a", "b", "ab", "ba", "aa", "bb", "é", "x", "a'b", "abab"])),
    st.booleans(),
)
def test_where_finds_the_words_the_plain_filter_finds(
    text: str, wanted: set[str], as_dict: bool
) -> None:
    from itertools import compress

    toks = lx.tokens(Doc(text))
    asked = dict.fromkeys(wanted, 1) if as_dict else frozenset(wanted)
    plain = list(compress(range(len(toks.lowers)), map(asked.__contains__, toks.lowers)))
    assert lx.where(toks, asked) == plain


def _tokenize_reference(text: str) -> lx.Tokens:
    """``lexicons._tokenize`` written plainly: the words (``_words``, any script), each
    lower-cased alone, and the case counts."""
    found = _words(text)
    starts, ends = [m.start() for m in found], [m.end() for m in found]
    texts = tuple(m.group() for m in found)
    lowers = tuple(map(str.lower, texts))
    words = tuple(lx.Token(*t) for t in zip(starts, ends, texts, lowers, strict=True))
    longer = [t for t in texts if len(t) > 1]
    n = len(longer) or 1
    lower = sum(map(str.islower, longer))
    if lower / n >= 0.85:
        mixed = False
    elif (n - lower) / n < 0.85:
        mixed = True
    else:
        mixed = sum(map(str.isupper, longer)) / n < 0.85
    first = longer[:40]
    lower_note = not mixed and 2 * sum(map(str.islower, first)) > len(first)
    # the capitals of the words starting in the first 2,000 characters: 2 % of their letters
    letters = [c for t, s in zip(texts, starts, strict=True) if s < 2000 for c in t if c.isalpha()]
    capitals = sum(map(str.isupper, letters))
    common = lower_note and (len(letters) < 20 or capitals >= 0.02 * len(letters))
    return lx.Tokens(
        words, mixed, frozenset(lowers), lower_note, texts, lowers, frozenset(texts), common
    )


_CASED_WORDS = st.sampled_from(["a", "I", "pt", "PT", "Pt", "seen", "SEEN", "O'Neil", "x", "İs"])


@settings(max_examples=500, deadline=None)
@given(
    st.one_of(
        st.text(alphabet="abAB 'é’.\n", max_size=120),
        st.lists(_CASED_WORDS, max_size=80).map(" ".join),
    )
)
def test_tokenize_per_distinct_word_agrees_with_the_plain_tokenizer(text: str) -> None:
    """Both ways of asking about the words (each token, each distinct word) give the tokens
    of the former tokenizer, whatever the text's length."""
    expected = _tokenize_reference(text)
    assert lx._tokenize(text) == expected
    threshold = lx._PER_WORD_FROM
    try:
        for per_word_from in (0, 10**9):
            setattr(lx, "_PER_WORD_FROM", per_word_from)  # noqa: B010 - a Final in the module
            assert lx._tokenize(text) == expected
    finally:
        setattr(lx, "_PER_WORD_FROM", threshold)  # noqa: B010


_TOKENISH = st.sampled_from(
    ["Dr.", "O'Neil", "pt's", "3/14/2021", "#48213", "(", "|", "x-ray", "_id", "ab12cd", "'s", "\n"]
)


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.characters(max_codepoint=127), max_size=120)
    | st.lists(_TOKENISH | _CASED_WORDS, max_size=60).map(" ".join)
    | st.text(alphabet="abAB 'é’.\n1İ", max_size=60)
)
def test_one_tokenization_serves_the_rules_and_the_tagger(text: str) -> None:
    """The rules' words are the tokens that start with a letter, and the document's tokens
    are the tagger's own (a word, a run of digits, any other visible character): the tagger
    reads them from the analysed document instead of tokenizing the note again."""
    import re
    from itertools import accumulate

    toks = lx._tokenize(text)
    assert toks == _tokenize_reference(text)
    parts = re.split(r"([^\W\d_]+(?:['’][^\W\d_]+)*|\d+|[^\s])", text)
    offsets = list(accumulate(map(len, parts)))
    assert toks.columns == (offsets[0:-1:2], offsets[1::2], parts[1::2])


@pytest.mark.parametrize("bound", [3.3, 4.5, 6.0])
def test_common_zipf_compares_as_zipf_against_a_bound_of_common_words(bound: float) -> None:
    words = [w for bucket in lx._english_buckets()[::7] for w in bucket[::5]]  # noqa: SLF001
    words += [f"{w}q" for w in words[::3]] + ["", "zzqx", "the", "naïve"]
    assert all((lx.zipf(w) < bound) == (lx.common_zipf(w) < bound) for w in words)
    assert all((lx.zipf(w) > bound) == (lx.common_zipf(w) > bound) for w in words)
