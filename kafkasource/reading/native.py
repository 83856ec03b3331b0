"""The native read path: a consumer in compiled code (kafkasource._native, Rust over librdkafka) that
appends records straight into Arrow buffers, so a range is read without one Python object per record.

setup.py builds the extension when a Rust toolchain is present; without it, or with readPath=python, the
pure-Python path (confluent-kafka Message objects, python_rows.MessageRows) reads instead. Both share
everything but the hot loop: task_reader.TaskReader decides what an error event means, where the position is and
when a range is done, for either.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafkasource.cluster.sign_in import provider as sign_in
from kafkasource.planning.partitions import TopicPartition
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading import settings as read_settings
from kafkasource.reading.native_arrow import taken_batch
from kafkasource.reading.python_rows import ErrorEvents
from kafkasource.runtime import native_extension
from kafkasource.runtime.native_results import ClientError, Consumed

if TYPE_CHECKING:
    from kafkasource import _native

log = logging.getLogger(__name__)


class NativeConsumer:
    """The calls TaskReader and the pool make on a confluent-kafka Consumer, over the native consumer."""

    def __init__(self, config: dict[str, object]):
        native_extension.announce("reading", log)
        # the pool asks for a native consumer only where native_extension.available()
        extension = native_extension.extension()
        self.native: _native.Consumer = extension.Consumer(*native_extension.client_arguments(sign_in.ready(config)))

    def assign(self, partitions: list[KafkaTopicPartition]) -> None:
        self.native.assign([(tp.topic, tp.partition, tp.offset) for tp in partitions])

    def unassign(self) -> None:
        self.native.unassign()

    def assignment(self) -> list[KafkaTopicPartition]:
        return [KafkaTopicPartition(topic, partition) for topic, partition in self.native.assignment()]

    def position(self, partitions: list[KafkaTopicPartition]) -> list[KafkaTopicPartition]:
        return [
            KafkaTopicPartition(tp.topic, tp.partition, self.native.position(tp.topic, tp.partition))
            for tp in partitions
        ]

    def client_errors(self) -> list[KafkaError]:
        """The errors librdkafka reported about the client rather than a partition (authentication, the TLS
        handshake, brokers unreachable) since the last call, oldest first: the extension keeps what its error
        callback heard while consume() served the queue."""
        errors = [ClientError(*reported) for reported in self.native.client_errors()]  # (code, text): never fatal
        return [KafkaError(error.code, error.text) for error in errors]

    def get_watermark_offsets(self, partition: KafkaTopicPartition, timeout: float) -> tuple[int, int]:
        return self.native.watermarks(partition.topic, partition.partition, int(timeout * 1000))

    def close(self) -> None:
        self.native.close()


class NativeRows:
    """A range's records as the native consumer appends them (only those below the range's end), handed over
    as Arrow record batches. The native consumer reads one range at a time."""

    def __init__(
        self, consumer: NativeConsumer, offset_range: OffsetRange, include_headers: bool, on_error_event: ErrorEvents
    ):
        self.key = (offset_range.topic, offset_range.partition)
        self.range = offset_range
        self.native = consumer.native
        self.include_headers = include_headers
        self.on_error_event = on_error_event  # whether an event moved the read position

    def consume(self, count: int, timeout_s: float) -> dict[TopicPartition, int]:
        """As python_rows.MessageRows.consume: the offset after the last record appended, unless an error event moved
        the read position, in which case the records appended after that event are dropped."""
        consumed = Consumed.of(
            self.native.consume(count, int(timeout_s * 1000), self.range.until, self.include_headers)
        )
        for event in consumed.error_events:
            error = KafkaError(event.code, event.text, fatal=event.code == KafkaError._FATAL)
            if self.on_error_event(event.topic, event.partition, error):
                self.native.truncate(event.row)
                return {}
        return {self.key: consumed.last_offset + 1} if consumed.appended else {}

    def full_batches(self) -> Iterator[pa.RecordBatch]:
        rows, size = self.native.pending()
        if rows >= read_settings.BATCH_ROWS or size >= read_settings.BATCH_BYTES:
            yield self.take()

    def flush(self, key: TopicPartition) -> Iterator[pa.RecordBatch]:
        if self.native.pending()[0]:
            yield self.take()

    def take(self) -> pa.RecordBatch:
        return taken_batch(
            self.native.take(self.include_headers), self.range.topic, self.range.partition, self.include_headers
        )
