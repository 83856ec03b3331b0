"""The group's offsets are committed once a batch completes, never ahead of what the sink holds: at the end
of AvailableNow, between processing-time batches, with commitMode sync, async or none; against the real
broker and Spark."""

from __future__ import annotations

import logging
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

import kafkasource
from kafkasource.commit import metadata as committer_metadata
from kafkasource.commit.committer import OffsetCommitter
from kafkasource.commit.outcomes import ENV_ADDRESS, CommitOutcome, OutcomeReceiver, OutcomeSender
from kafkasource.errors import CommitError
from tests.support.commit_helpers import committer
from tests.support.kafka_helpers import await_condition, described_group
from tests.support.query_helpers import base_options, positions, run_available_now, stream


def group_options(kafka, topic, group, **options):
    """Read `topic` as `group`, from its start where the group has no commit."""
    return base_options(kafka, subscribe=topic, **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"},
                        **options)


def source(spark, kafka, topic, group, **options):
    return stream(spark, group_options(kafka, topic, group, **options))


def drain(spark, kafka, topic, group, checkpoint, **options) -> list[tuple[int, int]]:
    """An AvailableNow run to its end; (partition, offset) of every row."""
    return positions(run_available_now(spark, checkpoint, group_options(kafka, topic, group, **options), timeout=180))


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_available_now_commits_final_batch_lag_zero(spark, kafka, kafka_broker, topic, tmp_path, mode):
    kafka.produce_values(topic, 90, partitions=3)
    group = kafka.unique_name(f"drain-{mode}")

    rows = drain(spark, kafka, topic, group, tmp_path / "ck", commitMode=mode, maxOffsetsPerTrigger=40)

    assert sorted(rows) == [(p, o) for p in range(3) for o in range(30)]
    assert kafka.committed(group, topic, 3) == {0: 30, 1: 30, 2: 30}
    assert described_group(kafka_broker, group) == [(0, 30, 30, 0), (1, 30, 30, 0), (2, 30, 30, 0)]


RUNS = 6  # AvailableNow runs, each of a fresh group whose coordinator the committer has yet to find


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_final_commit_of_available_now_lands_before_await_termination_returns(spark, kafka, topic, tmp_path, mode):
    kafka.produce_values(topic, 9, partitions=3)
    committed_after_each_run = []
    for run in range(RUNS):
        group = kafka.unique_name(f"final-{mode}-{run}")  # a fresh group: its coordinator is not known yet
        query = (source(spark, kafka, topic, group, commitMode=mode).writeStream.format("noop")
                 .option("checkpointLocation", str(tmp_path / f"ck{run}")).trigger(availableNow=True).start())
        query.awaitTermination(180)
        assert not query.isActive and query.exception() is None
        committed_after_each_run.append(kafka.committed(group, topic, 3))  # read at once, no waiting

    assert committed_after_each_run == [{0: 3, 1: 3, 2: 3}] * RUNS


def test_query_stop_keeps_every_signalled_commit_and_nothing_beyond_the_last_batch(spark, kafka, topic, tmp_path):
    group = kafka.unique_name("stop-async")
    batch_ends: list[dict[int, int]] = []  # per completed batch with rows: the next offset of each partition

    def sink(df, _batch_id):
        rows = [(r.partition, r.offset) for r in df.collect()]
        if rows:
            previous = batch_ends[-1] if batch_ends else {}
            batch_ends.append({p: max([o + 1 for q, o in rows if q == p], default=previous.get(p, 0))
                               for p in range(3)})

    query = (source(spark, kafka, topic, group, commitMode="async", maxOffsetsPerTrigger=15).writeStream
             .foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="500 milliseconds").start())
    try:
        kafka.produce_values(topic, 30, partitions=3)
        await_condition("the first 30 rows", lambda: batch_ends and batch_ends[-1] == {0: 10, 1: 10, 2: 10},
                        query=query, timeout=120)
        kafka.produce_values(topic, 30, partitions=3, prefix="more")
        await_condition("30 more rows", lambda: batch_ends[-1] == {0: 20, 1: 20, 2: 20}, query=query, timeout=120)
    finally:
        query.stop()  # right after the last batch: Spark has not signalled its completion yet
    committed = kafka.committed(group, topic, 3)

    # the batch before the last was signalled complete when the last was planned: its commit landed;
    # the last batch may stay uncommitted (a new query from the group reads it again), nothing goes beyond it
    assert len(batch_ends) >= 2
    assert committed in (batch_ends[-2], batch_ends[-1]), (committed, batch_ends)


def committed_metadata(kafka, group, topic, partitions=3) -> list[tuple[int, str]]:
    """(offset, metadata) per partition as a consumer carrying the group id (never joining it) reads them back:
    not the admin client's list_consumer_group_offsets, which can crash the process (see
    KafkaClient.committed_with_metadata)."""
    consumer = kafka.consumer(group)
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
    finally:
        consumer.close()
    return [(tp.offset, tp.metadata) for tp in sorted(found, key=lambda tp: tp.partition)]


