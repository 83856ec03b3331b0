"""The sink's producers on executors: the loop that hands a task's records to librdkafka, the delivery reports it
keeps, waiting (bounded) until every record is delivered or failed, and a pool of producers per Python worker for
at-least-once and none writes.

Spark reuses Python workers across batches and jobs, so a producer outlives a task: the pool keeps it per
configuration (as the reading side keeps its consumers), and a producer that saw any failure is closed rather than
handed to the next task, which must not meet the reports of records it never wrote. Transactional producers have
a pool of their own, by transactional.id (writing/transactional_pool.py), since one may be fenced while it waits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias

from confluent_kafka import KafkaError, KafkaException, Producer

from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.options.sink import SinkOptions
from kafkasource.runtime.pooling import ClientPool
from kafkasource.writing.deliveries import Deliveries
from kafkasource.writing.failures import DeliveryError, delivery_error, where
from kafkasource.writing.native_producer import NativeProducer, message_batches
from kafkasource.writing.rows import ArrowRecords, Columns, Message, native_batch, size_of

SinkProducer: TypeAlias = Producer | NativeProducer  # what make_producer gives: confluent-kafka's, or the native one

log = logging.getLogger(__name__)

POLL_EVERY = 1_000  # records between two polls that serve delivery reports (and notice a failure early)
# a drain waits for librdkafka's own delivery timeout, after which every record has its report, plus this margin
DRAIN_MARGIN_S = 15


class QuietFences:
    """librdkafka's log lines of a transactional producer (confluent-kafka's `logger`), into Python's logging at
    their level, but for the lines a producer logs when it finds itself fenced (at error level and worse): being
    fenced is how the sink learns that another worker or attempt took its transactional.id, which it handles (a kept
    producer is replaced) or tells in its own words (the task's error), so those go to DEBUG. The native producer
    drops them alike (native/src/producer.rs)."""

    def log(self, level: int, fmt: str, *args: object) -> None:
        text = fmt % args
        LIBRDKAFKA_LOG.log(logging.DEBUG if is_fence(text) else level, text)


LIBRDKAFKA_LOG = logging.getLogger("kafkasource.librdkafka")


def is_fence(text: str) -> bool:
    """Whether a librdkafka log line says that a transactional producer was fenced by a newer one."""
    return "fenced by a newer instance" in text or "fenced by newer producer instance" in text


def new_producer(options: SinkOptions, deliveries: Deliveries, **overrides: object) -> Producer:
    if "transactional.id" in overrides:
        overrides = {"logger": QuietFences(), **overrides}
    return Producer(sign_in.ready(options.producer_config(error_cb=deliveries.on_error, **overrides)))


def make_producer(options: SinkOptions, deliveries: Deliveries, **overrides: object) -> SinkProducer:
    """The producer writePath chooses: the native one (writing/native_producer.py) where options.native(), else
    confluent-kafka's. Either reports into `deliveries`; send_records hands either a task's records."""
    if not options.native():
        return new_producer(options, deliveries, **overrides)
    return NativeProducer(options.producer_config(**overrides), deliveries)


def send_records(
    producer: SinkProducer,
    deliveries: Deliveries,
    records: Iterable[Message],
    options: SinkOptions,
    transactional_id: str | None = None,
) -> int:
    """send() for either kind of producer: the native one takes Arrow batches (rows.ArrowRecords), confluent-kafka's
    one record at a time."""
    if isinstance(producer, NativeProducer):
        return send_batches(producer, deliveries, records, options, transactional_id)
    return send(producer, deliveries, records, options, transactional_id)


def send(
    producer: Producer,
    deliveries: Deliveries,
    messages: Iterable[Message],
    options: SinkOptions,
    transactional_id: str | None = None,
) -> int:
    """Hand every message to the producer; how many it took. Under at-least-once and exactly-once the first
    failure (a record refused at once, or a failed delivery noticed on the way) stops the loop with its error;
    under none, records refused at once are counted as failed and skipped."""
    strict = options.guarantee != "none"
    count = 0
    produce = producer.produce
    report = deliveries.report
    for message in messages:
        topic, key, value, headers, partition = message
        while True:
            try:
                produce(topic, value=value, key=key, partition=partition, on_delivery=report, headers=headers)
                count += 1
                break
            except BufferError:  # librdkafka's queue is full (queue.buffering.max.*): let it deliver some first
                serve(producer, 0.1, options, transactional_id)
                _raise_on_failure(deliveries, options, strict, transactional_id)
            except KafkaException as exc:  # refused before it was sent: too large, or an unknown partition
                error = exc.args[0]
                if error.code() == KafkaError._FATAL and transactional_id is not None:
                    error = fatal_cause(producer, error)
                if strict or error.fatal():
                    raise delivery_error(
                        error, options, topic, partition, size=size_of(message), transactional_id=transactional_id
                    ) from None
                deliveries.failed += 1
                break
        if count % POLL_EVERY == 0:
            serve(producer, 0, options, transactional_id)
            _raise_on_failure(deliveries, options, strict, transactional_id)
    return count


def send_batches(
    producer: NativeProducer,
    deliveries: Deliveries,
    records: ArrowRecords | Iterable[Message],
    options: SinkOptions,
    transactional_id: str | None = None,
) -> int:
    """producer.send's loop for the native producer: each Arrow batch handed over in one call (a few when the
    producer must be served in between); how many records it took. The same errors as producer.send, plus the
    failed record's row in the task."""
    strict = options.guarantee != "none"
    batches: Iterable[tuple[object, Columns]]
    if isinstance(records, ArrowRecords):
        batches = ((batch, records.columns) for batch in records.batches)
    else:  # records as producer.send takes them (direct callers): put in Arrow batches first
        batches = message_batches(records)
    row = skipped = 0
    for batch, columns in batches:
        arrow = native_batch(batch, columns)
        start = 0
        while start < arrow.num_rows:
            produced = producer.produce_batch(arrow, columns.topic, start, row, strict)
            start = produced.resume_from
            deliveries.failed += produced.skipped
            skipped += produced.skipped
            serve(producer, 0, options, transactional_id)  # what the loop's own polls served, into `deliveries`
            refusal = produced.refusal
            if refusal is not None:
                raise delivery_error(
                    KafkaError(refusal.code, refusal.text, fatal=refusal.fatal),
                    options,
                    refusal.topic,
                    refusal.partition,
                    size=refusal.size,
                    transactional_id=transactional_id,
                    record=refusal.row,
                )
            _raise_on_failure(deliveries, options, strict, transactional_id)
        row += arrow.num_rows
    return row - skipped


