"""Name → recognizer class registry; the policy file picks which ones run and with what options."""

from __future__ import annotations

from collections.abc import Callable

from pipelines.phi.base import Recognizer

_REGISTRY: dict[str, type[Recognizer]] = {}


def register(name: str) -> Callable[[type[Recognizer]], type[Recognizer]]:
    def decorate(cls: type[Recognizer]) -> type[Recognizer]:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"recognizer {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def get(name: str) -> type[Recognizer]:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown recognizer {name!r}; known: {sorted(_REGISTRY)}") from None


def names() -> list[str]:
    _load_builtins()
    return sorted(_REGISTRY)


def _load_builtins() -> None:
    """Import the built-in recognizer modules so their ``@register`` runs (lazily, not at import)."""
    import importlib
    import pkgutil

    import pipelines.phi.recognizers as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{pkg.__name__}.{info.name}")
