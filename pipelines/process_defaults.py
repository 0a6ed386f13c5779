"""The processor's defaults, wired to the other packages (imported lazily: they may be
absent): the parser, a new patient's state, the de-identifier."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from keystore.api import PatientState, StateMinter
from pipelines.policy import Policy

if TYPE_CHECKING:
    from pipelines.process import DeidentifyFn, ParseFn


def default_parse(max_bytes: int | None) -> ParseFn:
    from pipelines.ingest import DEFAULT_MAX_BYTES, parse_input

    return partial(parse_input, max_bytes=max_bytes or DEFAULT_MAX_BYTES)


def default_state_factory(policy: Policy, store: StateMinter) -> Callable[[], PatientState]:
    """A fresh identity: surrogates draw the shift and seed; the store derives the pseudonym
    from the seed, so the keystore can reveal it later."""
    from pipelines.deidentify import surrogate_settings
    from surrogates import new_patient_state

    settings = surrogate_settings(policy)

    def make() -> PatientState:
        fresh = new_patient_state(settings)
        return store.new_state(fresh.shift_days, fresh.seed)

    return make


def default_deidentify(policy: Policy, timer: Callable[[], float]) -> DeidentifyFn:
    from pipelines.deidentify import Deidentifier

    return Deidentifier(policy, timer=timer, keep_chosen=False)  # the processor never reads them