def serve(
    producer: SinkProducer,
    timeout: float,
    options: SinkOptions,
    transactional_id: str | None = None,
    flush: bool = False,
) -> int:
    """producer.poll() or flush(), whose callbacks report deliveries; a fatal error of the producer (an idempotent
    producer the brokers refuse, a fenced one) raised as its DeliveryError. confluent-kafka raises a fatal error
    from whichever call serves callbacks, and may then run a delivery report while that exception is pending,
    which Python turns into a SystemError caused by it."""
    try:
        return producer.flush(timeout) if flush else producer.poll(timeout)
    except (KafkaException, SystemError) as exc:
        error = fatal_error(exc)
        if error is None:
            raise
        raise delivery_error(error, options, options.topic, None, transactional_id=transactional_id) from None


def fatal_cause(producer: SinkProducer, error: KafkaError) -> KafkaError:
    """What a transactional producer's fatal error was. confluent-kafka raises the error itself (a fenced
    producer's _FENCED) once, from the call that serves its event; produce() only says _FATAL ("Local: Fatal
    error"), before that event as after it, while a transactional call such as abort_transaction() raises the
    error itself every time."""
    try:
        producer.abort_transaction(0.1)  # a producer in a fatal state fails it at once; nothing is written
    except KafkaException as exc:
        return exc.args[0]
    return error