def test_commits_carry_metadata_naming_the_application_and_cut_to_stay_under_the_limit(spark, kafka, topic, tmp_path):
    kafka.produce_values(topic, 3, partitions=3)
    group = kafka.unique_name("meta")
    before = int(time.time() * 1000)
    kafkasource.register(spark)  # tells the source's readers this application's id and name
    drain(spark, kafka, topic, group, tmp_path / "ck")

    found = committed_metadata(kafka, group, topic)
    assert [offset for offset, _ in found] == [1, 1, 1]
    assert len({metadata for _, metadata in found}) == 1  # one commit for the three partitions
    who = committer_metadata.parse(found[0][1])
    assert (who.by, who.app, who.app_id, who.version) == (
        "kafkasource", "kafkasource-tests", spark.sparkContext.applicationId, committer_metadata.version())
    assert before <= who.at_ms <= int(time.time() * 1000)

    # an application name that would not fit: cut, so that the commit still lands
    long_group = kafka.unique_name("meta-long")
    long_name = "orders-" + "x" * 6000
    try:
        kafkasource.register(spark,
                             committer_metadata.committer_environment(spark.sparkContext.applicationId, long_name))
        drain(spark, kafka, topic, long_group, tmp_path / "ck-long")
    finally:
        kafkasource.register(spark)
    found = committed_metadata(kafka, long_group, topic)
    assert [offset for offset, _ in found] == [1, 1, 1]
    assert len(found[0][1].encode()) <= committer_metadata.MAX_BYTES
    app = committer_metadata.parse(found[0][1]).app
    assert app.endswith("…") and long_name.startswith(app[:-1]) and len(app) > 800

    # the limit is the broker's: metadata past offset.metadata.max.bytes (4096) is refused
    consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": long_group})
    try:
        with pytest.raises(KafkaException) as refused:
            consumer.commit(offsets=[TopicPartition(topic, 0, 2, metadata="m" * 4097)], asynchronous=False)
    finally:
        consumer.close()
    assert "OFFSET_METADATA_TOO_LARGE" in str(refused.value)
    assert committed_metadata(kafka, long_group, topic, 1)[0][0] == 1  # the refused commit changed nothing


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_processing_time_idle_gap_commits_last_batch_and_never_runs_ahead(spark, kafka, topic, tmp_path, mode):
    group = kafka.unique_name(f"idle-{mode}")
    kafka.produce_values(topic, 30, partitions=3)
    written: list[tuple[int, int]] = []
    violations: list[str] = []
    lock = threading.Lock()

    def sink(df, batch_id):
        # before this batch is written, the group's commits must not be ahead of what the sink already holds
        committed = kafka.committed(group, topic, 3)
        with lock:
            held = {p: max((o for q, o in written if q == p), default=-1) + 1 for p in range(3)}
            for p, offset in committed.items():
                if offset > held[p]:
                    violations.append(f"batch {batch_id}: partition {p} committed {offset}, sink holds < {held[p]}")
            written.extend((r.partition, r.offset) for r in df.collect())

    query = (source(spark, kafka, topic, group, commitMode=mode, maxOffsetsPerTrigger=12).writeStream
             .foreachBatch(sink).option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(processingTime="1 second").start())
    try:
        await_condition("30 rows in the sink", lambda: len(written) == 30, timeout=120)
        # no new data arrives: the last batch is committed at the next trigger (1 s; 10 s allows for a loaded machine)
        await_condition("commit of the last batch",
                        lambda: kafka.committed(group, topic, 3) == {0: 10, 1: 10, 2: 10}, timeout=10)

        kafka.produce_values(topic, 6, partitions=3, prefix="later")
        await_condition("6 more rows", lambda: len(written) == 36, timeout=60)
        await_condition("commit after more data",
                        lambda: kafka.committed(group, topic, 3) == {0: 12, 1: 12, 2: 12}, timeout=10)
    finally:
        query.stop()
    assert kafka.committed(group, topic, 3) == {0: 12, 1: 12, 2: 12}  # after stop: still the last batch's end
    assert violations == []
    assert sorted(written) == [(p, o) for p in range(3) for o in range(12)]


def test_restart_without_checkpoint_resumes_exactly(spark, kafka, topic, tmp_path):
    group = kafka.unique_name("resume")
    kafka.produce_values(topic, 30, partitions=3)
    first = drain(spark, kafka, topic, group, tmp_path / "ck1", maxOffsetsPerTrigger=7)
    kafka.produce_values(topic, 15, partitions=3, prefix="second")

    second = drain(spark, kafka, topic, group, tmp_path / "ck2")  # a new checkpoint: only the group remembers

    assert sorted(first) == [(p, o) for p in range(3) for o in range(10)]
    assert sorted(second) == [(p, o) for p in range(3) for o in range(10, 15)]
    assert kafka.committed(group, topic, 3) == {0: 15, 1: 15, 2: 15}


