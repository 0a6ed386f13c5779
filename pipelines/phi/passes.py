"""Passes as data: a word-level recognizer is an ordered list of named :class:`Pass` es.

A pass declares what it needs — the words that start it (``words``), or that it may start at
any word its gate accepts (``anywhere``); what it asks of that word alone (``gate``); the note
cases it runs in (``cases``); how many words before and after it reads (``before``/``after``);
the vocabulary files it reads (``vocabulary``); the written shape its gate asks for, when it
asks one (``shape``: a single letter, a capital first letter, all lower-case) — and one small
function, ``run(note, i)``.
One driver, :class:`Passes`, derives from those declarations everything that used to be
written twice: which passes are tried at which word (:meth:`Passes.steps`), which words a
recognizer must visit at all (:meth:`Passes.triggers`, :meth:`Passes.may_start`; and
:meth:`Passes.prefilter`, a necessary condition that spares judging most of a note's words),
the memo of a pass's verdict on a repeated stretch of text (:meth:`Passes.judged`, keyed by
the pass's own window), and the name every span carries in ``Span.source``
(:meth:`Passes.stamp`). So a gate can never disagree with its pass: loosen the pass's
declared words or gate and its dispatch follows.

The contract a pass keeps, and tests check (``tests/phi/test_passes.py`` and the window
tests of each recognizer): ``run`` reads no word outside ``[i - before, i + after]`` and
nothing of the note but its case; its ``gate`` looks at the word only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import compress, filterfalse
from string import ascii_lowercase
from types import ModuleType
from typing import Final, Generic, Protocol, TypeVar, cast

from pipelines import compiled
from pipelines.memo import Memo
from pipelines.phi.lexicons import Case, Token
from pipelines.spans import Category, Span

ALL_CASES: Final = frozenset(Case)


class NoteView(Protocol):
    """What the driver reads of a recognizer's per-note context."""

    @property
    def words(self) -> tuple[Token, ...]: ...

    @property
    def text(self) -> str: ...


N = TypeVar("N", bound=NoteView)  # the recognizer's per-note context
R = TypeVar("R")  # what a pass returns (a span, the next word to visit…); None: nothing

Gate = Callable[[Token, Case], bool]


def _any(tok: Token, case: Case) -> bool:
    return True


# A pass's ``shape``: what its gate asks of the word as written before anything else, one bit
# each, so the driver tells in one call which of the passes a new word may start and asks the
# gates of those only (a gate is a Python call or several; most words fit one shape at most).
SHAPES: Final = {"letter": 1, "capital": 2, "lower": 4}
_WORD: Final = 8  # every word has it: a pass that declares no shape fits them all
_ANY_SHAPE: Final = 15


def shape_of(text: str) -> int:
    """The shape bits of a word as written: one character ("J"), a capital first ("Hale",
    "J"), all its cased letters lower-case ("hale"), and the bit every word has."""
    return _WORD | (len(text) == 1) | (text[:1].isupper() << 1) | (text.islower() << 2)


@dataclass(frozen=True)
class Pass(Generic[N, R]):
    """One rule of a recognizer, declared.

    ``name`` is ``"<recognizer>.<pass>"`` and is what ``Span.source`` says of the spans the
    pass makes. ``run(note, i)`` is tried at word ``i`` when the word starts the pass (it is
    one of ``words``, or ``anywhere`` is set), the note's case is one of ``cases`` and
    ``gate(word, case)`` holds; it returns None when the pass finds nothing there."""

    name: str
    run: Callable[[N, int], R | None]
    words: frozenset[str] = frozenset()
    anywhere: bool = False
    gate: Gate = _any
    cases: frozenset[Case] = ALL_CASES
    before: int = 0
    after: int = 0
    vocabulary: tuple[str, ...] = ()
    # the shape (``SHAPES``) every word the gate holds at has: a necessary condition of the
    # gate, which the driver checks first (tests/phi/test_passes.py checks each gate keeps it)
    shape: str = ""
    memo: bool = False  # remember its verdict per window text (see ``Passes.judged``)
    doc: str = field(default="", compare=False)
    # An ``anywhere`` pass tried only at the words of a lexicon too dear to load at import
    # (the US states): the lexicon, loaded on first use (see ``Passes.starting_words``).
    lexicon: Callable[[], frozenset[str]] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        recognizer, _, rule = self.name.partition(".")
        if not recognizer or not rule:
            raise ValueError(f"a pass is named '<recognizer>.<pass>', not {self.name!r}")
        if not self.words and not self.anywhere:
            raise ValueError(f"pass {self.name}: no trigger words and not ``anywhere``")
        if self.before < 0 or self.after < 0:
            raise ValueError(f"pass {self.name}: negative window")
        if not self.cases:
            raise ValueError(f"pass {self.name}: runs in no case")
        if any(w != w.lower() for w in self.words):
            raise ValueError(f"pass {self.name}: trigger words are lower-case")
        if self.lexicon is not None and not self.anywhere:
            raise ValueError(f"pass {self.name}: a lexicon is for an ``anywhere`` pass")
        if self.shape and self.shape not in SHAPES:
            raise ValueError(f"pass {self.name}: shape is one of {sorted(SHAPES)}")

    @property
    def shape_bits(self) -> int:
        """The bits of ``shape_of`` a word must have for the pass to start there."""
        return SHAPES[self.shape] if self.shape else _ANY_SHAPE

    def starts_at(self, tok: Token, case: Case) -> bool:
        """Is this pass tried at ``tok`` in a note of ``case`` (its declaration only)?"""
        return (
            case in self.cases
            and (self.anywhere or tok.lower in self.words)
            and bool(self.shape_bits & shape_of(tok.text))
            and (self.lexicon is None or tok.lower in self.lexicon())
            and self.gate(tok, case)
        )

    @property
    def summary(self) -> str:
        """The first line of what the pass does (its ``doc`` or its function's docstring)."""
        text = self.doc or (self.run.__doc__ or "")
        return text.strip().split("\n", 1)[0]


