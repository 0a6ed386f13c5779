"""Builds the real processor for the runner: key store + policy + pipeline.

Kept apart from the runner so the runner can be tested with any object that implements
``service.runner.Processor`` (``service.runner.BaseProcessor`` for one with ``process``
alone). :class:`ServiceProcessor` implements all of it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from functools import partial
from time import monotonic, perf_counter
from typing import Any

from keystore.api import ServiceStore
from pipelines.outcome import Outcome
from service.metrics import CallWatch, Metrics, bound_inc, bound_observe
from service.preview import PreviewStore, audited_reader, throwaway_identity
from service.runner import Processor, ProcessorFactory
from service.runner.contract import ProcessItem, Result
from service.settings import Settings

log = logging.getLogger("deidstream.wiring")
SENT_MARK = b"sent"
PRUNE_EVERY_SECONDS = 3600.0  # expired dead-letter marks are deleted at most hourly
PRUNE_LIMIT = 10_000  # marks per prune call: one short transaction, never a long lock


class InstrumentedStore:
    """Wraps a key store: every public method call is counted (by result) and timed in the
    metrics, so any store implementation — SQLite, PostgreSQL, in-memory — is measured the
    same way without touching keystore/.

    Cheap per call: each method is wrapped once, on first use, and the wrapper is kept on
    the instance (later calls never reach ``__getattr__``), with its metric children
    resolved up front — one ``perf_counter`` pair, one histogram observation and one counter
    increment per call. Every call is still timed and counted (pseudonyms included), so
    ``deidstream_keystore_operations_total`` and ``deidstream_keystore_operation_seconds``
    keep their meaning per operation.
    """

    def __init__(self, inner: Any, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not callable(attr):
            return attr
        if name == "transaction":  # a context manager: timed from its start to its commit
            m = self._metrics
            wrapped: Callable[..., Any] = partial(
                _timed_transaction,
                attr,
                bound_observe(m.keystore_seconds.labels(name)),
                bound_inc(m.keystore_ops.labels(name, "ok")),
                bound_inc(m.keystore_ops.labels(name, "error")),
                m.store_calls,
            )
            self.__dict__[name] = wrapped
            return wrapped
        wrapped = timed_call(attr, name, self._metrics)
        self.__dict__[name] = wrapped  # bound once: later lookups find it directly
        return wrapped


@contextmanager
def _timed_transaction(
    transaction: Callable[[], Any],
    observe: Callable[[float], None],
    ok: Callable[[], None],
    error: Callable[[], None],
    watch: CallWatch,
) -> Iterator[None]:
    """The store's ``transaction()`` timed and counted as the operation ``transaction``, from
    its start to its commit (the calls inside are timed on their own as well), and watched
    as one call (a commit that waits on a lock is a stall)."""
    start = perf_counter()
    watch.begin()
    try:
        with transaction():
            yield
    except BaseException:
        watch.end()
        observe(perf_counter() - start)
        error()
        raise
    watch.end()
    observe(perf_counter() - start)
    ok()


def timed_call(fn: Callable[..., Any], operation: str, metrics: Metrics) -> Callable[..., Any]:
    """``fn`` counted and timed as the key store ``operation`` (metric children bound once)."""
    observe = bound_observe(metrics.keystore_seconds.labels(operation))
    ok = bound_inc(metrics.keystore_ops.labels(operation, "ok"))
    error = bound_inc(metrics.keystore_ops.labels(operation, "error"))
    begin, end = metrics.store_calls.begin, metrics.store_calls.end  # the stall watchdog's

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = perf_counter()
        begin()
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            end()
            observe(perf_counter() - start)
            error()
            raise
        end()
        observe(perf_counter() - start)
        ok()
        return result

    timed.__name__ = operation
    return timed


def keystore_environ(settings: Settings) -> dict[str, str]:
    """The environment the key store is resolved from: the process's, with the settings'
    store URL and master key over it."""
    import os

    from keystore.config import ENV_URL
    from keystore.keyring import ENV_KEY

    environ = dict(os.environ)
    if settings.keystore_url:
        environ[ENV_URL] = settings.keystore_url
    if settings.master_key is not None:
        environ[ENV_KEY] = settings.master_key.get_secret_value()
    return environ


def check_key_custody(settings: Settings) -> None:
    """Start-up check: the master key the store would use can be had (``MissingKeyError``
    else: a configured store with no configured key, an unreadable or loose key file).
    Nothing configured: the local default, made on first use (a demo) — nothing to check,
    and nothing is created here."""
    from keystore.config import ENV_URL, resolve
    from keystore.keyring import ENV_KEY, ENV_KEY_FILE

    environ = keystore_environ(settings)
    if any(environ.get(name, "").strip() for name in (ENV_URL, ENV_KEY, ENV_KEY_FILE)):
        resolve(environ, create=False)


def open_keystore(settings: Settings) -> Any:
    """The encrypted key store named by the settings (or the keystore package's local
    default when no URL is configured)."""
    from keystore.config import default_store_from_env

    return default_store_from_env(keystore_environ(settings), migrate=settings.keystore_migrate)


class ServiceProcessor:
    """The stream's processor plus a side-effect-free twin for previews."""

    decides_repeats = True  # the keys in flight go to the pipeline's process_many

    def __init__(
        self,
        stream: Any,
        preview: Any,
        preview_marks: PreviewStore,
        store: ServiceStore,
        *,
        deadletter_mark_seconds: float = 30 * 86400.0,
        audit_head: Callable[[], None] | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        self._audit_head = audit_head  # exports the audit log's anchored head (ping)
        self._on_close = on_close  # e.g. the budgeted parse's child processes
        self._stream = stream
        self._preview = preview
        self._preview_marks = preview_marks
        self._store = store
        self._mark_ttl = deadletter_mark_seconds
        self._pruned_at: float | None = None

    def process_many(
        self, items: Sequence[ProcessItem], unconfirmed: Sequence[set[str]] = ()
    ) -> Sequence[Result]:
        """Several inputs in one call (the runner's one worker-thread hop per batch). Every
        item is decided; a repeat of an ``unconfirmed`` research key (outputs in flight) is
        decided as if those were confirmed (``pipelines.versions.as_confirmed``)."""
        in_flight: set[str] = set().union(*unconfirmed)
        results: Sequence[Result] = self._stream.process_many(items, in_flight)
        return results

    def process(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]:
        outcomes: Sequence[Outcome] = self._stream.process(raw, content_hint=content_hint, now=now)
        return outcomes

    def commit(self, outcomes: Sequence[Outcome]) -> None:
        """The batch's confirmation — the patient states flushed, then the version marks
        acknowledged — in ONE key store transaction where the store has them: all or nothing
        (a failure leaves the states pending and the marks unacknowledged: the runner
        retries the confirmation), and one commit per batch instead of two."""
        with self._store.transaction():
            self._stream.commit(outcomes)

    def preview(self, raw: bytes, *, content_hint: str, now: datetime) -> Sequence[Outcome]:
        self._preview_marks.reset()  # every preview decides as if the document were new
        outcomes: Sequence[Outcome] = self._preview.process(raw, content_hint=content_hint, now=now)
        return outcomes

    def diagnose(self, error: BaseException, raw: bytes) -> dict[str, str]:
        """Dead-letter headers beyond the reason: hl7apy's findings for a structurally bad
        HL7 message, the failed entries of a partial batch (pipelines.ingest)."""
        from pipelines.errors import DeidstreamError
        from pipelines.ingest import reason_headers

        if not isinstance(error, DeidstreamError):
            return {}
        return reason_headers(error, raw)

    def sent_marks(self, marks: Sequence[str]) -> set[str]:
        """Which dead letters (``service.runner.contract.dead_letter_mark``) were sent and
        acknowledged before: a replayed batch does not send them again."""
        found = self._store.get_marks(list(marks))
        return {k for k, v in found.items() if v is not None}

    def mark_sent(self, marks: Sequence[str]) -> None:
        """Remember dead letters the broker acknowledged (one mark each). On a store whose
        marks can expire (``keystore.ExpiringMarks``) the marks live
        ``deadletter_mark_days`` and expired ones are pruned here, at most hourly (on the
        processing thread, which owns the store's connection)."""
        items = [(k, None, SENT_MARK) for k in dict.fromkeys(marks)]
        # False for a mark already there
        self._store.compare_and_set_marks(items, ttl_seconds=self._mark_ttl)
        self._prune()

    def _prune(self) -> None:
        now = monotonic()
        if self._pruned_at is not None and now - self._pruned_at < PRUNE_EVERY_SECONDS:
            return
        self._pruned_at = now
        removed = self._store.prune_marks(limit=PRUNE_LIMIT)
        if removed:
            log.info("pruned %d expired dead-letter marks", removed)

    def ping(self) -> None:
        """A real round trip to the key store's database (for readiness while idle), and
        this instance's heartbeat (at most every few seconds: which key it seals with)."""
        self._store.get_mark("deidstream:readiness-probe")
        self._store.heartbeat()
        if self._audit_head is not None:
            self._audit_head()

    def close(self) -> None:
        try:
            self._store.close()
        finally:
            if self._on_close is not None:
                self._on_close()


class AuditHeadExport:
    """Sets ``deidstream_keystore_audit_head_seq`` from the store's sealed audit anchor, at
    most every ``every_s`` (the readiness probe calls it every few seconds): an outside
    record of the head, so a log cut or rolled back with its anchor is seen going down."""

    def __init__(self, store: Any, metrics: Metrics, every_s: float = 30.0) -> None:
        self._store = store
        self._gauge = metrics.audit_head
        self._every = every_s
        self._at: float | None = None

    def __call__(self) -> None:
        now = monotonic()
        if self._at is not None and now - self._at < self._every:
            return
        self._at = now
        admin = getattr(self._store, "admin", None)
        if admin is not None:
            head = admin.audit_head()
            self._gauge.set(-1 if head is None else head)


def warm_word_lists() -> None:
    """Load the detector's lexicons, then the surrogates' lists, before readiness (not on the
    first documents). The detector's go first: the drug list's packaged tables are a large
    transient that later lists then reuse, instead of raising the resident size on top
    (bench/README.md, "Memory")."""
    import surrogates
    from pipelines.phi import lexicons

    for warm in (lexicons.warm, surrogates.warm):
        try:
            warm()
        except Exception as exc:  # noqa: BLE001 - the lists also load on first use
            log.warning("warming %s failed: %s", warm.__module__, type(exc).__name__)


# An invented note (no real person), de-identified once at start: its first-use costs
_WARM_NOTE = (
    "MSH|^~\\&|WARMUP|WARMUP|DEID|RES|20250101090000||ORU^R01|WARMUP-1|P|2.5\r"
    "PID|1||W0000001^^^WARMUP^MR||Vexley^Quorrin||19700101|F\r"
    "OBR|1|W1|W1|11506-3^Progress note^LN|||20250101080000\r"
    "OBX|1|TX|11506-3^Progress note^LN||Quorrin Vexley, 54, was seen on 01/02/2025 at "
    "12 Nowhere Lane, Springfield; call (555) 010-0199 or q.vexley@example.org.||||||F\r"
)


def warm_pipeline(policy: Any) -> None:
    """De-identify an invented note once, on a throwaway in-memory store, before readiness:
    the first document paid ~2-3 s of first uses (phone metadata, the tagger's model, lazy
    patterns) out of its budget (issue 24, item 2). Nothing is written to the key store."""
    from datetime import UTC, datetime

    from keystore.memory import InMemoryStore
    from keystore.pseudonyms import Pseudonyms
    from pipelines.process import Processor as RealProcessor

    try:
        throwaway = RealProcessor(
            policy=policy, store=InMemoryStore(), pseudonyms=Pseudonyms.random()
        )
        throwaway.process(_WARM_NOTE.encode(), content_hint="hl7v2", now=datetime.now(UTC))
    except Exception as exc:  # noqa: BLE001 - warming is a bonus; first uses happen anyway
        log.warning("warming the pipeline failed: %s", type(exc).__name__)


_frozen = False


def freeze_after_warmup() -> bool:
    """Move everything alive now (lexicons, compiled patterns) out of the garbage collector's
    reach, once per process: a full collection of them stalled the stream's path (figures:
    bench/README.md, "Figures from code comments"). Once only: a processor re-opened after a
    key-store fault must not freeze the old one's garbage for good. Returns whether it froze now."""
    global _frozen
    if _frozen:
        return False
    import gc

    gc.collect()
    gc.freeze()
    # A young collection every 20,000 net allocations instead of 700: a document allocates
    # thousands of short-lived objects, and the default made the collector walk them
    # several times per document (bench/process.py --gc-freeze; bench/README.md). What is
    # collected does not change, only how often.
    gc.set_threshold(20_000, 10, 10)
    _frozen = True
    return True


def _reviewed_deidentifiers(settings: Settings, policy: Any, store: Any) -> tuple[Any, Any]:
    """With the review workbench on: de-identifiers whose detector applies the reviewers'
    allow / deny lists (pipelines.review; re-read every few seconds) — the stream's, which
    may also queue spans for review, and the preview's, the same lists and spans without
    queueing anything. Else (None, None): the policy's default."""
    if not settings.review_enabled:
        return None, None
    import time

    from pipelines.deidentify import Deidentifier
    from pipelines.phi.detector import Detector
    from pipelines.review import QueueingDetector, ReviewQueue

    queue = ReviewQueue(store)
    detector = (
        QueueingDetector(policy, queue)
        if settings.review_queue_spans
        else Detector(policy, lists=queue.lists)
    )
    quiet = Detector(policy, lists=queue.lists)  # the same spans, nothing queued
    return (
        Deidentifier(policy, detector=detector, timer=time.perf_counter),
        Deidentifier(policy, detector=quiet, timer=time.perf_counter),
    )


def _reviewed_deidentifier(settings: Settings, policy: Any, store: Any) -> Any:
    """The stream's de-identifier of :func:`_reviewed_deidentifiers` (None: the default)."""
    return _reviewed_deidentifiers(settings, policy, store)[0]


def real_processor_factory(settings: Settings, metrics: Metrics) -> ProcessorFactory:
    """A factory (run on the runner's worker thread) for the real pipeline."""

    def build() -> Processor:
        from pipelines.policy import Policy
        from pipelines.process import Processor as RealProcessor
        from service.budget import BudgetedParse

        raw = open_keystore(settings)
        store = InstrumentedStore(raw, metrics)
        policy = Policy.load(settings.policy_file)
        warm_word_lists()
        warm_pipeline(policy)
        freeze_after_warmup()
        preview = PreviewStore(store, audited_reader(raw), throwaway_identity(store, policy))
        limit, deadline = settings.max_message_bytes, settings.document_deadline_seconds
        streamed, previewed = _reviewed_deidentifiers(settings, policy, raw)
        # a large input is parsed in a child process killed at the budget (service/budget.py)
        parse = BudgetedParse(deadline, max_bytes=limit)
        parse.warm()  # its start-up is paid here, not by the first large document's budget
        return ServiceProcessor(
            RealProcessor(
                policy=policy,
                store=store,
                max_bytes=limit,
                deadline_seconds=deadline,
                deidentify=streamed,
                parse=parse,
            ),
            RealProcessor(
                policy=policy,
                store=preview,
                max_bytes=limit,
                deadline_seconds=deadline,
                deidentify=previewed,
                parse=parse,
            ),
            preview,
            store,
            deadletter_mark_seconds=settings.deadletter_mark_days * 86400.0,
            audit_head=AuditHeadExport(raw, metrics),
            on_close=parse.close,
        )

    return build
