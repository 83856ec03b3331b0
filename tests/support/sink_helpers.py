"""The sink's tests: a DataFrame with every column the sink reads, writes through either sink, and what a topic
holds read back to its end, as plain tuples (partition, offset, key, value, headers) sorted by position.

Also Kafka's own partitioner (murmur2, as the Java producer computes it) to say where a keyed record without a
partition must land.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafkasource.records.schema import HEADERS_DDL_TYPE
from tests.support.kafka_helpers import KafkaHarness
from tests.support.query_helpers import QUERY_TIMEOUT_S, base_options, stream

if TYPE_CHECKING:
    from tests.support.security_helpers import AsAdmin

Out = tuple  # (partition, offset, key, value, headers)
SAMPLE_SCHEMA = f"topic string, key string, value binary, headers {HEADERS_DDL_TYPE}, partition int"
READ_TIMEOUT_S = 60
PARTITIONS = 3  # of the topics the tests write to


def sample_rows(topic_a: str, topic_b: str) -> list[tuple]:
    """Keys and null keys, empty and null values, headers (none, empty, several, a null value), explicit
    partitions and keyed rows the partitioner places, over two topics. Null keys always name their partition:
    the two sinks' producers spread those at random."""
    rows = []
    for i in range(24):
        topic = topic_a if i % 3 else topic_b
        key = None if i % 4 == 0 else f"key-{i % 7}"
        value = None if i == 5 else (b"" if i == 6 else f"value-{i}".encode() + bytes([i, 0, 255]))
        headers = (None if i % 5 == 0 else [] if i % 5 == 1 else
                   [{"key": "h1", "value": f"{i}".encode()}, {"key": "h2", "value": None},
                    {"key": "h1", "value": b"again"}])
        partition = i % 3 if key is None or i % 2 else None
        rows.append((topic, key, value, headers, partition))
    return rows


def sample_frame(spark, topic_a: str, topic_b: str):
    """sample_rows as one Spark partition, so each sink writes them in this order (offsets comparable)."""
    return spark.createDataFrame(sample_rows(topic_a, topic_b), SAMPLE_SCHEMA).coalesce(1)


def expected_records(rows: list[tuple], topic: str, partitions: int = PARTITIONS, topic_option: bool = False):
    """What a topic must hold after one write of `rows` in order: (partition, offset, key, value, headers)."""
    out, next_offset = [], {}
    for row_topic, key, value, headers, partition in rows:
        if row_topic != topic and not topic_option:
            continue
        key_bytes = None if key is None else key.encode()
        if partition is None:
            partition = murmur2_partition(key_bytes, partitions)
        offset = next_offset.get(partition, 0)
        next_offset[partition] = offset + 1
        out.append((partition, offset, key_bytes, value, tuple((h["key"], h["value"]) for h in headers or ())))
    return sorted(out, key=lambda r: r[:2])


def write_batch(df, options: Mapping[str, object], source: str = "kafkasource") -> None:
    writer = df.write.format(source)
    if source == "kafkasource":
        writer = writer.mode("append")  # Spark refuses its default mode for Python data sources
    for name, value in options.items():
        writer = writer.option(name, str(value))
    writer.save()


def failure_of(spark, rows: list[tuple], columns: str, options: dict[str, str]) -> str:
    """The text of the error a batch write of `rows` (one Spark partition) with `options` fails with."""
    df = spark.createDataFrame(rows, columns).coalesce(1)
    with pytest.raises(Exception) as failed:
        write_batch(df, options)
    return str(failed.value)



def read_topic(kafka: KafkaHarness | AsAdmin, topic: str, partitions: int, read_committed: bool = False,
               timeout: float = READ_TIMEOUT_S) -> list[Out]:
    """Every record of the topic's partitions, from offset 0 to each partition's end (its last stable offset
    under read_committed), as librdkafka's end-of-partition events tell. `kafka` is anything whose consumer()
    makes a consumer of the topic's brokers (a secured broker's: tests.support.security_helpers.AsAdmin)."""
    consumer = kafka.consumer(**{"enable.partition.eof": True,
                                 "isolation.level": "read_committed" if read_committed else "read_uncommitted"})
    out: list[Out] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        while len(at_end) < partitions:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: only partitions {sorted(at_end)} reached their end in {timeout} s")
            for msg in consumer.consume(500, 0.5):
                if msg.error() is not None:
                    if msg.error().code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(msg.error())
                    at_end.add(msg.partition())
                    continue
                at_end.discard(msg.partition())
                out.append((msg.partition(), msg.offset(), msg.key(), msg.value(), tuple(msg.headers() or ())))
    finally:
        consumer.close()
    return sorted(out, key=lambda r: r[:2])


