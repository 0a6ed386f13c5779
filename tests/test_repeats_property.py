"""Issue 23 item 8: what is published for repeats does not depend on batching or timing.

The documented rule (docs/operations.md, "Repeats"): a stream is decided as if each input
were processed alone and its outputs confirmed before the next — a repeat of a published
version is dropped (``duplicate``), a re-send of a held version is decided again (held
again while the cause stays), a newer version replaces the older, a same-time re-send with
another text is a correction. Hypothesis draws arrival orders of versions, repeats, held
versions and same-time corrections of two reports, cuts them into batches at random and
confirms each batch a random number of batches later (the runner's pipelining: the next
batch is decided while earlier ones wait for the broker); the outputs — kind, research key,
bytes, in order — must be exactly those of the one-by-one run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from keystore.api import PatientState
from keystore.memory import InMemoryStore
from keystore.pseudonyms import Pseudonyms
from pipelines.document import ClinicalDocument, ReportType, Status, VersionMarker
from pipelines.outcome import Outcome, OutcomeKind
from pipelines.policy import Policy
from pipelines.process import Processor
from pipelines.spans import Span

NOW = datetime(2026, 1, 1, tzinfo=UTC)
T0 = datetime(2025, 6, 1, 8, 0, tzinfo=UTC)
OUTPUT_KINDS = (OutcomeKind.PUBLISH, OutcomeKind.TOMBSTONE, OutcomeKind.HELD)

# (text, minutes after T0, status): versions of one report; "hold" is held by the stub
VARIANTS: list[tuple[str, int, Status]] = [
    ("first reading of the study", 0, Status.PRELIMINARY),
    ("final reading of the study", 10, Status.FINAL),
    ("final reading, corrected wording", 10, Status.FINAL),  # same time as the one above
    ("final reading that must hold", 20, Status.FINAL),  # held by the leak guard stub
    ("", 30, Status.ENTERED_IN_ERROR),
    ("amended reading after review", 40, Status.AMENDED),
    ("first reading of the study", 5, Status.FINAL),  # the preliminary's text, now final
]


@dataclass(frozen=True)
class _Deid:
    text: str
    spans: tuple[Span, ...] = ()
    held_reason: str | None = None
    stage_seconds: Mapping[str, float] = field(default_factory=dict)
    state_changed: bool = False
    held_class: str = "leak_guard"


def _deidentify(document: ClinicalDocument, state: PatientState) -> _Deid:
    if "hold" in document.text:
        return _Deid(document.text.upper(), held_reason="leak guard: a name was left (stub)")
    return _Deid(document.text.upper())


def _parse(raw: bytes, content_hint: str | None = None) -> list[ClinicalDocument]:
    report, variant, copy = orjson.loads(raw)
    text, minutes, status = VARIANTS[variant]
    return [
        ClinicalDocument(
            text=text,
            message_id=f"msg-{report}-{variant}-{copy}",  # a re-send is a new message
            patient_id="pat-1",
            assigning_authority="hosp",
            visit_id=f"visit-{report}",
            report_type=ReportType(code="11526-1", system="LN", display="Pathology"),
            status=status,
            version=VersionMarker(filing_time=T0 + timedelta(minutes=minutes)),
        )
    ]


def _processor(store: InMemoryStore | None = None) -> Processor:
    pseudonyms = Pseudonyms(bytes([7]) * 32)

    def make() -> PatientState:
        seed = hashlib.sha256(b"patient").digest()
        return PatientState(-5, pseudonyms("patient", seed), seed)

    return Processor(
        policy=Policy.load(),
        store=store if store is not None else InMemoryStore(),
        pseudonyms=pseudonyms,
        deidentify=_deidentify,
        parse=_parse,
        state_factory=make,
        near_duplicates=False,
    )


Output = tuple[str, str | None, bytes | None]


def _outputs(outcomes: Sequence[Outcome]) -> list[Output]:
    return [(o.kind.value, o.research_key, o.value) for o in outcomes if o.kind in OUTPUT_KINDS]


def _items(arrivals: Sequence[tuple[int, int]]) -> list[tuple[bytes, str | None, datetime]]:
    return [(orjson.dumps([r, v, i]), "test", NOW) for i, (r, v) in enumerate(arrivals)]


def one_by_one(arrivals: Sequence[tuple[int, int]]) -> list[Output]:
    """The documented rule: each input alone, its outputs confirmed before the next."""
    proc, out = _processor(), []
    for raw, hint, now in _items(arrivals):
        outcomes = proc.process(raw, content_hint=hint, now=now)
        out += _outputs(outcomes)
        proc.commit(outcomes)
    return out


def batched(
    arrivals: Sequence[tuple[int, int]], cuts: Sequence[int], lags: Sequence[int]
) -> list[Output]:
    """The runner's way: batches, each confirmed ``lag`` batches after it was decided; a
    batch is told the research keys of the batches not yet confirmed (in flight)."""
    proc, out = _processor(), []
    items = _items(arrivals)
    bounds = sorted({c % (len(items) + 1) for c in cuts} | {0, len(items)})
    waiting: list[tuple[int, list[Outcome], set[str]]] = []  # (confirm at, outcomes, keys)
    for n, (start, end) in enumerate(zip(bounds, bounds[1:], strict=False)):
        in_flight = set().union(*(keys for _, _, keys in waiting))
        outcomes: list[Outcome] = []
        for result in proc.process_many(items[start:end], in_flight):
            assert not isinstance(result, BaseException), result
            outcomes += result
        out += _outputs(outcomes)
        keys = {o.research_key for o in outcomes if o.research_key}
        waiting.append((n + lags[n % len(lags)], outcomes, keys))
        while waiting and waiting[0][0] <= n:  # confirmations in batch order
            proc.commit(waiting.pop(0)[1])
    for _, outcomes, _ in waiting:
        proc.commit(outcomes)
    return out


arrival = st.tuples(st.integers(0, 1), st.integers(0, len(VARIANTS) - 1))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arrivals=st.lists(arrival, min_size=1, max_size=14),
    cuts=st.lists(st.integers(0, 15), max_size=8),
    lags=st.lists(st.integers(0, 3), min_size=1, max_size=6),
)
def test_outputs_do_not_depend_on_batch_cuts_or_confirmation_timing(
    arrivals: list[tuple[int, int]], cuts: list[int], lags: list[int]
) -> None:
    assert batched(arrivals, cuts, lags) == one_by_one(arrivals)


@settings(max_examples=100, deadline=None)
@given(
    resends=st.integers(1, 8),
    cuts=st.lists(st.integers(0, 10), max_size=6),
    lags=st.lists(st.integers(0, 3), min_size=1, max_size=4),
)
def test_every_resend_of_a_held_version_is_decided_again(
    resends: int, cuts: list[int], lags: list[int]
) -> None:
    arrivals = [(0, 1)] + [(0, 3)] * (1 + resends)
    got = batched(arrivals, cuts, lags)
    assert [kind for kind, _, _ in got] == ["publish"] + ["held"] * (1 + resends)


@settings(max_examples=100, deadline=None)
@given(
    resends=st.integers(1, 8),
    cuts=st.lists(st.integers(0, 10), max_size=6),
    lags=st.lists(st.integers(0, 3), min_size=1, max_size=4),
)
def test_a_resend_of_a_published_version_is_never_published_again(
    resends: int, cuts: list[int], lags: list[int]
) -> None:
    arrivals = [(0, 1), (1, 1)] * (1 + resends)
    got = batched(arrivals, cuts, lags)
    assert [kind for kind, _, _ in got] == ["publish", "publish"]


def test_a_same_time_resend_with_another_text_is_a_correction_whatever_the_order() -> None:
    for order in ([1, 2], [2, 1]):
        got = one_by_one([(0, v) for v in order])
        assert [kind for kind, _, _ in got] == ["publish", "publish"]
        last = orjson.loads(got[-1][2] or b"{}")
        assert _text_of(last) == VARIANTS[order[-1]][0].upper()  # the later arrival wins
    # the earlier text arriving again is a repeat of a version already seen: dropped
    assert [k for k, _, _ in one_by_one([(0, 1), (0, 2), (0, 1)])] == ["publish", "publish"]


def _text_of(resource: dict[str, Any]) -> str:
    import base64

    data = resource["content"][0]["attachment"]["data"]
    return base64.b64decode(data).decode("utf-8")


def test_a_later_status_of_the_same_text_is_not_confirmed_by_the_earlier_output() -> None:
    """The preliminary goes out in one batch; its final (same text) is decided in the next
    while the first is in flight. Confirming the first must not mark the final published:
    after a crash before the final's output left, its replay publishes it."""
    store = InMemoryStore()
    proc = _processor(store)
    (first,) = proc.process_many(_items([(0, 0)]))
    assert not isinstance(first, BaseException)
    keys = {o.research_key for o in first if o.research_key}
    (second,) = proc.process_many(_items([(0, 6)]), keys)
    assert not isinstance(second, BaseException)
    assert [o.kind for o in second] == [OutcomeKind.PUBLISH]  # preliminary -> final
    proc.commit(first)  # the first batch confirmed; then the worker dies
    replay = _processor(store).process_many(_items([(0, 6)]))
    assert [o.kind for o in replay[0]] == [OutcomeKind.PUBLISH]  # type: ignore[union-attr]


