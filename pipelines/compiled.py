"""The project's own compiled helpers, in one place, with the pure-Python code as the fallback.

A few steps of the detector run once per token of every note (the tokenizer, the tagger's
rows). In Python they are built from C-level calls already (``re.split``, ``map``,
``bytes.join``), so what is left is the interpreter's own work per object; a compiled loop over
the text's characters removes it. These helpers are Cython modules (``*_c.pyx`` beside the code
they speed up), built by ``pip install`` from ``pyproject.toml`` (``[tool.setuptools]
ext-modules``, Cython in the build requirements) where a C compiler is present. They are
optional: where a module was not built (no compiler, a platform without wheels for Cython), its
caller runs the Python code beside it, which is the reference every compiled helper is tested
against (``tests/test_compiled.py``, and each caller's equivalence tests).

``helper(name)`` is the compiled module, or None when it was not built or when the block runs
under ``compiled(False)`` (the equivalence tests and the benchmarks use the switch).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Final

# name -> the extension module (``pyproject.toml`` lists the same under ``ext-modules``)
MODULES: Final = {
    "tokens": "pipelines.phi._tokens_c",
    "sketch": "pipelines._sketch_c",
    "normalise": "pipelines._normalise_c",
    "words": "pipelines.phi._words_c",
    "rows": "pipelines.phi.tagger._rows_c",
}


def _load(path: str) -> ModuleType | None:
    try:
        return importlib.import_module(path)
    except ImportError:
        return None


BUILT: Final[dict[str, ModuleType | None]] = {name: _load(path) for name, path in MODULES.items()}
_in_use: dict[str, ModuleType | None] = dict(BUILT)


def helper(name: str) -> ModuleType | None:
    """The compiled module ``name``, or None: not built, or switched off."""
    return _in_use[name]


def missing() -> list[str]:
    """The helpers that were not built (the Python code runs in their place)."""
    return [name for name, module in BUILT.items() if module is None]


@contextmanager
def compiled(enabled: bool) -> Iterator[None]:
    """Inside the block every caller uses its compiled helper (where built) or its Python code."""
    before = dict(_in_use)
    _in_use.update({name: (BUILT[name] if enabled else None) for name in BUILT})
    try:
        yield
    finally:
        _in_use.clear()
        _in_use.update(before)
