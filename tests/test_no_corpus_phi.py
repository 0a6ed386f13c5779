"""No string of the PhysioNet corpus's gold PHI in the project's code, lists, comments or tests.

The house rule: rules and examples come from knowledge of PHI and from invented cases, never
from the corpus. This test reads the dev split's gold phrases at run time (it holds none
itself), keeps the distinctive ones and looks for each as a whole word in every tracked file
of the code, tests, benchmarks and docs. On failure it names files and lines only, never the
phrase (the report is itself no place for PHI).

A phrase is distinctive when, lower-cased, it has at least four characters, at least one
letter, is no common English word (``wordfreq`` Zipf below 3.0) and is no month or weekday:
"Smith" or "May" may stand in any text, a rare surname or a street may not. Numbers are
compared by their digits when they have seven or more (a phone number, a record number), in
whatever layout they are written.
"""

from __future__ import annotations

import calendar
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PHYSIONET_DEV, ROOT, SHARED

SCANNED = ("pipelines", "surrogates", "keystore", "service", "tests", "bench", "docs")
# Copies of public lexicons, exempt only while they are byte for byte the published file (an
# entry there is a real facility of the gazetteer, not an example typed from the corpus).
LEXICON_COPIES = {"pipelines/phi/data/hospitals.txt": SHARED / "lexicons" / "hospitals.txt"}
# Zipf at or above which a phrase is a common English word ("Smith", "May"). Phrases in
# [3.0, 3.5) were scrubbed too when this test came (place and person names): 3.5 passes.
COMMON_ZIPF = 3.0
_TOKEN = re.compile(r"[a-z0-9]+")
_CALENDAR = frozenset(
    w.lower()
    for w in (*calendar.month_name, *calendar.month_abbr, *calendar.day_name, *calendar.day_abbr)
    if w
) | {"sept"}


