"""An executor's read called as the executor calls it (task_reader.read_ranges), for the tests of what only
executors meet: the consumers it took from its pool, the error it failed with and how long that took."""

from __future__ import annotations

import re
import time

import pytest

from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading.consumers import ConsumerPool, FetchConfig
from kafkasource.reading.task_reader import read_ranges


class RecordingPool(ConsumerPool):
    """The pool executors use, remembering every consumer it handed out."""

    def __init__(self) -> None:
        super().__init__()
        self.handed_out: list = []

    def acquire(self, config: FetchConfig, native_ok: bool = True, topic: str | None = None):
        consumer = super().acquire(config, native_ok, topic)
        self.handed_out.append(consumer)
        return consumer


def fetch_config(kafka_config: dict[str, str], read_path: str, poll_timeout_ms: int) -> FetchConfig:
    return FetchConfig(kafka_config, include_headers=False, fail_on_data_loss=True, poll_timeout_ms=poll_timeout_ms,
                       read_path=read_path)


def offsets_read(topic: str, config: FetchConfig, pool: ConsumerPool) -> list[int]:
    return [offset for batch in read_ranges((OffsetRange(topic, 0, 0, 10),), config, pool)
            for offset in batch.column("offset").to_pylist()]


def failed_read(topic: str, config: FetchConfig, expected: type[Exception]) -> tuple[Exception, float, RecordingPool]:
    """Read records 0..9 of the topic's partition 0 as an executor does, expecting it to fail: (the error, the
    seconds it took, the pool)."""
    pool = RecordingPool()
    started = time.monotonic()
    with pytest.raises(expected) as failure:
        offsets_read(topic, config, pool)
    return failure.value, time.monotonic() - started, pool


def assert_closed_not_pooled(pool: RecordingPool) -> None:
    consumer, = pool.handed_out
    assert [idle for entries in pool._idle.values() for idle in entries] == []
    with pytest.raises((RuntimeError, OSError), match="(?i)consumer (is )?closed"):
        consumer.assignment()


def librdkafka_reason(reason: str) -> str:
    """librdkafka's text for a broker connection failure, which ends with how long it took and, when it repeats,
    how many identical errors it did not report."""
    return re.escape(reason) + r" \(after \d+ms in state [A-Z_]+(, \d+ identical error\(s\) suppressed)?\)"
