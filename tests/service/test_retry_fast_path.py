"""The runner's ``Retrier.retry`` makes its first attempt as a plain call and builds the retry loop
only after a retriable failure: what it returns, raises, counts and sleeps must be what the
loop run from the start (``Retrier.retry_loop``) gives, for any sequence of attempt outcomes."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.errors import KeystoreUnavailable, NotHL7
from service.metrics import Metrics
from service.runner import Runner
from service.settings import Settings

# an attempt's outcome: "ok", a retriable failure, or a failure of the input (not retried)
OUTCOMES = st.lists(st.sampled_from(["ok", "retriable", "input"]), min_size=1, max_size=5)


class Script:
    """Plays the outcomes in turn; records the calls."""

    def __init__(self, outcomes: list[str]) -> None:
        self.outcomes = list(outcomes)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        outcome = self.outcomes.pop(0) if self.outcomes else "ok"
        if outcome == "retriable":
            raise KeystoreUnavailable("database unreachable")
        if outcome == "input":
            raise NotHL7("nope")
        return f"done after {self.calls}"


def _runner() -> tuple[Runner, list[float]]:
    settings = Settings(retry_initial_seconds=0.5, retry_max_seconds=4.0)
    runner = Runner(settings, Metrics(), lambda: None)  # type: ignore[arg-type,return-value]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:  # backoff recorded, not waited
        slept.append(seconds)

    runner.retrier.sleep = sleep  # type: ignore[method-assign]
    return runner, slept


async def _outcome(call: Any, script: Script) -> tuple[str, str]:
    try:
        return "returned", await call("confirm", script)
    except Exception as exc:  # noqa: BLE001 - compared below
        return "raised", type(exc).__name__


@settings(max_examples=60, deadline=None)
@given(OUTCOMES)
async def test_fast_path_behaves_like_the_loop(outcomes: list[str]) -> None:
    fast, fast_slept = _runner()
    loop, loop_slept = _runner()
    fast_script, loop_script = Script(outcomes), Script(outcomes)
    got = await _outcome(fast.retrier.retry, fast_script)
    want = await _outcome(loop.retrier.retry_loop, loop_script)
    assert got == want
    assert fast_script.calls == loop_script.calls
    assert len(fast_slept) == len(loop_slept)  # jitter differs; the number of sleeps not
    for a, b in zip(fast_slept, loop_slept, strict=True):
        assert abs(a - b) <= 0.5  # same backoff step (jitter is at most retry_initial)
    retries = "deidstream_retries_total"
    assert fast.metrics.value(retries, operation="confirm") == loop.metrics.value(
        retries, operation="confirm"
    )
