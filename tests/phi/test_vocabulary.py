"""One vocabulary (issue 25.3): the detector's word lists live in
``pipelines/phi/data/vocabulary/*.txt``, are read by ``pipelines/phi/wordlists.py`` only, and no
new inline list of more than a handful of words grows back in ``pipelines/phi``."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipelines.phi import wordlists
from pipelines.spans import Category

PACKAGE = Path(wordlists.__file__).resolve().parent
VOCABULARY = PACKAGE / "data" / "vocabulary"
MOST_WORDS = 8  # an inline list of more words belongs in a vocabulary file

# Inline collections of strings that are no vocabulary: (file, the name assigned) -> why.
ALLOWED: dict[tuple[str, str], str] = {
    ("scan.py", "__all__"): "exported names",
    ("recognizers/names.py", "__slots__"): "attribute names",
    ("tagger/features.py", "_CONTEXT_KEEP"): "feature-name prefixes, not words of a note",
    ("lexicons.py", "MONTH_NAMES"): "the calendar, in order",
    ("recognizers/known.py", "_MONTH_HEADS"): "the calendar, in order",
    ("synthetic.py", "_ABBREVIATIONS"): "the calendar, in order",
    ("recognizers/dates.py", "_ORDINAL_OK_AFTER"): "punctuation marks (and the empty string)",
    ("synthetic.py", "_DEV"): "sentence templates of the invented training texts",
    ("synthetic.py", "_HELDOUT"): "sentence templates of the invented training texts",
    ("synthetic.py", "cues"): "identifier labels with their spacing and punctuation",
    ("synthetic.py", "plain"): "template slot -> its filler",
    ("recognizers/ages.py", "_UNITS"): "number words -> their values, grammar like the calendar",
    ("tagger/features.py", "CUES"): "feature class -> its vocabulary file",
    ("tagger/model.py", "GOLD_LABELS"): "the corpora's category names -> tagger label",
}
# Calls whose string argument is split into words (the splitters this issue removed, and any
# later one named after words or splitting).
_WORDLIKE = re.compile(r"[A-Za-z][\w'/&.-]*")
_SPLITTER = re.compile(r"^_?(?:words?|word_set|words_of|split\w*)$")


def _target(stmt: ast.stmt) -> str:
    if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return ""


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")


def _words(node: ast.expr) -> int:
    return (
        len(node.value.split())
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        else 0
    )


def _spaced_words(node: ast.expr) -> int:
    """The words of a string constant that is nothing but words (a list kept as one string,
    split later), else 0: a regex, a sentence or a template is none."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return 0
    words = node.value.split()
    return len(words) if all(_WORDLIKE.fullmatch(w) for w in words) else 0


def _strings(node: ast.expr) -> int:
    """The string constants of a set/list/tuple literal, or the string keys of a dict."""
    if isinstance(node, ast.Dict):
        elts: list[ast.expr | None] = list(node.keys)
    else:
        elts = list(node.elts) if isinstance(node, ast.Set | ast.List | ast.Tuple) else []
    return sum(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in elts)


def _split_call(node: ast.expr) -> str:
    """What a call splits into more than ``MOST_WORDS`` words, else ""."""
    if not isinstance(node, ast.Call):
        return ""
    if isinstance(node.func, ast.Attribute) and node.func.attr == "split":
        many = _words(node.func.value)
        return f"'...'.split() of {many} words" if many > MOST_WORDS else ""
    if _SPLITTER.search(_call_name(node)) and node.args and _words(node.args[0]) > MOST_WORDS:
        return f"{_call_name(node)}() of {_words(node.args[0])} words"
    return ""


def _what(node: ast.expr, stmt: ast.stmt, name: str) -> str:
    """What inline word list ``node`` (inside ``stmt``, assigned to ``name``) is, else ""."""
    if _strings(node) > MOST_WORDS:
        return f"{type(node).__name__.lower()} of {_strings(node)} strings"
    if name and node is getattr(stmt, "value", None) and _spaced_words(node) > MOST_WORDS:
        return f"a string of {_spaced_words(node)} words"
    return _split_call(node)


