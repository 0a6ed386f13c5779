"""Corpus layouts a site already has (BRAT, i2b2 2014 XML, JSON Lines), the category map, the
slot error rate, and `deidstream evaluate / train / export` on them. Invented text only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pipelines.corpus import GoldPhrase, Note
from pipelines.corpus_formats import (
    CorpusFormat,
    category_group,
    read_corpus,
    sniff_corpus,
    write_corpus,
)
from pipelines.evaluation import Evaluation, score_slots
from pipelines.policy import Policy
from service.commands import evaluate, export, train

runner = CliRunner()

# ---------------------------------------------------------------------------- invented notes

TEXT_A = "Seen by Dr. Quillan Marsh on 03/14.\r\nFamily: wife Odalys\nMarsh at Harrowgate Clinic."
TEXT_B = 'Call 555-0142 re "a<b & c>d" ]]> Ørsted Ward, Velmora.'


def _phrase(text: str, needle: str, category: str, nth: int = 0) -> GoldPhrase:
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    return GoldPhrase(at, at + len(needle), category, needle)


NOTES = [
    (
        Note("17", "2", TEXT_A, 1, 1),
        [
            _phrase(TEXT_A, "Quillan Marsh", "HCPName"),
            _phrase(TEXT_A, "03/14", "Date"),
            _phrase(TEXT_A, "Odalys\nMarsh", "RelativeProxyName"),  # across a line break
            _phrase(TEXT_A, "Harrowgate Clinic", "Location"),
        ],
    ),
    (
        Note("23", "1", TEXT_B, 2, 1),
        [_phrase(TEXT_B, "555-0142", "Phone"), _phrase(TEXT_B, "Ørsted Ward", "Location")],
    ),
]


ORIGINAL_PHRASES = {p.text for _, phrases in NOTES for p in phrases}


def _shape(corpus_notes: tuple[Note, ...], gold: dict) -> tuple[list, dict]:  # type: ignore[type-arg]
    notes = sorted((n.patient, n.note, n.text) for n in corpus_notes)
    spans = {k: sorted((p.start, p.end, p.category) for p in v) for k, v in gold.items()}
    return notes, spans


@pytest.mark.parametrize(
    "fmt", [CorpusFormat.PHYSIONET, CorpusFormat.BRAT, CorpusFormat.I2B2, CorpusFormat.JSONL]
)
def test_round_trip_every_layout(tmp_path: Path, fmt: CorpusFormat) -> None:
    dest = tmp_path / "out"
    assert write_corpus(dest, fmt, NOTES) == 2
    assert sniff_corpus(dest) is fmt
    corpus = read_corpus(dest)
    assert corpus.format is fmt and corpus.errors == ()
    expected = _shape(tuple(n for n, _ in NOTES), {n.key: p for n, p in NOTES})
    assert _shape(corpus.notes, corpus.gold) == expected
    for note in corpus.notes:  # the texts read back are exact, \r\n included
        for p in corpus.gold[note.key]:
            assert note.text[p.start : p.end] == p.text


def test_brat_reader_hand_written(tmp_path: Path) -> None:
    text = "Pt Brivane Tolle seen\nby Dr Anselm Voight, Kestrel Bay.\n"
    (tmp_path / "40-3.txt").write_text(text, encoding="utf-8")
    (tmp_path / "40-3.ann").write_text(
        "T1\tPTName 3 16\tBrivane Tolle\n"
        "#1\tAnnotatorNotes T1\tfirst visit\n"
        "T2\tDOCTOR 28 34;35 41\tAnselm Voight\n"  # whitespace gap: one phrase
        "T3\tCITY 43 50;51 54\tKestrel Bay\n"  # a space gap too
        "T4\tDOCTOR 3 10;28 34\tBrivane Anselm\n"  # a real gap: two phrases
        "A1\tNegated T1\n",
        encoding="utf-8",
    )
    corpus = read_corpus(tmp_path, CorpusFormat.AUTO, Policy.load().category_map)
    assert corpus.format is CorpusFormat.BRAT
    assert [n.key for n in corpus.notes] == [("40", "3")]
    got = [(p.start, p.end, p.category, p.text) for p in corpus.gold[("40", "3")]]
    assert got == [
        (3, 16, "PTName", "Brivane Tolle"),
        (28, 41, "HCPName", "Anselm Voight"),
        (43, 54, "Location", "Kestrel Bay"),
        (3, 10, "HCPName", "Brivane"),
        (28, 34, "HCPName", "Anselm"),
    ]


def test_brat_offsets_outside_text_is_a_record_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("short", encoding="utf-8")
    (tmp_path / "a.ann").write_text("T1\tDate 2 99\tx\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("On 4/5 seen", encoding="utf-8")
    (tmp_path / "b.ann").write_text("T1\tDate 3 6\t4/5\n", encoding="utf-8")
    corpus = read_corpus(tmp_path)
    assert [n.key for n in corpus.notes] == [("b", "b")]
    assert len(corpus.errors) == 1 and "outside" in corpus.errors[0].reason
    assert "short" not in corpus.errors[0].describe()


I2B2 = """<?xml version="1.0" encoding="UTF-8" ?>
<deIdi2b2>
<TEXT><![CDATA[Record date: 2091-04-02
Dr. Pellam Ostrow, cardiologist at Wrenfield General, Tarnby.
Patient Idony Calder, 93, MRN 4471902.]]></TEXT>
<TAGS>
<DATE id="P0" start="13" end="23" text="2091-04-02" TYPE="DATE" comment="" />
<NAME id="P1" start="28" end="41" text="Pellam Ostrow" TYPE="DOCTOR" comment="" />
<PROFESSION id="P2" start="43" end="55" text="cardiologist" TYPE="PROFESSION" comment="" />
<LOCATION id="P3" start="59" end="76" text="Wrenfield General" TYPE="HOSPITAL" comment="" />
<LOCATION id="P4" start="78" end="84" text="Tarnby" TYPE="CITY" comment="" />
<NAME id="P5" start="94" end="106" text="Idony Calder" TYPE="PATIENT" comment="" />
<AGE id="P6" start="108" end="110" text="93" TYPE="AGE" comment="" />
<ID id="P7" start="116" end="123" text="4471902" TYPE="MEDICALRECORD" comment="" />
</TAGS>
</deIdi2b2>
"""


def test_i2b2_reader_and_category_map(tmp_path: Path) -> None:
    (tmp_path / "310-02.xml").write_text(I2B2, encoding="utf-8")
    corpus = read_corpus(tmp_path, CorpusFormat.AUTO, Policy.load().category_map)
    assert corpus.format is CorpusFormat.I2B2 and corpus.errors == ()
    (note,) = corpus.notes
    assert note.key == ("310", "02")
    got = [(note.text[p.start : p.end], p.category) for p in corpus.gold[note.key]]
    assert got == [  # PROFESSION dropped by the default map
        ("2091-04-02", "Date"),
        ("Pellam Ostrow", "HCPName"),
        ("Wrenfield General", "Location"),
        ("Tarnby", "Location"),
        ("Idony Calder", "PTName"),
        ("93", "Age"),
        ("4471902", "Other"),
    ]
    raw = read_corpus(tmp_path)  # no map: categories as written
    assert [p.category for p in raw.gold[note.key]][:3] == ["DATE", "DOCTOR", "PROFESSION"]


def test_i2b2_refuses_entity_expansion(tmp_path: Path) -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE d [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
        "<deIdi2b2><TEXT>&b;</TEXT><TAGS/></deIdi2b2>\n"
    )
    (tmp_path / "1-1.xml").write_text(bomb, encoding="utf-8")
    (tmp_path / "1-2.xml").write_text("<deIdi2b2><TEXT>unclosed", encoding="utf-8")
    corpus = read_corpus(tmp_path)
    assert corpus.notes == ()
    assert [e.reason for e in corpus.errors] == [
        "unreadable i2b2 XML (DTDForbidden)",
        "unreadable i2b2 XML (ParseError)",
    ]


def test_jsonl_reader(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    rows = [
        {
            "text": "Dr Fenwick Aldous saw her.",
            "patient": "9",
            "note": "a",
            "spans": [{"start": 3, "end": 17, "category": "NAME_PROVIDER"}],
        },
        {"text": "no phi here", "spans": []},
        {"text": "bad", "spans": [{"start": 1, "end": 40, "category": "Date"}]},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\nnot json\n", encoding="utf-8")
    corpus = read_corpus(path, CorpusFormat.AUTO, Policy.load().category_map)
    assert corpus.format is CorpusFormat.JSONL
    assert [n.key for n in corpus.notes] == [("9", "a"), ("2", "2")]
    assert corpus.gold == {("9", "a"): [GoldPhrase(3, 17, "HCPName", "Fenwick Aldous")]}
    assert [e.line for e in corpus.errors] == [3, 5]


def test_category_groups() -> None:
    assert {category_group(c) for c in ("HCPName", "PTNameInitial", "NAME_OTHER")} == {"NAME"}
    assert category_group("LOCATION_HOSPITAL") == category_group("Location") == "LOCATION"
    assert category_group("DateYear") == category_group("DATE") == "DATE"
    assert category_group("FAX") == category_group("Phone") == "CONTACT"
    assert category_group("Other") == category_group("MRN") == "ID"


# ---------------------------------------------------------------------------- slot error rate


def test_ser_worked_example() -> None:
    """The docstring's example, counted by hand: S=1 B=1 D=1 I=1 over N=4."""
    gold = [(0, 5, "HCPName"), (10, 14, "Date"), (20, 26, "Location"), (30, 33, "Phone")]
    pred = [
        (0, 5, "NAME_PROVIDER"),  # correct
        (10, 14, "LOCATION_CITY"),  # substitution
        (20, 23, "LOCATION_CITY"),  # boundary
        (40, 44, "NAME_OTHER"),  # insertion; [30,33) deleted
    ]
    sc = score_slots(gold, pred)
    assert (sc.slots, sc.correct, sc.substitutions, sc.boundary, sc.deletions, sc.insertions) == (
        4,
        1,
        1,
        1,
        1,
        1,
    )
    assert sc.ser == pytest.approx(3 / 4)
    assert sc.ser_strict == pytest.approx(1.0)
    groups = dict(sc.groups)
    # LOCATION: 1 gold, 2 predicted; exact: nothing; overlap: gold [20,26) by [20,23)
    loc = groups["LOCATION"].figures()
    assert loc["exact"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert loc["overlap"]["recall"] == 1.0 and loc["overlap"]["precision"] == 0.5
    assert loc["overlap"]["f1"] == pytest.approx(2 / 3)
    # any category: exact 2 of 4 gold, 2 of 4 predicted; overlap 3 of 4 each
    anyg = groups["*"].figures()
    assert anyg["exact"]["recall"] == 0.5 and anyg["overlap"]["precision"] == 0.75


def test_ser_summed_over_notes_in_report() -> None:
    ev = Evaluation()
    text = "Dr Alvar Penhope on 6/7 in Sorrel Creek"
    ev.add("1", "1", text, [_phrase(text, "Alvar Penhope", "HCPName")], [])
    ev.add("2", "1", text, [], [_sp(3, 16, "NAME_PROVIDER"), _sp(27, 39, "LOCATION_CITY")])
    data = ev.report(resamples=0).to_dict(known_names=False)["slots"]
    assert data["reference_slots"] == 1 and data["deletions"] == 1 and data["insertions"] == 2
    assert data["slot_error_rate"] == 3.0


def _sp(start: int, end: int, category: str) -> object:
    from pipelines.spans import Category, Span

    return Span(start, end, Category(category), 1.0, "test")


# ---------------------------------------------------------------------------- commands


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    app = typer.Typer(pretty_exceptions_enable=False)
    evaluate.register(app)
    train.register(app)
    export.register(app)
    return app


def test_evaluate_brat_with_predictions(app: typer.Typer, tmp_path: Path) -> None:
    corpus_dir = tmp_path / "brat"
    write_corpus(corpus_dir, CorpusFormat.BRAT, NOTES)
    spans = [  # one exact, one substitution on note 17/2; nothing on note 23/1
        {"start": NOTES[0][1][0].start, "end": NOTES[0][1][0].end, "category": "NAME_PROVIDER"},
        {"start": NOTES[0][1][1].start, "end": NOTES[0][1][1].end, "category": "PHONE"},
    ]
    pred = tmp_path / "pred.jsonl"
    pred.write_text(json.dumps({"patient": "17", "note": "2", "spans": spans}) + "\n")
    result = runner.invoke(
        app, ["evaluate", str(corpus_dir), "--predictions", str(pred), "--json", "--bootstrap", "0"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["corpus_format"] == "brat"
    slots = data["slots"]
    assert (slots["reference_slots"], slots["substitutions"], slots["deletions"]) == (6, 1, 4)
    assert slots["slot_error_rate"] == pytest.approx(5 / 6, abs=1e-6)
    assert slots["per_group"]["NAME"]["exact"]["precision"] == 1.0
    text = runner.invoke(
        app, ["evaluate", str(corpus_dir), "--predictions", str(pred), "--bootstrap", "0"]
    ).output
    assert "slot error rate 0.8333" in text and "exact P / R / F1" in text


def test_train_reads_jsonl(app: typer.Typer, tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    write_corpus(path, CorpusFormat.JSONL, NOTES)
    model = tmp_path / "m.crfsuite"
    result = runner.invoke(
        app,
        [
            "train",
            str(path),
            "--out",
            str(model),
            "--augment",
            "0",
            "--synthetic",
            "0",
            "--iterations",
            "3",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "trained on 2 notes" in result.output and model.stat().st_size > 0


def test_export_writes_surrogate_spans(app: typer.Typer, tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    write_corpus(source, CorpusFormat.JSONL, NOTES)
    for to in ("brat", "i2b2", "jsonl", "physionet"):
        dest = tmp_path / f"out-{to}"
        result = runner.invoke(app, ["export", str(source), str(dest), "--to", to, "--no-store"])
        assert result.exit_code == 0, result.output
        corpus = read_corpus(dest, CorpusFormat.AUTO, Policy.load().category_map)
        assert corpus.format.value == to and len(corpus.notes) == 2
        joined = "\n".join(n.text for n in corpus.notes)
        for secret in ("Quillan", "Odalys", "Harrowgate", "555-0142"):
            assert secret not in joined
        groups = {category_group(p.category) for v in corpus.gold.values() for p in v}
        assert {"NAME", "DATE", "LOCATION", "CONTACT"} <= groups
        for note in corpus.notes:  # spans sit on the surrogates, not on unchanged text
            for p in corpus.gold.get(note.key, []):
                assert note.text[p.start : p.end].strip()
                # a surrogate may by chance be a substring of the input ("Quill" in
                # "Quillan"), so compare with the original phrases, not the whole text
                assert note.text[p.start : p.end] not in ORIGINAL_PHRASES


# ---------------------------------------------------------------------------- the real split


@pytest.mark.corpus
def test_dev_split_scores_identically_in_every_layout(
    app: typer.Typer, physionet_dev: Path, tmp_path: Path
) -> None:
    from pipelines.phi.detector import Detector

    source = read_corpus(physionet_dev)
    items = [(n, source.gold.get(n.key, [])) for n in source.notes]
    detector = Detector(Policy.load())
    pred = tmp_path / "pred.jsonl"
    with pred.open("w", encoding="utf-8") as out:
        for note in source.notes:
            spans = [
                {"start": s.start, "end": s.end, "category": s.category.value}
                for s in detector.detect(note.text)
            ]
            out.write(json.dumps({"patient": note.patient, "note": note.note, "spans": spans}))
            out.write("\n")
    reports = {}
    for fmt in ("physionet", "brat", "i2b2", "jsonl"):
        where = physionet_dev if fmt == "physionet" else tmp_path / fmt
        if fmt != "physionet":
            write_corpus(where, CorpusFormat(fmt), items)
        result = runner.invoke(
            app,
            ["evaluate", str(where), "--predictions", str(pred), "--json", "--bootstrap", "100"],
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data.pop("corpus_format") == fmt
        data.pop("detect_seconds")
        reports[fmt] = data
    assert reports["physionet"]["counts"]["gold_phrases"] > 1000
    for fmt in ("brat", "i2b2", "jsonl"):
        assert reports[fmt] == reports["physionet"], fmt


def _cv_notes() -> list[tuple[Note, list[GoldPhrase]]]:
    """Six invented patients, two notes each: enough for a 3-fold patient split."""
    fills = [
        ("Ambrose Quell", "Tindale Hospital"),
        ("Verity Osgood", "Maple Fenn"),
        ("Lucan Harrowby", "Easterbrook"),
        ("Nell Praxton", "Gullane Clinic"),
        ("Tobiah Wrenly", "Scarsfield"),
        ("Mirela Dunstan", "Corran Vale"),
    ]
    out = []
    for p, (name, place) in enumerate(fills, 1):
        for n, template in enumerate(
            ("Seen by Dr. {n} today, sent to {l}.", "Wife {n} called from {l} about the plan."), 1
        ):
            text = template.format(n=name, l=place)
            out.append(
                (
                    Note(str(p), str(n), text, len(out) + 1, 1),
                    [
                        _phrase(text, name, "HCPName" if n == 1 else "RelativeProxyName"),
                        _phrase(text, place, "Location"),
                    ],
                )
            )
    return out


def test_cv_reads_any_layout(app: typer.Typer, tmp_path: Path) -> None:
    notes = _cv_notes()
    reports = []
    for fmt, where in (("physionet", tmp_path / "p"), ("jsonl", tmp_path / "c.jsonl")):
        write_corpus(where, CorpusFormat(fmt), notes)
        result = runner.invoke(
            app,
            [
                "evaluate",
                str(where),
                "--cv",
                "3",
                "--augment",
                "0",
                "--synthetic",
                "0",
                "--iterations",
                "10",
                "--json",
            ],
        )
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["k"] == 3 and sum(f["notes"] for f in data["folds"]) == 12
        for fold in data["folds"]:
            fold.pop("train_seconds", None)
        reports.append(data)
    assert reports[0]["folds"] == reports[1]["folds"]


def test_i2b2_writer_refuses_characters_xml_cannot_carry(tmp_path: Path) -> None:
    from pipelines.corpus_formats import CorpusError

    note = Note("5", "1", "page one\x0cpage two", 1, 1)
    with pytest.raises(CorpusError) as info:
        write_corpus(tmp_path / "x", CorpusFormat.I2B2, [(note, [])])
    assert info.value.coordinates == {"patient": "5", "note": "1"}
    assert "page" not in str(info.value)
    write_corpus(tmp_path / "b", CorpusFormat.BRAT, [(note, [])])  # BRAT carries it
    assert read_corpus(tmp_path / "b").notes[0].text == note.text
