def columns(text: str) -> tuple[list[int], list[int], list[str]]: ...
def tokenize(
    text: str, token: type[tuple[int, int, str, str]], first: int, span: int
) -> tuple[
    list[int],
    list[int],
    list[str],
    tuple[tuple[int, int, str, str], ...],
    tuple[str, ...],
    tuple[str, ...],
    frozenset[str],
    frozenset[str],
    tuple[int, int, int, int, int, int, int],
]: ...
