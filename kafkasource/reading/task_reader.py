"""Executor side: read one Spark task's offset ranges with one pooled consumer, into Arrow record batches.

A task reads one range, or several small ones packed together (packRecordsPerTask): the consumer is assigned
all of them at once, so one fetch round brings records of many partitions instead of a round trip each, and
a range that reaches its end is paused so the consumer stops fetching past it. Only the hot loop differs
between the read paths (python_rows.MessageRows, native.NativeRows); TaskReader decides for both what an error
event means, where each range's position is, when a range is done and when the task has stalled.

Executors may meet failures the driver never does (the brokers refuse their credentials or certificates, or are
unreachable from the workers only). Those reach the consumer as client-level errors, apart from the records:
a refusal fails the task at once with its cause; librdkafka retries the rest, and a task that stalls meanwhile
names the last of them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from confluent_kafka import KafkaError
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafkasource.cluster.refusal import is_refusal, refusal_error
from kafkasource.errors import AccessError, KafkaSourceError
from kafkasource.planning.data_loss import report_data_loss
from kafkasource.planning.partitions import TopicPartition, partition_name
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading import settings as read_settings
from kafkasource.reading.consumers import POOL, ConsumerPool, FetchConfig, ReadConsumer, pooled
from kafkasource.reading.native import NativeConsumer, NativeRows
from kafkasource.reading.python_rows import MessageRows

log = logging.getLogger(__name__)

GONE = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC}
STALLED_NAMED = 5  # partitions a stall error names, so that a wide task's error stays readable


def read_ranges(ranges: tuple[OffsetRange, ...], config: FetchConfig, pool: ConsumerPool = POOL) -> Iterator:
    """Yield pyarrow.RecordBatch objects holding exactly the records of each range's [start, until) that exist."""
    # the native consumer reads one range at a time: several at once go through confluent-kafka
    return pooled(
        lambda consumer: TaskReader(consumer, ranges, config).batches(),
        config,
        pool,
        native_ok=len(ranges) == 1,
        topic=ranges[0].topic if len({r.topic for r in ranges}) == 1 else None,
    )


class RangeState:
    """One range's read position, and what an error event about its partition does to it."""

    def __init__(self, consumer: ReadConsumer | NativeConsumer, offset_range: OffsetRange, config: FetchConfig):
        self.consumer = consumer
        self.range = offset_range
        self.config = config
        self.name = partition_name(offset_range.topic, offset_range.partition)
        self.position = offset_range.start
        self.moved = False  # an error event set the position: the consumer must be assigned there again

    @property
    def done(self) -> bool:
        return self.position >= self.range.until

    def where(self) -> str:
        return f"(range {self.range.start}..{self.range.until})"

    def on_error(self, error: KafkaError) -> bool:
        """Raise, or skip lost records (True: the position moved), or leave a transient error to librdkafka's
        retries (False)."""
        code = error.code()
        if code == KafkaError._AUTO_OFFSET_RESET or code == KafkaError.OFFSET_OUT_OF_RANGE:
            self._out_of_range()
            return True
        if code in GONE:
            self._data_loss(
                f"{self.name} no longer exists ({error.str()}); records {self.position}.."
                f"{self.range.until - 1} ({_count(self.range.until - self.position)}) cannot be read",
                skip_to=self.range.until,
            )
            return True
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise AccessError(
                f"not authorized to read topic {self.range.topic} ({error.str()}): the principal this "
                f"query authenticates as needs the READ permission on topic {self.range.topic} "
                f"(kafka-acls --add --allow-principal User:<name> --operation Read "
                f"--topic {self.range.topic})"
            )
        if error.fatal():
            raise KafkaSourceError(f"reading {self.name} failed: {error.str()}")
        return False

    def _out_of_range(self) -> None:
        low, high = self.consumer.get_watermark_offsets(
            KafkaTopicPartition(self.range.topic, self.range.partition), timeout=self.config.poll_timeout_ms / 1000
        )
        if self.position < low:
            lost_until = min(low, self.range.until)
            self._data_loss(
                f"records {self.position}..{lost_until - 1} of {self.name} are gone "
                f"({_count(lost_until - self.position)}): the log now starts at {low} "
                "(retention or deleted records)",
                skip_to=low,
            )
        else:
            self._data_loss(
                f"offset {self.position} of {self.name} is beyond the log end {high} (the partition was "
                "truncated or recreated)",
                skip_to=self.range.until,
            )

    def _data_loss(self, what: str, skip_to: int) -> None:
        report_data_loss(what, self.config.fail_on_data_loss, then="skipping them")
        self.position = min(skip_to, self.range.until)
        self.moved = True


