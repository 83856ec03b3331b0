"""Exactly-once: each Spark task writes its rows in one Kafka transaction, and a stream's task commits with them a
marker that says "batch N is written for partition p", so a replayed batch writes nothing twice.

The transactional.id of a task is the sink's transactionalIdPrefix, a dash and the task's Spark partition number:
a retried or speculative attempt of the same task takes the same id, and its init_transactions() fences the older
attempt (whose commit then fails) and ends any transaction that attempt left open.

The marker is an offset the transaction commits for a consumer group no consumer ever joins: group
`<prefix>-<partition>`, on partition 0 of the marker topic (the topic option, or markerTopic), at offset N + 1,
with the query's id and the batch in its metadata. Kafka makes it visible together with the task's records, or
neither. A task of batch N first reads its group's committed offset: when it already marks batch N (or a later
one) of the same query, the batch was written by an earlier attempt whose end Spark never recorded (a crash between
the tasks' commits and the checkpoint's commit log), and the task writes nothing. The marker is read after
init_transactions(), which settles any transaction of an older attempt first, through a consumer's committed()
(which asks for stable offsets under read_committed), not the admin client's group offsets.

A stream's producers outlive their task: each worker keeps one per transactional.id it wrote (TransactionalPool),
so a batch costs one transaction, not a new producer's initialisation and connections. A kept producer puts the
marker into its transaction before any record; the coordinator refuses that when the id was initialised elsewhere
since (Spark gave the partition's task to another worker meanwhile), and the task starts again with a new producer.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafkasource.cluster.settings import masked
from kafkasource.writing.failures import DeliveryError, delivery_error, where
from kafkasource.writing.markers import (
    MARKER_PARTITION,
    Marker,
    already_written,
    marker_group,
    marker_metadata,
    marker_topic,
    read_marker,
    send_marker,
)
from kafkasource.writing.options import SinkOptions
from kafkasource.writing.producer import Deliveries, SinkProducer, close, fatal_cause, make_producer, send_records
from kafkasource.writing.rows import Message

log = logging.getLogger(__name__)

CALL_MARGIN_S = 30  # a transactional call waits for the brokers this long beyond the delivery timeout
INIT_SLICE_S = 1.0  # init_transactions() waits this long at a time between serving the error callback
IDLE_CLOSE_SECONDS = 300  # a kept producer unused this long is closed (its connections held for nothing)
MAX_IDLE_TRANSACTIONAL = 64  # kept producers per worker: one per partition its tasks wrote, of every sink
FENCED = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)


def transactional_id(prefix: str, partition_id: int) -> str:
    return f"{prefix}-{partition_id}"


@dataclass(frozen=True)
class StreamBatch:
    """Which stream batch a task writes (a batch job's tasks have none, and no marker)."""

    query_id: str
    batch_id: int


@dataclass(frozen=True)
class Outcome:
    records: int
    replayed: bool = False  # the marker showed the batch already written: nothing was written


@dataclass
class Transactional:
    """A transactional producer a worker keeps between tasks, with the consumer that reads its marker and names the
    marker's group to the transaction."""

    producer: SinkProducer
    deliveries: Deliveries
    consumer: Consumer | None
    key: tuple
    last_used: float = 0.0
    last_marker: Marker | None = None  # what this producer's group holds: read at init, then what it committed
    fenced: bool = False
    closed: bool = False


class TransactionalPool:
    """This worker's idle transactional producers, one per configuration and transactional.id.

    A producer's init_transactions() and its connections to the brokers and the transaction coordinator cost more
    than a small batch's whole transaction (0.3 to 0.7 s on one local broker), so a stream's task takes the producer
    an earlier task of the same Spark partition left in this worker. Spark gives a partition's next task to
    whichever worker is free, though: when another worker (or another attempt) initialised the same
    transactional.id meanwhile, the kept producer is fenced. write_transaction finds that out when it sends the
    batch's marker, before it takes a record, and starts again with a new producer."""

    def __init__(self) -> None:
        self._idle: dict[tuple, Transactional] = {}
        self._lock = threading.Lock()
        self.created = 0  # producers this pool made: what reuse saves shows here (the tests read it)

    def acquire(self, options: SinkOptions, tid: str, group: str) -> tuple[Transactional, bool]:
        """A kept producer for `tid` (True) or a new one, not yet initialised (False)."""
        key = (tid, group, tuple(sorted((k, str(v)) for k, v in options.producer_config().items())))
        with self._lock:
            self._close_idle()
            kept = self._idle.pop(key, None)
        if kept is not None:
            kept.deliveries.reset()
            return kept, True
        deliveries = Deliveries()
        producer = make_producer(options, deliveries, **{"transactional.id": tid})
        consumer = Consumer(options.client_config(**{"group.id": group, "enable.auto.commit": False}))
        self.created += 1
        return Transactional(producer, deliveries, consumer, key), False

    def release(self, kept: Transactional, healthy: bool) -> None:
        """Back into the pool after a task whose transaction ended (committed, or none begun); closed otherwise."""
        if not healthy:
            discard(kept)
            return
        kept.last_used = time.monotonic()
        with self._lock:
            replaced = self._idle.pop(kept.key, None)
            self._idle[kept.key] = kept
            while len(self._idle) > MAX_IDLE_TRANSACTIONAL:  # the least recently used goes first
                discard(self._idle.pop(next(iter(self._idle))))
        if replaced is not None:  # two tasks of one partition in one worker at once: keep the newer
            discard(replaced)

    def _close_idle(self) -> None:
        now = time.monotonic()
        for key in [k for k, t in self._idle.items() if now - t.last_used > IDLE_CLOSE_SECONDS]:
            discard(self._idle.pop(key))

    def close_all(self) -> None:
        with self._lock:
            idle, self._idle = list(self._idle.values()), {}
        for kept in idle:
            discard(kept)


def discard(kept: Transactional) -> None:
    """Close a producer that leaves the pool (and its consumer); a second call does nothing."""
    if kept.closed:
        return
    kept.closed = True
    if kept.consumer is not None:
        kept.consumer.close()
    close(kept.producer)


POOL = TransactionalPool()


class Prepared:
    """A task's transactional producer made ready on a thread of its own while the task reads the rest of its input:
    taken from the pool or made, and, when new, initialised and its marker read. init_transactions() and the
    connections take a few hundred milliseconds, which the input a task still receives from Spark covers."""

    def __init__(self, options: SinkOptions, partition_id: int, stream: bool, pool: TransactionalPool = POOL):
        prefix = options.transactional_id_prefix
        assert prefix is not None, "exactly-once options always hold a transactionalIdPrefix"
        self.options, self.partition_id, self.stream, self.pool = options, partition_id, stream, pool
        self.tid = transactional_id(prefix, partition_id)
        self.group = marker_group(prefix, partition_id)
        self.timeout = options.delivery_timeout_ms() / 1000 + CALL_MARGIN_S
        self.kept: Transactional | None = None
        self.reused = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"kafkasource-{self.tid}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            if self.stream:
                self.kept, self.reused = self.pool.acquire(self.options, self.tid, self.group)
            else:  # a batch job's task: a producer of its own (no marker would tell whether a kept one is fenced)
                deliveries = Deliveries()
                producer = make_producer(self.options, deliveries, **{"transactional.id": self.tid})
                self.kept = Transactional(producer, deliveries, None, ())
            if not self.reused:
                _make_ready(self.kept, self.options, self.timeout, self.tid)
        except BaseException as exc:  # raised again in the task's thread, by result()
            self._error = exc

    def done(self) -> bool:
        return not self._thread.is_alive()

    def result(self) -> tuple[Transactional, bool]:
        """The producer, ready, and whether it is a kept one; what making it ready raised, raised here."""
        self._thread.join()
        if self._error is not None:
            if self.kept is not None:
                discard(self.kept)
            raise self._error
        assert self.kept is not None
        return self.kept, self.reused

    def cancel(self) -> None:
        """The task ends without a transaction: a stream's producer goes back to the pool, a batch job's is closed."""
        try:
            kept, _ = self.result()
        except Exception as exc:  # the task's own error, if any, is the one to tell
            log.debug("a producer made ready for %s: %s", self.tid, exc)
            return
        if self.stream:
            self.pool.release(kept, True)
        else:
            discard(kept)


def write_transaction(
    options: SinkOptions,
    partition_id: int,
    messages: Iterable[Message],
    batch: StreamBatch | None,
    pool: TransactionalPool = POOL,
    prepared: Prepared | None = None,
) -> Outcome:
    """One task's records in one transaction (with the batch's marker for a stream), or nothing at all: any error
    aborts the transaction before it is raised. A stream's task takes a producer this worker kept from an earlier
    batch where it has one; a batch job's task makes its own. `prepared`: the producer, being made ready since the
    task's first rows came (writing/task.py)."""
    prepared = prepared or Prepared(options, partition_id, batch is not None, pool)
    tid, timeout = prepared.tid, prepared.timeout
    kept, reused = prepared.result()
    if batch is None:
        try:
            return _write(kept, options, messages, None, timeout, tid)
        finally:
            discard(kept)
    healthy = False
    try:
        outcome = _begin_stream_batch(kept, reused, options, batch, partition_id, timeout, tid)
        if outcome is None and reused and kept.fenced:
            # another worker or attempt initialised this transactional.id since this worker's last batch: the kept
            # producer is fenced, before any record was taken; a new one fences that one in turn
            log.info("the kept producer %s was fenced since its last batch: starting a new one", tid)
            discard(kept)
            kept, _ = pool.acquire(options, tid, prepared.group)
            _make_ready(kept, options, timeout, tid)
            outcome = _begin_stream_batch(kept, False, options, batch, partition_id, timeout, tid)
        if outcome is None:
            outcome = _write(kept, options, messages, batch, timeout, tid, begun=True)
            kept.last_marker = Marker(batch.query_id, batch.batch_id)
        else:  # the batch was written already: nothing is
            sum(1 for _ in messages)  # Spark's input still has to be read to its end
        healthy = True
        return outcome
    finally:
        pool.release(kept, healthy)


def _make_ready(kept: Transactional, options: SinkOptions, timeout: float, tid: str) -> None:
    """A new producer initialised (which ends any transaction an older producer with this id left open) and, for a
    stream, its marker read: settled, since that older transaction is over."""
    _init_transactions(kept, options, timeout, tid)
    if kept.consumer is not None:
        kept.last_marker = read_marker(kept.consumer, options, timeout)


def _begin_stream_batch(
    kept: Transactional,
    reused: bool,
    options: SinkOptions,
    batch: StreamBatch,
    partition_id: int,
    timeout: float,
    tid: str,
) -> Outcome | None:
    """Begin the batch's transaction with its marker in it (None), or find the batch written already (the Outcome
    of a replay, no transaction open).

    A new producer read the marker when it was made ready (_make_ready). A kept producer sends the marker first:
    that is its first call to reach the transaction coordinator, which refuses it when another producer initialised
    the same id since (the kept one is fenced: kept.fenced, None returned, no record taken). Otherwise no other producer
    committed under this id since this one's last transaction, so the marker is the one it committed last."""
    if not reused:
        if already_written(kept.last_marker, batch.query_id, batch.batch_id):
            _log_replay(batch, partition_id, kept.last_marker)
            return Outcome(0, replayed=True)
    kept.producer.begin_transaction()
    offset = TopicPartition(
        marker_topic(options),
        MARKER_PARTITION,
        batch.batch_id + 1,
        marker_metadata(batch.query_id, batch.batch_id, partition_id),
    )
    try:
        assert kept.consumer is not None
        send_marker(
            kept.producer,
            kept.consumer,
            offset,
            marker_group(options.transactional_id_prefix or "", partition_id),
            timeout,
        )
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError._FATAL:
            error = fatal_cause(kept.producer, error)
        if reused and (error.code() in FENCED or error.fatal()):
            kept.fenced = True
            return None
        failure = _transaction_error(error, kept.deliveries, options, tid, batch)
        _abort(kept.producer, error, True, timeout, tid, options)
        raise failure from None
    if reused and already_written(kept.last_marker, batch.query_id, batch.batch_id):
        _abort(kept.producer, None, True, timeout, tid, options)  # the marker sent is not committed
        _log_replay(batch, partition_id, kept.last_marker)
        return Outcome(0, replayed=True)
    return None


def _log_replay(batch: StreamBatch, partition_id: int, marker: Marker | None) -> None:
    log.info(
        "batch %d of query %s is already written for partition %d (marker of batch %s): skipping its records",
        batch.batch_id,
        batch.query_id,
        partition_id,
        marker.batch_id if marker else None,
    )


def _write(
    kept: Transactional,
    options: SinkOptions,
    messages: Iterable[Message],
    batch: StreamBatch | None,
    timeout: float,
    tid: str,
    begun: bool = False,
) -> Outcome:
    """The records in the transaction (begun here unless `begun`), committed; aborted on any error."""
    producer, deliveries = kept.producer, kept.deliveries
    try:
        if not begun:
            producer.begin_transaction()
            begun = True
        count = send_records(producer, deliveries, messages, options, transactional_id=tid)
        producer.commit_transaction(timeout)
        return Outcome(count)
    except KafkaException as exc:
        error = _transaction_error(exc.args[0], deliveries, options, tid, batch)
        _abort(producer, exc.args[0], begun, timeout, tid, options)
        raise error from None
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
    error: KafkaError, deliveries: Deliveries, options: SinkOptions, tid: str, batch: StreamBatch | None
) -> Exception:
    """What a failed transactional call means: the first failed record where some failed (a commit only says that
    some did), else the call's own error, placed at the marker topic when it concerns the marker."""
    from_records = deliveries.error(options, tid)
    if from_records is not None and error.code() not in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED):
        return from_records
    marker = error.code() in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.UNKNOWN_TOPIC_OR_PART)
    topic = options.marker_topic if marker and batch is not None else options.topic
    found = delivery_error(error, options, topic, MARKER_PARTITION if marker else None, transactional_id=tid)
    if marker and batch is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return DeliveryError(
            f"{found} (the batch markers of deliveryGuarantee=exactly-once are kept on partition "
            f"{MARKER_PARTITION} of {where(options.marker_topic, None)}: set markerTopic to an "
            "existing topic)"
        )
    return found


def _abort(producer, error: KafkaError | None, began: bool, timeout: float, tid: str, options: SinkOptions) -> None:
    """End the open transaction so none of its records ever becomes visible. A fenced producer cannot: the newer
    one that fenced it has already ended it."""
    if not began or (error is not None and error.fatal()):
        return
    try:
        producer.abort_transaction(timeout)
    except KafkaException as exc:  # the transaction ends anyway when transaction.timeout.ms passes
        log.warning(
            "could not abort the transaction of %s (%s): the brokers end it after transaction.timeout.ms "
            "unless a newer producer with that id ended it already",
            tid,
            masked(exc.args[0].str(), options.producer_config()),
        )
