"""How kafkasource names a Kafka topic-partition: one type, one way to write it in messages."""

from __future__ import annotations

from collections.abc import Iterable

TopicPartition = tuple[str, int]  # (topic, partition)
Positions = dict[TopicPartition, int]  # per partition, the next offset to read


def partition_name(topic: str, partition: int) -> str:
    """'orders-3', the way Kafka's own tools write a topic-partition."""
    return f"{topic}-{partition}"


# a message or log line names this many partitions and counts the rest: one about a commit of 10,000 partitions
# named every one of them (a third of a megabyte)
NAMED_AT_MOST = 20


def describe(partitions: Iterable[TopicPartition]) -> str:
    """'orders-0, orders-3' for messages; past NAMED_AT_MOST partitions, '... and 9,980 more partitions'."""
    return listing([partition_name(t, p) for t, p in sorted(partitions)])


def listing(names: list[str]) -> str:
    """`names` joined for a message, the first NAMED_AT_MOST of them, then how many more."""
    more = len(names) - NAMED_AT_MOST
    shown = ", ".join(names[:NAMED_AT_MOST])
    return f"{shown} and {more:,} more partitions" if more > 0 else shown
