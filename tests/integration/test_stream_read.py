"""The streaming reader against the real broker and real Spark: every record it should read comes back exactly
once, with every column (topic, partition, offset, key, value, timestamp, timestampType, headers) equal
to what the broker acknowledged, whatever the subscription, the start, the cluster's changes mid-stream,
transactions or deleted records.

Each test produces known records and runs spark.readStream.format("kafkasource") into a foreachBatch
sink that collects every row (Trigger.AvailableNow, or processing time where the test changes the
cluster mid-stream, awaiting conditions with bounded polling, never a fixed sleep).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable

import pytest

from kafkasource import KafkaDataSource
from tests.support.kafka_helpers import KafkaHarness, Record, await_condition
from tests.support.query_helpers import (
    LOG_APPEND_TIME,
    Collector,
    available_now_failure,
    await_rows,
    base_options,
    batch,
    expected,
    rows_of,
    run_available_now,
    running_stream,
    source_offsets,
    stream,
)

# explicit record timestamps: an hour ago, within the broker's bounds and far from the topic's retention
# (records stamped years ago are deleted by the retention check the test broker runs every second)
BASE_TS = (int(time.time()) - 3600) * 1000


# -- helpers ------------------------------------------------------------------------------------------

def three_partitions(kafka: KafkaHarness, topic: str, per_partition: int = 4, prefix: str = "v") -> list[Record]:
    """per_partition records in each of the topic's 3 partitions (offsets 0..per_partition-1)."""
    return kafka.produce_values(topic, 3 * per_partition, partitions=3, prefix=prefix)


# -- what to read ---------------------------------------------------------------------------------------

def test_subscribe_two_topics_returns_every_record_once(spark, kafka, tmp_path):
    first = kafka.create_topic(kafka.unique_name("sub-a"))
    second = kafka.create_topic(kafka.unique_name("sub-b"), partitions=2)
    other = kafka.create_topic(kafka.unique_name("sub-other"))
    produced = three_partitions(kafka, first) + kafka.produce_values(second, 5, partitions=2, prefix="b")
    kafka.produce_values(other, 3, partitions=3, prefix="x")

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=f"{first}, {second}", startingOffsets="earliest"))

    assert rows == expected(produced)


def test_subscribe_pattern_matches_anywhere_in_the_name_and_never_internal_topics(spark, kafka, tmp_path):
    marker = uuid.uuid4().hex[:8]
    inside = kafka.create_topic(f"pre-{marker}-one")
    at_start = kafka.create_topic(f"{marker}-two", partitions=1)
    not_matching = kafka.create_topic(f"pre-{marker[::-1]}-x")
    produced = three_partitions(kafka, inside, per_partition=2) + kafka.produce_values(at_start, 3, prefix="two")
    kafka.produce_values(not_matching, 3, partitions=3)
    kafka.commit(kafka.unique_name("pattern-group"), {(inside, 0): 1})  # __consumer_offsets exists and holds records
    assert "__consumer_offsets" in kafka.admin.list_topics(timeout=10).topics

    # find semantics: the pattern matches in the middle of "pre-<marker>-one", not only at the start;
    # the alternative that names an internal topic matches nothing
    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribePattern=f"{marker}-(one|two)|^__consumer_offsets$", startingOffsets="earliest"))

    assert rows == expected(produced)


def test_assign_reads_only_the_given_partitions(spark, kafka, topic, tmp_path):
    produced = three_partitions(kafka, topic, per_partition=3)

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, assign=json.dumps({topic: [0, 2]}), startingOffsets="earliest"))

    assert rows == expected([r for r in produced if r.partition in (0, 2)])
    assert len(rows) == 6


# -- where to start -------------------------------------------------------------------------------------

def _partial_commits(kafka: KafkaHarness, topic: str) -> tuple[str, list[Record]]:
    """12 records (offsets 0..3 in each of 3 partitions); a new group that committed 1 on p0 and 3 on p1,
    nothing on p2."""
    produced = three_partitions(kafka, topic)
    group = kafka.unique_name("partial-group")
    kafka.commit(group, {(topic, 0): 1, (topic, 1): 3})
    return group, produced


