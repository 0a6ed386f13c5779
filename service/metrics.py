"""Prometheus metrics of one service instance, in its own registry (one per app, so tests
and several apps in one process never collide). Labels are low-cardinality by design:
topic, partition, source, reason class, category, stage, operation — never ids or text."""

from __future__ import annotations

import platform
import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from time import perf_counter
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)

# processing stages run in micro- to milliseconds; end-to-end includes broker round trips
STAGE_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
KEYSTORE_BUCKETS = (0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0)


@cache
def package_version() -> str:
    """The installed distribution's version. Cached: the metadata lookup is slow and ran
    for every research record (on the event loop)."""
    try:
        return dist_version("deidstream")
    except PackageNotFoundError:
        return "unknown"


def multiprocess_mode() -> bool:
    """prometheus-client writes values to files (``PROMETHEUS_MULTIPROC_DIR`` was set when it
    was imported): a worker under ``deidstream run --workers N`` (service/supervisor.py)."""
    return values.ValueClass is not values.MutexValue


class PartitionGauge(Gauge):
    """A gauge whose removed label set reads ``UNKNOWN`` (-1) in multiprocess mode
    (prometheus-client keeps the last value in the file, and cannot remove a label set): a
    partition handed to another worker must not keep this worker's lag, and one handed to
    nobody must not read 0. The supervisor merges with ``max`` (the owner's value wins) and
    leaves out what is still -1 (service/supervisor_app.py): the lag of a partition no
    live worker holds is absent, not 0."""

    UNKNOWN = -1.0

    def remove(self, *labelvalues: Any) -> None:
        if multiprocess_mode():
            self.labels(*labelvalues).set(self.UNKNOWN)
            return
        super().remove(*labelvalues)


def bound_observe(child: Histogram) -> Callable[[float], None]:
    """``child.observe`` for a histogram's label child resolved once, without the checks
    ``observe`` repeats on every call (9.4k instructions a call, about 3k this way): the
    amount goes to the child's sum and to its first bucket whose upper bound is at least
    the amount — the bucket ``observe``'s loop picks, found by bisection. Reads
    prometheus-client internals (``_sum``, ``_buckets``, ``_upper_bounds``; checked in
    tests/test_third_party_internals.py); same values, in multiprocess mode too."""
    add_to_sum = child._sum.inc
    buckets = tuple(bucket.inc for bucket in child._buckets)
    bounds = tuple(child._upper_bounds)

    def observe(amount: float) -> None:
        add_to_sum(amount)
        buckets[bisect_left(bounds, amount)](1)

    return observe


def bound_inc(child: Counter) -> Callable[[], None]:
    """``child.inc()`` for a counter's label child resolved once, without ``inc``'s checks
    (its value's ``inc(1)``: prometheus-client internals, see :func:`bound_observe`)."""
    return partial(child._value.inc, 1)


class CallWatch:
    """When the key store call in progress started (monotonic; None between calls), so a
    watchdog on the event loop sees a call that does not return (a lock held by another
    session, a database that stopped answering). Calls nest (a transaction's calls)."""

    def __init__(self) -> None:
        self._depth = 0
        self._lock = threading.Lock()
        self.since: float | None = None

    def begin(self) -> None:
        with self._lock:
            if self._depth == 0:
                self.since = time.monotonic()
            self._depth += 1

    def end(self) -> None:
        with self._lock:
            depth = self._depth - 1
            if depth <= 0:
                depth = 0
                self.since = None
            self._depth = depth


