"""Faults a query survives without losing or duplicating a record: broker restarts and outages, topics
deleted and recreated, leader and coordinator failover, restarts without a checkpoint, and SIGKILLs of a job.

Each test produces a known sequence per partition and compares what the sink holds, by (partition,
offset), with what Kafka acknowledged: nothing lost, nothing duplicated. Figures go to the run's output
(`-s`) and to the docs' "What we test" (docs/testing.md).
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from pyspark.errors import StreamingQueryException

from dev import broker as local_broker
from kafkasource.cluster.client import KafkaClient
from kafkasource.options import parse_options
from kafkasource.planning.offsets import TOPIC_IDS_KEY
from tests.support import native_coverage
from tests.support.cluster_helpers import group_coordinator, log_ends, partition_leaders, replicated_topic
from tests.support.job_helpers import (
    alive,
    durable_positions,
    kill_at_random_moments,
    kill_group,
    start_job,
    write_config,
)
from tests.support.kafka_helpers import KafkaHarness, Record, SequenceProducer, await_condition
from tests.support.query_helpers import (
    QUERY_TIMEOUT_S,
    Collector,
    available_now_failure,
    await_rows,
    base_options,
    expected,
    positions,
    run_available_now,
    run_to_end,
    running_stream,
    start_query,
)

log = logging.getLogger(__name__)

SHORT_OUTAGE_S = 5  # how long the broker stays down, on top of its own stop and start-up


def report(capsys, line: str) -> None:
    """A figure for the docs' "What we test" page, shown in the run's output."""
    log.info(line)
    with capsys.disabled():
        print(f"\n[faults] {line}")


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
        produced_at = time.monotonic()
        # a read that stalls for the whole pollTimeoutMs fails the query, which this wait reports at once: waiting
        # past 90 s tells a recovery from a failure on a machine of any speed
        rows = await_condition("40 rows", lambda: len(collector.rows) >= 40 and collector.rows, query, timeout=120)
        caught_up = time.monotonic() - produced_at
        await_condition("the commit of the last batch", lambda: kafka.committed(group, topic, 2) == {0: 20, 1: 20},
                        query, timeout=60)
        assert query.isActive and query.exception() is None

    assert outage < 90, f"the broker was down {outage:.1f} s: not shorter than kafkaConsumer.pollTimeoutMs"
    assert positions(rows) == produced_positions(before + after)  # each record once: 0 lost, 0 duplicated
    report(capsys, f"broker restart: down {outage:.1f} s with kafkaConsumer.pollTimeoutMs=90000: query kept "
                   f"running and read the records produced after {caught_up:.1f} s; 40 records produced, 0 lost, "
                   "0 duplicated; committed = log end")


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
    # three times the pollTimeoutMs of 8 s: slack for a busy machine, far below the 120 s the await allows
    assert failed_after < 3 * 8, f"failing took {failed_after:.1f} s with kafkaConsumer.pollTimeoutMs=8000"
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


@pytest.mark.parametrize("refill", [3, 10], ids=["smaller", "past-the-old-position"])
@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_topic_deleted_and_recreated_mid_stream(spark, kafka, tmp_path, fail_on_data_loss, refill, capsys):
    """A topic replaced while the query reads it: under failOnDataLoss=true the query fails naming it; under
    false every record of the new topic is read once from its offset 0, and the group's committed offset follows
    the new log, whether it is shorter than the old one or already longer (told by the topic's new id)."""
    topic = kafka.create_topic(kafka.unique_name("recreated"), partitions=1)
    group = kafka.unique_name("recreated-group")
    kafka.produce_values(topic, 6)
    collector = Collector(hold=True)
    # a new log longer than the old position is told by the topic's id, asked at each metadata refresh: at every
    # trigger here, so that the trigger right after the recreation asks (by default, within 5 s)
    refresh = {"metadataRefreshIntervalMs": "0"} if refill > 6 else {}
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss,
                           **{"kafka.group.id": group}, **refresh)

    with running_stream(spark, tmp_path / "cp", options, collector) as query:
        await_condition("the first batch to be held", collector.holding.is_set, query)
        # the query sits in its first batch (offsets 0..5): the topic is replaced before it plans again
        recreate_topic(kafka, topic, partitions=1)
        renewed = kafka.produce_values(topic, refill, prefix="new")
        collector.release()
        if fail_on_data_loss == "true":
            await_condition("the query to fail", lambda: query.exception() is not None, timeout=120)
            message = str(query.exception())
        else:
            rows = await_rows(collector, 6 + refill, query)
            await_condition(f"the group's commit to reach {refill} in the new log",
                            lambda: kafka.committed(group, topic, 1) == {0: refill}, query)

    if fail_on_data_loss == "true":
        # depending on the moment it looks, the query sees the topic gone, its log gone back or its new id
        assert (f"{topic}-0 no longer exists in the cluster" in message
                or f"the log of {topic}-0 now ends at {refill}, below the query's position 6" in message
                or f"topic {topic} was deleted and created again (its topic id changed from " in message), message
        assert "failOnDataLoss=false" in message
        report(capsys, f"topic deleted and recreated with {refill} records, failOnDataLoss=true: the query failed "
                       "naming the topic")
    else:
        assert positions(rows) == sorted([(0, o) for o in range(6)] + [(0, o) for o in range(refill)])
        # the new topic's records, each once, read from its offset 0
        assert sorted((row[2], row[4]) for row in rows if row[4].startswith(b"new")) == [(r.offset, r.value)
                                                                                        for r in renewed]
        report(capsys, f"topic deleted and recreated with {refill} records, failOnDataLoss=false: the new topic was "
                       f"read from offset 0, {refill} of {refill} records, 0 lost; the group committed {refill}")


