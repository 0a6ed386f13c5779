"""The invented short-text corpus (issue 13): deterministic, gold spans in bounds and on the
text they name, two template families that share no sentence frame."""

from __future__ import annotations

import pytest

from pipelines.phi import synthetic
from pipelines.phi.synthetic import Label, SyntheticNote, generate


@pytest.mark.parametrize("family", ["dev", "heldout"])
def test_same_seed_same_notes(family: str) -> None:
    assert generate(60, 7, family) == generate(60, 7, family)


@pytest.mark.parametrize("family", ["dev", "heldout"])
def test_other_seed_other_notes(family: str) -> None:
    assert [n.text for n in generate(30, 1, family)] != [n.text for n in generate(30, 2, family)]


@pytest.mark.parametrize("family", ["dev", "heldout"])
def test_spans_in_bounds_on_their_text(family: str) -> None:
    notes = generate(300, 11, family)
    assert len(notes) == 300
    for note in notes:
        assert isinstance(note, SyntheticNote)
        last_end = 0
        for start, end, label in note.spans:
            assert isinstance(label, Label)
            assert 0 <= last_end <= start < end <= len(note.text), note
            phrase = note.text[start:end]
            assert phrase == phrase.strip() and phrase, note
            last_end = end


def test_every_label_occurs() -> None:
    for family in ("dev", "heldout"):
        seen = {label for note in generate(200, 3, family) for _, _, label in note.spans}
        assert seen == set(Label), family


def test_gold_conventions() -> None:
    """Whole facility names, names without the doctor's title, ages over 89 only."""
    notes = generate(400, 5, "dev")
    phrases = [(n.text[s:e], lab) for n in notes for s, e, lab in n.spans]
    assert not any(p.startswith(("Dr.", "Dr ", "Doctor ", "MRN")) for p, _ in phrases)
    ages = [p for p, lab in phrases if lab is Label.AGE]
    assert ages and all(int(a) > 89 for a in ages if a.isdigit())
    heads = ("Hospital", "Medical Center", "Rehab", "Clinic", "HOSPITAL", "hospital")
    assert any(p.endswith(heads) for p, lab in phrases if lab is Label.LOCATION)


def test_families_share_no_frame() -> None:
    assert set(synthetic.templates("dev")).isdisjoint(synthetic.templates("heldout"))
    with pytest.raises(ValueError):
        generate(1, 0, "test")


def test_gazetteer_is_package_data() -> None:
    names = synthetic.hospitals()
    assert len(names) > 10_000
    assert not any(name.startswith("#") for name in names)
