"""The tagger's gazetteers: the trie with shared leaves finds what a plain word trie finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.phi.tagger.gazetteers import (
    _LEAF,
    _NOTHING,
    Gazetteer,
    _gazetteer,
    cities,
    facilities,
)

_END = ""  # marks a whole phrase in the reference trie
Trie = dict[str, "Trie"]


def _trie(phrases: set[tuple[str, ...]]) -> Trie:
    root: Trie = {}
    for phrase in phrases:
        if phrase:
            node = root
            for word in phrase:
                node = node.setdefault(word, {})
            node[_END] = {}
    return root


def _trie_matches(
    root: Trie, lowers: list[str], candidates: list[int] | None
) -> list[tuple[int, int]]:
    """The longest-match scan on a trie of its own (no node shared)."""
    n, out, end = len(lowers), [], 0
    for i in range(n) if candidates is None else candidates:
        node = root.get(lowers[i])
        if node is None or i < end:
            continue
        best, k = (i + 1 if _END in node else 0), i + 1
        while k < n:
            node = node.get(lowers[k])
            if node is None:
                break
            k += 1
            if _END in node:
                best = k
        if best:
            out.append((i, best))
            end = best
    return out


# few distinct words, so phrases overlap, nest and share prefixes
_WORD = st.sampled_from(["a", "b", "c", "st", "new", "york", "mercy", "1", "."])
_PHRASES = st.sets(st.lists(_WORD, min_size=0, max_size=4).map(tuple), max_size=12)


@settings(max_examples=400, deadline=None)
@given(_PHRASES, st.lists(_WORD, max_size=14), st.booleans())
def test_shared_leaves_match_as_a_plain_trie(
    phrases: set[tuple[str, ...]], lowers: list[str], with_candidates: bool
) -> None:
    gazetteer = _gazetteer(phrases)
    firsts = frozenset(gazetteer.trie)
    assert firsts == frozenset(_trie(phrases))
    candidates = [i for i, w in enumerate(lowers) if w in firsts] if with_candidates else None
    assert gazetteer.matches(lowers, candidates) == _trie_matches(
        _trie(phrases), lowers, candidates
    )


def _check_real(gazetteer: Gazetteer, phrases: list[tuple[str, ...]]) -> None:
    root = _trie(set(phrases))
    # each phrase alone, and run together with the next one
    for phrase, after in zip(phrases, phrases[1:], strict=False):
        lowers = ["at", *phrase, *after, "today"]
        assert gazetteer.matches(lowers) == _trie_matches(root, lowers, None)


def test_real_gazetteers_match_as_a_plain_trie() -> None:
    from pipelines.phi import lexicons
    from pipelines.phi.tagger.gazetteers import _lower_tokens, facility_names

    _check_real(facilities(), sorted({_lower_tokens(n) for n in facility_names()})[::7])
    cities_ = sorted({_lower_tokens(c) for c in lexicons.us_cities() if " " in c})
    _check_real(cities(), cities_[::7])


def test_shared_nodes_stay_as_built() -> None:
    for gazetteer in (facilities(), cities()):
        assert gazetteer.trie  # built (and shared nodes written to by none)
    assert _NOTHING == {} and _LEAF == {"": _NOTHING}
