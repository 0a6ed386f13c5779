"""The tagger's fast paths give what the plain definitions give: the one-pass ``encode``
equals ``items`` + ``features`` filtered by the model's attributes (packed), and ``Tagger.tag``
(crfsuite fed attribute ids through its C API) equals a plain loop over every item of
python-crfsuite's own ``Tagger`` fed the attribute strings, and the note-level features
found by the short cuts of ``features._extras`` are those a plain scan finds."""

from __future__ import annotations

import bisect

import pycrfsuite
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.lexicons import words_case_of
from pipelines.phi.tagger.extras import _extras, _Plan
from pipelines.phi.tagger.features import (
    _ASCII_TOKEN,
    _TOKEN,
    CUES,
    Featurizer,
    token_columns,
    tokenize,
)
from pipelines.phi.tagger.model import (
    OUTSIDE,
    Label,
    TaggedSpan,
    Tagger,
    _breaks,
)

# words the shipped model knows (names, places, cue words), capitalised connectors (items
# a phrase may run on over), bars, digits, line breaks
_PIECES = st.sampled_from(
    [
        "Dr.", "Mr", "Ann", "Lee", "Smith", "saw", "the", "pt", "in", "Boston", "New", "York",
        "Mercy", "Hospital", "of", "wife", "called", "3/14", "2021", "|", "||", ":", ",",
        "(", "MRN", "#", "48213", "\n", "\n\n", "ann", "LEE", "St", "Mary's", "-", "O'Neil",
        "De", "La", "Van", "San", "Of", "The", "And", "At", "Pt", "Plan", "Hosp",
    ]
)  # fmt: skip
_TEXTS = st.lists(_PIECES, max_size=60).map(" ".join)


@pytest.fixture(scope="module")
def shipped() -> Tagger:
    return Tagger()


@pytest.fixture(scope="module")
def every_label() -> dict[float, Tagger]:
    """The shipped model at a few thresholds, reporting every label."""
    return {t: Tagger(threshold=t, labels=frozenset(Label)) for t in (0.5, 0.2, 0.05)}


@settings(max_examples=500)
@given(text=st.text(alphabet=st.characters(max_codepoint=127)) | _TEXTS)
def test_ascii_tokens_are_the_unicode_pattern_s(text: str) -> None:
    assert _ASCII_TOKEN.split(text) == _TOKEN.split(text)


@settings(max_examples=150, deadline=None)
@given(text=_TEXTS, data=st.data())
def test_encode_equals_the_full_rows_filtered_by_keep(text: str, data: st.DataObject) -> None:
    tokens = tokenize(text)
    full = Featurizer().features(text, tokens)
    every = sorted({f for row in full for f in row})
    keep = frozenset(data.draw(st.lists(st.sampled_from(every)))) if every else frozenset()
    starts, _, words = token_columns(text)
    featurizer = Featurizer(keep=keep)
    note = featurizer.encode(text, starts, words, words_case_of(text))
    assert note.items == Featurizer().items(text, tokens)
    rows = list(map(featurizer.attributes.names, note.rows.each()))
    assert rows == [[f for f in full[i] if f in keep] for i in note.items]
    assert note.lowers == [w.lower() for w in words]


@settings(max_examples=100, deadline=None)
@given(text=_TEXTS, threshold=st.sampled_from([0.5, 0.2, 0.05]))
def test_tag_equals_a_plain_loop_over_every_item(
    every_label: dict[float, Tagger], text: str, threshold: float
) -> None:
    tagger = every_label[threshold]
    assert tagger.tag(text) == _plain_tag(tagger, text)


def test_tag_equals_a_plain_loop_on_a_long_note(shipped: Tagger) -> None:
    line = "Seen by Dr. Ann Lee at Mercy Hospital of Boston, wife Mary Smith called 3/14.\n"
    # "At": an item not PHI between two places, the gap a place's connector ("at")
    joints = (
        "Pt At New Plan called ann Hosp St of wife San called At York || ann O'Neil De La "
        "O'Neil Lee Dr. York , 3/14 Smith 2021 Ann wife the\n"
    )
    text = joints + line * 40 + line.upper() * 5
    assert shipped.tag(text) == _plain_tag(shipped, text)