def checkpointed_topic_ids(checkpoint: Path) -> dict[str, str]:
    """The topic ids the checkpoint's newest offset log entry keeps beside the source's offsets."""
    newest = max((path for path in (checkpoint / "offsets").iterdir() if path.name.isdigit()),
                 key=lambda p: int(p.name))
    # an offset log entry: its version, its metadata, then the source's offsets JSON
    return json.loads(newest.read_text().splitlines()[2])[TOPIC_IDS_KEY]


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_topic_recreated_while_the_query_was_stopped_is_told_by_the_id_its_checkpoint_kept(
        spark, kafka, tmp_path, fail_on_data_loss, capsys):
    """A topic replaced and refilled past the query's position while the query was stopped: its log end alone
    cannot tell (the built-in source reads on from the old position). The checkpoint keeps the topic's id, so the
    restarted query fails naming the topic under failOnDataLoss=true, and under false reads exactly the new topic's
    records from its log start, its group's committed offset following the new log."""
    topic = kafka.create_topic(kafka.unique_name("recreated-stopped"), partitions=1)
    group = kafka.unique_name("recreated-stopped-group")
    kafka.produce_values(topic, 6)
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss,
                           **{"kafka.group.id": group})
    first = Collector()
    with running_stream(spark, tmp_path / "cp", options, first) as query:
        await_rows(first, 6, query)
        # the batch's end is committed at the next trigger: the group then holds the query's place
        await_condition("the group's commit to reach 6", lambda: kafka.committed(group, topic, 1) == {0: 6}, query)
    old_id = checkpointed_topic_ids(tmp_path / "cp")[topic]

    recreate_topic(kafka, topic, partitions=1)
    renewed = kafka.produce_values(topic, 10, prefix="new")  # past the checkpoint's position 6
    second = Collector()
    with running_stream(spark, tmp_path / "cp", options, second) as query:  # the same checkpoint
        if fail_on_data_loss == "true":
            await_condition("the query to fail", lambda: query.exception() is not None, timeout=120)
            message = str(query.exception())
        else:
            rows = await_rows(second, 10, query)
            await_condition("the group's commit to reach 10 in the new log",
                            lambda: kafka.committed(group, topic, 1) == {0: 10}, query)
            rows = second.rows

    if fail_on_data_loss == "true":
        assert f"topic {topic} was deleted and created again (its topic id changed from {old_id} to " in message, \
            message
        assert "set failOnDataLoss=false" in message
        report(capsys, "topic recreated with 10 records past the position 6 while the query was stopped, "
                       "failOnDataLoss=true: the restarted query failed naming the topic and its old id")
    else:
        assert [(row[2], row[4]) for row in rows] == [(r.offset, r.value) for r in renewed]  # offsets 0..9, once
        new_id = checkpointed_topic_ids(tmp_path / "cp")[topic]
        assert new_id != old_id
        report(capsys, "topic recreated with 10 records past the position 6 while the query was stopped, "
                       "failOnDataLoss=false: the restarted query read the new topic from offset 0, 10 of 10 records; "
                       "the group committed 10")


