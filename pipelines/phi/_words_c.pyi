from collections.abc import Callable, Iterable

from pipelines.phi.sorted_words import SortedWords

SHORT_BITS: int

def lookup(words: SortedWords, word: str, block: int) -> float | None: ...
def entry(
    features: tuple[str, ...],
    records: dict[str, tuple[bytes, ...]],
    nothing: tuple[bytes, ...],
    low: str,
    item: bool,
) -> tuple[bytes | str | bool, ...]: ...
def short_forms(words: Iterable[str]) -> bytes: ...
def may_be_short(forms: bytes, word: str) -> bool: ...
def many(
    store: dict[object, object], keys: list[object], missing: object
) -> tuple[list[object], list[int]]: ...
def start_filter(words: Iterable[str]) -> bytes: ...
def may_start(starts: bytes, words: list[str], capitals: bool) -> list[str]: ...
def start_positions(
    starts: bytes,
    capitals: bool,
    store: dict[str, tuple[object, ...]],
    texts: tuple[str, ...],
    compute: Callable[[str], tuple[object, ...]],
) -> tuple[list[tuple[int, tuple[object, ...]]], int]: ...
def positions_in(
    words: set[str] | frozenset[str], column: tuple[str, ...], among: list[int] | None = None
) -> list[int]: ...
