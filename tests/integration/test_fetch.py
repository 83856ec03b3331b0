"""Executor-side reading against the real broker, without Spark: pooling, exact ranges, data loss."""

from __future__ import annotations

import logging

import pyarrow as pa
import pytest

from kafkasource.errors import DataLossError
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading import consumers
from kafkasource.reading import settings as read_settings
from kafkasource.reading.consumers import ConsumerPool, FetchConfig
from kafkasource.reading.native import NativeConsumer
from kafkasource.reading.task_reader import read_ranges
from kafkasource.records.schema import arrow_schema
from tests.support.kafka_helpers import Record


def fetch_config(kafka, fail_on_data_loss=True, read_path="python") -> FetchConfig:
    return FetchConfig({"bootstrap.servers": kafka.bootstrap_servers}, include_headers=False,
                       fail_on_data_loss=fail_on_data_loss, poll_timeout_ms=10_000, read_path=read_path)


def read(offset_range, config, pool) -> pa.Table:
    return pa.Table.from_batches(list(read_ranges((offset_range,), config, pool)), schema=arrow_schema(False))


def read_packed(ranges, config, pool) -> pa.Table:
    return pa.Table.from_batches(list(read_ranges(tuple(ranges), config, pool)), schema=arrow_schema(False))


def by_partition(table: pa.Table) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for partition, offset in zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                                 strict=True):
        out.setdefault(partition, []).append(offset)
    return out


def idle_consumers(pool: ConsumerPool) -> list:
    return [consumer for entries in pool._idle.values() for consumer, _ in entries]


def test_pooled_consumer_is_reused_across_ranges_and_idles_unassigned(kafka, topic, read_path):
    kafka.produce_values(topic, 30, partitions=3)
    config, pool = fetch_config(kafka, read_path=read_path), ConsumerPool()

    first = read(OffsetRange(topic, 1, 0, 6), config, pool)
    idle_consumer, = idle_consumers(pool)
    assert isinstance(idle_consumer, NativeConsumer) == (read_path == "native")
    assert idle_consumer.assignment() == []  # no prefetching while idle
    second = read(OffsetRange(topic, 1, 6, 10), config, pool)
    again, = idle_consumers(pool)

    assert again is idle_consumer
    assert first.column("offset").to_pylist() == [0, 1, 2, 3, 4, 5]
    assert second.column("offset").to_pylist() == [6, 7, 8, 9]
    assert second.column("value").to_pylist() == [b"v19", b"v22", b"v25", b"v28"]  # round-robin: i % 3 == 1
    assert set(second.column("topic").to_pylist()) == {topic} and set(second.column("partition").to_pylist()) == {1}


def test_a_pooled_consumer_serves_again_only_ranges_of_the_topic_it_read(kafka, topic, read_path):
    """A consumer that had read another topic held a trickle's triggers for up to a second (bench/LATENCY.md): a
    range of another topic gets a consumer of its own, and the idle one still serves its own topic's next range."""
    other = kafka.create_topic(kafka.unique_name("other"), 1)
    kafka.produce_values(topic, 3, partitions=1)
    kafka.produce_values(other, 2, partitions=1)
    config, pool = fetch_config(kafka, read_path=read_path), ConsumerPool()
    read(OffsetRange(topic, 0, 0, 2), config, pool)
    first, = idle_consumers(pool)

    assert read(OffsetRange(other, 0, 0, 2), config, pool).column("value").to_pylist() == [b"v0", b"v1"]
    assert len(idle_consumers(pool)) == 2 and first in idle_consumers(pool)
    assert read(OffsetRange(topic, 0, 2, 3), config, pool).column("value").to_pylist() == [b"v2"]
    assert len(idle_consumers(pool)) == 2 and first in idle_consumers(pool)  # taken for its topic, given back
    pool.close_all()