_JUDGED_LIMIT: Final = 20_000  # windows remembered per pass at most (about 4 MB)
# Windows repeat in long notes (copied-forward text, templates); a short note's windows are
# mostly new, and remembering them costs more than it saves.
JUDGED_MIN_TEXT: Final = 10_000
_UNSEEN: Final = object()
_Verdict = tuple[int, int, Category, float] | None


def check_names(recognizer: str, names: Sequence[str]) -> None:
    """A recognizer's pass names are distinct and each starts with ``<recognizer>.``."""
    if len(set(names)) != len(names):
        raise ValueError(f"{recognizer}: two passes share a name")
    for name in names:
        if not name.startswith(recognizer + "."):
            raise ValueError(f"pass {name} does not belong to {recognizer}")


_Dispatch = tuple[dict[Case, tuple[Pass[N, R], ...]], dict[Case, dict[str, tuple[Pass[N, R], ...]]]]


def _dispatch(in_case: dict[Case, tuple[Pass[N, R], ...]]) -> _Dispatch[N, R]:
    """Per case, the ``anywhere`` passes (all a word no pass names may start), and each
    trigger word -> the passes it may start (those whose words hold it, and the ``anywhere``
    ones), in declared order."""
    roaming = {case: tuple(p for p in passes if p.anywhere) for case, passes in in_case.items()}
    named = {case: _by_word(passes) for case, passes in in_case.items()}
    return roaming, named


def _by_word(passes: tuple[Pass[N, R], ...]) -> dict[str, tuple[Pass[N, R], ...]]:
    named = frozenset().union(*(p.words for p in passes))
    return {w: tuple(p for p in passes if p.anywhere or w in p.words) for w in named}


def _planned(
    tok: Token, case: Case, tried: tuple[Pass[N, R], ...], shape: int
) -> tuple[Pass[N, R], ...]:
    """Those of the passes ``tried`` (in order, each started by the word or ``anywhere``)
    whose shape the word's ``shape`` bits hold, whose lexicon holds ``tok`` and whose gate
    holds there, a gate two passes share asked once."""
    lower = tok.lower
    verdicts: dict[Gate, bool] = {}
    found: list[Pass[N, R]] = []
    for p in tried:
        if not p.shape_bits & shape:
            continue
        if p.lexicon is not None and lower not in p.lexicon():
            continue
        gate = p.gate
        if gate is not _any:
            verdict = verdicts.get(gate)
            if verdict is None:
                verdict = verdicts[gate] = gate(tok, case)
            if not verdict:
                continue
        found.append(p)
    return tuple(found)


def _lexicon_bound(passes: tuple[Pass[N, R], ...]) -> frozenset[str] | None:
    """The words some lexicon of ``passes`` holds, when each declares one (none: the empty
    set), else None (a word in no lexicon may start one of them)."""
    if any(p.lexicon is None for p in passes):
        return None
    return frozenset().union(*(p.lexicon() for p in passes if p.lexicon is not None))