def cluster_topic_id(kafka: KafkaHarness, topic: str) -> str:
    client = KafkaClient(parse_options({"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic}))
    try:
        return client.topic_ids([topic])[topic]
    finally:
        client.close()


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_topic_recreated_between_two_available_now_runs_is_told_at_the_first_trigger_of_the_second(
        spark, kafka, tmp_path, fail_on_data_loss, capsys):
    """The ingest job's shape: AvailableNow runs from one checkpoint. The second run asks the metadata as it starts
    (prepareForTriggerAvailableNow), so its first trigger finds no metadata refresh due; it must compare the ids
    the checkpoint kept all the same, or it reads offsets 50..79 of the new topic and skips 0..49 silently."""
    topic = kafka.create_topic(kafka.unique_name("recreated-available-now"), partitions=1)
    group = kafka.unique_name("recreated-available-now-group")
    old = kafka.produce_values(topic, 50)
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss,
                           **{"kafka.group.id": group})
    assert run_available_now(spark, tmp_path / "cp", options) == expected(old)
    assert kafka.committed(group, topic, 1) == {0: 50}
    old_id = checkpointed_topic_ids(tmp_path / "cp")[topic]

    recreate_topic(kafka, topic, partitions=1)
    renewed = kafka.produce_values(topic, 80, prefix="new")  # past the checkpoint's position 50
    new_id = cluster_topic_id(kafka, topic)
    assert new_id != old_id

    if fail_on_data_loss == "true":
        message = available_now_failure(spark, tmp_path / "cp", options)
        assert (f"topic {topic} was deleted and created again (its topic id changed from {old_id} to {new_id})"
                in message), message
        assert "set failOnDataLoss=false" in message
        assert kafka.committed(group, topic, 1) == {}  # Kafka dropped the old commits; the old 50 never went in
        report(capsys, "topic recreated with 80 records past the position 50 between two AvailableNow runs, "
                       "failOnDataLoss=true: the second run failed at its first trigger naming the topic and both ids")
    else:
        assert run_available_now(spark, tmp_path / "cp", options) == expected(renewed)  # offsets 0..79, each once
        assert checkpointed_topic_ids(tmp_path / "cp") == {topic: new_id}
        assert kafka.committed(group, topic, 1) == {0: 80}
        report(capsys, "topic recreated with 80 records past the position 50 between two AvailableNow runs, "
                       "failOnDataLoss=false: the second run read the new topic from offset 0, 80 of 80 records; "
                       "the checkpoint keeps the new id, the group committed 80")


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_batch_replayed_from_the_checkpoint_is_not_read_from_a_topic_recreated_meanwhile(
        spark, kafka, tmp_path, fail_on_data_loss, capsys):
    """A run that stopped after planning its last batch (offsets 25..49) and before completing it: the restarted run
    replays that batch before it plans anything, so no latestOffset compares the ids first. Read as planned it
    would write offsets 25..49 of the new topic to the sink; it must compare the ids the batch was planned under."""
    topic = kafka.create_topic(kafka.unique_name("recreated-replay"), partitions=1)
    group = kafka.unique_name("recreated-replay-group")
    kafka.produce_values(topic, 50)
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", failOnDataLoss=fail_on_data_loss,
                           maxOffsetsPerTrigger="25", **{"kafka.group.id": group})
    first = run_to_end(spark, tmp_path / "cp", options)[1]
    assert [positions(rows) for rows in first.batches] == [[(0, o) for o in range(25)], [(0, o) for o in range(25, 50)]]
    old_id = checkpointed_topic_ids(tmp_path / "cp")[topic]
    # what a run killed after planning batch 1 and before completing it leaves: its offsets entry, no commit entry
    for name in ("1", ".1.crc"):
        (tmp_path / "cp" / "commits" / name).unlink()

    recreate_topic(kafka, topic, partitions=1)
    renewed = kafka.produce_values(topic, 80, prefix="new")
    new_id = cluster_topic_id(kafka, topic)
    lost = (f"topic {topic} was deleted and created again (its topic id changed from {old_id} to {new_id}) after the "
            f"batch replayed from the checkpoint was planned; at least 25 records the query had not read are lost "
            f"({topic}-0 25..49)")

    second = Collector()
    query = start_query(spark, tmp_path / "cp", options, second)
    try:
        if fail_on_data_loss == "true":
            with pytest.raises(StreamingQueryException) as raised:
                query.awaitTermination(QUERY_TIMEOUT_S)
            message = str(raised.value)
        else:
            assert query.awaitTermination(QUERY_TIMEOUT_S), f"AvailableNow query did not finish in {QUERY_TIMEOUT_S} s"
            assert query.exception() is None
    finally:
        query.stop()

    if fail_on_data_loss == "true":
        assert lost in message, message
        assert second.rows == []  # nothing of the new topic reached the sink
        report(capsys, "topic recreated while a planned batch (25..49) was not yet complete, the run restarted: "
                       "failOnDataLoss=true: the replayed batch failed naming the topic, both ids and the lost range")
    else:
        assert second.rows == expected(renewed)  # offsets 0..79 of the new topic, each once; none read at 25..49
        assert checkpointed_topic_ids(tmp_path / "cp") == {topic: new_id}
        assert kafka.committed(group, topic, 1) == {0: 80}
        report(capsys, "topic recreated while a planned batch (25..49) was not yet complete, the run restarted: "
                       "failOnDataLoss=false: the replayed batch skipped it, then the new topic was read from offset "
                       "0, 80 of 80 records; the group committed 80")


# -- leader failover: a 3-node cluster --------------------------------------------------------------

@pytest.fixture(scope="module")
def cluster():
    from dev.kafka_cluster import start_cluster

    running = start_cluster(3)
    yield running
    running.stop()


def test_offsets_are_asked_again_when_a_partition_leader_dies(cluster, capsys):
    """A ListOffsets request sent to a leader that just died waits out its whole timeout and can come back
    holding OFFSET_INVALID for that partition: the driver must ask again and answer the true log ends."""
    kafka = KafkaHarness(cluster.bootstrap_servers)
    topic = replicated_topic(kafka, "leader-gone", 2)
    kafka.produce(topic, [Record(p, None, b"v") for p in (0, 1) for _ in range(10)], acks="all")
    client = KafkaClient(parse_options({"kafka.bootstrap.servers": cluster.bootstrap_servers, "subscribe": topic,
                                        "kafkaConsumer.pollTimeoutMs": "120000"}))
    partitions = [(topic, 0), (topic, 1)]
    assert client.end(partitions) == {(topic, 0): 10, (topic, 1): 10}  # the client now knows the leaders
    victim = partition_leaders(kafka, topic)[0]
    cluster.kill(victim)
    try:
        started = time.monotonic()
        ends = client.end(partitions)
        took = time.monotonic() - started
    finally:
        client.close()
        cluster.restart(victim)
    assert ends == {(topic, 0): 10, (topic, 1): 10}
    # three times what docs/testing.md reports, and far below the 120 s a request left to its whole
    # timeout takes: the short attempts (1, 2, 4 s ...) reach the new leader within a few of them
    assert took < 23, f"the log ends took {took:.1f} s after the leader was killed"
    report(capsys, f"latest offsets listed right after the partition leader (node {victim}) was killed: the exact "
                   f"log ends after {took:.1f} s (kafkaConsumer.pollTimeoutMs 120 s)")


# the two commit modes, each on one read path: both paths and both modes meet the failover, in two runs, not four
@pytest.mark.parametrize(("commit_mode", "read_path"), [("sync", "python"), ("async", native_coverage.READ_PATHS[-1])],
                         ids=["sync-python", "async-native"])
def test_leader_and_coordinator_failover_loses_and_duplicates_nothing(spark, cluster, tmp_path, capsys,
                                                                      commit_mode, read_path):
    """The partition leader, then the group's coordinator, killed under a running query: it reads every record
    once, and its commits, sync or async, reach the log end."""
    kafka = KafkaHarness(cluster.bootstrap_servers)
    topic = replicated_topic(kafka, "failover", 2)
    group = kafka.unique_name("failover-group")
    collector = Collector()
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", commitMode=commit_mode,
                           readPath=read_path, **{"kafka.group.id": group, "kafkaConsumer.pollTimeoutMs": "90000"})
    killed = []
    with SequenceProducer(kafka, topic, 2) as producer, \
            running_stream(spark, tmp_path / "cp", options, collector) as query:
        await_rows(collector, 50, query)
        for role, node_id in (("partition leader", lambda: partition_leaders(kafka, topic)[0]),
                              ("group coordinator", lambda: group_coordinator(kafka, group))):
            victim = node_id()
            seen = len(collector.rows)
            cluster.kill(victim)
            killed.append(f"{role} (node {victim})")
            await_rows(collector, seen + 100, query)  # reading went on without that node
            cluster.restart(victim)
        producer.stop()
        ends = await_condition("the log ends once leadership settled", lambda: log_ends(kafka, topic, 2), timeout=60)
        rows = await_rows(collector, sum(ends.values()), query)
        await_condition("commits equal to the log end", lambda: kafka.committed(group, topic, 2) == ends, query,
                        timeout=90)

    assert producer.errors == []
    assert positions(rows) == [(p, o) for p in range(2) for o in range(ends[p])]  # every offset once
    assert sorted(row[4] for row in rows) == sorted(value for _, _, value in producer.acknowledged)
    report(capsys, f"leader failover on 3 nodes (RF 3, min.insync.replicas 2, acks=all; commitMode={commit_mode}, "
                   f"readPath={read_path}), killed the "
                   f"{' then the '.join(killed)} mid-stream: {len(rows)} records produced, 0 lost, 0 duplicated; "
                   "committed = log end")


