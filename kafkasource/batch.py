"""Batch reads (spark.read): a fixed range between startingOffsets and endingOffsets. Never commits."""

from __future__ import annotations

from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkasource.cluster.client import KafkaClient
from kafkasource.errors import OptionError
from kafkasource.formats.decoding import decode_batches
from kafkasource.reading.task_reader import read_ranges
from kafkasource.options import SourceOptions
from kafkasource.planning.partitions import partition_name
from kafkasource.planning.tasks import KafkaInputPartition, fetch_config, plan_partitions
from kafkasource.planning.ranges import batch_ranges


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions):
        self.options = options.for_batch()
        self.fetch_config = fetch_config(self.options)

    def partitions(self) -> list[InputPartition]:
        client = KafkaClient(self.options)
        try:
            partitions = self.options.subscription.partitions(client.topics())
            start = self.options.start().resolve(partitions, client)
            end = self.options.end().resolve(partitions, client)
        finally:
            client.close()
        backwards = [f"{partition_name(t, p)} ({start[(t, p)]} > {end[(t, p)]})" for t, p in partitions if end[(t, p)] < start[(t, p)]]
        if backwards:
            raise OptionError(f"endingOffsets lies before startingOffsets for {', '.join(backwards)}; "
                              "the end must be at or after the start")
        return plan_partitions(batch_ranges(start, end), self.options)

    def read(self, partition: KafkaInputPartition):
        return decode_batches(read_ranges(partition.ranges, self.fetch_config), self.options.decoding)
