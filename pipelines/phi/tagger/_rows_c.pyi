def scan(
    entries: list[tuple[bytes, bytes, bytes, bytes, bytes, str, bool]],
) -> tuple[list[int], list[str]]: ...
def rows(
    entries: list[tuple[bytes, bytes, bytes, bytes, bytes, str, bool]],
    items: list[int],
    lowers: list[str],
    pad: tuple[bytes, bytes, bytes, bytes, bytes, str, bool],
    left: dict[str, dict[str, bytes]],
    right: dict[str, dict[str, bytes]],
    extras: dict[int, bytes],
    record: int,
) -> tuple[bytes, list[int]]: ...
def line_starts(text: str, starts: list[int]) -> list[int]: ...
def marked(
    lowers: list[str],
    marks: frozenset[str],
    seconds: dict[str, frozenset[str]],
    alone: frozenset[str],
    kin: frozenset[str],
) -> tuple[list[int], list[int]]: ...

ITEM_SIZE: int

def items(counts: list[int], base: int, record: int) -> bytes: ...
def candidates(
    alpha: int,
    beta: int,
    scale: int,
    path: int,
    n: int,
    labels: int,
    outside: int,
    least: float,
) -> tuple[list[int], list[int], list[float]]: ...

INSTANCE_SIZE: int
CONTEXT_OFFSETS: tuple[int, int, int, int]

def set_items(tagger: int, function: int, packed: bytes, counts: list[int], record: int) -> int: ...
def tagged(
    tagger: int,
    viterbi: int,
    marginal: int,
    n: int,
    outside: int,
    least: float,
) -> tuple[list[int], list[int], list[float]] | None: ...
