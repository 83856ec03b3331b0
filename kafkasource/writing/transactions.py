"""Exactly-once: each Spark task writes its rows in one Kafka transaction, which also commits a marker that says
"batch N of write q is written for partition p, and these were its records", so that a replayed batch or a retried
task writes nothing twice, and a replay over other records, or a second sink under the same prefix, fails instead
of losing or duplicating any (writing/markers.py has the marker and the rule).

The transactional.id of a task is the sink's transactionalIdPrefix, a dash and the task's Spark partition number:
a retried or speculative attempt of the same task takes the same id, and its init_transactions() fences the older
attempt (whose commit then fails) and ends any transaction that attempt left open. The marker is read after
init_transactions(), which settles any transaction of an older attempt first.

A task's producer outlives it: each worker keeps one per transactional.id it wrote (writing/transactional_pool.py),
so a batch costs one transaction, not a new producer's initialisation and connections. A kept producer puts the
marker into its transaction before any record; the coordinator refuses that when the id was initialised elsewhere
since (Spark gave the partition's task to another worker meanwhile, or another sink took the prefix), and the task
starts again with a new producer (the worker's spare for that id), which reads the marker that other producer left.
Otherwise nobody committed under this id since this producer's last transaction, so the marker is the one it
committed last.

The marker goes into the transaction twice: first without the task's count and digest (the fence check), then,
after the last record, with them; the group coordinator keeps the later of two offsets a transaction commits for
one group and partition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafkasource.options.sink import SinkOptions
from kafkasource.runtime.secrets import masked
from kafkasource.writing.bounded import StuckCall, bounded
from kafkasource.writing.deliveries import Deliveries
from kafkasource.writing.digest import RecordDigest, hash_of
from kafkasource.writing.failures import (
    COORDINATOR_UNANSWERED,
    FENCED,
    DeliveryError,
    delivery_error,
    transaction_timed_out,
    where,
)
from kafkasource.writing.markers import (
    MARKER_PARTITION,
    MarkedBatch,
    Marker,
    Verdict,
    check_replay,
    judge,
    marker_group,
    marker_metadata,
    marker_topic,
    partition_name,
    read_marker,
    send_marker,
)
from kafkasource.writing.native_producer import MESSAGE_COLUMNS, message_batches
from kafkasource.writing.placement import place_keyless
from kafkasource.writing.producer import drain, fatal_cause, send_records
from kafkasource.writing.rows import ArrowRecords, Message
from kafkasource.writing.transactional_pool import (
    POOL,
    Transactional,
    TransactionalPool,
    discard,
    discard_stuck,
    learn_brokers,
)

log = logging.getLogger(__name__)

CALL_MARGIN_S = 30  # a transactional call waits for the brokers this long beyond the delivery timeout
STUCK_MARGIN_S = 15  # a marker call not returned this long after its own timeout is given up (writing/bounded.py)
INIT_SLICE_S = 1.0  # init_transactions() waits this long at a time between serving the error callback
# A kept producer's first marker is its first request to its coordinators since its last batch, and needs a few
# round trips. One that waits longer is held by a coordinator the producer still has cached but that went away or
# stopped answering (a node restarted: librdkafka may keep the stale coordinator until another of its connections
# changes state). No record was taken from the input yet, so a new producer, which looks both coordinators up
# again, takes over at the cost of one init_transactions().
# A first marker call that outlives its timeout (librdkafka's call can block past it) is given up this long after
# it, and a new producer takes over all the same: its trigger stays within FIRST_MARKER_TIMEOUT_S + this margin and
# one init_transactions()
FIRST_MARKER_TIMEOUT_S = 10.0
FIRST_MARKER_STUCK_MARGIN_S = 5.0


def transactional_id(prefix: str, partition_id: int) -> str:
    """The transactional.id of the task of Spark partition `partition_id`: every attempt of that task takes it."""
    return partition_name(prefix, partition_id)


@dataclass(frozen=True)
class Outcome:
    records: int
    replayed: bool = False  # the marker showed the batch already written, over the same records: none was written


class Prepared:
    """A task's transactional producer: the one this worker kept for its transactional.id, taken at once, or else a
    new one, made, initialised and its marker read on a thread of its own while the task reads the rest of its
    input. init_transactions() and the connections take a few hundred milliseconds, which the input a task still
    receives from Spark covers; a thread started for a kept producer would only wait for the task's thread to let go
    of the GIL (10 to 20 ms under Spark's load)."""

    def __init__(self, options: SinkOptions, partition_id: int, pool: TransactionalPool = POOL):
        prefix = options.transactional_id_prefix
        assert prefix is not None, "exactly-once options always hold a transactionalIdPrefix"
        self.options, self.partition_id, self.pool, self.prefix = options, partition_id, pool, prefix
        self.tid = transactional_id(prefix, partition_id)
        self.group = marker_group(prefix, partition_id)
        self.timeout = options.delivery_timeout_ms() / 1000 + CALL_MARGIN_S
        self.kept: Transactional | None = pool.take_kept(options, self.tid, self.group)
        self.reused = self.kept is not None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if self.kept is None:
            self._thread = threading.Thread(target=self._run, name=f"kafkasource-{self.tid}", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        try:
            self.kept = self.pool.make(self.options, self.tid, self.group)
            _make_ready(self.kept, self.options, self.timeout, self.tid)
        except BaseException as exc:  # raised again in the task's thread, by result()
            self._error = exc

    def done(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def result(self) -> tuple[Transactional, bool]:
        """The producer, ready, and whether it is a kept one; what making it ready raised, raised here."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            if self.kept is not None:
                discard(self.kept)
            raise self._error
        assert self.kept is not None
        return self.kept, self.reused

    def cancel(self) -> None:
        """The task ends without a transaction: the producer goes back to the pool."""
        try:
            kept, _ = self.result()
        except Exception as exc:  # the task's own error, if any, is the one to tell
            log.debug("a producer made ready for %s: %s", self.tid, exc)
            return
        self.pool.release(kept, True, self.options, self.tid)


def write_transaction(
    options: SinkOptions,
    partition_id: int,
    records: ArrowRecords | Iterable[Message],
    batch: MarkedBatch,
    pool: TransactionalPool = POOL,
    prepared: Prepared | None = None,
) -> Outcome:
    """One task's records and its marker in one transaction, or nothing at all: any error aborts the transaction
    before it is raised. The task takes a producer this worker kept from an earlier task of the same partition where
    it has one. `records`: the task's Arrow batches (writing/task.py), or records as producer.send takes them;
    `prepared`: the producer, being made ready since the task's first rows came (writing/task.py)."""
    prepared = prepared or Prepared(options, partition_id, pool)
    tid, timeout, prefix = prepared.tid, prepared.timeout, prepared.prefix
    arrow = records if isinstance(records, ArrowRecords) else _as_arrow(records)
    kept, reused = prepared.result()
    healthy = False
    try:
        try:
            began = reused and _send_first_marker(kept, options, batch, partition_id, timeout, tid)
        except StuckCall:
            # the stuck producer is closed on its call's thread once the call returns (writing/bounded.py); no record
            # was taken yet, so a new producer of the id writes the batch, and its init fences the stuck one
            log.warning(
                "the kept producer %s did not begin its batch within %.0f s: a new producer takes over",
                tid,
                FIRST_MARKER_TIMEOUT_S + FIRST_MARKER_STUCK_MARGIN_S,
            )
            kept, began, reused = pool.make(options, tid, prepared.group), False, False
            _make_ready(kept, options, timeout, tid)
        if reused and not began:
            # the kept producer is fenced (another worker or attempt initialised this transactional.id since this
            # worker's last batch, or another sink took the prefix) or its coordinators did not answer, before any
            # record was taken; a new producer fences that one in turn and reads the marker it left, which judge()
            # weighs
            log.info("the kept producer %s cannot begin its batch: replacing it", tid)
            pool.replace_producer(kept, options, tid)
            _make_ready(kept, options, timeout, tid)
        try:
            verdict = judge(kept.last_marker, batch, prefix, partition_id)
        except BaseException:
            if began:
                _abort(kept.producer, None, True, timeout, tid, options)
            raise
        if verdict is Verdict.COMPARE:
            ended = not began or _abort(kept.producer, None, True, timeout, tid, options)
            assert kept.last_marker is not None
            # Spark's input is read to its end, and its digest taken the way the marker's was
            digest = RecordDigest(arrow.columns, hash_of(kept.last_marker.digest))
            for _ in digest.over(arrow.batches):
                pass
            check_replay(kept.last_marker, batch, prefix, partition_id, digest.records, digest.hexdigest())
            _log_replay(batch, partition_id, digest.records)
            healthy = ended
            return Outcome(0, replayed=True)
        earlier = kept.last_marker.followed(batch.query_id) if kept.last_marker else ()
        digest = RecordDigest(arrow.columns)
        placed = place_keyless(
            ArrowRecords(digest.over(arrow.batches), arrow.columns), kept.consumer, partition_id + batch.batch_id
        )
        count = _write(kept, options, placed, batch, partition_id, earlier, digest, timeout, tid, began)
        kept.last_marker = Marker(batch.query_id, batch.batch_id, digest.records, digest.hexdigest(), earlier)
        healthy = True
        return Outcome(count)
    finally:
        pool.release(kept, healthy, options, tid)


def _as_arrow(messages: Iterable[Message]) -> ArrowRecords:
    """Records as producer.send takes them, in Arrow batches (for direct callers: a task hands its batches)."""
    return ArrowRecords((batch for batch, _columns in message_batches(messages)), MESSAGE_COLUMNS)


def _make_ready(kept: Transactional, options: SinkOptions, timeout: float, tid: str) -> None:
    """A new producer initialised (which ends any transaction an older producer with this id left open) and its
    marker read: settled, since that older transaction is over."""
    _init_transactions(kept, options, timeout, tid)
    kept.last_marker = read_marker(kept.consumer, options, timeout)


def _marker_offset(
    options: SinkOptions, batch: MarkedBatch, partition_id: int, earlier: tuple[str, ...], digest: RecordDigest | None
) -> TopicPartition:
    metadata = marker_metadata(
        batch,
        partition_id,
        earlier,
        digest.records if digest is not None else None,
        digest.hexdigest() if digest is not None else None,
    )
    return TopicPartition(marker_topic(options), MARKER_PARTITION, batch.batch_id + 1, metadata)


def _send_first_marker(
    kept: Transactional, options: SinkOptions, batch: MarkedBatch, partition_id: int, timeout: float, tid: str
) -> bool:
    """A kept producer's transaction begun with the batch's marker in it (True), or the producer found fenced or
    its coordinators unanswering within FIRST_MARKER_TIMEOUT_S (False: the caller puts a new one in its place). The
    marker is its first call to reach the transaction coordinator, which refuses it when another producer
    initialised the same id since; nothing is taken from the input before it."""
    kept.producer.begin_transaction()
    earlier = kept.last_marker.followed(batch.query_id) if kept.last_marker else ()
    try:
        _send(
            kept,
            _marker_offset(options, batch, partition_id, earlier, None),
            min(timeout, FIRST_MARKER_TIMEOUT_S),
            FIRST_MARKER_STUCK_MARGIN_S,
        )
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError._FATAL:
            error = fatal_cause(kept.producer, error)
        if error.code() in FENCED or error.fatal():
            return False
        if error.code() in COORDINATOR_UNANSWERED or error.retriable():  # still refused once its time was up
            log.warning(
                "the kept producer %s could not begin its transaction (%s): a new producer takes over",
                tid,
                masked(error.str(), options.producer_config()),
            )
            return False
        failure = _transaction_error(error, kept.deliveries, options, tid)
        _abort(kept.producer, error, True, timeout, tid, options)
        raise failure from None
    return True


def _send(kept: Transactional, offset: TopicPartition, timeout: float, margin: float | None = None) -> None:
    """The marker into the transaction, waited for at most its timeout and a margin: a call still running then is
    stuck in librdkafka (writing/bounded.py), and the task fails rather than wait for good. `margin`: STUCK_MARGIN_S
    unless given."""
    try:
        bounded(
            lambda: send_marker(kept.producer, kept.consumer, offset, kept.group, timeout),
            timeout + (STUCK_MARGIN_S if margin is None else margin),
            lambda: discard_stuck(kept),
            f"the batch marker of group {kept.group}",
        )
    except StuckCall:
        kept.stuck = True  # nothing in this thread may close or abort it now: discard_stuck does, once the call returns
        raise


def _log_replay(batch: MarkedBatch, partition_id: int, records: int) -> None:
    log.info(
        "%s is already written for partition %d, over the same %d records: skipping them",
        batch,
        partition_id,
        records,
    )


def _write(
    kept: Transactional,
    options: SinkOptions,
    records: ArrowRecords,
    batch: MarkedBatch,
    partition_id: int,
    earlier: tuple[str, ...],
    digest: RecordDigest,
    timeout: float,
    tid: str,
    begun: bool,
) -> int:
    """The records in the transaction (begun here unless `begun`), then the marker with their count and digest,
    committed; aborted on any error. How many records were written."""
    producer, deliveries = kept.producer, kept.deliveries
    opened = time.monotonic()
    try:
        if not begun:
            producer.begin_transaction()
            begun = True
        count = send_records(producer, deliveries, records, options, transactional_id=tid)
        # every record delivered before the marker that says so goes in (the commit would wait for them anyway): a
        # record that failed fails the task with its own error, not with the marker call's "must be aborted"
        drain(producer, deliveries, options, tid)
        _send(kept, _marker_offset(options, batch, partition_id, earlier, digest), timeout)
        producer.commit_transaction(timeout)
        return count
    except KafkaException as exc:
        error = _transaction_error(exc.args[0], deliveries, options, tid, time.monotonic() - opened)
        _abort(producer, exc.args[0], begun, timeout, tid, options)
        raise error from None
    except StuckCall:  # its transaction ends when a new producer of the id fences this one, or by its timeout
        raise
    except DeliveryError as exc:
        _abort(producer, None, begun, timeout, tid, options)
        raise transaction_timed_out(exc, options, tid, time.monotonic() - opened) or exc from None
    except BaseException:
        _abort(producer, None, begun, timeout, tid, options)
        raise


def _init_transactions(kept: Transactional, options: SinkOptions, timeout: float, tid: str) -> None:
    """init_transactions() within `timeout`, called in slices with the error callback served between them: brokers
    that refuse the producer (authentication, the TLS handshake) say so only to that callback, which no
    transactional call serves, so a single call would wait the whole timeout and then only report that it timed
    out. librdkafka resumes the same initialisation when the call is repeated after a timeout."""
    producer, deliveries = kept.producer, kept.deliveries
    deadline = time.monotonic() + timeout
    learn_brokers(producer)
    while True:
        try:
            producer.init_transactions(max(min(INIT_SLICE_S, deadline - time.monotonic()), 0.1))
            return
        except KafkaException as exc:
            producer.poll(0)  # serves the error callback, which records a refusal
            refused = deliveries.error(options, tid) if deliveries.refusal is not None else None
            if refused is not None:
                raise refused from None
            if not exc.args[0].retriable() or time.monotonic() >= deadline:
                raise


def _transaction_error(
    error: KafkaError, deliveries: Deliveries, options: SinkOptions, tid: str, open_seconds: float = 0.0
) -> Exception:
    """What a failed transactional call means: the first failed record where some failed (a commit only says that
    some did), else the call's own error, placed at the marker topic when it concerns the marker; a fence met after
    the transaction was open longer than transaction.timeout.ms is the broker's abort of it."""
    from_records = deliveries.error(options, tid)
    if from_records is not None and error.code() not in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED):
        return transaction_timed_out(from_records, options, tid, open_seconds) or from_records
    marker = error.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART)
    topic = options.marker_topic if marker else options.topic
    found = delivery_error(error, options, topic, MARKER_PARTITION if marker else None, transactional_id=tid)
    if marker and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return DeliveryError(
            f"{found} (the batch markers of deliveryGuarantee=exactly-once are kept on partition "
            f"{MARKER_PARTITION} of {where(options.marker_topic, None)}: set markerTopic to an "
            "existing topic)"
        )
    return transaction_timed_out(found, options, tid, open_seconds) or found


def _abort(producer, error: KafkaError | None, began: bool, timeout: float, tid: str, options: SinkOptions) -> bool:
    """End the open transaction so none of its records ever becomes visible; whether the producer may write again
    (a producer whose abort failed is not put back in the pool). A fenced producer cannot abort: the newer one that
    fenced it has already ended its transaction."""
    if not began:
        return True
    if error is not None and error.fatal():
        return False
    try:
        producer.abort_transaction(timeout)
        return True
    except KafkaException as exc:  # the transaction ends anyway when transaction.timeout.ms passes
        log.warning(
            "could not abort the transaction of %s (%s): the brokers end it after transaction.timeout.ms "
            "unless a newer producer with that id ended it already",
            tid,
            masked(exc.args[0].str(), options.producer_config()),
        )
        return False
