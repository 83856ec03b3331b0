"""Executor side: read one offset range with a pooled consumer and yield Arrow record batches.

Consumers are pooled per Python worker process (Spark reuses Python workers across
micro-batches), keyed by their configuration, closed when idle for a while or after any failure. They only
assign() partitions: they never join a group and never commit. A range is read by the native consumer
(native.py) where the extension is built, else by confluent-kafka's; RangeReader drives either.
"""

from __future__ import annotations

import gc
import logging
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from confluent_kafka import Consumer, KafkaError, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafkasource import native
from kafkasource.arrow import to_record_batch
from kafkasource.dataloss import report_data_loss
from kafkasource.errors import AccessError, KafkaSourceError
from kafkasource.native import NativeConsumer, NativeRows
from kafkasource.partitions import partition_name
from kafkasource.ranges import OffsetRange

log = logging.getLogger(__name__)

EXECUTOR_GROUP_ID = "kafkasource-executor-never-commits"
BATCH_ROWS = 50_000  # rows per Arrow batch handed to Spark (fewer, larger batches are cheaper)
CONSUME_CHUNK = 10_000  # messages per consume() call
IDLE_CLOSE_SECONDS = 300
# Executor consumer defaults, measured reading 1M incompressible 100 B records from one partition in-process
# (read_range, 2-core machine); users override any of them with kafka.*:
# - max.partition.fetch.bytes: librdkafka's 1 MiB crawled at ~120k records/s on loopback; 4 MiB+ reads ~1M/s.
# - fetch.queue.backoff.ms: once the local queue holds queued.min.messages, librdkafka's fetcher pauses up
#   to this long (default 1000 ms): 150-160k rows/s with the default, 510-580k with 10 ms (470k with 1 ms).
# - fetch.wait.max.ms: a range reader knows its records exist, so the broker's long poll (default 500 ms)
#   only delays the first fetch after an assign: ~500 ms per Spark task on a wide topic, ~10 ms with 10.
# - reconnect.backoff.max.ms: a pooled consumer keeps retrying a broker that went away, waiting longer each
#   time up to this (default 10 s); after an outage, its next task would wait that out and could fail as
#   stalled (kafkaConsumer.pollTimeoutMs) although the broker is back. 1 s bounds the wait.
# queued.min.messages (1M or 10k instead of 100k) and fetch.min.bytes (1 MiB) changed nothing or slowed reads.
FETCH_DEFAULTS = {"max.partition.fetch.bytes": 8 * 1024 * 1024, "fetch.queue.backoff.ms": 10,
                  "fetch.wait.max.ms": 10, "reconnect.backoff.max.ms": 1000}
GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}


@dataclass(frozen=True)
class FetchConfig:
    """What an executor needs to read, small and picklable (no clients)."""

    kafka_config: dict[str, str] = field(repr=False)  # may hold secrets: never print
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    # the query's kafka.group.id: the consumer looks its coordinator up (librdkafka does so for any group.id, even
    # for a consumer that only assigns), which under ACLs needs DESCRIBE on the group; it never joins nor commits
    group_id: str | None = None
    read_path: str = "auto"  # readPath: auto (native when built), native, python

    def wants_native(self) -> bool:
        if self.read_path == "native" and not native.available():
            raise KafkaSourceError("readPath is native, but kafkasource's native extension is not built on this "
                                   "executor: install kafkasource where a Rust toolchain is present (pip install "
                                   "builds it), or set readPath to auto or python")
        return self.read_path == "native" or (self.read_path == "auto" and native.available())

    def consumer_config(self) -> dict[str, object]:
        return {**FETCH_DEFAULTS, **self.kafka_config, "group.id": self.group_id or EXECUTOR_GROUP_ID,
                "enable.auto.commit": False, "enable.auto.offset.store": False, "auto.offset.reset": "error"}

    def pool_key(self) -> tuple:
        return tuple(sorted((k, str(v)) for k, v in self.consumer_config().items()))