@pytest.mark.parametrize("reset", ["earliest", "latest", "default"])
def test_committed_offsets_with_reset_for_partitions_without_commits(spark, kafka, topic, tmp_path, reset):
    group, produced = _partial_commits(kafka, topic)
    options = base_options(kafka, subscribe=topic, **{"kafka.group.id": group, "startingOffsets": "committed"})
    if reset != "default":
        options["kafka.auto.offset.reset"] = reset

    rows = run_available_now(spark, tmp_path / "cp", options)

    # p0 from its commit 1, p1 from its commit 3; p2 has none: earliest -> 0, latest (Kafka's default) -> its end
    start = {0: 1, 1: 3, 2: 0 if reset == "earliest" else 4}
    assert rows == expected([r for r in produced if r.offset >= start[r.partition]])


def test_committed_is_the_default_start_with_a_group_id(spark, kafka, topic, tmp_path):
    group, produced = _partial_commits(kafka, topic)

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"}))

    start = {0: 1, 1: 3, 2: 0}
    assert rows == expected([r for r in produced if r.offset >= start[r.partition]])


def test_committed_with_reset_none_fails_naming_partitions_without_commits(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("reset-none"), partitions=4)
    kafka.produce_values(topic, 8, partitions=4)
    group = kafka.unique_name("partial-group")
    kafka.commit(group, {(topic, 0): 1, (topic, 2): 1})

    message = available_now_failure(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, **{"kafka.group.id": group, "startingOffsets": "committed",
                                   "kafka.auto.offset.reset": "none"}))

    assert f"no committed offset for {topic}-1, {topic}-3" in message
    assert "kafka.auto.offset.reset=none" in message
    assert f"{topic}-0" not in message and f"{topic}-2" not in message
    assert kafka.committed(group, topic, 4) == {0: 1, 2: 1}  # nothing read, nothing committed


def test_committed_offset_below_log_start_follows_reset(spark, kafka, topic, tmp_path):
    group, produced = _partial_commits(kafka, topic)
    kafka.delete_records_before(topic, 0, 2)  # the commit at 1 on p0 now lies below the log start

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, **{"kafka.group.id": group, "kafka.auto.offset.reset": "earliest"}))

    start = {0: 2, 1: 3, 2: 0}
    assert rows == expected([r for r in produced if r.offset >= start[r.partition]])


def test_earliest_reads_from_the_log_start(spark, kafka, topic, tmp_path):
    produced = three_partitions(kafka, topic)
    kafka.delete_records_before(topic, 1, 2)

    rows = run_available_now(spark, tmp_path / "cp", base_options(kafka, subscribe=topic, startingOffsets="earliest"))

    assert rows == expected([r for r in produced if not (r.partition == 1 and r.offset < 2)])


def test_json_offsets_with_earliest_and_latest_markers(spark, kafka, topic, tmp_path):
    produced = three_partitions(kafka, topic)

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, startingOffsets=json.dumps({topic: {"0": -2, "1": 2, "2": -1}})))

    start = {0: 0, 1: 2, 2: 4}
    assert rows == expected([r for r in produced if r.offset >= start[r.partition]])


def _timestamped(kafka: KafkaHarness, topic: str) -> list[Record]:
    """4 records per partition with CreateTime BASE_TS + 1000 * offset (+ partition, to tell them apart)."""
    return kafka.produce(topic, [Record(p, f"k{p}-{i}".encode(), f"v{p}-{i}".encode(),
                                        timestamp_ms=BASE_TS + 1000 * i + p)
                                 for i in range(4) for p in range(3)])


def test_starting_timestamp_starts_at_the_first_record_that_new(spark, kafka, topic, tmp_path):
    produced = _timestamped(kafka, topic)
    assert [r.timestamp_ms for r in produced if r.partition == 1] == [BASE_TS + 1, BASE_TS + 1001,
                                                                       BASE_TS + 2001, BASE_TS + 3001]

    # BASE_TS + 1001: p0's record at offset 1 (BASE_TS + 1000) is older, p1's (BASE_TS + 1001) is not
    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, startingTimestamp=str(BASE_TS + 1001)))

    start = {0: 2, 1: 1, 2: 1}
    assert rows == expected([r for r in produced if r.offset >= start[r.partition]])