def _inline_lists(tree: ast.Module) -> Iterator[tuple[str, int, str]]:
    """(name assigned, line, what) of every inline word list in a module."""
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.stmt) or hasattr(stmt, "body"):
            continue  # a compound statement's own statements are walked on their own
        name = _target(stmt)
        for node in ast.walk(stmt):
            if isinstance(node, ast.expr) and (what := _what(node, stmt, name)):
                yield name, node.lineno, what


def inline_lists(package: Path) -> list[str]:
    """Every inline word list of the package's modules not in ``ALLOWED``, as readable lines."""
    found: list[str] = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, line, what in sorted(_inline_lists(tree)):
            if (rel, name) not in ALLOWED:
                found.append(f"{rel}:{line} {name or '<expression>'}: {what}")
    return found


def test_no_inline_word_list_in_the_package() -> None:
    found = inline_lists(PACKAGE)
    assert not found, "move these to pipelines/phi/data/vocabulary/:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_inline_list(tmp_path: Path) -> None:
    many = " ".join(f"w{i}" for i in range(MOST_WORDS + 1))
    few = " ".join(f"w{i}" for i in range(MOST_WORDS))
    quoted = ", ".join(f'"w{i}"' for i in range(MOST_WORDS + 1))
    keyed = ", ".join(f'"w{i}": {i}' for i in range(MOST_WORDS + 1))
    (tmp_path / "mod.py").write_text(
        f'A = frozenset({{{quoted}}})\nB = [{quoted}]\nC = "{many}".split()\n'
        f'D = word_set("{many}")\nE = ({quoted})\nF = "{few}".split()\n'
        f'G = frozenset("{few}".split())\nH = (\n    "{many}"\n)\nI = "A sentence, then {many}: no list."\n'
        f"J = {{{keyed}}}\n",
        encoding="utf-8",
    )
    found = inline_lists(tmp_path)
    assert [line.split(" ", 2)[1] for line in found] == ["A:", "B:", "C:", "D:", "E:", "H:", "J:"]


def test_every_allowed_exception_still_exists() -> None:
    """A stale allow-list entry would let a new list of that name in unseen."""
    names = {
        (path.relative_to(PACKAGE).as_posix(), _target(stmt))
        for path in PACKAGE.rglob("*.py")
        for stmt in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(stmt, ast.stmt)
    }
    assert set(ALLOWED) <= names


def _code_strings(path: Path) -> Iterator[str]:
    """The string constants of a module that are no docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            yield node.value


def test_the_data_files_are_read_by_the_one_loader_only() -> None:
    """No module but ``wordlists.py`` names the vocabulary folder in its code."""
    readers = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "wordlists.py" and any("vocabulary" in s for s in _code_strings(path))
    ]
    assert readers == []


def _vocabulary_files() -> list[str]:
    return sorted(p.stem for p in VOCABULARY.glob("*.txt"))


@pytest.mark.parametrize("name", _vocabulary_files())
def test_every_vocabulary_file_loads_says_where_it_comes_from_and_is_in_the_readme(
    name: str,
) -> None:
    text = (VOCABULARY / f"{name}.txt").read_text(encoding="utf-8")
    assert text.startswith("#"), "a file opens with a comment: what it is, where it comes from"
    if re.search(r"(?m)^\[[A-Z_]+\]", text):
        assert wordlists.category_phrases(name)
    elif re.search(r"(?m)^\[", text):
        assert wordlists.role_map(name)
    else:
        assert wordlists.word_set(name)
    readme = (VOCABULARY / "README.md").read_text(encoding="utf-8")
    assert f"`{name}.txt`" in readme


def test_category_phrases_keep_phrases_whole_and_reject_unknown_sections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cues = wordlists.category_phrases("identifier_cues")
    assert cues["medical record"] is Category.MRN
    assert cues["license plate"] is Category.VEHICLE
    monkeypatch.setattr(wordlists, "_read", lambda name: "[NOT_A_CATEGORY]\nx\n")
    wordlists.category_phrases.cache_clear()
    try:
        with pytest.raises(wordlists.WordListError):
            wordlists.category_phrases("identifier_cues")
    finally:
        monkeypatch.undo()
        wordlists.category_phrases.cache_clear()


def test_word_list_keeps_the_file_order() -> None:
    suffixes = wordlists.word_list("street_suffixes")
    assert suffixes.index("street") < suffixes.index("st")
    assert frozenset(suffixes) == wordlists.word_set("street_suffixes")