def fatal_error(exc: BaseException | None) -> KafkaError | None:
    """The KafkaError a call raised, directly or as the cause of a SystemError (see serve)."""
    while exc is not None:
        if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
            return exc.args[0]
        exc = exc.__cause__ or exc.__context__
    return None


def _raise_on_failure(deliveries: Deliveries, options: SinkOptions, strict: bool, transactional_id: str | None) -> None:
    if deliveries.refusal is not None or (strict and deliveries.failed):
        error = deliveries.error(options, transactional_id)
        if error is not None:
            raise error


def drain(
    producer: SinkProducer, deliveries: Deliveries, options: SinkOptions, transactional_id: str | None = None
) -> None:
    """Wait until every record handed to `producer` is delivered or failed (librdkafka reports each within its
    delivery timeout), then raise the first failure, except under deliveryGuarantee=none, which only logs them."""
    strict = options.guarantee != "none"
    deadline = time.monotonic() + options.delivery_timeout_ms() / 1000 + DRAIN_MARGIN_S
    while serve(producer, 1.0, options, transactional_id, flush=True) > 0:
        if deliveries.refusal is not None or (strict and deliveries.failed):
            producer.purge()  # the task fails anyway: records still queued are not worth waiting for
            serve(producer, 1.0, options, transactional_id, flush=True)
            break
        if time.monotonic() > deadline:
            raise DeliveryError(
                f"{len(producer):,} records for {where(options.topic, None)} still had no delivery "
                f"report {options.delivery_timeout_ms() / 1000 + DRAIN_MARGIN_S:.0f} s after the task "
                f"handed them over; check that the brokers at {options.bootstrap_servers} are up, or "
                "lower kafka.delivery.timeout.ms so librdkafka gives up on them sooner"
            )
    _raise_on_failure(deliveries, options, strict, transactional_id)
    if deliveries.failed:
        log.warning(
            "deliveryGuarantee=none: %d records for %s were not written (the first: %s)",
            deliveries.failed,
            where(options.topic, None),
            deliveries.error(options),
        )


def producer_kind(options: SinkOptions) -> tuple:
    """What makes two producers interchangeable between tasks: the same write path (a writePath=python task is not
    handed a native producer) and the same librdkafka configuration. The pools key their producers by it."""
    return (options.native(), *sorted((k, str(v)) for k, v in options.producer_config().items()))


@dataclass
class Pooled:
    producer: SinkProducer
    deliveries: Deliveries
    key: tuple


class ProducerPool(ClientPool[tuple, Pooled]):
    """Idle non-transactional producers of this worker process, by configuration: one of each."""

    def __init__(self) -> None:
        super().__init__(close=lambda pooled: close(pooled.producer), per_key=1)

    def acquire(self, options: SinkOptions) -> Pooled:
        key = producer_kind(options)
        pooled = self.take(key)
        if pooled is None:
            deliveries = Deliveries()
            pooled = Pooled(make_producer(options, deliveries), deliveries, key)
        pooled.deliveries.reset()
        return pooled

    def release(self, pooled: Pooled, healthy: bool) -> None:
        """Back into the pool after a task that delivered everything; closed after any failure."""
        self.give_back(pooled.key, pooled, healthy)


def close(producer: SinkProducer) -> None:
    """Drop whatever the producer still holds (it failed, or its task is over) and close it without waiting on
    brokers that may be gone."""
    try:
        producer.purge()
        producer.flush(0)
        producer.close()
    except Exception as exc:  # closing is cleanup: the task's own error, if any, is the one to tell
        log.debug("closing a producer: %s", exc)


POOL = ProducerPool()


def write_plain(options: SinkOptions, messages: Iterable[Message]) -> int:
    """One task's records under at-least-once or none, with a pooled producer; how many were handed over."""
    pooled = POOL.acquire(options)
    healthy = False
    try:
        count = send_records(pooled.producer, pooled.deliveries, messages, options)
        drain(pooled.producer, pooled.deliveries, options)
        healthy = pooled.deliveries.failed == 0
        return count
    finally:
        POOL.release(pooled, healthy)