def test_starting_offsets_by_timestamp_per_partition(spark, kafka, topic, tmp_path):
    produced = _timestamped(kafka, topic)

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, startingOffsetsByTimestamp=json.dumps(
            # p0: exactly offset 3's timestamp; p1: before everything; p2: after everything -> the log end
            {topic: {"0": BASE_TS + 3000, "1": 0, "2": BASE_TS + 60_000}})))

    start = {0: 3, 1: 0, 2: 4}
    assert rows == expected([r for r in produced if r.offset >= start[r.partition]])


def test_latest_reads_only_records_produced_after_the_start(spark, kafka, topic, tmp_path):
    three_partitions(kafka, topic, prefix="old")

    collector = Collector()
    # startingOffsets=latest is the default without a group id
    with running_stream(spark, tmp_path / "cp", base_options(kafka, subscribe=topic), collector) as query:
        # the start is fixed (and in the checkpoint) once the first trigger has reported its progress
        await_condition("the first trigger", lambda: query.recentProgress, query)
        new = kafka.produce_values(topic, 6, partitions=3, prefix="new")
        rows = await_rows(collector, 6, query)

    assert rows == expected(new)
    assert {r.offset for r in new} == {4, 5}


# -- the cluster changes mid-stream --------------------------------------------------------------------

def await_first_batch_with(query, condition: Callable[[dict], bool]) -> tuple[dict, dict]:
    """(start, end) offsets of the first batch whose end offsets satisfy `condition` (its progress is
    reported a moment after its rows reach the sink, so wait for it)."""
    def find():
        return next(((start, end) for start, end in source_offsets(query) if condition(end)), None)

    return await_condition("the batch's progress", find, query)


def test_new_topic_matching_the_pattern_joins_at_its_earliest_offset(spark, kafka, tmp_path):
    marker = uuid.uuid4().hex[:8]
    first = kafka.create_topic(f"grow-{marker}-a", partitions=2)
    before = kafka.produce_values(first, 4, partitions=2, prefix="a")
    collector = Collector(hold=True)

    with running_stream(spark, tmp_path / "cp", base_options(
            kafka, subscribePattern=f"grow-{marker}", startingOffsets="earliest"), collector) as query:
        await_condition("the first batch to be held", collector.holding.is_set, query)
        # the query sits inside its first batch: the new topic and its records exist before it next plans
        second = kafka.create_topic(f"grow-{marker}-b", partitions=2)
        joined = kafka.produce_values(second, 6, partitions=2, prefix="b")
        collector.release()
        rows = await_rows(collector, 10, query)
        start, end = await_first_batch_with(query, lambda end: second in end)

    assert rows == expected(before + joined)
    # the topic joined in one batch holding all of its records: it was read from offset 0, not from its end
    assert second not in start and end[second] == {"0": 3, "1": 3}


def test_new_partition_of_a_subscribed_topic_joins_at_its_earliest_offset(spark, kafka, topic, tmp_path):
    before = three_partitions(kafka, topic, per_partition=2)
    collector = Collector(hold=True)

    with running_stream(spark, tmp_path / "cp", base_options(kafka, subscribe=topic, startingOffsets="earliest"),
                        collector) as query:
        await_condition("the first batch to be held", collector.holding.is_set, query)
        kafka.add_partitions(topic, 5)
        await_condition("5 partitions in the metadata",
                        lambda: len(kafka.admin.list_topics(topic, timeout=10).topics[topic].partitions) == 5)
        joined = kafka.produce(topic, [Record(p, f"n{p}-{i}".encode(), f"new{p}-{i}".encode())
                                for i in range(3) for p in (3, 4)])
        collector.release()
        rows = await_rows(collector, 12, query)
        start, end = await_first_batch_with(query, lambda end: "3" in end[topic])

    assert rows == expected(before + joined)
    assert "3" not in start.get(topic, {}) and end[topic] == {"0": 2, "1": 2, "2": 2, "3": 3, "4": 3}


# -- record contents ---------------------------------------------------------------------------------

