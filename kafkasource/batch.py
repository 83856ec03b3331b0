"""Batch reads (spark.read): a fixed range between startingOffsets and endingOffsets. Never commits.

A read with nothing to read (an empty topic, a pattern that matches nothing) plans no task, and Spark then runs
one anyway with a plain InputPartition, which reads nothing: the empty frame in the source's schema, as
format("kafka") gives. (A stream's micro-batch that plans no task runs none.) A topic the read names that does
not exist fails it, as it fails format("kafka")'s: an empty result would hide a misspelt name."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql.datasource import DataSourceReader, InputPartition

from kafkasource.cluster.client import KafkaClient
from kafkasource.errors import OptionError
from kafkasource.formats.decoding import decode_batches
from kafkasource.options import SourceOptions
from kafkasource.planning.partitions import partition_name
from kafkasource.planning.ranges import batch_ranges
from kafkasource.planning.subscription import Subscription
from kafkasource.reading.input_partition import KafkaInputPartition, input_partitions
from kafkasource.reading.task_reader import read_ranges


class KafkaBatchReader(DataSourceReader):
    def __init__(self, options: SourceOptions):
        self.options = options.for_batch()
        self.fetch_config = self.options.fetch_config()

    def partitions(self) -> Sequence[InputPartition]:
        client = KafkaClient(self.options)
        try:
            topics = client.topics()
            _refuse_missing_topics(self.options.subscription, topics)
            partitions = self.options.subscription.partitions(topics)
            start = self.options.start().resolve(partitions, client)
            end = self.options.end().resolve(partitions, client)
        finally:
            client.close()
        backwards = [
            f"{partition_name(t, p)} ({start[(t, p)]} > {end[(t, p)]})"
            for t, p in partitions
            if end[(t, p)] < start[(t, p)]
        ]
        if backwards:
            raise OptionError(
                f"endingOffsets lies before startingOffsets for {', '.join(backwards)}; "
                "the end must be at or after the start"
            )
        return input_partitions(
            batch_ranges(start, end), self.options.min_partitions, self.options.pack_records_per_task
        )

    def read(self, partition: InputPartition):
        if not isinstance(partition, KafkaInputPartition):  # Spark's stand-in task for a read that planned none
            return iter(())
        return decode_batches(read_ranges(partition.ranges, self.fetch_config), self.options.decoding)


def _refuse_missing_topics(subscription: Subscription, topics: dict[str, int]) -> None:
    missing = [t for t in subscription.named_topics() if t not in topics]
    if not missing:
        return
    option, one = subscription.option, len(missing) == 1
    it = "it" if one else "them"
    raise OptionError(
        f"option {option} names topic{'' if one else 's'} {', '.join(missing)}, which "
        f"do{'es' if one else ''} not exist in the cluster (or this client may not describe {it}): "
        f'a batch read of {it} fails, as format("kafka")\'s does; create the topic{"" if one else "s"}, '
        f"or remove {it} from {option}"
    )