@dataclass
class Prefilter:
    """A necessary condition for a word of an ASCII note to start some pass of a case, derived
    from the passes' declarations (``Passes.prefilter``): its lower-case form is in ``bound``,
    or (when ``capitals``) it is not all lower-case. A word meeting it is then judged by
    :meth:`Passes.steps`, which stays the answer; the condition only spares the look-ups of
    the many words that meet it not."""

    # the trigger words, the lexicons of the ``anywhere`` passes that declare one, and every
    # ASCII letter when a pass with no lexicon starts at a single letter
    bound: frozenset[str]
    # a pass with no lexicon starts at a capital first letter: every word not all lower-case
    capitals: bool
    # ``bound`` as the compiled helper's bit filter, made on its first use
    bits: bytes = field(default=b"", compare=False, repr=False)

    def filter_bits(self, fast: ModuleType) -> bytes:
        """``bound`` as the compiled filter (``_words_c.start_filter``), made once."""
        if not self.bits:
            self.bits = fast.start_filter(self.bound)
        return self.bits


_LOWER_OR_ANY: Final = _WORD | SHAPES["lower"]


def _prefilter(passes: tuple[Pass[N, R], ...]) -> Prefilter | None:
    """:class:`Prefilter` of ``passes`` (the passes of one case), or None when any word may
    start one of them. Why it holds: a word starts a pass when it is one of the pass's words,
    or the pass is ``anywhere`` and the word is in its lexicon, or has no lexicon and fits its
    shape; an ASCII word of one letter is in ``bound``, one with a capital first letter is not
    all lower-case."""
    free = 0  # the shape bits of the ``anywhere`` passes with no lexicon
    for p in passes:
        if p.anywhere and p.lexicon is None:
            free |= p.shape_bits
    if free & _LOWER_OR_ANY:
        return None
    bound = frozenset().union(
        *(p.words for p in passes),
        *(p.lexicon() for p in passes if p.lexicon is not None),
        ascii_lowercase if free & SHAPES["letter"] else (),
    )
    return Prefilter(bound, bool(free & SHAPES["capital"]))