def copy_query(spark, kafka, source_options: Mapping[str, object], sink_options: Mapping[str, object], checkpoint,
               interval: str | None = None):
    """kafkasource to kafkasource (key, value, partition), started under Trigger.AvailableNow, or processing time
    every `interval`."""
    df = stream(spark, base_options(kafka, **source_options))
    writer = df.selectExpr("key", "value", "partition").writeStream.format("kafkasource")
    for name, value in base_options(kafka, **sink_options).items():
        writer = writer.option(name, str(value))
    writer = writer.option("checkpointLocation", str(checkpoint))
    return (writer.trigger(processingTime=interval) if interval else writer.trigger(availableNow=True)).start()


def copy_to_end(spark, kafka, source: str, checkpoint, sink_options: Mapping[str, object], per_trigger: int = 12):
    """Copy `source` (key, value and partition) into the sink under Trigger.AvailableNow, in batches of at most
    `per_trigger` records, to its end; the ended query."""
    source_options = {"subscribe": source, "startingOffsets": "earliest", "maxOffsetsPerTrigger": per_trigger}
    return finish_available_now(copy_query(spark, kafka, source_options, sink_options, checkpoint))


def finish_available_now(query, timeout: float = QUERY_TIMEOUT_S):
    """Wait for an AvailableNow query to end by itself and assert it ended without an error; stop it in any case.
    The ended query."""
    try:
        assert query.awaitTermination(timeout), "the AvailableNow query did not end"
        assert query.exception() is None
    finally:
        query.stop()
    return query


DIGEST = "<digest>"  # what batch_markers shows of a marker's digest, once it checked its shape


def batch_markers(kafka: KafkaHarness, prefix: str, marker_topic: str, tasks: int) -> list[tuple[int, dict]]:
    """Each exactly-once task's batch marker: the committed offset of group `<prefix>-<task>` on partition 0 of the
    marker topic, and its metadata as JSON, its digest (`xxh3:` and 32 hexadecimal digits, checked here) shown as
    DIGEST, its time (checked here) left out."""
    markers = []
    for task in range(tasks):
        offset, fields = batch_marker(kafka, prefix, marker_topic, task)
        if "digest" in fields:
            assert re.fullmatch("xxh3:[0-9a-f]{32}", fields["digest"]), fields
            fields["digest"] = DIGEST
            # when the task wrote it: within the last hour, by this machine's clock
            assert 0 <= time.time() * 1000 - fields.pop("at") < 3_600_000, fields
        markers.append((offset, fields))
    return markers


def batch_marker(kafka: KafkaHarness, prefix: str, marker_topic: str, task: int) -> tuple[int, dict]:
    """The batch marker of the task of Spark partition `task`, as it is stored: its offset and its metadata as JSON."""
    consumer = kafka.consumer(f"{prefix}-{task}")
    try:
        (marker,) = consumer.committed([TopicPartition(marker_topic, 0)], timeout=30)
    finally:
        consumer.close()
    return marker.offset, json.loads(marker.metadata)


def without_offsets(records: list[Out]) -> list[tuple]:
    """(partition, key, value, headers) in position order: transaction markers take offsets of their own."""
    return [(r[0], *r[2:]) for r in records]


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The partition Kafka's Java producer (and librdkafka's murmur2 partitioners) give a keyed record."""
    m, seed = 0x5BD1E995, 0x9747B28C
    length = len(key)
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(key[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = length - length % 4
    rest = length % 4
    if rest == 3:
        h ^= key[tail + 2] << 16
    if rest >= 2:
        h ^= key[tail + 1] << 8
    if rest >= 1:
        h ^= key[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions
