"""The private internals of other libraries this project relies on, checked loudly.

Each use has a public fallback or a reason (named at the use), and an upper version bound in
pyproject.toml. When a new release moves one of these, this file fails first: read the use,
check that it still does what it did, then raise the bound.

- google-re2 (``<1.2``): ``re2._Match``, ``re2._Anchor``, ``re2._NULL_SPAN`` and a compiled
  pattern's ``_regexp`` — pipelines/re2_boundary.py runs re2's own bytes loop on ASCII text
  without mapping offsets back to characters (about half a scan's cost); a match's
  ``_spans`` — ``re2_boundary.group`` reads a group's span without ``span``'s call into re2.
  All of it sits in that one module, used only for a checked release (``CHECKED``), with the
  public API as the fallback (tests/phi/test_re2_fallback.py runs the detector both ways).
- aiokafka (``<0.15``): the consumer's ``_fetcher._fetch_max_wait_ms`` (the adaptive fetch
  wait, service/runner/fetchwait.py) and ``_client.force_metadata_update()`` (a topic created
  while ``tail`` / ``held`` wait for it).
- wordfreq (``<4``): its data file ``data/large_en.msgpack.gz`` read without importing the
  package (pipelines/phi/lexicons.py ``_english``; the import brings ftfy and friends).
- prometheus-client (``<0.27``): ``prometheus_client.mmap_dict.MmapedDict`` — service/supervisor.py
  folds a dead worker's counter and histogram files into an archive file so merged totals
  never go backwards (multiprocess mode has no public call for that). A histogram child's
  ``_sum``, ``_buckets`` and ``_upper_bounds`` and a counter child's ``_value`` —
  service/metrics.py ``bound_observe`` / ``bound_inc`` (the key store wrapper's per-call
  metrics without the public calls' repeated checks; the same samples).
- python-crfsuite (``<0.10``): the crfsuite 0.12 C API its extension module exports
  (``crfsuite.h``), which pipelines/phi/tagger/crf.py calls through cffi, and beyond the
  header the head of the tagger's ``crf1dt_t`` and ``crf1dc_marginal_point``, which read all
  of a note's marginals in one pass (the public ``marginal_point`` is the fallback, one call
  per item). The C API is used only for a checked release (``crf.CHECKED``); otherwise, or
  inside ``crf.c_api(False)``, python-crfsuite's public ``Tagger`` answers instead
  (``crf.PublicTagger``; tests/tagger/test_crf.py checks both give the same bits).
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest


def test_re2_internals_used_by_the_ascii_scan_loop() -> None:
    import re2

    from pipelines import re2_boundary

    for name in ("_Match", "_Anchor", "_NULL_SPAN"):
        assert hasattr(re2, name), f"re2.{name} is gone: check pipelines/re2_boundary.py"
    assert re2_boundary.AVAILABLE, "re2_boundary fell back to the public API: read its doc"
    assert re2_boundary.fast()
    pattern = re2.compile(r"(?i)\b(dr|mr)\.?\s+([a-z]+)|\d{3}-\d{4}|")
    assert hasattr(pattern, "_regexp"), "re2 patterns lost _regexp: check re2_boundary.py"
    text = "Seen by Dr. Smith, call 555-0100; mr jones.\nEmpty matches too."
    ours = [(m.span(), m.groups(), m.group()) for m in re2_boundary.finditer(pattern, text)]
    public = [(m.span(), m.groups(), m.group()) for m in pattern.finditer(text)]
    assert ours == public
    for m in pattern.finditer(text + " é Dr. Émile"):  # spans in characters, also past an é
        assert [m._spans[g] for g in range(3)] == [m.span(g) for g in range(3)]
        assert [re2_boundary.group(m.string, m, g) for g in range(3)] == [
            m.group(g) or "" for g in range(3)
        ]


def test_re2_boundary_refuses_internals_of_an_unchecked_version(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A google-re2 release the tests have not read turns the fast path off at import."""
    import importlib

    from pipelines import re2_boundary

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "9.0.0")
    assert not re2_boundary._version_checked()
    monkeypatch.setattr(re2_boundary, "CHECKED", ("9.0",))
    assert re2_boundary._version_checked()


def test_aiokafka_fetch_wait_attribute_is_read_per_fetch() -> None:
    from aiokafka.consumer.consumer import AIOKafkaConsumer
    from aiokafka.consumer.fetcher import Fetcher

    source = inspect.getsource(Fetcher)
    # set in __init__ and read when a fetch request is built: fetchwait.apply() then works
    assert source.count("self._fetch_max_wait_ms") >= 2, "aiokafka's Fetcher changed"
    assert "self._fetcher = Fetcher(" in inspect.getsource(AIOKafkaConsumer.start)


