"""What stream and batch reads plan alike: Spark tasks over offset ranges, and what an executor needs to read them."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition

from kafkasource.options import SourceOptions
from kafkasource.planning.ranges import OffsetRange, pack_ranges, split_ranges
from kafkasource.reading.consumers import FetchConfig


class KafkaInputPartition(InputPartition):
    """One Spark task: one offset range of one topic-partition, or several small ones (packRecordsPerTask)."""

    def __init__(self, ranges: tuple[OffsetRange, ...]):
        super().__init__(ranges)
        self.ranges = ranges


def fetch_config(options: SourceOptions) -> FetchConfig:
    return FetchConfig(
        options.client_config(),
        options.include_headers,
        options.fail_on_data_loss,
        options.poll_timeout_ms,
        options.group_id,
        options.read_path,
    )


def plan_partitions(ranges: list[OffsetRange], options: SourceOptions) -> list[KafkaInputPartition]:
    """The tasks for `ranges`: large ones split up to minPartitions, small ones packed (packRecordsPerTask)."""
    split = split_ranges(ranges, options.min_partitions)
    return [KafkaInputPartition(task) for task in pack_ranges(split, options.pack_records_per_task)]