class ConsumerPool:
    """Idle consumers of this worker process, by configuration and kind (native or confluent-kafka)."""

    def __init__(self) -> None:
        self._idle: dict[tuple, list[tuple[Consumer, float]]] = {}
        self._native_refused: set[tuple] = set()  # configurations the native consumer could not take

    def acquire(self, config: FetchConfig, native_ok: bool = True) -> Consumer | NativeConsumer:
        """A consumer for `config`: the native one when it is wanted and `native_ok` (its caller reads with
        RangeReader), else confluent-kafka's."""
        self._close_idle()
        use_native = native_ok and config.wants_native() and (
            config.read_path == "native" or config.pool_key() not in self._native_refused)
        idle = self._idle.get(self._key(config, use_native))
        if idle:
            return idle.pop()[0]
        if use_native:
            try:
                return NativeConsumer(config.consumer_config())
            except ValueError as exc:
                # the extension's librdkafka is an older version than confluent-kafka's: read with
                # confluent-kafka's, unless the user asked for the native path
                if config.read_path == "native":
                    raise KafkaSourceError(f"readPath is native, but the native consumer refused the configuration: "
                                           f"{exc}. Set readPath to auto or python") from None
                log.warning("the native consumer refused the configuration (%s); reading with confluent-kafka", exc)
                self._native_refused.add(config.pool_key())
        return Consumer(config.consumer_config())

    @staticmethod
    def _key(config: FetchConfig, native: bool) -> tuple:
        return (native, *config.pool_key())

    def release(self, config: FetchConfig, consumer: Consumer | NativeConsumer, healthy: bool) -> None:
        if healthy:
            try:
                consumer.unassign()  # an idle consumer must not keep prefetching (and buffering) records
            except Exception:
                healthy = False
        if healthy:
            key = self._key(config, isinstance(consumer, NativeConsumer))
            self._idle.setdefault(key, []).append((consumer, time.monotonic()))
        else:
            _close_quietly(consumer)

    def _close_idle(self) -> None:
        cutoff = time.monotonic() - IDLE_CLOSE_SECONDS
        for key, entries in list(self._idle.items()):
            for consumer, since in entries:
                if since < cutoff:
                    _close_quietly(consumer)
            self._idle[key] = [(c, s) for c, s in entries if s >= cutoff]


def _close_quietly(consumer: Consumer) -> None:
    try:
        consumer.close()
    except Exception:  # a broken consumer may fail to close; it is dropped either way
        log.debug("closing a pooled consumer failed", exc_info=True)


POOL = ConsumerPool()


def read_range(offset_range: OffsetRange, config: FetchConfig, pool: ConsumerPool = POOL) -> Iterator:
    """Yield pyarrow.RecordBatch objects holding exactly the records of [start, until) that exist."""
    return pooled(lambda consumer: RangeReader(consumer, offset_range, config).batches(), config, pool)


def pooled(read: Callable[[Consumer], Iterator], config: FetchConfig, pool: ConsumerPool,
           native_ok: bool = True) -> Iterator:
    """Run `read` with a consumer from the pool; one that failed is closed rather than pooled."""
    consumer = pool.acquire(config, native_ok)
    healthy = False
    try:
        yield from read(consumer)
        healthy = True
    finally:
        pool.release(config, consumer, healthy)