@pytest.mark.parametrize("command", ["service.commands.tail", "service.commands.held"])
def test_aiokafka_client_metadata_refresh(command: str) -> None:
    from aiokafka.client import AIOKafkaClient
    from aiokafka.consumer.consumer import AIOKafkaConsumer

    assert callable(getattr(AIOKafkaClient, "force_metadata_update", None))
    assert "self._client = AIOKafkaClient(" in inspect.getsource(AIOKafkaConsumer.__init__)
    assert "_client.force_metadata_update()" in inspect.getsource(
        __import__(command, fromlist=["x"])
    )


def test_prometheus_mmaped_dict_folds_values_as_the_supervisor_expects(tmp_path: Path) -> None:
    from prometheus_client.mmap_dict import MmapedDict

    from service.supervisor import fold_dead_process

    worker = MmapedDict(str(tmp_path / "counter_4242.db"))
    worker.write_value("k1", 2.5, 100.0)
    worker.write_value("k2", 1.0, 101.0)
    worker.close()
    archive = MmapedDict(str(tmp_path / "counter_archive.db"))
    archive.write_value("k1", 1.5, 50.0)
    archive.close()

    fold_dead_process(tmp_path, 4242)

    assert not (tmp_path / "counter_4242.db").exists()
    folded = {
        key: value
        for key, value, _ts, _pos in MmapedDict.read_all_values_from_file(
            str(tmp_path / "counter_archive.db")
        )
    }
    assert folded == {"k1": 4.0, "k2": 1.0}


@pytest.mark.parametrize(
    "amounts",
    [
        [0.0, 0.0001, 0.00010000001, 0.0005, 1.0, 1.5, 1e9, -1.0],  # bounds exactly, beyond
        [3e-5, 0.002, 0.02, 0.2, 0.7, 0.0025, 0.05],
    ],
)
def test_prometheus_bound_observe_and_inc_give_the_public_calls_samples(
    amounts: list[float],
) -> None:
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from service.metrics import KEYSTORE_BUCKETS, bound_inc, bound_observe

    def samples(bound: bool) -> list[tuple[str, dict[str, str], float]]:
        registry = CollectorRegistry()
        seconds = Histogram("op_seconds", "h", ["op"], registry=registry, buckets=KEYSTORE_BUCKETS)
        ops = Counter("ops", "c", ["op"], registry=registry)
        for amount in amounts:
            if bound:
                bound_observe(seconds.labels("get"))(amount)
                bound_inc(ops.labels("get"))()
            else:
                seconds.labels("get").observe(amount)
                ops.labels("get").inc()
        return [
            (s.name, s.labels, s.value)
            for metric in registry.collect()
            for s in metric.samples
            if not s.name.endswith("_created")
        ]

    assert samples(True) == samples(False)


def test_wordfreq_data_file_read_directly_gives_wordfreqs_values() -> None:
    import math

    import wordfreq

    from pipelines.phi import lexicons

    ours = lexicons._english()  # noqa: SLF001
    theirs = wordfreq.get_frequency_dict("en", "large")
    assert len(ours.common) + len(ours.rare.apart) + len(ours.rare.buckets) == len(theirs)
    assert len(theirs) > 300_000
    assert all(lexicons.zipf(w) == math.log10(f) + 9.0 for w, f in theirs.items())
    # words near listed ones but not listed: plurals, slips, a letter added
    absent = {w + "q" for w in theirs} | {w[1:] for w in theirs} | {w.upper() for w in theirs}
    absent -= theirs.keys()
    assert len(absent) > 600_000
    assert not any(map(lexicons.zipf, absent))


def test_crfsuite_internals_read_by_the_tagger_s_marginals() -> None:
    from pipelines.phi.tagger.crf import ATTRIBUTE, CrfModel
    from pipelines.phi.tagger.model import Tagger

    model = CrfModel(Tagger().model_path)
    tagger = model.tagger()
    ids = list(model.attribute_ids.values())
    rows = [b"".join(ATTRIBUTE.pack(a, 1.0) for a in ids[k : k + 7]) for k in range(0, 140, 7)]
    tagger.set(b"".join(rows), [len(row) // ATTRIBUTE.size for row in rows])
    for label in range(len(model.labels)):
        by_api = [tagger.marginal(label, t) for t in range(len(rows))]
        assert tagger.marginals(label) == by_api, "crf1dt_t moved: check tagger/crf.py"
    assert sum(tagger.marginal(label, 3) for label in range(len(model.labels))) == pytest.approx(1)
