"""Faults survived (issue 11): broker restarts, topics deleted and recreated, restarts without a checkpoint.

Each test produces a known sequence per partition and compares what the sink holds, by (partition,
offset), with what Kafka acknowledged: nothing lost, nothing duplicated. Figures go to the run's output
(`-s`) and to the README's "What we test".
"""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import KafkaException

from dev import broker as local_broker
from tests.kafka_helpers import KafkaHarness, await_condition
from tests.test_stream_read import Collector, await_rows, base_options, running_stream

pytestmark = pytest.mark.faults
log = logging.getLogger(__name__)

SHORT_OUTAGE_S = 5  # how long the broker stays down, on top of its own stop and start-up


def report(capsys, line: str) -> None:
    """A figure for the README, shown in the run's output."""
    log.info(line)
    with capsys.disabled():
        print(f"\n[faults] {line}")


def positions(rows) -> list[tuple[int, int]]:
    return [(row[1], row[2]) for row in rows]


def produced_positions(records) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in records)


@pytest.fixture(scope="module")
def own_broker():
    """A broker of this module's own, so stopping it disturbs no other test."""
    broker = local_broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def own_kafka(own_broker) -> KafkaHarness:
    if not own_broker.is_running():  # a failed test may have left it down
        own_broker.restart()
    return KafkaHarness(own_broker.bootstrap_servers)


def test_broker_restart_shorter_than_poll_timeout_is_survived(spark, own_broker, own_kafka, tmp_path, capsys):
    kafka = own_kafka
    topic = kafka.create_topic(kafka.unique_name("restart"), partitions=2)
    group = kafka.unique_name("restart-group")
    before = kafka.produce_values(topic, 20, partitions=2)
    collector = Collector()
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", commitMode="sync",
                           **{"kafka.group.id": group, "kafkaConsumer.pollTimeoutMs": "90000"})

    with running_stream(spark, tmp_path / "cp", options, collector) as query:
        await_rows(collector, 20, query)
        down_at = time.monotonic()
        own_broker.stop()
        time.sleep(SHORT_OUTAGE_S)  # the outage itself: a length of time, not a wait for the machine
        own_broker.restart()
        outage = time.monotonic() - down_at
        after = kafka.produce_values(topic, 20, partitions=2, prefix="after")
        rows = await_rows(collector, 40, query)
        await_condition("the commit of the last batch", lambda: kafka.committed(group, topic, 2) == {0: 20, 1: 20},
                        query, timeout=60)
        assert query.isActive and query.exception() is None

    assert positions(rows) == produced_positions(before + after)  # each record once: 0 lost, 0 duplicated
    report(capsys, f"broker restart: down {outage:.1f} s with kafkaConsumer.pollTimeoutMs=90000: query kept "
                   f"running; 40 records produced, 0 lost, 0 duplicated; committed = log end")


def test_broker_outage_longer_than_poll_timeout_fails_naming_brokers_then_resumes(spark, own_broker, own_kafka,
                                                                                 tmp_path, capsys):
    kafka = own_kafka
    topic = kafka.create_topic(kafka.unique_name("outage"), partitions=2)
    before = kafka.produce_values(topic, 10, partitions=2)
    first, second = Collector(), Collector()
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest",
                           **{"kafkaConsumer.pollTimeoutMs": "8000"})

    with running_stream(spark, tmp_path / "cp", options, first) as query:
        await_rows(first, 10, query)
        down_at = time.monotonic()
        own_broker.stop()
        await_condition("the query to fail", lambda: query.exception() is not None, timeout=120)
        failed_after = time.monotonic() - down_at
        message = str(query.exception())
    try:
        assert f"Kafka at {kafka.bootstrap_servers} did not answer within 8000 ms (kafkaConsumer.pollTimeoutMs)" \
            in message, message
        assert "DataLossError" not in message  # an outage is not data loss
    finally:
        own_broker.restart()
    after = kafka.produce_values(topic, 10, partitions=2, prefix="after")

    with running_stream(spark, tmp_path / "cp", options, second) as query:  # the same checkpoint
        await_rows(second, 10, query)

    assert sorted(positions(first.rows) + positions(second.rows)) == produced_positions(before + after)
    report(capsys, f"broker outage past kafkaConsumer.pollTimeoutMs=8000: query failed after {failed_after:.1f} s "
                   "naming the brokers; restarted from its checkpoint: 20 records produced, 0 lost, 0 duplicated")


def recreate_topic(kafka: KafkaHarness, topic: str, partitions: int) -> None:
    """Delete the topic and create it again under the same name (deletion completes in the background)."""
    kafka.delete_topic(topic)

    def created() -> bool:
        try:
            kafka.create_topic(topic, partitions)
            return True
        except KafkaException:  # still marked for deletion
            return False

    await_condition(f"{topic} to be created again", created, timeout=60)


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_topic_deleted_and_recreated_mid_stream(spark, kafka, tmp_path, fail_on_data_loss, capsys):
    topic = kafka.create_topic(kafka.unique_name("recreated"), partitions=1)
    kafka.produce_values(topic, 6)
    collector = Collector(hold=True)
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss)

    with running_stream(spark, tmp_path / "cp", options, collector) as query:
        await_condition("the first batch to be held", collector.holding.is_set, query)
        # the query sits in its first batch (offsets 0..5): the topic is replaced before it plans again
        recreate_topic(kafka, topic, partitions=1)
        renewed = kafka.produce_values(topic, 3, prefix="new")
        collector.release()
        if fail_on_data_loss == "true":
            await_condition("the query to fail", lambda: query.exception() is not None, timeout=120)
            message = str(query.exception())
        else:
            rows = await_rows(collector, 9, query)

    if fail_on_data_loss == "true":
        # depending on the moment it looks, the query sees the topic gone or its log gone back below offset 6
        assert (f"{topic}-0 no longer exists in the cluster" in message
                or f"the log of {topic}-0 now ends at 3, below the query's position 6" in message), message
        assert "failOnDataLoss=false" in message
        report(capsys, "topic deleted and recreated, failOnDataLoss=true: the query failed naming the partition")
    else:
        assert positions(rows) == sorted([(0, o) for o in range(6)] + [(0, o) for o in range(3)])
        # the new topic's records, each once, read from its offset 0
        assert sorted((row[2], row[4]) for row in rows if row[4].startswith(b"new")) == [(r.offset, r.value)
                                                                                        for r in renewed]
        report(capsys, "topic deleted and recreated, failOnDataLoss=false: the new topic was read from offset 0, "
                       "3 of 3 records, 0 lost")