class RangeReader:
    """Reads one range. `shared`: the consumer also reads other partitions (packed.py), which repositions
    it: moving this range's position only marks it (`moved`) instead of replacing the assignment."""

    def __init__(self, consumer: Consumer, offset_range: OffsetRange, config: FetchConfig, shared: bool = False):
        self.consumer = consumer
        self.range = offset_range
        self.config = config
        self.shared = shared
        self.moved = False
        self.name = partition_name(offset_range.topic, offset_range.partition)
        self.position = offset_range.start

    def _seek(self, offset: int) -> None:
        self.position = offset
        if self.shared:
            self.moved = True
        else:
            self.consumer.assign([KafkaTopicPartition(self.range.topic, self.range.partition, offset)])

    def batches(self) -> Iterator:
        until = self.range.until
        timeout_s = self.config.poll_timeout_ms / 1000
        self._seek(self.range.start)
        rows = NativeRows(self) if isinstance(self.consumer, NativeConsumer) else MessageRows(self)
        last_progress = time.monotonic()
        while self.position < until:
            before = self.position
            after_last, interrupted = rows.consume(min(CONSUME_CHUNK, until - self.position), min(1.0, timeout_s),
                                                   until)
            if not interrupted:
                # the position moves past control records and aborted transactions too, so gaps never stall us
                position = self.consumer.position([KafkaTopicPartition(self.range.topic, self.range.partition)])
                self.position = max(self.position, position[0].offset, after_last)
            if rows.full(BATCH_ROWS):
                yield rows.take()
            if self.position != before:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > timeout_s:
                raise KafkaSourceError(
                    f"reading {self.name} stalled at offset {self.position} (range {self.range.start}.."
                    f"{until}): nothing arrived within {self.config.poll_timeout_ms} ms "
                    "(kafkaConsumer.pollTimeoutMs). Check that the brokers are reachable from the executors")
        if len(rows):
            yield rows.take()

    def concerns(self, topic: str | None, partition: int | None) -> bool:
        """Whether an error event is about this range's partition (or about no partition in particular)."""
        return topic in (None, self.range.topic) and partition in (None, -1, self.range.partition)

    def _records(self, messages: list, until: int) -> tuple[list, bool]:
        """The records of the range among `messages`, and whether an error event about our partition moved the
        read position (skipped over lost records, or raised). An error that is only logged (librdkafka retries
        it) drops nothing: the records after it are ours too. Per-message work stays in C on the common path:
        no errors, and only the last chunk reaching past `until`."""
        if any(map(Message.error, messages)):
            kept = []
            for message in messages:
                error = message.error()
                if error is None:
                    kept.append(message)
                elif self.concerns(message.topic(), message.partition()) and self.on_error(error):
                    return [m for m in kept if m.offset() < until], True
            messages = kept  # error events about other partitions are late news for a pooled consumer
        if messages and messages[-1].offset() >= until:
            messages = [m for m in messages if m.offset() < until]
        return messages, False

    def on_error(self, error: KafkaError) -> bool:
        """Raise, or skip lost records (True: the position moved), or log a transient error (False)."""
        code = error.code()
        if code == KafkaError._AUTO_OFFSET_RESET or code == KafkaError.OFFSET_OUT_OF_RANGE:
            self._out_of_range()
            return True
        if code in GONE:
            self._data_loss(f"{self.name} no longer exists ({error.str()}); records {self.position}.."
                            f"{self.range.until - 1} ({_count(self.range.until - self.position)}) cannot be read",
                            skip_to=self.range.until)
            return True
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise AccessError(f"not authorized to read topic {self.range.topic} ({error.str()}): the principal this "
                              f"query authenticates as needs the READ permission on topic {self.range.topic} "
                              f"(kafka-acls --add --allow-principal User:<name> --operation Read "
                              f"--topic {self.range.topic})")
        if error.fatal():
            raise KafkaSourceError(f"reading {self.name} failed: {error.str()}")
        log.warning("reading %s: %s (retrying)", self.name, error.str())  # librdkafka retries transient errors
        return False

    def _out_of_range(self) -> None:
        low, high = self.consumer.get_watermark_offsets(
            KafkaTopicPartition(self.range.topic, self.range.partition), timeout=self.config.poll_timeout_ms / 1000)
        if self.position < low:
            lost_until = min(low, self.range.until)
            self._data_loss(f"records {self.position}..{lost_until - 1} of {self.name} are gone "
                            f"({_count(lost_until - self.position)}): the log now starts at {low} "
                            "(retention or deleted records)", skip_to=low)
        else:
            self._data_loss(f"offset {self.position} of {self.name} is beyond the log end {high} (the partition was "
                            "truncated or recreated)", skip_to=self.range.until)

    def _data_loss(self, what: str, skip_to: int) -> None:
        report_data_loss(what, self.config.fail_on_data_loss, then="skipping them")
        if skip_to >= self.range.until:
            self.position = self.range.until
        else:
            self._seek(skip_to)


class MessageRows:
    """A range's records as confluent-kafka Message objects, turned into Arrow batches in Python."""

    def __init__(self, reader: RangeReader):
        self.reader = reader
        self.pending = PendingMessages()

    def consume(self, count: int, timeout_s: float, until: int) -> tuple[int, bool]:
        """Consume a chunk and keep the range's records: (the offset after the last one kept, or -1; whether an
        error event moved the read position, in which case the records after that event are dropped)."""
        with collector_paused():
            records, interrupted = self.reader._records(self.reader.consumer.consume(count, timeout=timeout_s),
                                                        until)
        self.pending.add(records)
        return (records[-1].offset() + 1 if records and not interrupted else -1), interrupted

    def full(self, batch_rows: int) -> bool:
        return self.pending.full(batch_rows)

    def __len__(self) -> int:
        return len(self.pending)

    def take(self):
        r = self.reader
        return self.pending.take(r.range.topic, r.range.partition, r.config.include_headers)


class PendingMessages:
    """One partition's messages waiting to become an Arrow batch. A batch ends at BATCH_ROWS records or at
    native.BATCH_BYTES of values, as on the native path, so large records never pile up in a worker."""

    def __init__(self) -> None:
        self.messages: list = []
        self.value_bytes = 0

    def add(self, messages: list) -> None:
        self.messages.extend(messages)
        self.value_bytes += sum(map(len, messages))  # len() of a Message is the size of its value

    def full(self, batch_rows: int = BATCH_ROWS) -> bool:
        return len(self.messages) >= batch_rows or self.value_bytes >= native.BATCH_BYTES

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
    thousand: each new tracked object counts toward the next collection, and every collection walks the
    young ones, which was half of the Python path's time (1M records of 100 B read in-process: 2.0-2.9 s with
    it on, 1.4-1.6 s with it paused). None of these objects form cycles; whatever garbage with cycles another
    part of the worker makes meanwhile is collected once the collector runs again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _count(records: int) -> str:
    return f"{records} record{'' if records == 1 else 's'}"