def test_packed_tasks_over_several_topics_share_a_consumer_and_a_worker_keeps_at_most_so_many(
        kafka, topic, read_path, monkeypatch):
    """Tasks packed over several topics share consumers by configuration (their topics change from batch to
    batch); the idle consumers of a worker are bounded, the least recently used closed first."""
    monkeypatch.setattr(consumers, "MAX_IDLE_CONSUMERS", 2)
    others = [kafka.create_topic(kafka.unique_name("other"), 1) for _ in range(2)]
    for name in (topic, *others):
        kafka.produce_values(name, 2, partitions=1)
    config, pool = fetch_config(kafka, read_path=read_path), ConsumerPool()
    packed = [OffsetRange(topic, 0, 0, 1), OffsetRange(others[0], 0, 0, 1)]
    assert read_packed(packed, config, pool).num_rows == 2
    shared, = idle_consumers(pool)
    assert read_packed([OffsetRange(topic, 0, 1, 2), OffsetRange(others[1], 0, 0, 1)], config, pool).num_rows == 2
    assert idle_consumers(pool) == [shared]

    read(OffsetRange(topic, 0, 0, 2), config, pool)
    read(OffsetRange(others[0], 0, 0, 2), config, pool)  # a third idle consumer: the shared one, the oldest, goes

    assert len(idle_consumers(pool)) == 2 and shared not in idle_consumers(pool)
    with pytest.raises((RuntimeError, OSError)):
        shared.assignment()
    pool.close_all()


def test_range_below_the_log_start_is_data_loss(kafka, topic, caplog, read_path):
    kafka.produce_values(topic, 30, partitions=3)
    kafka.delete_records_before(topic, 0, 4)

    with pytest.raises(DataLossError, match=rf"records 1\.\.3 of {topic}-0 are gone \(3 records\): the log now "
                                            "starts at 4"):
        read(OffsetRange(topic, 0, 1, 8), fetch_config(kafka, read_path=read_path), ConsumerPool())

    with caplog.at_level(logging.WARNING, logger="kafkasource.reading.consumers"):
        skipped = read(OffsetRange(topic, 0, 1, 8), fetch_config(kafka, False, read_path), ConsumerPool())
    assert skipped.column("offset").to_pylist() == [4, 5, 6, 7]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"records 1..3 of {topic}-0 are gone (3 records): the log now starts at 4 (retention or deleted records) "
        "(failOnDataLoss=false: skipping them)"]


def test_a_range_past_the_log_end_is_data_loss(kafka, topic, read_path, caplog):
    kafka.produce_values(topic, 9, partitions=3)  # offsets 0..2 in each partition: the log ends at 3

    with pytest.raises(DataLossError, match=rf"offset 5 of {topic}-2 is beyond the log end 3 \(the partition was "
                                            r"truncated or recreated\)\. Some data may have been lost"):
        read(OffsetRange(topic, 2, 5, 8), fetch_config(kafka, read_path=read_path), ConsumerPool())
    with caplog.at_level(logging.WARNING, logger="kafkasource.reading.consumers"):
        skipped = read(OffsetRange(topic, 2, 5, 8), fetch_config(kafka, False, read_path), ConsumerPool())
    assert skipped.num_rows == 0 and f"offset 5 of {topic}-2 is beyond the log end 3" in caplog.text


def test_closing_the_pool_closes_its_idle_consumers(kafka, topic, read_path):
    kafka.produce_values(topic, 4, partitions=1)
    config, pool = fetch_config(kafka, read_path=read_path), ConsumerPool()
    assert read(OffsetRange(topic, 0, 0, 4), config, pool).column("offset").to_pylist() == [0, 1, 2, 3]
    idle_consumer, = idle_consumers(pool)

    pool.close_all()

    assert idle_consumers(pool) == []
    with pytest.raises((RuntimeError, OSError)) as closed:
        idle_consumer.assignment()
    assert str(closed.value) == {"python": "Consumer closed", "native": "the consumer is closed"}[read_path]