def test_headers_null_keys_and_values_and_binary_bytes(spark, kafka, topic, tmp_path, read_path):
    every_byte = bytes(range(256))
    produced = kafka.produce(topic, [
        Record(0, b"k-with-headers", b"v", headers=(("h1", b"a"), ("empty", b""), ("none", None), ("h1", b"again"))),
        Record(0, b"k-no-headers", b"v2"),
        Record(1, None, b"null key"),
        Record(1, b"null value", None),
        Record(1, None, None, headers=(("only", b"\x00\xff"),)),
        Record(2, every_byte[::-1], every_byte, headers=(("bin", every_byte),)),
        Record(2, b"", b""),
    ])

    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, startingOffsets="earliest", includeHeaders="true", readPath=read_path))

    assert rows == expected(produced, headers=True)
    by_key = {row[3]: row for row in rows}
    assert by_key[b"k-with-headers"][7] == (("h1", b"a"), ("empty", b""), ("none", None), ("h1", b"again"))
    assert by_key[b"k-no-headers"][7] is None
    assert [row[3:5] for row in rows if row[1] == 1] == [(None, b"null key"), (b"null value", None), (None, None)]
    assert by_key[every_byte[::-1]][4] == every_byte and by_key[b""][4] == b""


def test_schema_matches_the_built_in_source(spark, kafka, topic):
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    # Spark's KafkaRecordToRowConverter: every field nullable, header values nullable
    built_in = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                           StructField("topic", StringType()), StructField("partition", IntegerType()),
                           StructField("offset", LongType()), StructField("timestamp", TimestampType()),
                           StructField("timestampType", IntegerType())])
    headers = StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                           StructField("value", BinaryType())])))
    options = base_options(kafka, subscribe=topic)

    assert stream(spark, options).schema == built_in
    assert stream(spark, {**options, "includeHeaders": "true"}).schema == StructType(built_in.fields + [headers])


def test_log_append_time_topic(spark, kafka, tmp_path, read_path):
    topic = kafka.create_topic(kafka.unique_name("append-time"), partitions=1,
                               config={"message.timestamp.type": "LogAppendTime"})
    produced = kafka.produce(topic, [Record(0, b"k", f"v{i}".encode(), timestamp_ms=BASE_TS) for i in range(3)])
    stamps = {r.offset: r.timestamp_ms for r in kafka.read_all(topic, 1, 3)}

    rows = run_available_now(spark, tmp_path / "cp", base_options(kafka, subscribe=topic, startingOffsets="earliest",
                                                                  readPath=read_path))

    assert all(stamps[o] > BASE_TS for o in stamps)  # the broker's clock replaced the producer's timestamp
    assert rows == expected([Record(r.partition, r.key, r.value, (), stamps[r.offset], r.topic, r.offset)
                             for r in produced], timestamp_type=LOG_APPEND_TIME)


# -- transactions ------------------------------------------------------------------------------------

def _produce_transactions(kafka: KafkaHarness, topic: str) -> tuple[list[Record], list[Record]]:
    """Three transactions: committed, aborted, committed. Returns (committed records, aborted records).

    p0 holds records of all three (and a control marker after each), p1 of the first two, p2 only aborted
    records and an abort marker: read_committed finds no record at all in p2's range.
    """
    producer = kafka.producer(**{"transactional.id": kafka.unique_name("txn")})
    producer.init_transactions(30)
    committed: list[Record] = []
    aborted: list[Record] = []

    def transaction(records: list[Record], commit: bool) -> None:
        delivered = []
        producer.begin_transaction()
        for record in records:
            producer.produce(topic, partition=record.partition, key=record.key, value=record.value,
                             on_delivery=lambda err, msg: delivered.append((err, msg)))
        assert producer.flush(30) == 0
        assert all(err is None for err, _ in delivered), delivered
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
        out = committed if commit else aborted
        out.extend(Record(m.partition(), m.key(), m.value(), (), m.timestamp()[1], m.topic(), m.offset())
                   for _, m in delivered)

    transaction([Record(0, f"c1-{i}".encode(), b"committed") for i in range(3)] + [Record(1, b"c1-p1", b"committed")],
                commit=True)
    transaction([Record(p, f"a-{p}-{i}".encode(), b"aborted") for p in range(3) for i in range(2)], commit=False)
    transaction([Record(0, f"c2-{i}".encode(), b"committed") for i in range(2)], commit=True)
    return committed, aborted


