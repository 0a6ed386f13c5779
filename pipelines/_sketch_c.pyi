from collections.abc import Callable

def ascii_sketch(text: str, a1: int, a2: int, a3: int, b: int, size: int) -> tuple[int, ...]: ...
def nearest(
    table: dict[str, str],
    prefix: str,
    own: str,
    signature: tuple[int, ...],
    size: int,
    words: dict[str, bytes],
    decode: Callable[[str], bytes],
) -> tuple[str | None, float, int] | None: ...
def oldest(table: dict[str, str], prefix: str, keep: int) -> list[str] | None: ...