class Passes(Generic[N, R]):
    """A recognizer's passes in the order they are tried, and what derives from them."""

    def __init__(self, recognizer: str, passes: Sequence[Pass[N, R]]) -> None:
        check_names(recognizer, [p.name for p in passes])
        self.recognizer = recognizer
        self.passes: tuple[Pass[N, R], ...] = tuple(passes)
        self.by_name = {p.name: p for p in self.passes}
        self.triggers: frozenset[str] = frozenset().union(*(p.words for p in self.passes))
        self.anywhere: tuple[Pass[N, R], ...] = tuple(p for p in self.passes if p.anywhere)
        self.before = max((p.before for p in self.passes), default=0)
        self.after = max((p.after for p in self.passes), default=0)
        self._in_case = {case: tuple(p for p in self.passes if case in p.cases) for case in Case}
        # per case: the passes a word may start, in declared order (those its lower-case
        # form triggers, and the ``anywhere`` ones); a word no pass names starts only these
        self._roaming, self._named = _dispatch(self._in_case)
        self._judged: dict[str, Memo[tuple[str, Case], _Verdict]] = {
            p.name: Memo(f"{p.name}.window", None, _JUDGED_LIMIT) for p in self.passes if p.memo
        }
        # word as written -> its steps, per case (ASCII words: lower() is the lower form)
        self._steps: dict[Case, Memo[str, tuple[Pass[N, R], ...]]] = {
            case: Memo(f"{recognizer}.steps.{case.value}", self._steps_maker(case), 50_000)
            for case in Case
        }
        self._shared: dict[tuple[Pass[N, R], ...], tuple[Pass[N, R], ...]] = {}
        self._starting: frozenset[str] | None = None  # ``starting_words``, once loaded
        self._prefilters: dict[Case, Prefilter | None] = {}  # ``prefilter``, once loaded

    def _steps_maker(self, case: Case) -> Callable[[str], tuple[Pass[N, R], ...]]:
        named, roaming = self._named[case], self._roaming[case]
        # the ``anywhere`` passes a word of each shape may start: most new words none
        fitting = [tuple(p for p in roaming if p.shape_bits & bits) for bits in range(16)]
        # per shape, the words the lexicons of those passes hold when each declares one (a
        # word in none starts none of them); loaded with the first new word, not at import
        bounds: list[frozenset[str] | None] = []

        def steps_of(text: str) -> tuple[Pass[N, R], ...]:
            lower = text.lower()
            shape = shape_of(text)
            tried = named.get(lower)
            if tried is None:
                if not bounds:
                    bounds.extend(map(_lexicon_bound, fitting))
                bound = bounds[shape]
                if bound is not None and lower not in bound:
                    return ()
                tried = fitting[shape]
            found = _planned(Token(0, len(text), text, lower), case, tried, shape)
            return self._shared.setdefault(found, found)  # a few distinct tuples, kept once

        return steps_of

    def plan(self, tok: Token, case: Case) -> tuple[Pass[N, R], ...]:
        """The passes tried at ``tok`` in a note of ``case``, in declared order (uncached):
        :meth:`Pass.starts_at` of each pass of the case, a gate two passes share asked once
        (the passes whose words hold the word and the ``anywhere`` ones, picked by one
        look-up)."""
        named = self._named[case].get(tok.lower)
        return _planned(tok, case, named or self._roaming[case], shape_of(tok.text))

    def steps(self, tok: Token, case: Case, ascii_word: bool = True) -> tuple[Pass[N, R], ...]:
        """:meth:`plan`, remembered per word as written (for ASCII words)."""
        if ascii_word:
            return self._steps[case](tok.text)
        return self.plan(tok, case)

    def starting_words(self) -> frozenset[str] | None:
        """Every word (lower-case) some pass may start at: the trigger words and the lexicons
        of the ``anywhere`` passes, loaded on first call; None when an ``anywhere`` pass has
        no lexicon (any word may start it). A recognizer picks the words to visit with it in
        one pass over the note, with no Python call per word."""
        if any(p.lexicon is None for p in self.anywhere):
            return None
        if self._starting is None:
            self._starting = self.triggers.union(*(p.lexicon() for p in self.anywhere if p.lexicon))
        return self._starting

    def prefilter(self, case: Case) -> Prefilter | None:
        """What a word of an ASCII note of ``case`` must be for some pass to start there, from
        the declarations alone (``_prefilter``); None when any word may (a pass of the case
        starts anywhere with no lexicon and asks for no shape, or all lower-case). Loaded on
        first call (the lexicons)."""
        if case not in self._prefilters:
            self._prefilters[case] = _prefilter(self._in_case[case])
        return self._prefilters[case]

    def candidates(self, written: frozenset[str], case: Case) -> Collection[str]:
        """Those of ``written`` (the distinct words of an ASCII note, as written) that meet
        the case's :meth:`prefilter` (all of them when there is none): the only words
        :meth:`starts` need judge. The compiled helper "words" tests each word against a bit
        filter of the bound (16 KB, so no look-up in a table the other recognizers pushed out
        of the caches) and may keep a few more; the Python code, the reference, keeps exactly
        those whose lower-case form is in the bound (a lower-case word is its own, so one set
        intersection), and where capitals may start a pass every word not all lower-case."""
        pre = self.prefilter(case)
        if pre is None:
            return written
        fast = compiled.helper("words")
        if fast is not None:
            return cast(
                "list[str]", fast.may_start(pre.filter_bits(fast), list(written), pre.capitals)
            )
        if pre.capitals:
            return written.intersection(pre.bound).union(filterfalse(str.islower, written))
        words = list(written)
        return list(compress(words, map(pre.bound.__contains__, map(str.lower, words))))

    def positions(
        self, texts: tuple[str, ...], written: frozenset[str], case: Case
    ) -> list[tuple[int, tuple[Pass[N, R], ...]]]:
        """Each word of an ASCII note (``texts``, its words as written, in order; ``written``
        their set) where some pass is tried, with its :meth:`steps`, in order: the words of
        :meth:`starts` (of the :meth:`candidates`) found in ``texts``. The compiled helper
        "words" does it in one pass over the note's words, with no list of candidates or dict
        of starts made on the way: each word through the filter, then the steps memo's table
        (its misses through the memo); the Python code, the reference, judges each candidate
        word once, then finds the note's words among those that start something."""
        pre = self.prefilter(case)
        fast = compiled.helper("words")
        if fast is not None and pre is not None:
            memo = self._steps[case]
            found, hits = fast.start_positions(
                pre.filter_bits(fast), pre.capitals, memo.table(), texts, memo
            )
            memo.count_hits(hits)
            return cast("list[tuple[int, tuple[Pass[N, R], ...]]]", found)
        kept = self.starts(self.candidates(written, case), case)
        at = compress(range(len(texts)), map(kept.__contains__, texts))
        return [(i, kept[texts[i]]) for i in at]

    def steps_of(self, toks: Sequence[Token], case: Case) -> list[tuple[Pass[N, R], ...]]:
        """:meth:`steps` of each of ``toks`` (the words a recognizer visits in a note), those
        of ASCII words looked up in one C-level pass."""
        texts = [tok.text for tok in toks]
        if "".join(texts).isascii():
            return self._steps[case].many(texts)
        return [self.steps(tok, case, tok.text.isascii()) for tok in toks]

    def ascii_steps(self, texts: list[str], case: Case) -> list[tuple[Pass[N, R], ...]]:
        """:meth:`steps_of` of ASCII words given as written (``texts``: no token read)."""
        return self._steps[case].many(texts)

    def starts(self, written: Collection[str], case: Case) -> dict[str, tuple[Pass[N, R], ...]]:
        """The words of a note where some pass is tried, with their :meth:`steps`: each
        distinct word as written (``written``, of a note whose words' lower-case forms are
        ``str.lower`` of them) judged once, its hits in one C-level pass (``Memo.many``)."""
        words = list(written)
        steps = self._steps[case].many(words)
        return dict(compress(zip(words, steps, strict=True), steps))

    def may_start(self, tok: Token, case: Case) -> bool:
        """Must a recognizer visit ``tok`` at all: is some pass tried there?"""
        return bool(self.steps(tok, case, tok.text.isascii()))

    def first(self, note: N, i: int, case: Case) -> tuple[Pass[N, R], R] | None:
        """Try the passes of word ``i`` in order; the first that finds something, and what."""
        tok = note.words[i]
        for step in self.steps(tok, case, tok.text.isascii()):
            found = self.call(step, note, i, case)
            if found is not None:
                return step, found
        return None

    def call(self, step: Pass[N, R], note: N, i: int, case: Case) -> R | None:
        """``step.run(note, i)``, through its window memo when it declares one."""
        if not step.memo:
            return step.run(note, i)
        return cast("R | None", self.judged(step, note, i, case))

    def judged(self, step: Pass[N, R], note: N, i: int, case: Case) -> Span | None:
        """A span-making pass's verdict at word ``i``, worked out once per distinct stretch
        of text in its declared window and note case (a long note repeats its phrases).

        The pass reads the words from ``before`` before ``i`` to ``after`` after it and the
        text between them, and nothing else of the note but its case; so its verdict, taken
        relative to the window's start, is a function of the window's text and the case. Near
        the note's ends, where the window would be cut short, or in a short note, the pass is
        asked each time."""
        words, text = note.words, note.text
        run = cast("Callable[[N, int], Span | None]", step.run)
        lo, hi = i - step.before, i + step.after + 1
        if len(text) < JUDGED_MIN_TEXT or lo < 0 or hi > len(words):
            return run(note, i)
        origin = words[lo].start
        key = (text[origin : words[hi - 1].end], case)
        memo = self._judged[step.name]
        verdict = memo.peek(key, _UNSEEN)
        if verdict is None:
            return None
        if verdict is not _UNSEEN:
            start, stop, category, confidence = cast("tuple[int, int, Category, float]", verdict)
            return Span(origin + start, origin + stop, category, confidence, step.name)
        span = run(note, i)
        if span is None:
            memo.put(key, None)
        elif origin <= span.start and span.end <= origin + len(key[0]):  # read no further
            memo.put(key, (span.start - origin, span.end - origin, span.category, span.confidence))
        return span

    @staticmethod
    def stamp(span: Span, step: Pass[N, R]) -> Span:
        """``span`` as made by ``step`` (its ``source`` names the pass)."""
        if span.source == step.name:
            return span
        return Span(span.start, span.end, span.category, span.confidence, step.name)

    def describe(self) -> list[dict[str, object]]:
        """The declarations, for ``deidstream detect --explain`` and the docs."""
        return [
            {
                "pass": p.name,
                "words": sorted(p.words)[:12] + (["…"] if len(p.words) > 12 else []),
                "anywhere": p.anywhere,
                "cases": sorted(c.value for c in p.cases),
                "window": [p.before, p.after],
                "shape": p.shape or "any",
                "word_lists": list(p.vocabulary),
                "does": p.summary,
            }
            for p in self.passes
        ]


class Declared(Protocol):
    """What ``declare`` keeps of a recognizer's passes: the word-level :class:`Passes` or the
    pattern-led ``pipelines.phi.patterns.PatternPasses``."""

    recognizer: str

    def describe(self) -> list[dict[str, object]]: ...


D = TypeVar("D", bound=Declared)
_ALL_PASSES: dict[str, Declared] = {}


def declare(passes: D) -> D:
    """Register a recognizer's passes so ``--explain`` and the docs can list them."""
    _ALL_PASSES[passes.recognizer] = passes
    return passes


def declared() -> Iterable[Declared]:
    """Every registered recognizer's passes, by recognizer name."""
    return [_ALL_PASSES[name] for name in sorted(_ALL_PASSES)]
