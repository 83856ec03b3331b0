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
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafkasource.cluster.client import COORDINATOR_RETRIABLE
from kafkasource.cluster.settings import masked
from kafkasource.writing.failures import DeliveryError, delivery_error, where
from kafkasource.writing.native_producer import NativeProducer
from kafkasource.writing.options import SinkOptions
from kafkasource.writing.producer import Deliveries, close, make_producer, send_records
from kafkasource.writing.rows import Message

log = logging.getLogger(__name__)

MARKER_KIND = "kafkasource-sink-marker"
MARKER_PARTITION = 0  # every topic has one
CALL_MARGIN_S = 30  # a transactional call waits for the brokers this long beyond the delivery timeout
INIT_SLICE_S = 1.0  # init_transactions() waits this long at a time between serving the error callback


def transactional_id(prefix: str, partition_id: int) -> str:
    return f"{prefix}-{partition_id}"


def marker_group(prefix: str, partition_id: int) -> str:
    """The group whose committed offset marks what Spark partition `partition_id` of the sink has written."""
    return f"{prefix}-{partition_id}"


@dataclass(frozen=True)
class Marker:
    query_id: str
    batch_id: int


def marker_metadata(query_id: str, batch_id: int, partition_id: int) -> str:
    return json.dumps(
        {"kind": MARKER_KIND, "queryId": query_id, "batchId": batch_id, "partition": partition_id},
        separators=(",", ":"),
    )


def parse_marker(offset: int, metadata: str | None) -> Marker | None:
    """The marker a committed offset holds; None for no commit, or a commit that is not the sink's marker."""
    if offset < 0 or not metadata:
        return None
    try:
        found = json.loads(metadata)
    except ValueError:
        return None
    if not isinstance(found, dict) or found.get("kind") != MARKER_KIND:
        return None
    query_id, batch_id = found.get("queryId"), found.get("batchId")
    if not isinstance(query_id, str) or type(batch_id) is not int or offset != batch_id + 1:
        return None
    return Marker(query_id, batch_id)


def already_written(marker: Marker | None, query_id: str, batch_id: int) -> bool:
    """Whether the marker says this query's batch `batch_id` is already written by this task's partition."""
    return marker is not None and marker.query_id == query_id and marker.batch_id >= batch_id


@dataclass(frozen=True)
class StreamBatch:
    """Which stream batch a task writes (a batch job's tasks have none, and no marker)."""

    query_id: str
    batch_id: int


@dataclass(frozen=True)
class Outcome:
    records: int
    replayed: bool = False  # the marker showed the batch already written: nothing was written


def write_transaction(
    options: SinkOptions, partition_id: int, messages: Iterable[Message], batch: StreamBatch | None
) -> Outcome:
    """One task's records in one transaction (with the batch's marker for a stream), or nothing at all: any error
    aborts the transaction before it is raised."""
    prefix = options.transactional_id_prefix
    assert prefix is not None, "exactly-once options always hold a transactionalIdPrefix"
    tid = transactional_id(prefix, partition_id)
    timeout = options.delivery_timeout_ms() / 1000 + CALL_MARGIN_S
    deliveries = Deliveries()
    producer = make_producer(options, deliveries, **{"transactional.id": tid})
    consumer = None
    began = False
    try:
        _init_transactions(producer, deliveries, options, timeout, tid)
        if batch is not None:
            consumer = Consumer(
                options.client_config(**{"group.id": marker_group(prefix, partition_id), "enable.auto.commit": False})
            )
            marker = _read_marker(consumer, options, timeout)
            if already_written(marker, batch.query_id, batch.batch_id):
                skipped = sum(1 for _ in messages)  # Spark's input still has to be read to its end
                log.info(
                    "batch %d of query %s is already written for partition %d (marker of batch %s): "
                    "skipping its %d records",
                    batch.batch_id,
                    batch.query_id,
                    partition_id,
                    marker.batch_id if marker else None,
                    skipped,
                )
                return Outcome(0, replayed=True)
        producer.begin_transaction()
        began = True
        count = send_records(producer, deliveries, messages, options, transactional_id=tid)
        if batch is not None and consumer is not None:
            offset = TopicPartition(
                _marker_topic(options),
                MARKER_PARTITION,
                batch.batch_id + 1,
                marker_metadata(batch.query_id, batch.batch_id, partition_id),
            )
            _send_marker(producer, consumer, offset, marker_group(prefix, partition_id), timeout)
        producer.commit_transaction(timeout)
        return Outcome(count)
    except KafkaException as exc:
        error = _transaction_error(exc.args[0], deliveries, options, tid, batch)
        _abort(producer, exc.args[0], began, timeout, tid, options)
        raise error from None
    except BaseException:
        _abort(producer, None, began, timeout, tid, options)
        raise
    finally:
        if consumer is not None:
            consumer.close()
        close(producer)


def _init_transactions(producer, deliveries: Deliveries, options: SinkOptions, timeout: float, tid: str) -> None:
    """init_transactions() within `timeout`, called in slices with the error callback served between them: brokers
    that refuse the producer (authentication, the TLS handshake) say so only to that callback, which no
    transactional call serves, so a single call would wait the whole timeout and then only report that it timed
    out. librdkafka resumes the same initialisation when the call is repeated after a timeout."""
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


def _read_marker(consumer: Consumer, options: SinkOptions, timeout: float) -> Marker | None:
    """The task's marker, asked again while the group's coordinator is not ready: a broker answers NOT_COORDINATOR
    or COORDINATOR_LOAD_IN_PROGRESS for a while after it takes a group over (a fresh cluster, a broker restart)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = consumer.committed(
                [TopicPartition(_marker_topic(options), MARKER_PARTITION)],
                timeout=max(1.0, deadline - time.monotonic()),
            )
            error = found[0].error
        except KafkaException as exc:
            error = exc.args[0]
        if error is None:
            return parse_marker(found[0].offset, found[0].metadata)
        if error.code() not in COORDINATOR_RETRIABLE or time.monotonic() >= deadline:
            raise KafkaException(error)
        log.info("reading the batch marker: %s; retrying", error.str())
        time.sleep(0.2)


def _send_marker(producer, consumer: Consumer, offset: TopicPartition, group: str, timeout: float) -> None:
    """The marker's offset into the open transaction: the native producer names the group by its id alone,
    confluent-kafka's takes the marker consumer's group metadata."""
    if isinstance(producer, NativeProducer):
        producer.send_marker(offset.topic, offset.partition, offset.offset, offset.metadata, group, timeout)
    else:
        producer.send_offsets_to_transaction([offset], consumer.consumer_group_metadata(), timeout)


def _marker_topic(options: SinkOptions) -> str:
    if options.marker_topic is None:  # parse_sink_options gives every exactly-once stream one
        raise ValueError("an exactly-once stream's options without a marker topic")
    return options.marker_topic


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