def _gold_phrases(path: Path) -> list[str]:
    """The phrase text of each line ``patient note start end Category phrase text``."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6:
            out.append(parts[5].strip())
    return out


def distinctive(phrases: list[str]) -> set[str]:
    """The lower-cased phrases that identify: long enough, not digits, no common word."""
    from wordfreq import zipf_frequency

    keep = set()
    for phrase in {" ".join(p.lower().split()) for p in phrases}:
        if len(phrase) < 4 or not any(ch.isalpha() for ch in phrase) or phrase in _CALENDAR:
            continue
        if zipf_frequency(phrase, "en") >= COMMON_ZIPF:
            continue
        keep.add(phrase)
    return keep


def tracked_files(root: Path) -> list[Path]:
    """The files git tracks under the scanned folders (every file when there is no git)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", *SCANNED],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [n for n in out.split("\0") if n]
    except (OSError, subprocess.CalledProcessError):
        names = [
            str(p.relative_to(root))
            for d in SCANNED
            for p in (root / d).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    return [root / n for n in sorted(names) if not _lexicon_copy(root, n)]


def _lexicon_copy(root: Path, name: str) -> bool:
    source = LEXICON_COPIES.get(name)
    return (
        source is not None and source.exists() and source.read_bytes() == (root / name).read_bytes()
    )


_DIGIT_RUN = re.compile(r"\d[\d .()/-]*\d")
MIN_DIGITS = 7  # a phone number, a record number: shorter runs ("12345", "3/9") are everywhere


def distinctive_numbers(phrases: list[str]) -> set[str]:
    """The digits of the phrases holding at least ``MIN_DIGITS`` of them (phones, IDs), which the
    word test leaves out: "301 555-0187" is the same number as "(301) 555 0187"."""
    numbers = {re.sub(r"\D", "", p) for p in phrases}
    return {n for n in numbers if len(n) >= MIN_DIGITS}


def find_number_hits(files: list[Path], numbers: set[str]) -> list[tuple[Path, int]]:
    """(file, line) of every run of digits and separators whose digits are one of ``numbers``."""
    hits: list[tuple[Path, int]] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for m in _DIGIT_RUN.finditer(text):
            if re.sub(r"\D", "", m.group()) in numbers:
                hits.append((path, text.count("\n", 0, m.start()) + 1))
    return sorted(set(hits))


def _pattern(phrase: str) -> re.Pattern[str]:
    words = [re.escape(w) for w in phrase.split()]
    return re.compile(r"(?<![a-z0-9])" + r"\s+".join(words) + r"(?![a-z0-9])")


def find_hits(files: list[Path], phrases: set[str]) -> list[tuple[Path, int]]:
    """(file, line) of every whole-word occurrence of a phrase, phrases never returned."""
    wanted = [(p, frozenset(_TOKEN.findall(p))) for p in phrases]
    hits: list[tuple[Path, int]] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8").lower()
        except (OSError, UnicodeDecodeError):
            continue  # binary files hold no written examples
        tokens = set(_TOKEN.findall(text))
        for phrase, needs in wanted:
            if not needs <= tokens:
                continue
            for m in _pattern(phrase).finditer(text):
                hits.append((path, text.count("\n", 0, m.start()) + 1))
    return sorted(set(hits))


def _gold() -> list[str]:
    gold = PHYSIONET_DEV / "id-phi.phrase"
    if not gold.exists():
        pytest.skip("../shared/data/physionet/dev is not present")
    return _gold_phrases(gold)


@pytest.mark.corpus
def test_no_distinctive_gold_phi_in_tracked_files() -> None:
    # no fixture argument and no assert on the phrases: pytest would print them on failure
    files = tracked_files(ROOT)
    assert files, "no tracked file found"
    gold = _gold()
    hits = sorted(
        {
            *find_hits(files, distinctive(gold)),
            *find_number_hits(files, distinctive_numbers(gold)),
        }
    )
    lines: dict[str, list[str]] = {}
    for path, line in hits:
        lines.setdefault(path.relative_to(ROOT).as_posix(), []).append(str(line))
    if hits:
        report = "\n".join(
            f"{name}: {len(ls)} (lines {', '.join(ls)})" for name, ls in lines.items()
        )
        pytest.fail(
            f"{len(hits)} corpus PHI occurrences in {len(lines)} files:\n{report}", pytrace=False
        )


def test_the_scan_finds_a_planted_phrase(tmp_path: Path) -> None:
    """The matcher itself: whole words only, across a line break, case-blind."""
    planted = tmp_path / "note.py"
    planted.write_text("# seen by Dr Qzvorth\n# at Brillmoor\nHarbour, qzvorthy\n")
    hits = find_hits([planted], {"qzvorth", "brillmoor harbour", "larch"})
    assert hits == [(planted, 1), (planted, 2)]


def test_a_lexicon_copy_is_exempt_only_while_unchanged(tmp_path: Path) -> None:
    source = SHARED / "lexicons" / "hospitals.txt"
    if not source.exists():
        pytest.skip("../shared/data/lexicons is not present")
    name = "pipelines/phi/data/hospitals.txt"
    copy = tmp_path / name
    copy.parent.mkdir(parents=True)
    copy.write_bytes(source.read_bytes())
    assert _lexicon_copy(tmp_path, name)
    copy.write_bytes(source.read_bytes() + b"Qzvorth General Hospital\n")
    assert not _lexicon_copy(tmp_path, name)


def test_the_scan_finds_a_planted_number_in_any_layout(tmp_path: Path) -> None:
    planted = tmp_path / "test_x.py"
    planted.write_text('x = "call (301) 555-0187"\ny = "ext 12345, 3015550187"\nz = 301555018\n')
    assert find_number_hits([planted], distinctive_numbers(["301 555 0187", "12345"])) == [
        (planted, 1),
        (planted, 2),
    ]


def test_common_words_months_and_numbers_are_not_distinctive() -> None:
    assert distinctive(["Smith", "May", "Tuesday", "12/3", "555-0142", "Bob", "Qzvorth"]) == {
        "qzvorth"
    }