class TaskReader:
    """Reads a task's ranges with one consumer, through the read path's rows: `rows.consume()` keeps each
    range's records below its end and hands error events to `on_error_event`; TaskReader moves the positions,
    assigns, pauses, hands out batches and gives up when nothing arrives."""

    def __init__(self, consumer: ReadConsumer | NativeConsumer, ranges: tuple[OffsetRange, ...], config: FetchConfig):
        self.consumer = consumer
        self.config = config
        self.ranges = {(r.topic, r.partition): RangeState(consumer, r, config) for r in ranges}
        self.active = {key: state for key, state in self.ranges.items() if not state.done}
        self.rows = self._rows(consumer, ranges)
        self.paused: list[KafkaTopicPartition] = []
        self.last_error: KafkaError | None = None  # the latest error librdkafka retried since the last progress
        self.logged: set[int] = set()  # error codes warned about: brokers down repeat theirs many times a second

    def _rows(
        self, consumer: ReadConsumer | NativeConsumer, ranges: tuple[OffsetRange, ...]
    ) -> NativeRows | MessageRows:
        include_headers = self.config.include_headers
        if isinstance(consumer, NativeConsumer):
            (only,) = ranges
            return NativeRows(consumer, only, include_headers, self.on_error_event)
        return MessageRows(
            consumer, {(r.topic, r.partition): r for r in ranges}, include_headers, self.is_reading, self.on_error_event
        )

    def is_reading(self, key: TopicPartition) -> bool:
        """Does the range of `key` still take records: not done, and not moved by an error event since it was
        last assigned (the records after such an event are read again from the new position)?"""
        state = self.active.get(key)
        return state is not None and not state.moved

    def batches(self) -> Iterator:
        # librdkafka keeps a partition paused across unassign and assign: resume what this task paused, or the
        # pooled consumer's next task on that partition would wait for records forever
        try:
            yield from self._read()
        finally:
            if self.paused:
                assert isinstance(self.consumer, ReadConsumer)  # only a task of several ranges pauses
                self.consumer.resume(self.paused)

    def _read(self) -> Iterator:
        timeout_s = self.config.poll_timeout_ms / 1000
        active = self.active
        if active:
            self._assign()
        last_progress = time.monotonic()
        while active:
            before = [state.position for state in active.values()]
            remaining = sum(state.range.until - state.position for state in active.values())
            after_last = self.rows.consume(min(read_settings.CONSUME_CHUNK, remaining), min(1.0, timeout_s))
            for error in self.consumer.client_errors():
                self.on_client_error(error)
            self._advance(after_last)
            yield from self.rows.full_batches()
            done = [key for key, state in active.items() if state.done]
            for key in done:
                del active[key]
                yield from self.rows.flush(key)
            if any(state.moved for state in active.values()):
                self._assign()
            elif done and active:
                self._pause(done)
            if done or [state.position for state in active.values()] != before:
                last_progress = time.monotonic()
                self.last_error = None  # a stall names what went wrong since the task last moved
            elif time.monotonic() - last_progress > timeout_s:
                raise stall_error(list(active.values()), self.config.poll_timeout_ms, self.last_error)

    def on_error_event(self, topic: str | None, partition: int | None, error: KafkaError) -> bool:
        """Hand an error event to the ranges it concerns; whether it moved the position of one. The brokers
        refusing the client fail the task at once."""
        self._fail_if_refused(error)
        moved, retried = False, []
        for state in self.concerned(topic, partition):
            if state.moved:
                continue
            if state.on_error(error):
                moved = True
            else:
                retried.append(state)
        if retried:
            self._retrying(error, ", ".join(state.name for state in retried))
        return moved

    def on_client_error(self, error: KafkaError) -> None:
        """An error about the client rather than a partition (librdkafka's error_cb: the brokers refusing us, or
        unreachable, down, not resolved), so never one that moves a range: a refusal or a fatal error fails the
        task, librdkafka retries the rest."""
        self._fail_if_refused(error)
        if error.fatal() or error.code() == KafkaError._FATAL:
            raise KafkaSourceError(f"reading {self.reading()} failed: {error.str()}")
        self._retrying(error, self.reading())

    def _fail_if_refused(self, error: KafkaError) -> None:
        if is_refusal(error):
            raise refusal_error(f"read {self.reading()}", error, self.config.kafka_config)

    def _retrying(self, error: KafkaError, names: str) -> None:
        """Note an error librdkafka retries: warned about once per kind, and kept for a stall's message unless it
        is the bare "all brokers are down" that follows the failure that says why."""
        if error.code() != KafkaError._ALL_BROKERS_DOWN or self.last_error is None:
            self.last_error = error
        if error.code() not in self.logged:
            self.logged.add(error.code())
            log.warning("reading %s: %s (retrying)", names, error.str())

    def reading(self) -> str:
        """The task's partitions, for messages: all of them, or the first few of a wide packed task."""
        names = [state.name for state in self.ranges.values()]
        if len(names) <= STALLED_NAMED:
            return ", ".join(names)
        return f"{len(names)} partitions ({', '.join(names[:STALLED_NAMED])}, ...)"

    def concerned(self, topic: str | None, partition: int | None) -> list[RangeState]:
        """The ranges still being read that an error event is about: one partition's, a whole topic's
        (partition -1 or none), or the client's (no topic: told once, to the first range). Events about other
        partitions are late news for a pooled consumer."""
        ranges = [
            state
            for state in self.active.values()
            if topic in (None, state.range.topic) and partition in (None, -1, state.range.partition)
        ]
        return ranges[:1] if topic is None else ranges

    def _advance(self, after_last: dict[TopicPartition, int]) -> None:
        """Move each range past the records kept, and to the consumer's position, which also moves past control
        records and aborted transactions, so gaps never stall a range. A range an error event moved stays where
        the event put it."""
        steady = {key: state for key, state in self.active.items() if not state.moved}
        if not steady:
            return
        for tp in self.consumer.position([KafkaTopicPartition(t, p) for t, p in steady]):
            key = (tp.topic, tp.partition)
            state = steady[key]
            state.position = max(state.position, tp.offset, after_last.get(key, -1))

    def _assign(self) -> None:
        """Assign every range still being read at its position (exact: every record delivered so far is
        accounted for; a partition in error cannot be sought)."""
        self.consumer.assign([KafkaTopicPartition(t, p, state.position) for (t, p), state in self.active.items()])
        for state in self.active.values():
            state.moved = False

    def _pause(self, done: list[TopicPartition]) -> None:
        finished = [KafkaTopicPartition(t, p) for t, p in done]
        assert isinstance(self.consumer, ReadConsumer)  # several ranges: read by confluent-kafka's consumer
        self.consumer.pause(finished)
        self.paused.extend(finished)


def stall_error(
    stalled: list[RangeState], poll_timeout_ms: int, last_error: KafkaError | None = None
) -> KafkaSourceError:
    """The error of a task whose ranges saw no progress within kafkaConsumer.pollTimeoutMs, naming the last error
    librdkafka reported meanwhile, if any (the reason is otherwise only in librdkafka's log)."""
    if len(stalled) == 1:
        what = f"{stalled[0].name} stalled at offset {stalled[0].position} {stalled[0].where()}"
    else:
        named = ", ".join(f"{state.name} at {state.position} {state.where()}" for state in stalled[:STALLED_NAMED])
        what = f"{len(stalled)} partitions stalled: {named}"
    cause = f"; the last error from the brokers: {last_error.str()}" if last_error is not None else ""
    return KafkaSourceError(
        f"reading {what}: nothing arrived within {poll_timeout_ms} ms "
        f"(kafkaConsumer.pollTimeoutMs){cause}. Check that the brokers are reachable from the "
        "executors"
    )


def _count(records: int) -> str:
    return f"{records} record{'' if records == 1 else 's'}"