def test_a_batch_ends_at_the_byte_cap_on_either_path(kafka, topic, read_path, monkeypatch):
    # large records must not pile up in a worker until BATCH_ROWS: a batch also ends at BATCH_BYTES of values,
    # checked after each consumed chunk (here at most 2 records of 1,000 B)
    kafka.produce(topic, [Record(0, None, bytes([i]) * 1000) for i in range(12)])
    monkeypatch.setattr(read_settings, "BATCH_BYTES", 3000)
    monkeypatch.setattr(read_settings, "CONSUME_CHUNK", 2)

    batches = list(read_ranges((OffsetRange(topic, 0, 0, 12),), fetch_config(kafka, read_path=read_path),
                               ConsumerPool()))

    sizes = [batch.num_rows for batch in batches]
    assert sum(sizes) == 12 and len(sizes) >= 3
    assert all(3 <= size <= 4 for size in sizes[:-1]), sizes  # ended at the first chunk reaching 3,000 B
    assert [value[0] for batch in batches for value in batch.column("value").to_pylist()] == list(range(12))


def test_a_packed_task_reads_each_of_its_ranges_exactly_with_one_consumer(kafka, topic):
    kafka.produce_values(topic, 30, partitions=3)
    config, pool = fetch_config(kafka), ConsumerPool()

    table = read_packed([OffsetRange(topic, 0, 2, 7), OffsetRange(topic, 1, 0, 10), OffsetRange(topic, 2, 9, 10)],
                        config, pool)

    assert by_partition(table) == {0: [2, 3, 4, 5, 6], 1: list(range(10)), 2: [9]}
    rows = zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
               table.column("value").to_pylist(), strict=True)
    assert all(value == b"v%d" % (offset * 3 + partition) for partition, offset, value in rows)
    idle_consumer, = idle_consumers(pool)
    assert idle_consumer.assignment() == []


def test_data_loss_in_one_range_of_a_packed_task_touches_only_that_range(kafka, topic, caplog):
    kafka.produce_values(topic, 30, partitions=3)
    kafka.delete_records_before(topic, 0, 4)
    ranges = [OffsetRange(topic, 0, 1, 8), OffsetRange(topic, 1, 0, 5)]

    with pytest.raises(DataLossError, match=rf"records 1\.\.3 of {topic}-0 are gone \(3 records\)"):
        read_packed(ranges, fetch_config(kafka), ConsumerPool())

    with caplog.at_level(logging.WARNING, logger="kafkasource.reading.consumers"):
        skipped = read_packed(ranges, fetch_config(kafka, fail_on_data_loss=False), ConsumerPool())
    assert by_partition(skipped) == {0: [4, 5, 6, 7], 1: [0, 1, 2, 3, 4]}
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"records 1..3 of {topic}-0 are gone (3 records): the log now starts at 4 (retention or deleted records) "
        "(failOnDataLoss=false: skipping them)"]


def test_partitions_a_packed_task_paused_are_read_again_by_its_pooled_consumer(kafka, topic):
    """librdkafka keeps a partition paused across unassign and assign: a pooled consumer must resume what
    a packed task paused, or its next task on that partition would stall."""
    kafka.produce_values(topic, 30, partitions=3)
    config, pool = fetch_config(kafka), ConsumerPool()

    first = read_packed([OffsetRange(topic, 0, 0, 1), OffsetRange(topic, 1, 0, 10)], config, pool)
    again = read_packed([OffsetRange(topic, 0, 1, 3), OffsetRange(topic, 2, 0, 2)], config, pool)
    single = read(OffsetRange(topic, 1, 5, 7), config, pool)

    assert len(idle_consumers(pool)) == 1  # one consumer served all three tasks
    assert by_partition(first) == {0: [0], 1: list(range(10))}
    assert by_partition(again) == {0: [1, 2], 2: [0, 1]}
    assert by_partition(single) == {1: [5, 6]}
