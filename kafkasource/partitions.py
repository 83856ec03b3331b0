"""How kafkasource names a Kafka topic-partition: one type, one way to write it in messages."""

from __future__ import annotations

from typing import Iterable

TopicPartition = tuple[str, int]  # (topic, partition)
Positions = dict[TopicPartition, int]  # per partition, the next offset to read


def partition_name(topic: str, partition: int) -> str:
    """'orders-3', the way Kafka's own tools write a topic-partition."""
    return f"{topic}-{partition}"


def describe(partitions: Iterable[TopicPartition]) -> str:
    """'orders-0, orders-3' for messages."""
    return ", ".join(partition_name(t, p) for t, p in sorted(partitions))
