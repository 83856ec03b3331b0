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

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaException

from kafkasource.records.schema import KEY, PARTITION
from kafkasource.writing.rows import ArrowRecords, Columns

log = logging.getLogger(__name__)

METADATA_TIMEOUT_S = 10.0  # the topic's partition count is asked for once per task, this long at most


def place_keyless(records: ArrowRecords, partitions: int | None, turn: int) -> ArrowRecords:
    """`records` with those without a key placed in partition `turn` modulo `partitions`, the topic's partition count
    (partition_count). Unchanged where the records name their partitions or go to several topics (a topic column),
    or where the partition count is unknown (None): the partitioner chooses, as without this step."""
    columns = records.columns
    if columns.partition or columns.topic is None or not partitions:
        return records
    placed = dataclasses.replace(columns, partition=True)
    chosen = turn % partitions
    return ArrowRecords(
        (batch.append_column(PARTITION, _partition_column(batch, columns, chosen)) for batch in records.batches), placed
    )


def partition_count(metadata: Consumer, topic: str | None) -> int | None:
    """How many partitions `topic` (the topic option) has, asked of `metadata` (the task's marker consumer) while the
    task's producer is made ready, so that the request is not on the task's way; None where there is no topic
    option or the count cannot be learned (an unknown topic: the producer's own error tells it)."""
    if topic is None:
        return None
    try:
        found = metadata.list_topics(topic, timeout=METADATA_TIMEOUT_S).topics.get(topic)
    except KafkaException as exc:
        log.debug("the partitions of %s are unknown (%s): the partitioner places keyless records", topic, exc)
        return None
    if found is None or found.error is not None or not found.partitions:
        return None
    return len(found.partitions)


def _partition_column(batch, columns: Columns, partition: int) -> pa.Array:
    """The chosen partition for each keyless row, null (the partitioner chooses) for the others."""
    chosen = pa.scalar(partition, pa.int32())
    if not columns.key:
        return pa.repeat(chosen, batch.num_rows)
    return pc.if_else(pc.is_null(batch.column(KEY)), chosen, pa.scalar(None, pa.int32()))