# -- restart without the checkpoint ----------------------------------------------------------------

def test_restart_without_checkpoint_resumes_from_the_group(spark, kafka, tmp_path, capsys):
    topic = kafka.create_topic(kafka.unique_name("no-checkpoint"), partitions=2)
    group = kafka.unique_name("no-checkpoint-group")
    first, second = Collector(), Collector()
    options = base_options(kafka, subscribe=topic, maxOffsetsPerTrigger="50",
                           **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"})

    with SequenceProducer(kafka, topic, 2) as producer:
        with running_stream(spark, tmp_path / "ck1", options, first) as query:
            await_condition("a few batches", lambda: len(first.batches) >= 4, query, timeout=120)
        committed_at_stop = kafka.committed(group, topic, 2)
        # a new checkpoint: only the group remembers
        with running_stream(spark, tmp_path / "ck2", options, second) as query:
            await_condition("rows in the new query", lambda: second.batches, query, timeout=120)
            producer.stop()
            ends = await_condition("the log ends", lambda: log_ends(kafka, topic, 2), timeout=60)
            expected = {(p, o) for p in range(2) for o in range(ends[p])}
            await_condition("every record", lambda: set(positions(first.rows + second.rows)) >= expected, query,
                            timeout=180)

    first_read, second_read = positions(first.rows), positions(second.rows)
    duplicated = sorted(set(first_read) & set(second_read))
    assert set(first_read) | set(second_read) == expected  # 0 lost
    assert len(first_read) == len(set(first_read)) and len(second_read) == len(set(second_read))
    # what both queries read is at most the first query's last batch, which the group had not committed yet
    assert set(duplicated) <= set(positions(first.batches[-1]))
    assert all(offset >= committed_at_stop.get(partition, 0) for partition, offset in duplicated)
    report(capsys, f"restart without checkpoint: {len(expected)} records produced, 0 lost, {len(duplicated)} "
                   f"read twice (all from the first query's last, uncommitted batch of {len(first.batches[-1])})")


# -- crash-restart cycles ---------------------------------------------------------------------------

# two kills: each costs a spark-submit start (about 45 s on the CI machine), and the test command's time is bounded
# (the compatibility and plain-install runs take their share of it); the sink's fault test (test_sink_faults.py)
# kills a kafkasource-read query four more times, and soak.py kills for hours
CRASH_CYCLES = 2


def submit_stream(kafka: KafkaHarness, topic: str, group: str, workdir: Path, log_path: Path,
                  max_offsets: int = 200) -> subprocess.Popen:
    """The ingest job, processing time, raw values, batches of `max_offsets` records at most (small ones for the runs
    that are killed: a kill lands among many batches), in a process group of its own."""
    config = write_config(workdir / "ingest.toml", kafka.bootstrap_servers, topic, group, workdir,
                          trigger="processingTime=500ms", extra_source=f"maxOffsetsPerTrigger = {max_offsets}")
    return start_job("ingest", "--config", str(config), log_path=log_path)


@pytest.mark.spark  # spark-submit
def test_crash_restart_cycles_lose_and_duplicate_nothing(kafka, tmp_path, capsys):
    topic = kafka.create_topic(kafka.unique_name("crash"), partitions=2)
    group = kafka.unique_name("crash-group")
    output, log_path = tmp_path / "out", tmp_path / "spark-submit.log"

    with SequenceProducer(kafka, topic, 2) as producer:
        ahead_of_sink = kill_at_random_moments(
            CRASH_CYCLES, lambda: submit_stream(kafka, topic, group, tmp_path, log_path), log_path,
            lambda: durable_positions(output), lambda: kafka.committed(group, topic, 2), seed=20261122)
        producer.stop()
        ends = await_condition("the log ends", lambda: log_ends(kafka, topic, 2), timeout=60)
        expected = sorted((p, o) for p in range(2) for o in range(ends[p]))
        # the last run replays the batch the last kill left unfinished as it was planned, then reads the backlog the
        # kills and restarts left (thousands of records) in a batch or two rather than one of 200 every trigger
        app = submit_stream(kafka, topic, group, tmp_path, log_path, max_offsets=100_000)
        try:
            await_condition("every record durable",
                            lambda: alive(app, log_path) and set(durable_positions(output)) >= set(expected),
                            timeout=300)
        finally:
            kill_group(app)

    rows = durable_positions(output)
    assert ahead_of_sink == []
    assert sorted(rows) == expected  # every record once: 0 lost, 0 duplicated
    report(capsys, f"crash-restart: {CRASH_CYCLES} SIGKILLs of the ingest job (spark-submit, Parquet file sink): "
                   f"{len(expected)} records produced, 0 lost, 0 duplicated; the group's commits never ran ahead "
                   "of the sink at any kill")
