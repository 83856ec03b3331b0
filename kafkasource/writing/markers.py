"""The batch marker of an exactly-once stream's task: an offset its transaction commits for a consumer group no
consumer ever joins, group `<prefix>-<partition>`, on partition 0 of the marker topic (the topic option, or
markerTopic), at offset N + 1, with the query's id and the batch in its metadata. Kafka makes it visible together
with the task's records, or neither, so it says "batch N is written for partition p" (writing/transactions.py).

It is read through a consumer's committed() (which asks for stable offsets under read_committed), not the admin
client's group offsets. confluent-kafka stores the metadata with a trailing NUL and reads it back as a C string;
the native producer stores it alike, so a marker either path wrote reads the same.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafkasource.cluster.client import committed_when_coordinated
from kafkasource.writing.native_producer import NativeProducer
from kafkasource.writing.options import SinkOptions

MARKER_KIND = "kafkasource-sink-marker"
MARKER_PARTITION = 0  # every topic has one


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


def read_marker(consumer: Consumer, options: SinkOptions, timeout: float) -> Marker | None:
    """The task's marker (its group's committed offset on the marker partition)."""
    found = committed_when_coordinated(
        consumer,
        [TopicPartition(marker_topic(options), MARKER_PARTITION)],
        time.monotonic() + timeout,
        "reading the batch marker",
    )[0]
    if found.error is not None:
        raise KafkaException(found.error)
    return parse_marker(found.offset, found.metadata)


def send_marker(producer, consumer: Consumer, offset: TopicPartition, group: str, timeout: float) -> None:
    """The marker's offset into the open transaction: the native producer names the group by its id alone,
    confluent-kafka's takes the marker consumer's group metadata."""
    if isinstance(producer, NativeProducer):
        producer.send_marker(offset.topic, offset.partition, offset.offset, offset.metadata, group, timeout)
    else:
        producer.send_offsets_to_transaction([offset], consumer.consumer_group_metadata(), timeout)


def marker_topic(options: SinkOptions) -> str:
    if options.marker_topic is None:  # parse_sink_options gives every exactly-once stream one
        raise ValueError("an exactly-once stream's options without a marker topic")
    return options.marker_topic
