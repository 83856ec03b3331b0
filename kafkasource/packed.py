"""Executor side: read several small ranges (one Spark task, packRecordsPerTask) with one consumer at once.

All the task's partitions are assigned together, so one fetch round brings records of many of them:
on a wide topic of thin ranges, reading them one after another would wait out a fetch round trip per
partition. Each range keeps its own position, data-loss handling and errors (those of fetch.py's range
reader); a range that reaches its end is paused, so the consumer stops fetching past it.
"""

from __future__ import annotations

import time
from itertools import groupby
from typing import Iterator

from confluent_kafka import Consumer, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafkasource.errors import KafkaSourceError
from kafkasource.fetch import (CONSUME_CHUNK, POOL, ConsumerPool, FetchConfig, PendingMessages, RangeReader,
                               collector_paused, pooled, read_range)
from kafkasource.partitions import TopicPartition
from kafkasource.ranges import OffsetRange


def read_ranges(ranges: tuple[OffsetRange, ...], config: FetchConfig, pool: ConsumerPool = POOL) -> Iterator:
    """The record batches of one Spark task: one range, or several read together by one consumer."""
    if len(ranges) == 1:
        return read_range(ranges[0], config, pool)
    # the native consumer reads one range at a time: several partitions at once go through confluent-kafka
    return pooled(lambda consumer: PackedReader(consumer, ranges, config).batches(), config, pool, native_ok=False)


class PackedReader:
    def __init__(self, consumer: Consumer, ranges: tuple[OffsetRange, ...], config: FetchConfig):
        self.consumer = consumer
        self.config = config
        self.readers = {(r.topic, r.partition): RangeReader(consumer, r, config, shared=True) for r in ranges}
        self.pending = {key: PendingMessages() for key in self.readers}

    def batches(self) -> Iterator:
        # librdkafka keeps a partition paused across unassign and assign: resume what this task paused, or the
        # pooled consumer's next task on that partition would wait for records forever
        self.paused: list[KafkaTopicPartition] = []
        try:
            yield from self._read()
        finally:
            if self.paused:
                self.consumer.resume(self.paused)

    def _read(self) -> Iterator:
        timeout_s = self.config.poll_timeout_ms / 1000
        active = dict(self.readers)
        self.consumer.assign([KafkaTopicPartition(t, p, r.position) for (t, p), r in active.items()])
        last_progress = time.monotonic()
        while active:
            before = {key: r.position for key, r in active.items()}
            remaining = sum(r.range.until - r.position for r in active.values())
            with collector_paused():
                messages = self.consumer.consume(min(CONSUME_CHUNK, remaining), timeout=min(1.0, timeout_s))
                records, moved = self._route(messages, active)
            for key, batch in records.items():
                reader = active[key]
                if batch[-1].offset() >= reader.range.until:
                    batch = [m for m in batch if m.offset() < reader.range.until]
                self.pending[key].add(batch)
                if key not in moved and batch:
                    reader.position = max(reader.position, batch[-1].offset() + 1)
            # the position moves past control records and aborted transactions too, so gaps never stall us
            steady = [KafkaTopicPartition(t, p) for (t, p) in active if (t, p) not in moved]
            for tp in self.consumer.position(steady) if steady else []:
                reader = active[(tp.topic, tp.partition)]
                reader.position = max(reader.position, tp.offset)
            yield from self._full_batches()
            done = [key for key, r in active.items() if r.position >= r.range.until]
            for key in done:
                del active[key]
                yield from self._flush(key)
            if any(r.moved for r in active.values()):
                # a range skipped lost records: assign again at every position (exact, since all the records
                # delivered so far are accounted for); a partition in error cannot be sought
                self.consumer.assign([KafkaTopicPartition(t, p, r.position) for (t, p), r in active.items()])
                for r in active.values():
                    r.moved = False
            elif done:
                finished = [KafkaTopicPartition(t, p) for (t, p) in done]
                self.consumer.pause(finished)
                self.paused.extend(finished)
            if done or any(r.position != before[key] for key, r in active.items()):
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > timeout_s:
                stalled = ", ".join(f"{r.name} at {r.position} (range {r.range.start}..{r.range.until})"
                                    for r in list(active.values())[:5])
                raise KafkaSourceError(
                    f"reading {len(active)} partitions stalled: {stalled}: nothing arrived within "
                    f"{self.config.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs). Check that the brokers are "
                    "reachable from the executors")

    def _route(self, messages: list, active: dict[TopicPartition, RangeReader]) -> tuple[dict[TopicPartition, list], set[TopicPartition]]:
        """The chunk's records by partition, and the partitions whose position an error event moved (their
        records after the event are dropped: they are read again, or were skipped, from the new position)."""
        if not any(map(Message.error, messages)):
            grouped = groupby(messages, key=lambda m: (m.topic(), m.partition()))
            records: dict[TopicPartition, list] = {}
            for key, group in grouped:
                if key in active:
                    records.setdefault(key, []).extend(group)
            return records, set()
        records, moved = {}, set()
        for message in messages:
            error = message.error()
            if error is None:
                key = (message.topic(), message.partition())
                if key in active and key not in moved:
                    records.setdefault(key, []).append(message)
                continue
            # about one partition, a whole topic (partition -1), or the client (no topic: told once)
            concerned = [key for key in active if message.topic() in (None, key[0])
                         and message.partition() in (None, -1, key[1])]
            for key in concerned[:1] if message.topic() is None else concerned:
                if key not in moved and active[key].on_error(error):
                    moved.add(key)
        return records, moved

    def _full_batches(self) -> Iterator:
        for key, pending in self.pending.items():
            if pending.full():
                yield from self._flush(key)

    def _flush(self, key: TopicPartition) -> Iterator:
        if self.pending[key]:
            yield self.pending[key].take(key[0], key[1], self.config.include_headers)
