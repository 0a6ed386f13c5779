"""Reviewers' decisions as training data: a not-PHI decision changes what a retrained tiny
tagger finds on a new note; ``deidstream train --review-decisions`` records how many."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from keystore import Keyring, open_store
from pipelines.corpus import Note, load_gold, read_notes
from pipelines.document import ClinicalDocument
from pipelines.phi.detector import Detector
from pipelines.phi.tagger.model import Tagger
from pipelines.phi.tagger.train import TrainSettings, examples_from, train
from pipelines.policy import Policy
from pipelines.review import Decision, DecisionKind, ReviewQueue, Role, Scope
from pipelines.spans import Category
from service.cli import command
from tests.tagger.conftest import write_corpus

TINY = TrainSettings(augment=1, seed=3, max_iterations=40, min_feature_freq=1, synthetic=0)
# invented notes: a drug name where the tiny corpus has a nurse's name ("Seen with X RN")
REVIEWED = [
    "Seen with Warfarin RN. Admitted 2/2 from Harrowgate.\n",
    "Seen with Warfarin RN today. Afebrile.\n",
    "Seen with Warfarin RN. Admitted 6/1 from Lake Ambrin.\n",
]
NEW_NOTE = "Seen with Warfarin RN. Admitted 5/5 from Pine Hollow.\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_corpus(tmp_path_factory.mktemp("tiny") / "corpus")


def _examples(corpus: Path) -> list:  # type: ignore[type-arg]
    notes = [n for n in read_notes(corpus / "id.text", "physionet") if isinstance(n, Note)]
    return examples_from(notes, load_gold(corpus / "id-phi.phrase"))


def _decide(queue: ReviewQueue, model: Path) -> None:
    policy = Policy.from_mapping(
        {"recognizers": {"tagger": {"model": str(model), "threshold": 0.2}}}
    )
    detector = Detector(policy)
    for k, text in enumerate(REVIEWED):
        queue.enqueue(
            ClinicalDocument(text=text, patient_id=f"P{k}", assigning_authority="H"), detector
        )
    for item in queue.page(Role.REVIEWER, limit=100):
        if item.string == "Warfarin":
            queue.decide(
                Decision(item.id, "eve", Role.EXPERT, DecisionKind.NOT_PHI, scope=Scope.SITE)
            )
            break
    for item in queue.page(Role.REVIEWER, limit=100):  # the places: PHI
        queue.decide(
            Decision(item.id, "ana", Role.REVIEWER, DecisionKind.PHI, Category.LOCATION_OTHER)
        )


def test_a_decision_changes_what_the_retrained_tagger_finds(corpus: Path, tmp_path: Path) -> None:
    base = tmp_path / "base.crfsuite"
    train(_examples(corpus), base, TINY)
    found = [NEW_NOTE[t.start : t.end] for t in Tagger(base, threshold=0.2).tag(NEW_NOTE)]
    assert "Warfarin" in found  # the base model takes the drug for a name

    store = open_store(f"sqlite:///{tmp_path / 'ks.sqlite3'}", Keyring.generate("t"))
    queue = ReviewQueue(store)
    _decide(queue, base)
    reviewed = queue.training_examples()
    store.close()
    assert len(reviewed) == 3
    for example in reviewed:
        assert "Warfarin" not in [example.text[p.start : p.end] for p in example.phrases]

    again = tmp_path / "again.crfsuite"
    train(_examples(corpus) + reviewed, again, TINY)
    found = [NEW_NOTE[t.start : t.end] for t in Tagger(again, threshold=0.2).tag(NEW_NOTE)]
    assert "Warfarin" not in found
    assert "Pine Hollow" in found  # still finds the place


def test_train_command_records_the_reviewed_notes(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = Keyring.generate("t")
    url = f"sqlite:///{tmp_path / 'ks.sqlite3'}"
    base = tmp_path / "base.crfsuite"
    train(_examples(corpus), base, TINY)
    store = open_store(url, key)
    _decide(ReviewQueue(store), base)
    store.close()
    monkeypatch.setenv("DEIDSTREAM_KEYSTORE_URL", url)
    monkeypatch.setenv("DEIDSTREAM_MASTER_KEY", key.to_text())
    out = tmp_path / "cli.crfsuite"
    result = CliRunner().invoke(
        command(),
        [
            "train",
            str(corpus),
            "--out",
            str(out),
            "--augment",
            "1",
            "--iterations",
            "20",
            "--synthetic",
            "0",
            "--review-decisions",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "3 of them reviewed notes" in result.output
    summary = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    assert summary["review_notes"] == 3 and summary["review_phrases"] >= 2
    assert "Warfarin" not in result.output