class Metrics:
    """All instruments of the service. ``registry`` is private to this instance. Gauges say
    how a supervisor merges its workers' values (``multiprocess_mode``: live processes only;
    ignored in one process)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        r = self.registry
        self.build_info = Gauge(
            "deidstream_build_info",
            "Build information; the value is always 1.",
            ["version", "python_version"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.build_info.labels(package_version(), platform.python_version()).set(1)
        self.consumed = Counter(
            "deidstream_messages_consumed_total",
            "Input messages taken from Kafka, by topic and source format.",
            ["topic", "source"],
            registry=r,
        )
        self.published = Counter(
            "deidstream_documents_published_total",
            "Research documents acknowledged by the broker (kind: document | tombstone).",
            ["kind"],
            registry=r,
        )
        self.dropped = Counter(
            "deidstream_documents_dropped_total",
            "Documents not published because a same or newer version was already seen.",
            ["reason"],
            registry=r,
        )
        self.deadlettered = Counter(
            "deidstream_messages_deadlettered_total",
            "Input messages sent to the dead-letter topic, by reason class.",
            ["reason_class"],
            registry=r,
        )
        self.held = Counter(
            "deidstream_documents_held_total",
            "Documents held back (leak guard, low confidence), by reason class.",
            ["reason"],
            registry=r,
        )
        self.context = Counter(
            "deidstream_context_messages_total",
            "Messages that only updated patient context (e.g. ADT) and produce no document.",
            registry=r,
        )
        self.phi_spans = Counter(
            "deidstream_phi_spans_total",
            "PHI spans found in published documents, by category.",
            ["category"],
            registry=r,
        )
        self.stage_seconds = Histogram(
            "deidstream_processing_stage_seconds",
            "Processing time per pipeline stage.",
            ["stage"],
            buckets=STAGE_BUCKETS,
            registry=r,
        )
        self.end_to_end_seconds = Histogram(
            "deidstream_end_to_end_latency_seconds",
            "From the input message timestamp to the broker's acknowledgement of the output.",
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.lag = PartitionGauge(
            "deidstream_consumer_lag_messages",
            "Messages behind the partition's high watermark after the last committed batch.",
            ["topic", "partition"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.topic_partitions = Gauge(
            "deidstream_topic_partitions",
            "Partitions of each subscribed input topic (the consumer's metadata).",
            ["topic"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.partitions_assigned = Gauge(
            "deidstream_partitions_assigned",
            "Partitions of each input topic assigned to this instance's consumers; "
            "max(deidstream_topic_partitions) - sum(this) over every instance of the group is "
            "the number of partitions nobody consumes (their lag is unknown, not 0).",
            ["topic"],
            registry=r,
            multiprocess_mode="livesum",
        )
        self.keystore_ops = Counter(
            "deidstream_keystore_operations_total",
            "Key store operations, by operation and result (ok | error).",
            ["operation", "result"],
            registry=r,
        )
        self.keystore_seconds = Histogram(
            "deidstream_keystore_operation_seconds",
            "Key store operation latency.",
            ["operation"],
            buckets=KEYSTORE_BUCKETS,
            registry=r,
        )
        self.retries = Counter(
            "deidstream_retries_total",
            "Retries after a transient failure, by operation (process | publish | commit).",
            ["operation"],
            registry=r,
        )
        self.in_flight = Gauge(
            "deidstream_messages_in_flight",
            "Input messages fetched and not yet committed.",
            registry=r,
            multiprocess_mode="livesum",
        )
        self.processing_busy = Counter(
            "deidstream_processing_busy_seconds_total",
            "Wall time the processing thread spent processing records; its rate is the "
            "instance's saturation (1 = the pipeline never waits: add instances).",
            registry=r,
        )
        self.commits = Counter(
            "deidstream_offset_commits_total",
            "Offset commits after a batch's outputs were acknowledged.",
            registry=r,
        )
        self.keystore_fault = Gauge(
            "deidstream_keystore_fault",
            "1 while the key store as a whole is unusable (wrong or missing master key, a store "
            "that cannot be opened, many records failing authentication) or a fault of its "
            "database stops the stream (keystore_permission, keystore_schema, "
            "keystore_read_only, keystore_connection, ...), by reason class.",
            ["reason_class"],
            registry=r,
            multiprocess_mode="livemax",
        )
        self.stream_faults = Counter(
            "deidstream_stream_faults_total",
            "Faults of the stream (key store/database errors that are no record's fault: the "
            "batch stops, nothing is committed or dead-lettered, retried), by reason class.",
            ["reason_class"],
            registry=r,
        )
        self.audit_head = Gauge(
            "deidstream_keystore_audit_head_seq",
            "The key store audit log's anchored head (seq of its last line, read from the "
            "sealed anchor about every 30 s; -1 when the anchor is missing or does not "
            "verify). It never goes down: alert when it does (a cut or rolled-back log).",
            registry=r,
            multiprocess_mode="livemax",
        )
        self.stall = Gauge(
            "deidstream_stall_seconds",
            "How long the current stall has lasted, by cause (0: none): document (a document "
            "still in progress past its budget), keystore (one key store call outstanding "
            "longer than stall_seconds), broker (unreachable longer than stall_seconds).",
            ["cause"],
            registry=r,
            multiprocess_mode="livemax",
        )
        for cause in ("document", "keystore", "broker"):
            self.stall.labels(cause).set(0)
        self.too_costly = Counter(
            "deidstream_documents_too_costly_total",
            "Inputs dead-lettered because one document cost more than its budget "
            "(document_deadline_seconds), by the stage that used it up (parse | detect...).",
            ["stage"],
            registry=r,
        )
        self.store_calls = CallWatch()  # the key store call in progress (not exported)
        self.ready = Gauge(
            "deidstream_ready",
            "1 when broker and key store are reachable and partitions are assigned.",
            registry=r,
            multiprocess_mode="livemin",
        )

    @contextmanager
    def keystore_timer(self, operation: str) -> Iterator[None]:
        start = perf_counter()
        result = "error"
        try:
            yield
            result = "ok"
        finally:
            self.keystore_seconds.labels(operation).observe(perf_counter() - start)
            self.keystore_ops.labels(operation, result).inc()

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def value(self, name: str, **labels: str) -> float:
        """A sample's current value (0 if absent); for /v1/status and tests."""
        got = self.registry.get_sample_value(name, labels)
        return float(got) if got is not None else 0.0
