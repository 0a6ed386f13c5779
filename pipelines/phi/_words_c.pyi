from pipelines.phi.sorted_words import SortedWords

def lookup(words: SortedWords, word: str, block: int) -> float | None: ...
def entry(
    features: tuple[str, ...],
    records: dict[str, tuple[bytes, ...]],
    nothing: tuple[bytes, ...],
    low: str,
    item: bool,
) -> tuple[bytes | str | bool, ...]: ...
def many(
    store: dict[object, object], keys: list[object], missing: object
) -> tuple[list[object], list[int]]: ...
