"""The learned tagger: features, training round trip, tagging, uniting with the rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.corpus import Note, load_gold, read_notes
from pipelines.phi.combine import unite
from pipelines.phi.lexicons import Case
from pipelines.phi.merge import merge_spans
from pipelines.phi.tagger.augment import Example, Phrase, augment, augmented
from pipelines.phi.tagger.features import Featurizer, facility_core, may_be_phi, tokenize
from pipelines.phi.tagger.model import Label, Tagger, _breaks, label_of
from pipelines.phi.tagger.train import TrainSettings, examples_from, labelled, train
from pipelines.spans import Category, Span

TINY = TrainSettings(augment=1, seed=3, max_iterations=40, min_feature_freq=1)


@pytest.fixture(scope="module")
def tiny_model(tiny_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    notes = [n for n in read_notes(tiny_corpus / "id.text", "physionet") if isinstance(n, Note)]
    out = tmp_path_factory.mktemp("model") / "tiny.crfsuite"
    train(examples_from(notes, load_gold(tiny_corpus / "id-phi.phrase")), out, TINY)
    return out


def test_tokens_cover_words_digits_and_punctuation() -> None:
    text = "Dr. O'Neil saw pt 3/14."
    assert [t[2] for t in tokenize(text)] == ["Dr", ".", "O'Neil", "saw", "pt", "3", "/", "14", "."]
    assert all(text[s:e] == w for s, e, w in tokenize(text))


def test_features_describe_word_case_lexicons_and_context() -> None:
    text = "Seen by Dr. Smith in Boston today with the family."
    rows = Featurizer().features(text, tokenize(text))
    smith = rows[4]
    assert "w=smith" in smith and "c=T" in smith
    assert any(f.startswith("ln=") for f in smith)  # census surname
    assert "-2w=dr" in smith and "-1w=." in smith and "1w=in" in smith
    assert "city" in rows[6]
    assert "bol" in rows[0] and "bol" not in rows[1]
    assert "bl=dr|smith" not in smith and "bl=.|smith" in smith and "br=smith|in" in smith


def test_features_a_model_does_not_know_are_dropped() -> None:
    text = "Seen by Dr. Smith"
    tokens = tokenize(text)
    full = Featurizer().features(text, tokens)
    kept = Featurizer(keep=frozenset({"w=smith", "-1w=.", "bol"})).features(text, tokens, [0, 4])
    assert kept == [["bol"], ["w=smith", "-1w=."]]
    assert set(kept[1]) < set(full[4])


def test_case_features_are_dropped_in_one_case_notes() -> None:
    text = "SEEN BY DR SMITH TODAY. PLAN TO CONTINUE CURRENT MEDICATIONS AND MONITOR."
    rows = Featurizer().features(text, tokenize(text))
    assert not any(f.startswith("c=") for row in rows for f in row)


@pytest.mark.parametrize("word", ["Smith", "SMITH", "smith", "McDonald", "O'Neil", "48213", "#"])
def test_lower_and_upper_case_notes_read_a_word_alike(word: str) -> None:
    """What a word is tells only mixed case from one case: a lower-case and an upper-case
    note share one word memo (one entry per word, not one per case)."""
    from pipelines.phi.tagger.features import _word_facts

    assert _word_facts(word, Case.LOWER) == _word_facts(word, Case.UPPER)
    featurizer = Featurizer()
    assert featurizer.word(word, Case.LOWER) is featurizer.word(word, Case.UPPER)
    assert featurizer.word(word, Case.MIXED) is not featurizer.word(word, Case.UPPER)


@pytest.mark.parametrize("case", [Case.MIXED, Case.UPPER])
def test_remembered_words_leave_the_garbage_collectors_watch(case: Case) -> None:
    """A word the featurizer remembers is a plain tuple of bytes, strings and a bool: once a
    collection has seen it, the collector stops tracking it, so a warm worker's full
    collections do not walk its thousands of remembered words (a tuple subclass stays
    tracked for as long as the memo keeps it)."""
    import gc

    featurizer = Featurizer()
    words = [featurizer.word(w, case) for w in ("Smith", "clinic", "48213", "O'Neil")]
    gc.collect()
    assert not any(gc.is_tracked(w) for w in words)
    assert featurizer.word("Smith", case) is words[0]


def test_gazetteer_phrase_marks_every_word_of_a_facility() -> None:
    text = "transferred from Mercy Hospital yesterday"
    rows = Featurizer().features(text, tokenize(text))
    assert "gf=B" in rows[2] and "gf=I" in rows[3]
    assert facility_core("Saint Ann Memorial Hospital") == "Saint Ann"


def test_bio_labels_follow_gold_phrases() -> None:
    example = Example("Dr. Ann Lee saw pt", (Phrase(4, 11, Label.NAME),))
    _, labels = labelled(example, Featurizer())
    # words only ("." is context), and not common lower-case words ("saw") in mixed case
    assert labels == ["O", "B-NAME", "I-NAME", "O"]


def test_common_lower_case_words_are_context_not_items() -> None:
    text = "Pt seen by Dr. Ann Lee at the clinic, wife Maple called."
    tokens = tokenize(text)
    labelled_words = {tokens[i][2] for i in Featurizer().items(text, tokens)}
    assert {"Pt", "Dr", "Ann", "Lee", "Maple"} <= labelled_words
    assert not {"seen", "by", "at", "the", "called", "."} & labelled_words
    # in a one-case note case tells nothing: common words are context, names stay items
    upper = text.upper()
    tokens = tokenize(upper)
    labelled_words = {tokens[i][2] for i in Featurizer().items(upper, tokens)}
    assert {"ANN", "LEE", "MAPLE"} <= labelled_words and "THE" not in labelled_words
    # a rare word (an unknown surname, a typo) and a facility word stay items in lower case
    assert may_be_phi("zorbinski", Case.MIXED) and may_be_phi("hospital", Case.MIXED)
    assert not may_be_phi("called", Case.MIXED) and may_be_phi("Called", Case.MIXED)


def test_a_place_runs_on_over_its_connectors_a_name_over_particles() -> None:
    text = "Hospital of the Good Shepherd; Ann de la Cruz and Bo Lee"
    assert not _breaks(text, 8, 16, Label.LOCATION)  # " of the "
    assert _breaks(text, 8, 16, Label.NAME)
    ann = text.index("Ann") + 3
    cruz = text.index("Cruz")
    assert not _breaks(text, ann, cruz, Label.NAME)  # " de la "
    and_at = text.index(" and ")
    assert _breaks(text, and_at, and_at + 5, Label.NAME)  # two people, not one name
    assert _breaks(text, 29, 31, Label.LOCATION)  # a clause mark ends any phrase


def test_gold_categories_map_to_labels() -> None:
    assert label_of("HCPName") is Label.NAME
    assert label_of("DateYear") is Label.DATE
    assert label_of("NAME_PROVIDER") is Label.NAME
    assert label_of("LOCATION_CITY") is Label.LOCATION
    assert label_of("Unheard") is None


def test_augmentation_replaces_every_phrase_and_keeps_offsets_true() -> None:
    import random

    text = "WIFE JANE DOE CALLED FROM SPRINGFIELD ON 3/14"
    example = Example(
        text,
        (Phrase(5, 13, Label.NAME), Phrase(26, 37, Label.LOCATION), Phrase(41, 45, Label.DATE)),
    )
    copy = augment(example, random.Random(1))
    assert copy.text.startswith("WIFE ") and " CALLED FROM " in copy.text
    assert [p.label for p in copy.phrases] == [Label.NAME, Label.LOCATION, Label.DATE]
    assert copy.text[copy.phrases[0].start : copy.phrases[0].end].isupper()
    assert len(augmented([example], 2, seed=5)) == 3
    assert augmented([example], 2, seed=5) == augmented([example], 2, seed=5)


def test_training_is_deterministic(tiny_corpus: Path, tmp_path: Path, tiny_model: Path) -> None:
    notes = [n for n in read_notes(tiny_corpus / "id.text", "physionet") if isinstance(n, Note)]
    again = tmp_path / "again.crfsuite"
    train(examples_from(notes, load_gold(tiny_corpus / "id-phi.phrase")), again, TINY)
    assert again.read_bytes() == tiny_model.read_bytes()


def test_trained_tagger_finds_phi_in_a_new_note(tiny_model: Path) -> None:
    text = "Pt seen by Dr. Rowan Ashgrove this am. Plan to transfer to Pine Hollow on 4/2.\n"
    spans = Tagger(tiny_model).tag(text)
    found = {text[s.start : s.end] for s in spans}
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    assert any("Ashgrove" in f for f in found)
    assert any("Pine" in f or "Hollow" in f for f in found)
    assert not any(c.isdigit() for f in found for c in f)  # dates are the rules' job


def test_a_lower_threshold_finds_at_least_as_much(tiny_model: Path) -> None:
    text = "Daughter Mira Fenwick called, will visit 2/8. Pt from Lake Ambrin, retired."
    strict = Tagger(tiny_model, threshold=0.9).tag(text)
    loose = Tagger(tiny_model, threshold=0.1).tag(text)
    covered = lambda spans: {i for s in spans for i in range(s.start, s.end)}  # noqa: E731
    assert covered(strict) <= covered(loose)


def test_unite_takes_the_rule_category_where_they_overlap() -> None:
    rules = [Span(10, 15, Category.NAME_PROVIDER)]
    learned = [
        Span(4, 15, Category.NAME_OTHER, 0.8, "tagger"),
        Span(30, 34, Category.LOCATION_OTHER, 0.7, "tagger"),
    ]
    merged = merge_spans(unite(rules, learned))
    assert [(s.start, s.end, s.category) for s in merged] == [
        (4, 15, Category.NAME_PROVIDER),
        (30, 34, Category.LOCATION_OTHER),
    ]
    assert unite(rules, []) == rules


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(max_size=300))
def test_tagger_never_raises_and_merges_with_rules(tiny_model: Path, text: str) -> None:
    tagger = Tagger(tiny_model, threshold=0.3)
    spans = [s.to_span() for s in tagger.tag(text)]
    assert all(0 <= s.start < s.end <= len(text) for s in spans)
    rules = [Span(0, 1, Category.DATE)] if text else []
    merged = merge_spans(unite(rules, spans))
    for a, b in zip(merged, merged[1:], strict=False):
        assert a.end <= b.start or (a.start, a.end) == (b.start, b.end)


def test_synthetic_examples_leave_facility_heads_out() -> None:
    from pipelines.phi.tagger.train import synthetic_examples

    examples = synthetic_examples(40, seed=2)
    assert len(examples) == 40
    places = [
        e.text[p.start : p.end] for e in examples for p in e.phrases if p.label is Label.LOCATION
    ]
    assert places
    assert not any(p.lower().endswith((" hospital", " medical center")) for p in places)
    for e in examples:
        assert all(0 <= p.start < p.end <= len(e.text) for p in e.phrases)


@settings(max_examples=200, deadline=None)
@given(
    rules=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 15)), max_size=12),
    learned=st.lists(st.tuples(st.integers(0, 60), st.integers(1, 15)), max_size=12),
)
def test_unite_matches_the_plain_scan(
    rules: list[tuple[int, int]], learned: list[tuple[int, int]]
) -> None:
    r = [Span(a, a + n, Category.DATE if a % 2 else Category.NAME_PROVIDER) for a, n in rules]
    l_ = [Span(a, a + n, Category.NAME_OTHER, 0.5, "tagger") for a, n in learned]
    got = unite(r, l_)
    assert got[: len(r)] == r
    for span, made in zip(l_, got[len(r) :], strict=True):
        overlaps = [(min(x.end, span.end) - max(x.start, span.start), x) for x in r]
        best = max((o for o in overlaps if o[0] > 0), key=lambda o: o[0], default=None)
        expected = span.category if best is None else best[1].category
        assert (made.start, made.end) == (span.start, span.end)
        # ties between equally overlapping rule spans may resolve to either
        assert made.category == expected or any(
            o == best[0] and x.category == made.category for o, x in overlaps if best
        )