@pytest.mark.parametrize("packed", [None, "1000"], ids=["task-per-partition", "packed"])
@pytest.mark.parametrize("isolation", ["read_committed", "read_uncommitted"])
def test_transactional_records_by_isolation_level(spark, kafka, topic, tmp_path, isolation, packed, read_path):
    committed, aborted = _produce_transactions(kafka, topic)
    # markers take offsets too: p0 = 3 committed, marker, 2 aborted, marker, 2 committed, marker;
    # p1 = 1 committed, marker, 2 aborted, marker; p2 = 2 aborted, marker
    assert sorted((r.partition, r.offset) for r in committed) == [(0, 0), (0, 1), (0, 2), (0, 7), (0, 8), (1, 0)]
    # the coordinator writes the last markers just after commit_transaction returns: wait for them
    await_condition("the transaction markers", lambda: kafka.latest(topic, 3) == {0: 10, 1: 5, 2: 3})

    # a reader that waited for an offset holding no record (a marker, an aborted record under
    # read_committed) would fail the query with "stalled" after kafkaConsumer.pollTimeoutMs
    rows = run_available_now(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, startingOffsets="earliest",
        **{"kafka.isolation.level": isolation, "kafkaConsumer.pollTimeoutMs": "10000", "readPath": read_path},
        **({"packRecordsPerTask": packed} if packed else {})))

    assert rows == expected(committed if isolation == "read_committed" else committed + aborted)


# -- data loss --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_records_deleted_below_the_checkpointed_position(spark, kafka, topic, tmp_path, fail_on_data_loss, read_path):
    first = three_partitions(kafka, topic, prefix="first")
    options = base_options(kafka, subscribe=topic, failOnDataLoss=fail_on_data_loss, readPath=read_path,
                           startingOffsets=json.dumps({topic: {"0": 1, "1": -2, "2": 3}}))
    checkpoint = tmp_path / "cp"
    assert run_available_now(spark, checkpoint, options) == expected(
        [r for r in first if r.offset >= {0: 1, 1: 0, 2: 3}[r.partition]])

    # the checkpoint resumes at 4 everywhere; records 4 and 5 of p0 go before the query runs again
    second = three_partitions(kafka, topic, prefix="second")
    kafka.delete_records_before(topic, 0, 6)

    if fail_on_data_loss == "true":
        message = available_now_failure(spark, checkpoint, options)
        assert f"records 4..5 of {topic}-0 are gone" in message
        assert "failOnDataLoss=false" in message
    else:
        rows = run_available_now(spark, checkpoint, options)
        assert rows == expected([r for r in second if not (r.partition == 0 and r.offset < 6)])


# -- batch reads -------------------------------------------------------------------------------------

def test_batch_read_of_an_explicit_offset_range(spark, kafka, topic, read_path):
    produced = three_partitions(kafka, topic, per_partition=5)

    df = batch(spark, base_options(kafka, subscribe=topic, readPath=read_path,
                                   startingOffsets=json.dumps({topic: {"0": 1, "1": -2, "2": 4}}),
                                   endingOffsets=json.dumps({topic: {"0": 3, "1": -1, "2": 4}})))

    wanted = {0: range(1, 3), 1: range(0, 5), 2: range(4, 4)}
    assert rows_of(df) == expected([r for r in produced if r.offset in wanted[r.partition]])


def test_small_ranges_packed_into_tasks_read_every_record_once(spark, kafka, tmp_path):
    """packRecordsPerTask=5 over 12 partitions of 1 or 2 records plus one of 40: four packed tasks read their
    ranges one after another with one consumer, the large range keeps a task of its own."""
    topic = kafka.create_topic(kafka.unique_name("packed"), partitions=13)
    produced = kafka.produce(topic, [Record(p, f"k{p}-{i}".encode(), f"v{p}-{i}".encode())
                              for p in range(12) for i in range(1 + p % 2)]
                             + [Record(12, b"big", f"b{i}".encode()) for i in range(40)])
    options = base_options(kafka, subscribe=topic, startingOffsets="earliest", packRecordsPerTask="5")

    stream_rows = run_available_now(spark, tmp_path / "cp", options)
    batch_rows = rows_of(batch(spark, options))

    assert stream_rows == batch_rows == expected(produced)
    tasks = KafkaDataSource(options).reader(None).partitions()
    assert sorted(sum(r.size for r in task.ranges) for task in tasks) == [4, 4, 5, 5, 40]
