"""The Python read path's rows: confluent-kafka Message objects, consumed in chunks, kept per range below its
end, and turned into Arrow record batches in Python. Per-message work stays in C on the common path: no error
events, and only the last chunk reaching past a range's end."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import groupby

from confluent_kafka import Consumer, KafkaError, Message

from kafkasource.planning.partitions import TopicPartition
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading import settings as read_settings
from kafkasource.reading.arrow import to_record_batch

# (topic, partition, error) of an error event -> whether it moved that range's read position (TaskReader decides)
ErrorEvents = Callable[[str | None, int | None, KafkaError], bool]


class MessageRows:
    """A task's records as confluent-kafka Message objects, one pending batch per range. `reading(key)` says
    whether a range still takes records (not done, not moved by an error event since it was last assigned);
    `on_error_event` hands an error event to the task's reader."""

    def __init__(
        self,
        consumer: Consumer,
        ranges: dict[TopicPartition, OffsetRange],
        include_headers: bool,
        reading: Callable[[TopicPartition], bool],
        on_error_event: ErrorEvents,
    ):
        self.consumer = consumer
        self.ends = {key: offset_range.until for key, offset_range in ranges.items()}
        self.include_headers = include_headers
        self.reading = reading
        self.on_error_event = on_error_event
        self.pending = {key: PendingMessages() for key in ranges}
        # alone on its consumer, a range owns every record consumed
        self.only: TopicPartition | None = next(iter(ranges)) if len(ranges) == 1 else None

    def consume(self, count: int, timeout_s: float) -> dict[TopicPartition, int]:
        """Consume a chunk and keep each range's records; per range that kept any, the offset after its last."""
        with collector_paused():
            messages = self.consumer.consume(count, timeout=timeout_s)
            if any(map(Message.error, messages)):
                by_range = self._routed_with_errors(messages)
            elif self.only is not None:
                by_range = {self.only: messages} if messages else {}
            else:
                by_range = self._routed(messages)
        after_last = {}
        for key, records in by_range.items():
            until = self.ends[key]
            if records and records[-1].offset() >= until:
                records = [m for m in records if m.offset() < until]
            if records:
                self.pending[key].add(records)
                after_last[key] = records[-1].offset() + 1
        return after_last

    def _routed(self, messages: list) -> dict[TopicPartition, list]:
        """The chunk's records by range, for the ranges still being read."""
        by_range: dict[TopicPartition, list] = {}
        for key, group in groupby(messages, key=_partition_of):
            if self.reading(key):
                by_range.setdefault(key, []).extend(group)
        return by_range

    def _routed_with_errors(self, messages: list) -> dict[TopicPartition, list]:
        """As _routed, handing each error event to the reader: a range whose position an event moved keeps
        none of its records after the event (they are read again, or were skipped, from the new position).
        An error that is only logged (librdkafka retries it) drops nothing."""
        by_range: dict[TopicPartition, list] = {}
        for message in messages:
            error = message.error()
            if error is not None:
                self.on_error_event(message.topic(), message.partition(), error)
                continue
            key = _partition_of(message)
            if self.reading(key):
                by_range.setdefault(key, []).append(message)
        return by_range

    def full_batches(self) -> Iterator:
        for key, pending in self.pending.items():
            if pending.full():
                yield self._take(key)

    def flush(self, key: TopicPartition) -> Iterator:
        if self.pending[key]:
            yield self._take(key)

    def _take(self, key: TopicPartition):
        return self.pending[key].take(key[0], key[1], self.include_headers)


def _partition_of(message: Message) -> TopicPartition:
    # a record (not an error event) always has both; a check per record would cost on this hot path
    return message.topic(), message.partition()  # type: ignore[return-value]


class PendingMessages:
    """One range's messages waiting to become an Arrow batch, which ends at as many records or bytes as on the
    native path (read_settings), so large records never pile up in a worker."""

    def __init__(self) -> None:
        self.messages: list = []
        self.value_bytes = 0

    def add(self, messages: list) -> None:
        self.messages.extend(messages)
        self.value_bytes += sum(map(len, messages))  # len() of a Message is the size of its value

    def full(self) -> bool:
        return len(self.messages) >= read_settings.BATCH_ROWS or self.value_bytes >= read_settings.BATCH_BYTES

    def __len__(self) -> int:
        return len(self.messages)

    def take(self, topic: str, partition: int, include_headers: bool):
        with collector_paused():
            batch = to_record_batch(self.messages, topic, partition, include_headers)
        self.messages, self.value_bytes = [], 0
        return batch


@contextmanager
def collector_paused():
    """Python's cycle collector off while Message objects and their timestamp tuples are made by the ten
    thousand, because each new tracked object counts toward the next collection, which walks the young ones,
    and none of these objects form cycles (what paused it saved: bench/TUNING.md). Whatever garbage with
    cycles another part of the worker makes meanwhile is collected once the collector runs again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
