"""What must hold on every pyspark the package supports (4.0 to 4.3): the stream reader's batches, rate limit and
group commits, Trigger.AvailableNow over two runs, and what differs where Spark has no admission control for
Python stream readers (pyspark 4.0 and 4.1: kafkasource/runtime/spark_api.py). The main suite runs these on its
pyspark; scripts/test.sh runs them again, with a few tests of other modules, on the newest 4.0 and 4.1
(scripts/compat.py). Real broker, real Spark."""

from __future__ import annotations

import pyspark
import pytest

import kafkasource
from kafkasource.commit.metadata import ENV_APP_ID
from kafkasource.runtime.pyspark_check import version_tuple
from kafkasource.runtime.spark_api import ADMISSION_CONTROL
from tests.support.checkpoints import batch_end, forget_last_commit
from tests.support.kafka_helpers import Record, await_condition
from tests.support.query_helpers import (
    AWAIT_TIMEOUT_S,
    Collector,
    base_options,
    positions,
    run_to_end,
    running_stream,
)
from tests.support.sink_helpers import DIGEST, PARTITIONS, batch_markers, copy_to_end, read_topic, without_offsets


@pytest.mark.parametrize("commit_mode", ["sync", "async"])
def test_a_rate_limited_stream_commits_only_what_completed_batches_read(spark, kafka, tmp_path, commit_mode):
    topic = kafka.create_topic(kafka.unique_name("compat-rate"), partitions=1)
    group = kafka.unique_name("compat-rate-group")
    kafka.produce_values(topic, 350)
    collector = Collector(hold=True)
    options = base_options(kafka, subscribe=topic, **{"kafka.group.id": group}, startingOffsets="earliest",
                           maxOffsetsPerTrigger="100", commitMode=commit_mode)

    with running_stream(spark, tmp_path / "ck", options, collector) as query:
        await_condition("the first batch held", collector.holding.is_set, query, timeout=AWAIT_TIMEOUT_S)
        # the first batch has not completed: nothing of it may be committed yet
        assert kafka.committed(group, topic, 1) == {}
        collector.release()
        await_condition("every record", lambda: len(collector.rows) == 350, query, timeout=AWAIT_TIMEOUT_S)
        # the last batch is committed at the next trigger, once Spark has recorded it complete
        await_condition("the group's commit of the last batch",
                        lambda: kafka.committed(group, topic, 1) == {0: 350}, query, timeout=AWAIT_TIMEOUT_S)

    assert [len(rows) for rows in collector.batches] == [100, 100, 100, 50]
    assert positions(collector.rows) == [(0, o) for o in range(350)]


def test_available_now_twice_reads_each_record_once_and_commits_the_group(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("compat-now"), partitions=2)
    group = kafka.unique_name("compat-now-group")
    kafka.produce_values(topic, 300, partitions=2)
    options = base_options(kafka, subscribe=topic, **{"kafka.group.id": group}, startingOffsets="earliest")

    _query, first = run_to_end(spark, tmp_path / "ck", options)
    committed_after_first = kafka.committed(group, topic, 2)
    kafka.produce_values(topic, 200, partitions=2, prefix="second")
    _query, second = run_to_end(spark, tmp_path / "ck", options)

    # without a rate limit each run reads the whole backlog in one batch, on every version
    assert [len(rows) for rows in first.batches] == [300]
    assert [len(rows) for rows in second.batches] == [200]
    assert positions(first.rows) + positions(second.rows) == (
        [(p, o) for p in range(2) for o in range(150)] + [(p, o) for p in range(2) for o in range(150, 250)])
    if ADMISSION_CONTROL:
        # Spark asks the reader once more after the run's last batch: its end is committed before the run ends
        assert committed_after_first == {0: 150, 1: 150}
        assert kafka.committed(group, topic, 2) == {0: 250, 1: 250}
    else:
        # Spark 4.0/4.1 never call the reader again after an AvailableNow run's one batch: that batch's end is
        # committed at the next run's start (the jobs commit it themselves when the run ends)
        assert committed_after_first == {}
        assert kafka.committed(group, topic, 2) == {0: 150, 1: 150}


def test_a_rate_limited_available_now_run(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("compat-now-limited"), partitions=1)
    kafka.produce_values(topic, 250)
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="100")

    _query, collector = run_to_end(spark, tmp_path / "ck", options)

    if ADMISSION_CONTROL:  # batches of at most 100 up to the ends fixed at the start
        assert [len(rows) for rows in collector.batches] == [100, 100, 50]
    else:  # Spark 4.0/4.1 run one batch, as the limit allows; the next run goes on from there
        assert [len(rows) for rows in collector.batches] == [100]
        _query, more = run_to_end(spark, tmp_path / "ck", options)
        assert positions(more.rows) == [(0, o) for o in range(100, 200)]


def test_a_replayed_stream_batch_is_written_once_under_exactly_once(spark, kafka, tmp_path):
    source = kafka.create_topic(kafka.unique_name("compat-eos-in"), PARTITIONS)
    produced = kafka.produce(source, [Record(i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode()) for i in range(30)])
    sink = kafka.create_topic(kafka.unique_name("compat-eos-out"), PARTITIONS)
    prefix = kafka.unique_name("compat-eos")
    options = {"topic": sink, "deliveryGuarantee": "exactly-once", "transactionalIdPrefix": prefix}
    checkpoint = tmp_path / "ck"

    # batches of at most 12 records under AvailableNow: three on 4.2+, one on 4.0/4.1 (which run one batch)
    first = copy_to_end(spark, kafka, source, checkpoint, options)
    replayed = forget_last_commit(checkpoint)  # as if the driver died after the tasks wrote, before Spark recorded it
    again = copy_to_end(spark, kafka, source, checkpoint, options)

    assert again.id == first.id and replayed == (2 if ADMISSION_CONTROL else 0)
    end = batch_end(checkpoint, source, replayed)
    copied = sorted((r.partition, r.key, r.value, ()) for r in produced if r.offset < end[r.partition])
    assert sorted(without_offsets(read_topic(kafka, sink, PARTITIONS, read_committed=True))) == copied
    start = batch_end(checkpoint, source, replayed - 1)
    assert batch_markers(kafka, prefix, sink, PARTITIONS) == [(replayed + 1, {
        "kind": "kafkasource-sink-marker", "queryId": again.id, "batchId": replayed, "partition": task,
        "records": end[task] - start.get(task, 0), "digest": DIGEST}) for task in range(PARTITIONS)]


def test_register_works_on_every_version_and_names_the_application_where_spark_lets_it(spark):
    kafkasource.register(spark)
    kafkasource.register(spark)  # twice: a job may call it after a library did

    manager = spark._jsparkSession.sessionState().dataSourceManager()
    environment = dict(manager.lookupDataSource("kafkasource").dataSourceCls().envVars())
    # pyspark 4.0 keeps the registration Spark made at startup (it refuses to replace one), without the environment
    assert (ENV_APP_ID in environment) == (version_tuple(pyspark.__version__) >= (4, 1))
