"""Logs whose offsets do not hold one record each, against the real broker: a compacted topic (offsets the log
cleaner removed), records deleted ahead of a read in progress, and a transaction left open under read_committed.
Every test names the exact offsets it must get back and the exact text of what is reported.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import pyarrow as pa
import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafkasource import KafkaDataSource
from kafkasource.cluster.client import KafkaClient
from kafkasource.errors import DataLossError
from kafkasource.options import parse_options
from kafkasource.planning.ranges import OffsetRange
from kafkasource.reading import settings as read_settings
from kafkasource.reading.consumers import ConsumerPool, FetchConfig
from kafkasource.reading.task_reader import read_ranges
from kafkasource.runtime.spark_api import ReadAllAvailable
from kafkasource.stream import KafkaStreamReader
from tests.support.fakes import FakeClock
from tests.support.kafka_helpers import KafkaHarness, Record, await_condition
from tests.support.query_helpers import (
    AWAIT_TIMEOUT_S,
    QUERY_TIMEOUT_S,
    Collector,
    base_options,
    expected,
    rows_of,
    source_offsets,
    start_query,
)

# -- a compacted topic ------------------------------------------------------------------------------

# the keys produced to each partition, in order; compaction keeps the last record of each key
COMPACTED_KEYS = {0: "a b a c b d c e f f", 1: "x y y y y y z"}
# what survives: those last records, and one record per partition produced after them that rolls the segment
# (it lies in the active segment, which the cleaner never touches); gaps: t-0 0..1, 3, 8; t-1 1..4
SURVIVORS = {0: [2, 4, 5, 6, 7, 9, 10], 1: [0, 5, 6, 7]}
LOG_ENDS = {0: 11, 1: 8}
STALL_MS = "10000"  # kafkaConsumer.pollTimeoutMs: a read waiting for a compacted offset would fail after this


def offsets_in_log(kafka: KafkaHarness, topic: str, ends: dict[int, int]) -> dict[int, list[int]]:
    """Every offset a plain confluent-kafka consumer reads from each partition's start up to its end."""
    consumer = kafka.consumer()
    try:
        consumer.assign([KafkaTopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        seen: dict[int, list[int]] = {p: [] for p in ends}
        deadline = time.monotonic() + 30
        while any(not seen[p] or seen[p][-1] < ends[p] - 1 for p in ends):
            for message in consumer.consume(100, timeout=0.5):
                if message.error():
                    raise KafkaException(message.error())
                seen[message.partition()].append(message.offset())
            if time.monotonic() > deadline:
                raise AssertionError(f"read {seen} of {topic}, not up to {ends}")
        return seen
    finally:
        consumer.close()


@pytest.fixture(scope="module")
def compacted(kafka) -> tuple[str, list[Record]]:
    """A 2-partition compacted topic, once the log cleaner has removed what it can; its surviving records."""
    topic = kafka.create_topic(kafka.unique_name("compacted"), partitions=2, config={
        "cleanup.policy": "compact", "segment.ms": "1000", "min.cleanable.dirty.ratio": "0.01"})
    now = int(time.time() * 1000)
    produced = kafka.produce(topic, [Record(p, key.encode(), f"{key}{i}".encode(), timestamp_ms=now)
                                     for p, keys in COMPACTED_KEYS.items() for i, key in enumerate(keys.split())])
    # a segment rolls when a record's timestamp is segment.ms past the segment's first: every record above now lies
    # in a closed segment, which the cleaner compacts (the broker looks for dirty logs every second: dev/broker.py)
    produced += kafka.produce(topic, [Record(p, b"roll", b"roll", timestamp_ms=now + 10_000) for p in COMPACTED_KEYS])
    assert {p: [r.offset for r in produced if r.partition == p][-1] + 1 for p in COMPACTED_KEYS} == LOG_ENDS
    await_condition("the log cleaner to compact the topic",
                    lambda: offsets_in_log(kafka, topic, LOG_ENDS) == SURVIVORS, timeout=120)
    return topic, [r for r in produced if r.offset in SURVIVORS[r.partition]]


def batch_read(spark, options: dict[str, str]):
    return spark.read.format("kafkasource").options(**options).load()


@pytest.mark.parametrize("packed", [None, "1000"], ids=["task-per-partition", "packed"])
def test_a_batch_read_of_a_compacted_topic_returns_the_survivors_and_ends_exactly_inside_a_gap(
        spark, kafka, compacted, read_path, packed):
    topic, survivors = compacted
    options = base_options(kafka, subscribe=topic, readPath=read_path, **{"kafkaConsumer.pollTimeoutMs": STALL_MS},
                           **({"packRecordsPerTask": packed} if packed else {}))
    # t-0 from 1 to 8, both compacted away: 2 and 4..7; t-1 from 1 to 4, wholly inside its gap: nothing
    inside_gaps = {**options, "startingOffsets": json.dumps({topic: {"0": 1, "1": 1}}),
                   "endingOffsets": json.dumps({topic: {"0": 8, "1": 4}})}

    assert rows_of(batch_read(spark, options)) == expected(survivors)
    assert rows_of(batch_read(spark, inside_gaps)) == expected(
        [r for r in survivors if r.partition == 0 and r.offset in (2, 4, 5, 6, 7)])
    tasks = KafkaDataSource(options).reader(None).partitions()
    assert sorted(len(task.ranges) for task in tasks) == ([2] if packed else [1, 1])


def test_a_stream_over_a_compacted_topic_reads_each_survivor_once_in_batches_that_end_inside_gaps(
        spark, kafka, compacted, tmp_path, read_path):
    topic, survivors = compacted
    group = kafka.unique_name("compacted-group")
    collector = Collector()
    query = start_query(spark, tmp_path / "cp", base_options(
        kafka, subscribe=topic, startingOffsets="earliest", maxOffsetsPerTrigger="4", readPath=read_path,
        **{"kafka.group.id": group, "kafkaConsumer.pollTimeoutMs": STALL_MS}), collector)
    try:
        assert query.awaitTermination(QUERY_TIMEOUT_S), f"AvailableNow query did not finish in {QUERY_TIMEOUT_S} s"
        assert query.exception() is None
        ends = [{int(p): o for p, o in end[topic].items()} for _, end in source_offsets(query)]
    finally:
        query.stop()

    assert collector.rows == expected(survivors)
    # 4 offsets a batch, shared by backlog: ranges whose last offset the cleaner removed (t-0 up to 1, 3 and 8;
    # t-1 up to 1, 3 and 4), two of them holding no record at all (t-0 0..1, t-1 2..3)
    assert ends == [{0: 2, 1: 2}, {0: 4, 1: 4}, {0: 6, 1: 6}, {0: 9, 1: 7}, {0: 11, 1: 8}]
    assert kafka.committed(group, topic, 2) == LOG_ENDS


# -- records deleted while a read is in progress ---------------------------------------------------------

RECORDS, DELETED_BEFORE = 1000, 500


def produce_in_batches_of_ten(kafka: KafkaHarness, topic: str) -> None:
    """Records 0..999 of 1,000 B (each byte the offset mod 256) in producer batches of exactly 10 records."""
    producer = kafka.producer(**{"batch.num.messages": 10})
    for first in range(0, RECORDS, 10):
        for offset in range(first, first + 10):
            producer.produce(topic, partition=0, value=bytes([offset % 256]) * 1000)
        assert producer.flush(30) == 0


def offsets_and_values(batches) -> tuple[list[int], list[bytes]]:
    table = pa.Table.from_batches(list(batches))
    return table.column("offset").to_pylist(), table.column("value").to_pylist()


@pytest.fixture
def pool():
    """A consumer pool of the test's own, whose idle consumers are closed at its end (while the broker runs)."""
    consumers = ConsumerPool()
    yield consumers
    for entries in consumers._idle.values():
        for consumer, _ in entries:
            consumer.close()


@pytest.mark.parametrize("fail_on_data_loss", [True, False], ids=["failOnDataLoss=true", "failOnDataLoss=false"])
def test_records_deleted_ahead_of_a_read_in_progress(kafka, read_path, fail_on_data_loss, pool, monkeypatch,
                                                     caplog):
    """An executor's read of 0..999 hands out its first batch (0..94), then records below 500 are deleted. The
    consumer fetches one producer batch of 10 records at a time, and the next only once its queue is empty: having
    handed out 0..94 it holds 95..99 and has fetched nothing beyond, so exactly 100..499 are lost to it."""
    topic = kafka.create_topic(kafka.unique_name("deleted-mid-read"), partitions=1)
    produce_in_batches_of_ten(kafka, topic)
    monkeypatch.setattr(read_settings, "BATCH_ROWS", 95)
    monkeypatch.setattr(read_settings, "CONSUME_CHUNK", 5)
    one_batch_at_a_time = {"bootstrap.servers": kafka.bootstrap_servers, "max.partition.fetch.bytes": 1,
                           "fetch.max.bytes": 1000, "message.max.bytes": 1000, "queued.min.messages": 1,
                           "queued.max.messages.kbytes": 1}
    config = FetchConfig(one_batch_at_a_time, include_headers=False, fail_on_data_loss=fail_on_data_loss,
                         poll_timeout_ms=10_000, read_path=read_path)
    batches = read_ranges((OffsetRange(topic, 0, 0, RECORDS),), config, pool)

    assert next(batches).column("offset").to_pylist() == list(range(95))
    kafka.delete_records_before(topic, 0, DELETED_BEFORE)
    lost = (f"records 100..499 of {topic}-0 are gone (400 records): the log now starts at 500 (retention or deleted "
            "records)")

    if fail_on_data_loss:
        with pytest.raises(DataLossError) as raised:
            list(batches)
        assert str(raised.value) == (f"{lost}. Some data may have been lost. If this is expected, set "
                                     "failOnDataLoss=false to skip what is gone and go on")
    else:
        with caplog.at_level(logging.WARNING, logger="kafkasource.planning.data_loss"):
            offsets, values = offsets_and_values(batches)
        assert offsets == list(range(95, 100)) + list(range(DELETED_BEFORE, RECORDS))
        assert values == [bytes([offset % 256]) * 1000 for offset in offsets]
        assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
            f"{lost} (failOnDataLoss=false: skipping them)"]


# -- a transaction left open under read_committed ------------------------------------------------------

class CountingCollector(Collector):
    """A Collector that also counts the micro-batches Spark ran."""

    def __init__(self):
        super().__init__()
        self._calls = 0
        self._count_lock = threading.Lock()

    def __call__(self, batch_df, batch_id: int) -> None:
        super().__call__(batch_df, batch_id)
        with self._count_lock:
            self._calls += 1

    @property
    def calls(self) -> int:
        """How many micro-batches Spark ran, with rows or without."""
        with self._count_lock:
            return self._calls


def held_back_warnings(options: dict[str, str], caplog) -> list[str]:
    """What the stream reader's planning warns, in this process, when a minute passes between two triggers."""
    clock = FakeClock()
    stream = KafkaStreamReader(parse_options(options), clock=clock)
    try:
        start = stream.initialOffset()
        end = stream.latestOffset(start, ReadAllAvailable())
        clock.now = 60.0
        with caplog.at_level(logging.WARNING, logger="kafkasource.planning.held_back"):
            stream.latestOffset(end, ReadAllAvailable())
    finally:
        stream.stop()
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


# the query's kafkaConsumer.pollTimeoutMs: a read stalled on the open transaction would fail the query well within
# the time it is watched waiting
HOLD_POLL_TIMEOUT_MS = 3000
HOLD_S = 3 * HOLD_POLL_TIMEOUT_MS / 1000


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_a_stream_under_read_committed_reads_below_an_open_transaction_waits_then_reads_the_rest(
        spark, kafka, tmp_path, outcome, caplog):
    """The query reads every record below the last stable offset, then waits without failing and without running
    empty batches; its planning, run here with a clock a minute on, names the partition held back; once the
    transaction ends it reads the rest."""
    topic = kafka.create_topic(kafka.unique_name("open-txn"), partitions=2)
    before = kafka.produce(topic, [Record(p, f"b{p}-{i}".encode(), b"before") for p in (0, 1) for i in range(3)])
    producer = kafka.producer(**{"transactional.id": kafka.unique_name("open-txn"),
                                 "transaction.timeout.ms": 600_000})  # the broker must not abort it meanwhile
    producer.init_transactions(30)
    producer.begin_transaction()
    delivered = []
    for i in range(2):
        producer.produce(topic, partition=0, key=f"t-{i}".encode(), value=b"in the transaction",
                         on_delivery=lambda err, msg: delivered.append((err, msg)))
    assert producer.flush(30) == 0 and all(err is None for err, _ in delivered)
    in_transaction = [Record(m.partition(), m.key(), m.value(), (), m.timestamp()[1], m.topic(), m.offset())
                      for _, m in delivered]
    after = kafka.produce(topic, [Record(0, f"a0-{i}".encode(), b"after") for i in range(3)]
                          + [Record(1, f"a1-{i}".encode(), b"after") for i in range(2)])
    finished = False
    try:
        # t-0: 0..2 before, 3..4 in the open transaction, 5..7 after it; its last stable offset stays at 3
        assert [r.offset for r in in_transaction] == [3, 4] and [r.offset for r in after] == [5, 6, 7, 3, 4]
        options = base_options(kafka, subscribe=topic, startingOffsets="earliest",
                               **{"kafka.isolation.level": "read_committed",
                                  "kafkaConsumer.pollTimeoutMs": str(HOLD_POLL_TIMEOUT_MS)})
        client = KafkaClient(parse_options(options))
        try:
            assert client.end([(topic, 0), (topic, 1)]) == {(topic, 0): 3, (topic, 1): 5}  # the last stable offsets
            assert client.high_watermarks([(topic, 0), (topic, 1)]) == {(topic, 0): 8, (topic, 1): 5}
        finally:
            client.close()
        assert held_back_warnings(options, caplog) == [
            f"an open transaction holds back {topic}-0: its last stable offset has stayed at 3 for 60 s while the log "
            "ends at 8; under kafka.isolation.level=read_committed the query reads nothing from offset 3 on until the "
            "transaction commits or aborts (the brokers abort it once its producer's transaction.timeout.ms has "
            "passed; kafka-transactions.sh find-hanging lists transactions that never end)"]

        collector = CountingCollector()
        spark.conf.set("spark.sql.streaming.noDataProgressEventInterval", "0")  # every idle trigger reports
        try:
            query = start_query(spark, tmp_path / "cp", options, collector, "500 milliseconds")
        finally:
            spark.conf.unset("spark.sql.streaming.noDataProgressEventInterval")
        try:
            below = [r for r in before + after if r.partition == 1 or r.offset < 3]
            await_condition("the records below the open transaction",
                            lambda: collector.rows == expected(below), query, AWAIT_TIMEOUT_S)
            calls, waiting_since = collector.calls, time.monotonic()

            def idle_triggers() -> list:  # everything below the transaction is there at the start: all come after
                return [p for p in query.recentProgress if p.numInputRows == 0]

            await_condition(f"the query to keep waiting for {HOLD_S:.0f} s", lambda: (
                time.monotonic() - waiting_since >= HOLD_S and len(idle_triggers()) >= 3), query, AWAIT_TIMEOUT_S)

            assert query.isActive and query.exception() is None
            assert collector.calls == calls and collector.rows == expected(below)  # no batch ran meanwhile
            # each idle trigger asked the brokers again and saw t-0's last stable offset held at 3
            assert {json.dumps(json.loads(p.sources[0].latestOffset), sort_keys=True) for p in idle_triggers()} == {
                json.dumps({topic: {"0": 3, "1": 5}}, sort_keys=True)}

            (producer.commit_transaction if outcome == "commit" else producer.abort_transaction)(30)
            finished = True
            rest = after + (in_transaction if outcome == "commit" else [])
            await_condition("the records after the transaction",
                            lambda: collector.rows == expected(before + rest), query, AWAIT_TIMEOUT_S)
            assert query.exception() is None
        finally:
            query.stop()
    finally:
        if not finished:
            producer.abort_transaction(30)
