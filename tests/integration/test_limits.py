"""Batch sizes and reads bounded as asked: maxOffsetsPerTrigger caps every batch, minOffsetsPerTrigger waits
for records or maxTriggerDelay, Trigger.AvailableNow stops at the ends fixed when it started, progress
reports the log end and the lag, and batch reads honour timestamps, minPartitions and committed offsets;
real broker and Spark."""

from __future__ import annotations

import json
import threading
import time

from kafkasource.metrics.progress import LagListener, lag_from_progress
from tests.support.kafka_helpers import Record, await_condition
from tests.support.query_helpers import Collector, base_options, batch, positions, run_to_end, start_query


def batch_positions(collector: Collector) -> list[list[tuple[int, int]]]:
    """(partition, offset) of the rows of each batch that brought rows."""
    return [positions(rows) for rows in collector.batches]


def test_max_offsets_per_trigger_bounds_every_batch(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("max-per-trigger"), partitions=4)
    kafka.produce_values(topic, 10_000, partitions=4)

    _query, collector = run_to_end(spark, tmp_path / "ck", base_options(
        kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=1000), timeout=300)

    sizes = [len(rows) for rows in collector.batches]
    assert len(sizes) >= 10
    assert max(sizes) <= 1000
    assert positions(collector.rows) == [(p, o) for p in range(4) for o in range(2500)]


def test_available_now_ignores_records_produced_after_start(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("available-now-live"), partitions=2)
    kafka.produce_values(topic, 2000, partitions=2)
    stop = threading.Event()
    produced_after = []

    def keep_producing():
        # a trickle (about 200 records/s), so the run's target stays small however slow the machine
        producer = kafka.producer()
        i = 0
        while not stop.wait(0.05):
            for _ in range(10):
                producer.produce(topic, value=f"live{i}".encode(), partition=i % 2)
                i += 1
            producer.flush(10)
        produced_after.append(i)

    writer = threading.Thread(target=keep_producing, daemon=True)
    writer.start()
    try:
        before_start = kafka.latest(topic, 2)
        # run_to_end fails unless the query stops by itself, here while the producer still writes
        query, collector = run_to_end(spark, tmp_path / "ck", base_options(
            kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=700), timeout=300)
        after_finish = kafka.latest(topic, 2)
    finally:
        stop.set()
        writer.join(30)

    # a Python source's offsets appear in the progress as JSON text
    target = {int(p): o for p, o in json.loads(query.lastProgress["sources"][0]["endOffset"])[topic].items()}
    # exactly the records below the ends fixed at the start, each once
    assert positions(collector.rows) == [(p, o) for p in range(2) for o in range(target[p])]
    assert all(target[p] >= before_start[p] for p in range(2))
    assert sum(after_finish.values()) > sum(target.values())  # later records existed and were left alone
    assert produced_after[0] > 0


def test_min_offsets_per_trigger_waits_for_records_or_delay(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("min-per-trigger"), partitions=1)
    kafka.produce_values(topic, 5)
    collector = Collector()
    query = start_query(spark, tmp_path / "ck", base_options(
        kafka, subscribe=topic, startingOffsets="earliest", minOffsetsPerTrigger=20, maxTriggerDelay="4s"),
        collector, "500 milliseconds")
    try:
        # Spark runs a first, empty batch up to the initial offsets: the collector keeps batches with rows only
        started = time.monotonic()
        await_condition("the delayed batch", lambda: collector.batches, timeout=60)
        waited = time.monotonic() - started
        # 5 < 20 records: read once maxTriggerDelay passed
        assert batch_positions(collector) == [[(0, o) for o in range(5)]]
        assert waited >= 3

        kafka.produce_values(topic, 25, prefix="enough")  # >= 20: read at the next trigger
        await_condition("a batch once enough records exist", lambda: len(collector.batches) == 2, timeout=30)
        assert batch_positions(collector)[1] == [(0, o) for o in range(5, 30)]
    finally:
        query.stop()


def test_progress_reports_log_end_and_lag(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("lag"), partitions=2)
    kafka.produce_values(topic, 100, partitions=2)
    listener = LagListener()
    spark.streams.addListener(listener)
    progresses = []
    try:
        collector = Collector()
        query = start_query(spark, tmp_path / "ck", base_options(
            kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger=10), collector, "200 milliseconds")
        try:
            await_condition("two batches with rows", lambda: len(collector.batches) >= 2, timeout=60)
            progresses = [p for p in query.recentProgress if p["numInputRows"] > 0]
        finally:
            query.stop()
        await_condition("the listener to see progress", lambda: str(query.id) in listener.latest, timeout=30)
    finally:
        spark.streams.removeListener(listener)

    first = progresses[0]
    assert json.loads(first["sources"][0]["latestOffset"]) == {topic: {"0": 50, "1": 50}}
    end = json.loads(first["sources"][0]["endOffset"])[topic]
    lag = lag_from_progress(first)
    assert lag.per_partition == {(topic, 0): 50 - end["0"], (topic, 1): 50 - end["1"]}
    assert lag.total == 90
    assert lag_from_progress(first.json) == lag
    assert listener.latest[str(query.id)].total < 100


def test_batch_read_by_timestamps_and_min_partitions(spark, kafka):
    topic = kafka.create_topic(kafka.unique_name("batch-ts"), partitions=1)
    base = 1_700_000_000_000
    kafka.produce(topic, [Record(0, None, f"v{i}".encode(), timestamp_ms=base + i * 1000) for i in range(10)])

    df = batch(spark, base_options(kafka, subscribe=topic, startingTimestamp=base + 3000, endingTimestamp=base + 7000,
                                   minPartitions=3))

    assert df.rdd.getNumPartitions() == 3
    assert sorted(r.offset for r in df.collect()) == [3, 4, 5, 6]


def test_batch_read_starts_at_committed_and_never_commits(spark, kafka):
    topic = kafka.create_topic(kafka.unique_name("batch-committed"), partitions=2)
    kafka.produce_values(topic, 10, partitions=2)
    group = kafka.unique_name("batch-group")
    kafka.commit(group, {(topic, 0): 3, (topic, 1): 4})

    rows = batch(spark, base_options(kafka, subscribe=topic, startingOffsets="committed",
                                     **{"kafka.group.id": group})).collect()

    assert sorted((r.partition, r.offset) for r in rows) == [(0, 3), (0, 4), (1, 4)]
    assert kafka.committed(group, topic, 2) == {0: 3, 1: 4}
