"""The policy file: which recognizers run (with options and thresholds) and what happens
to each PHI category (keep | surrogate | redact). TOML, see ``default_policy.toml``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from enum import StrEnum
from importlib import resources
from pathlib import Path
from typing import Any

from pipelines.spans import Category


class Oversize(StrEnum):
    """What happens to a note longer than ``max_note_chars``."""

    SPLIT = "split"  # detect in overlapping chunks cut at paragraph boundaries; one output
    HOLD = "hold"  # held back with a reason; nothing is detected or published


class Action(StrEnum):
    KEEP = "keep"
    SURROGATE = "surrogate"
    REDACT = "redact"


@dataclass(frozen=True)
class Policy:
    recognizers: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> options
    min_confidence: float = 0.5
    category_thresholds: dict[Category, float] = field(default_factory=dict)
    actions: dict[Category, Action] = field(default_factory=dict)
    default_action: Action = Action.SURROGATE
    # A shift of a few days hides nothing (a date a week off is still "that week"): the default
    # moves every date at least a month (docs/keystore.md, "What a date shift protects").
    date_shift_min_days: int = 30
    date_shift_max_days: int = 730
    age_ceiling: int = 89
    # Above this many characters the detector runs on overlapping chunks (or the note is held):
    # it keeps the detector's cost per character bounded on multi-megabyte notes.
    max_note_chars: int = 50_000
    oversize: Oversize = Oversize.SPLIT
    # corpus category name (any case) -> gold category; "" drops it (corpus_formats.py)
    category_map: dict[str, str] = field(default_factory=dict)
    # [review]: tagger confidences queued for a person, and whether rule/tagger disagreements are
    review_band: tuple[float, float] = (0.3, 0.7)
    review_disagreement: bool = True

    def action_for(self, category: Category) -> Action:
        return self.actions.get(category, self.default_action)

    def threshold_for(self, category: Category) -> float:
        return self.category_thresholds.get(category, self.min_confidence)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> Policy:
        det = data.get("detector", {})
        recs = {
            name: {k: v for k, v in (opts or {}).items() if k != "enabled"}
            for name, opts in data.get("recognizers", {}).items()
            if (opts or {}).get("enabled", True)
        }
        cats = data.get("categories", {})
        actions = {Category(k): Action(v) for k, v in cats.get("actions", {}).items()}
        thresholds = {Category(k): float(v) for k, v in det.get("thresholds", {}).items()}
        surrogates = data.get("surrogates", {})
        limits = data.get("limits", {})
        review = data.get("review", {})
        shift_low, shift_high = _shift_range(surrogates)
        return cls(
            review_band=_band(review.get("band", (0.3, 0.7))),
            review_disagreement=bool(review.get("disagreement", True)),
            recognizers=recs,
            min_confidence=float(det.get("min_confidence", 0.5)),
            category_thresholds=thresholds,
            actions=actions,
            default_action=Action(cats.get("default", "surrogate")),
            date_shift_min_days=shift_low,
            date_shift_max_days=shift_high,
            age_ceiling=int(surrogates.get("age_ceiling", 89)),
            max_note_chars=_positive(limits.get("max_note_chars", 50_000), "max_note_chars"),
            oversize=Oversize(limits.get("oversize", "split")),
            category_map={
                str(k): str(v)
                for k, v in data.get("evaluation", {}).get("category_map", {}).items()
            },
        )

    @classmethod
    def load(cls, path: str | Path | None = None) -> Policy:
        """Load a policy file; ``None`` gives the packaged default policy."""
        if path is None:
            raw = resources.files("pipelines").joinpath("default_policy.toml").read_text("utf-8")
        else:
            raw = Path(path).read_text(encoding="utf-8")
        return cls.from_mapping(tomllib.loads(raw))


def _shift_range(surrogates: dict[str, Any]) -> tuple[int, int]:
    """``date_shift_min_days`` and ``_max_days``: 1 <= min <= max, else a clear error."""
    low = int(surrogates.get("date_shift_min_days", 30))
    high = int(surrogates.get("date_shift_max_days", 730))
    if not 1 <= low <= high:
        raise ValueError(
            "[surrogates] needs 1 <= date_shift_min_days <= date_shift_max_days"
            f" (got {low} and {high})"
        )
    return low, high


MIN_NOTE_CHARS = 1_000  # smaller chunks would cut most paragraphs


def _positive(value: Any, name: str) -> int:
    number = int(value)
    if number < MIN_NOTE_CHARS:
        raise ValueError(f"[limits] {name} must be at least {MIN_NOTE_CHARS}")
    return number


def _band(value: Any) -> tuple[float, float]:
    low, high = (float(v) for v in value)
    if not 0.0 <= low <= high <= 1.0:
        raise ValueError("[review] band must be [low, high] with 0 <= low <= high <= 1")
    return low, high