def _plain_decide(
    tagger: Tagger, crf: pycrfsuite.Tagger, i: int, predicted: str, p_phi: float
) -> Label | None:
    """``Tagger._decide`` on python-crfsuite's tagger, by label names."""
    if predicted != OUTSIDE:
        return Label(predicted[2:])
    if p_phi < min(tagger.thresholds.values()):
        return None
    marginals = {name: crf.marginal(name, i) for name in crf.labels() if name != OUTSIDE}
    best = Label.NAME
    best_p = -1.0
    for name, p in marginals.items():
        if p > best_p:
            best, best_p = Label(name[2:]), p
    return best if p_phi >= tagger.thresholds[best] else None


def _plain_tag(tagger: Tagger, text: str) -> list[TaggedSpan]:
    """``Tagger.tag`` as first written: one step per item, from tuples of tokens."""
    tokens = tokenize(text)
    items = tagger.featurizer.items(text, tokens)
    if not items:
        return []
    crf = pycrfsuite.Tagger()
    crf.open(str(tagger.model_path))
    crf.set(tagger.featurizer.features(text, tokens, items))
    toks = [tokens[i] for i in items]
    spans: list[TaggedSpan] = []
    run: list[int] = []
    run_label: Label | None = None
    run_conf = 1.0
    for i, predicted in enumerate(crf.tag()):
        p_phi = 1.0 - crf.marginal(OUTSIDE, i)
        label = _plain_decide(tagger, crf, i, predicted, p_phi)
        if run and (
            label is None
            or label != run_label
            or predicted.startswith("B-")
            or _breaks(text, toks[run[-1]][1], toks[i][0], run_label)
        ):
            spans.append(TaggedSpan(toks[run[0]][0], toks[run[-1]][1], run_label, run_conf))  # type: ignore[arg-type]
            run, run_label, run_conf = [], None, 1.0
        if label is not None:
            run.append(i)
            run_label = label
            run_conf = min(run_conf, p_phi)
    if run:
        spans.append(TaggedSpan(toks[run[0]][0], toks[run[-1]][1], run_label, run_conf))  # type: ignore[arg-type]
    spans = [
        TaggedSpan(s.start, s.end, s.label, max(0.0, min(1.0, s.confidence)))
        for s in spans
        if s.label in tagger.labels
    ]
    return spans  # the recurrences of a word are the detector's (pipelines.phi.propagate)


@pytest.fixture(scope="module")
def phrases() -> list[str]:
    """Phrases of the gazetteers themselves (every 97th facility, every 211th city), cut
    short too, so that matches start, nest and break off in the texts drawn."""
    from pipelines.phi import lexicons
    from pipelines.phi.tagger.gazetteers import facility_names

    whole = sorted(facility_names())[::97] + sorted(lexicons.us_cities())[::211]
    return whole + [" ".join(p.split()[:2]) for p in whole]


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_extras_equal_a_plain_scan_of_every_token(
    shipped: Tagger, phrases: list[str], data: st.DataObject
) -> None:
    """Line starts found by bisection, gazetteer phrases looked for only where one may
    start, kinship words found in the same pass: the records a scan of every token gives."""
    pieces = st.sampled_from(phrases) | _PIECES | st.sampled_from(["wife", "son", "\n", "x\n"])
    text = data.draw(st.lists(pieces, max_size=40).map(" ".join))
    starts, _, words = token_columns(text)
    lowers = [w.lower() for w in words]
    plan = shipped.featurizer._plan
    assert _extras(text, starts, lowers, plan) == _plain_extras(text, starts, lowers, plan)


def _plain_extras(text: str, starts: list[int], lowers: list[str], plan: _Plan) -> dict[int, bytes]:
    """``features._extras`` as first written: a find per line break, every token a
    candidate start of every gazetteer's phrases, a test of every token for kinship."""
    extras: dict[int, list[bytes]] = {}

    def add(k: int, record: bytes | None) -> None:
        if record:
            extras.setdefault(k, []).append(record)

    n = len(lowers)
    if plan.bol and starts:
        add(0, plan.bol)
        at, k = text.find("\n"), 0
        while at >= 0:
            k = bisect.bisect_left(starts, at, k)
            if k == n:
                break
            add(k, plan.bol)
            at = text.find("\n", starts[k])
    for gazetteer, (begin, inside, before, after) in plan.gazetteers:
        for start, end in gazetteer().matches(lowers):
            add(start, begin)
            for k in range(start + 1, end):
                add(k, inside)
            if start > 0:
                add(start - 1, before)
            if end < n:
                add(end, after)
    for i, low in enumerate(lowers):
        if low in CUES["kin"]:
            for j in range(i + 3, min(i + 6, n)):
                add(j, plan.kin)
    return {k: b"".join(records) for k, records in extras.items()}
