"""The other occurrences of the strings detected in a note (issue 26).

A string detected as PHI somewhere in a note is PHI wherever the note writes it again;
:func:`occurrences` gives each other occurrence a span of the same category, so the same
surrogate replaces it. The strings and when they spread are the ``every_occurrence`` row
of the one propagation step (``pipelines.phi.propagate``), found linearly in the note
(issue 24: one scan for the strings' first words, then a walk through a trie of the strings
at each place one starts, ``pipelines.phi.propagate_find``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pipelines.leak_guard import is_mixed_case
from pipelines.phi.propagate import RULES, spread
from pipelines.spans import Category, Span


def occurrences(
    text: str,
    spans: Sequence[Span],
    acts: Callable[[Category], bool],
    mixed_case: bool | None = None,
) -> list[Span]:
    """Spans for the other occurrences in ``text`` of the strings detected and acted on.

    A string detected as PHI somewhere in a note is PHI wherever the note writes it again:
    each other occurrence (whole words, case-insensitive, any whitespace between words) gets
    a span of the same category, so it is replaced by the same surrogate — one miss of a
    found string then neither leaks it nor holds the note. The strings are the detected
    phrases and, of a name, its parts of three letters or more; not propagated (the leak
    guard still holds a note where those survive): short strings, strings with digits under
    four, common English words, clinical words and, in a mixed-case note, short all-capital
    abbreviations (``propagate.RULES["every_occurrence"]``). ``mixed_case``:
    ``is_mixed_case(text)`` if the caller has it.
    """
    if mixed_case is None:
        mixed_case = is_mixed_case(text)
    return spread(text, spans, RULES["every_occurrence"], mixed_case, acts)