class _Stumbling(InMemoryStore):
    """The batch's mark read fails, or its compare-and-set is reported lost, once."""

    def __init__(self, fail: str) -> None:
        super().__init__()
        self.fail = fail

    def get_marks(self, keys: Sequence[str]) -> dict[str, bytes | None]:
        if self.fail == "read":
            self.fail = ""
            raise ConnectionError("batch read failed once")
        return super().get_marks(keys)

    def compare_and_set_marks(
        self, items: Sequence[tuple[str, bytes | None, bytes]], **kwargs: Any
    ) -> list[bool]:
        if self.fail == "write":
            self.fail = ""
            return [False] * len(items)
        return super().compare_and_set_marks(items, **kwargs)


@pytest.mark.parametrize("fail", ["read", "write"])
def test_the_one_by_one_fallbacks_decide_repeats_the_same_way(fail: str) -> None:
    """Decided the long way (the batch read failed, or its write lost a race): a repeat in
    the batch is still a duplicate, a held version's re-send still held again."""
    proc = _processor(_Stumbling(fail))
    got = proc.process_many(_items([(0, 1), (0, 1), (1, 3), (1, 3)]))
    kinds = [o.kind.value for r in got for o in r]  # type: ignore[union-attr]
    assert kinds == ["publish", "duplicate", "held", "held"]
