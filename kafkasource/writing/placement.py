"""Where an exactly-once task's records without a key go: all into one partition of the topic, chosen here, rather
than wherever the partitioner's random choice takes them.

A Kafka transaction pays for every partition it touches: librdkafka adds each to the transaction at the coordinator
before its first record goes there (a round trip, and a write to the coordinator's log), and the commit writes a
marker into each. The partitioner gives keyless records a random partition and moves on to another every few
milliseconds, so a task writing a few hundred thousand records to a 16-partition topic touched all 16, in smaller
produce batches than one partition gets. In one task without Spark, 1,000,000 keyless records of 100 B to 16
partitions went 1.5x faster into one partition, and the broker spent 40% less CPU (bench/EXACTLY_ONCE.md).

The partition is the task's turn (its Spark partition number plus the batch number) modulo the topic's partition
count: a batch's tasks fill the partitions in turn, and a task moves to the next partition with each batch, so the
records spread over the topic as the batches go by. Keyed records keep the partitioner's choice (the murmur2 hash of
the key, where the Java producer puts them). A replay is checked against the task's own records, before this choice
(writing/digest.py): a topic given more partitions between two attempts of a batch places its records elsewhere,
which is not a different batch.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaException

from kafkasource.records.schema import KEY, PARTITION
from kafkasource.writing.rows import ArrowRecords, Columns

log = logging.getLogger(__name__)

METADATA_TIMEOUT_S = 10.0  # the topic's partition count is asked for once per task, this long at most


def place_keyless(records: ArrowRecords, metadata: Consumer, turn: int) -> ArrowRecords:
    """`records` with those without a key placed in partition `turn` modulo the topic's partition count, asked of
    `metadata` (the task's marker consumer) when the first batch is taken. Unchanged where the records name their
    partitions or go to several topics (a topic column); where the partition count cannot be learned, the
    partitioner chooses, as without this step."""
    columns = records.columns
    if columns.partition or columns.topic is None:
        return records
    placed = dataclasses.replace(columns, partition=True)
    return ArrowRecords(_placed(records.batches, columns, metadata, turn), placed)


def _placed(batches: Iterable, columns: Columns, metadata: Consumer, turn: int) -> Iterator:
    assert columns.topic is not None  # place_keyless checks it
    partition: int | None = None
    for number, batch in enumerate(batches):
        if number == 0:
            partition = _partition(metadata, columns.topic, turn)
        yield batch.append_column(PARTITION, _partition_column(batch, columns, partition))


def _partition(metadata: Consumer, topic: str, turn: int) -> int | None:
    try:
        found = metadata.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
    except KafkaException as exc:
        log.debug("the partitions of %s are unknown (%s): the partitioner places keyless records", topic, exc)
        return None
    if found is None or found.error is not None or not found.partitions:
        return None  # an unknown topic: the producer's own error tells it
    return turn % len(found.partitions)


def _partition_column(batch, columns: Columns, partition: int | None) -> pa.Array:
    """The chosen partition for each keyless row, null (the partitioner chooses) for the others."""
    chosen = pa.scalar(partition, pa.int32())
    if not columns.key:
        return pa.repeat(chosen, batch.num_rows)
    return pc.if_else(pc.is_null(batch.column(KEY)), chosen, pa.scalar(None, pa.int32()))
