"""One Spark task of a read, stream or batch: the offset ranges the driver planned for it, which an executor reads."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition

from kafkasource.planning.ranges import OffsetRange, pack_ranges, split_ranges


class KafkaInputPartition(InputPartition):
    """One Spark task: one offset range of one topic-partition, or several small ones (packRecordsPerTask)."""

    def __init__(self, ranges: tuple[OffsetRange, ...]):
        super().__init__(ranges)
        self.ranges = ranges


def input_partitions(
    ranges: list[OffsetRange], min_partitions: int | None, pack_records_per_task: int | None
) -> list[KafkaInputPartition]:
    """The tasks for `ranges`: large ones split up to minPartitions, small ones packed (packRecordsPerTask)."""
    split = split_ranges(ranges, min_partitions)
    return [KafkaInputPartition(task) for task in pack_ranges(split, pack_records_per_task)]
