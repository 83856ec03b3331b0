"""Smoke tests proving the test harness is real: a real broker, the real client, a real Spark session."""

from __future__ import annotations

import sys

from confluent_kafka import TopicPartition

from tests.support.kafka_helpers import Record, described_group


def test_produced_records_read_back_with_every_field(kafka, topic):
    records = [Record(i % 3, f"key-{i}".encode(), f"value-{i}".encode(),
                      headers=(("h1", f"a{i}".encode()), ("h2", None)), timestamp_ms=1_700_000_000_000 + i)
               for i in range(30)]
    produced = kafka.produce(topic, records)

    read = kafka.read_all(topic, partitions=3, expected=30)

    assert len(read) == 30
    by_position = {(r.partition, r.offset): r for r in read}
    for p in range(3):
        # offsets in each partition are 0..9, dense, in produce order
        assert sorted(o for (part, o) in by_position if part == p) == list(range(10))
    for sent in produced:
        got = by_position[(sent.partition, sent.offset)]
        assert (got.key, got.value, got.headers, got.timestamp_ms) == (
            sent.key, sent.value, sent.headers, sent.timestamp_ms)
    assert {r.key for r in read} == {f"key-{i}".encode() for i in range(30)}


def test_group_commit_reads_back_with_committed(kafka, topic):
    kafka.produce_values(topic, 9, partitions=3)
    group = kafka.unique_name("smoke-group")

    kafka.commit(group, {(topic, 0): 2, (topic, 2): 3})

    assert kafka.committed(group, topic, 3) == {0: 2, 2: 3}
    consumer = kafka.consumer(group)
    try:
        missing = consumer.committed([TopicPartition(topic, 1)], timeout=10)[0]
        assert missing.offset < 0  # OFFSET_INVALID: no commit for partition 1
    finally:
        consumer.close()


def test_kafka_consumer_groups_tool_sees_the_commit(kafka, kafka_broker, topic):
    kafka.produce_values(topic, 6, partitions=3)
    group = kafka.unique_name("tool-group")
    kafka.commit(group, {(topic, 0): 1, (topic, 1): 2, (topic, 2): 2})

    assert described_group(kafka_broker, group) == [(0, 1, 2, 1), (1, 2, 2, 0), (2, 2, 2, 0)]


def test_earliest_and_latest_offsets(kafka, topic):
    kafka.produce_values(topic, 12, partitions=3)
    kafka.delete_records_before(topic, 1, 3)

    assert kafka.earliest(topic, 3) == {0: 0, 1: 3, 2: 0}
    assert kafka.latest(topic, 3) == {0: 4, 1: 4, 2: 4}


def test_spark_python_workers_run_this_interpreter_and_this_kafkasource(spark):
    """Spark's tests exercise the code under test only if its Python workers run this interpreter and import
    the kafkasource this process imports (a worktree put first on PYTHONPATH, or the editable install)."""
    import kafkasource

    def where(_):
        import sys as worker_sys

        import kafkasource as worker_kafkasource
        return worker_sys.executable, worker_kafkasource.__file__

    seen = spark.sparkContext.parallelize(range(2), 2).map(where).distinct().collect()

    assert seen == [(sys.executable, kafkasource.__file__)]
