"""The Kafka runner: consume input topics, run the processor, publish, commit after ack.

The package's modules, one part each, every part an object constructed with what it uses:
``loop`` (the Runner: lifecycle, fetch loop; it holds the parts and delegates to them),
``batches`` (processing a batch: one worker-thread hop per run of records), ``delivery``
(publish, confirm, commit), ``finishing`` (the batches in flight), ``outputs`` (research,
dead-letter and held records), ``health`` (readiness, key store faults, idle probes),
``partitions`` (assignment, lag, the rebalance listener), ``stalls`` (the stall watchdog
and the lag beside the fetch loop), ``clients`` (Kafka producer,
consumer, topics), ``worker`` (the processor on its thread), ``retry`` (transient errors,
backoff), ``contract`` (what a processor is), ``state`` (the frozen context they share).

Delivery contract (at-least-once in, effectively-once out):

1. fetch a batch: at most ``max_batch_records``, and at most ``max_in_flight`` records minus
   those of earlier batches still finishing (everything fetched and not committed counts
   against the limit; batches smaller than the limit keep the worker busy under a backlog);
2. process the records, in partition order, on a single worker thread — one hop for a run of
   records (``Processor.process_many``; ``BaseProcessor`` gives one calling ``process`` for
   each inside the worker thread), not one per record (CPU-bound work stays off the event loop so
   heartbeats keep flowing; one thread keeps the processor's state and its database
   connection on one thread);
3. hand the batch to its *finisher* (a task) and go back to 1: the finisher waits for the
   previous batch's acknowledgements, then sends every output (research document, tombstone,
   dead-letter, held record) and waits for every acknowledgement (``acks=all``; failed sends
   are retried with backoff, in key order);
4. once the previous batch is confirmed and committed, tells the processor its outputs are
   durable (``Processor.commit``: the version marks it wrote unacknowledged become
   acknowledged), once per batch;
5. and commits the batch's offsets.

So the next batch is processed while the previous one is being acknowledged and committed,
and finishers run strictly in batch order: offsets are committed only after every output of
that batch and of all earlier ones is acknowledged and confirmed, and outputs are sent in input
order per partition (a batch's sends start after the previous batch's acks).

A crash before (4) replays the uncommitted batch and the processor re-emits the same outcomes
(same key, same bytes); after (4) the replay yields duplicates and publishes nothing. A
record repeating a research key whose output is in flight (decided earlier in the same batch
or in a batch still finishing) is decided as if that output were confirmed: by the processor
itself when it ``decides_repeats`` (it is given those keys), else by the runner, which
finishes the earlier batches and flushes the earlier outputs (3–4) first and decides the
record again — either way the outcome of processing one input at a time.
Records fetched before a rebalance are not processed (the new owner reads them from the
committed offset). A rebalance waits for everything in flight (the revoke callback takes the
batch lock, then waits for the finishers). A record the broker refuses (too large) is replaced
by a dead letter. A dead letter is sent once per input: with a processor that keeps marks
(its ``sent_marks`` / ``mark_sent`` remember them), a replayed batch skips the dead letters already acknowledged.
Transient errors (broker, key store) are retried with exponential backoff and jitter — nothing
is committed meanwhile and readiness goes false. Errors of the input go to the dead-letter topic
and the stream goes on: no input can block its partition.

Key-store faults of the store as a whole are not the input's fault and are never dead-lettered:
a missing or unknown master key (``MissingKeyError``), a store that cannot be opened, or
``KEY_FAULT_STREAK`` records of different patients in a row failing authentication. They are
retried with backoff like an outage (the processor is re-opened first, so a corrected key file
is picked up), readiness goes false with the reason class (``/readyz``,
``deidstream_keystore_fault``), and nothing is committed. One record failing authentication
alone is dead-lettered (``keystore_integrity``), never given a new identity.

Every other key store error is a fault of the *stream*, never of the record
(``retry.is_stream_fault``): a revoked privilege, a missing table, a read-only role, a full
disk, a lock timeout, a lost connection, any raw psycopg/sqlite3 error. The batch stops, the
record is retried alone with backoff (the processor is kept), nothing is committed or
dead-lettered, readiness is false with the reason class (``keystore_permission``, ...), one
WARNING line and ``deidstream_stream_faults_total`` per fault. A failing confirmation is
retried on any key store error: it never stops the runner.
"""

from pipelines.outcome import Outcome
from service.runner.contract import (
    BaseProcessor,
    Item,
    Processor,
    ProcessorFactory,
    content_hint,
    dead_letter_mark,
    partial_outcomes,
    process_each,
    record_subject,
    research_keys,
)
from service.runner.health import KEY_FAULT_STREAK
from service.runner.loop import Runner
from service.runner.outputs import (
    MAX_REASON_CHARS,
    RESEARCH_CONTENT_TYPE,
    Handled,
    Outputs,
    OutRecord,
    safe_reason,
)
from service.runner.partitions import PartitionState, RebalanceListener
from service.runner.retry import RECORD_REJECTED, Stopping, StoreFault, is_retriable

__all__ = [
    "BaseProcessor",
    "KEY_FAULT_STREAK",
    "MAX_REASON_CHARS",
    "RECORD_REJECTED",
    "RESEARCH_CONTENT_TYPE",
    "Handled",
    "Item",
    "OutRecord",
    "Outcome",
    "Outputs",
    "PartitionState",
    "Processor",
    "ProcessorFactory",
    "RebalanceListener",
    "Runner",
    "Stopping",
    "StoreFault",
    "content_hint",
    "dead_letter_mark",
    "partial_outcomes",
    "is_retriable",
    "process_each",
    "record_subject",
    "research_keys",
    "safe_reason",
]