def test_commit_mode_none_leaves_group_alone(spark, kafka, topic, tmp_path):
    group = kafka.unique_name("seed-only")
    kafka.produce_values(topic, 9, partitions=3)
    kafka.commit(group, {(topic, 0): 1, (topic, 1): 2, (topic, 2): 3})

    rows = drain(spark, kafka, topic, group, tmp_path / "ck", commitMode="none")

    assert sorted(rows) == [(0, 1), (0, 2), (1, 2)]  # from the group's commits; partition 2 was done
    assert kafka.committed(group, topic, 3) == {0: 1, 1: 2, 2: 3}


class ActiveMember:
    """A consumer that subscribe()s under `group` and stays a member until closed."""

    def __init__(self, kafka, topic, group):
        self.consumer = Consumer({"bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
                                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        await_condition("the member to join its group",
                        lambda: self.consumer.poll(0.5) is not None or self.consumer.assignment(), timeout=30)

    def close(self):
        self.consumer.close()


def test_sync_commit_into_group_with_active_members_fails_query(spark, kafka, topic, tmp_path):
    group = kafka.unique_name("in-use")
    kafka.produce_values(topic, 9, partitions=3)
    member = ActiveMember(kafka, topic, group)
    try:
        query = (source(spark, kafka, topic, group, commitMode="sync", commitTimeoutMs=5000).writeStream
                 .format("noop").option("checkpointLocation", str(tmp_path / "ck"))
                 .trigger(availableNow=True).start())
        with pytest.raises(Exception) as failure:
            query.awaitTermination(120)
    finally:
        member.close()
    message = str(failure.value)
    assert f"committing offsets of group {group}" in message
    assert "The group has active members" in message
    assert "Give this query a kafka.group.id of its own" in message
    assert f"{topic}-0" in message


def test_async_commit_into_group_with_active_members_warns_and_goes_on(kafka, topic, caplog):
    group = kafka.unique_name("in-use-async")
    kafka.produce_values(topic, 9, partitions=3)
    member = ActiveMember(kafka, topic, group)
    async_committer = committer(kafka, group, "async")
    try:
        with caplog.at_level(logging.WARNING, logger="kafkasource.commit.committer"):
            async_committer.commit({(topic, 0): 2})  # returns at once
            await_condition("the async commit's answer",
                            lambda: async_committer.poll(0.2) or async_committer.failed_async_commits == 1, timeout=30)
    finally:
        async_committer.close()
        member.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("The group has active members" in w and f"{topic}-0" in w for w in warnings), warnings


def test_async_commits_flush_on_close_and_never_go_backwards(kafka, topic):
    group = kafka.unique_name("async-order")
    kafka.produce_values(topic, 30, partitions=3)
    async_committer = committer(kafka, group, "async")
    for end in range(1, 11):
        async_committer.commit({(topic, 0): end, (topic, 1): end})
    async_committer.commit({(topic, 0): 4, (topic, 1): 4})  # older positions are never sent again
    async_committer.close()  # flushes what is pending

    assert kafka.committed(group, topic, 3) == {0: 10, 1: 10}
    assert async_committer.failed_async_commits == 0


def test_sync_commit_gives_up_after_commit_timeout_with_clear_error(kafka, topic):
    group = kafka.unique_name("unreachable")
    outcomes = OutcomeReceiver()  # what a metrics exporter would count
    sync_committer = OffsetCommitter(group, "sync", 3000, lambda on_commit: Consumer({
        # nothing listens on port 1 of loopback: the coordinator can never be reached
        "bootstrap.servers": "127.0.0.1:1", "group.id": group, "enable.auto.commit": False,
        "socket.timeout.ms": 1000, "log_level": 0, "on_commit": on_commit}),
        OutcomeSender({ENV_ADDRESS: outcomes.address}))
    started = time.monotonic()
    try:
        with pytest.raises(CommitError) as failure:
            sync_committer.commit({(topic, 0): 5})
        elapsed = time.monotonic() - started
    finally:
        # closed within its bound: left to the garbage collector, this client's destruction waited about 45 s (its
        # session timeout) for a coordinator it can never reach, inside whichever later test triggered the collection
        sync_committer.close()
    received = []
    while (outcome := outcomes.receive(timeout=0)) is not None:
        received.append(outcome)
    outcomes.close()
    # the one attempt waited the whole commitTimeoutMs for an answer: no retry, one failure
    assert received == [CommitOutcome(group, "failure", "_TIMED_OUT", 1, "sync")]
    message = str(failure.value)
    assert message.startswith(f"committing offsets of group {group} for {topic}-0 failed")
    assert "(still failing after retrying for 3 s, commitTimeoutMs)" in message
    assert 3 <= elapsed < 15, elapsed  # commitTimeoutMs, and not the client's own wait for a coordinator
