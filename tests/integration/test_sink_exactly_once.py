"""deliveryGuarantee=exactly-once against the real broker: a replayed stream batch writes nothing twice (where
at-least-once writes it again), an aborted transaction's records stay invisible to read_committed consumers, a
newer attempt of a task fences the older one, and a batch write's tasks each land whole."""

from __future__ import annotations

import re
import time

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException

from kafkasource.errors import ExactlyOnceError
from kafkasource.options.sink import parse_sink_options
from kafkasource.writing import transactions
from kafkasource.writing.deliveries import Deliveries
from kafkasource.writing.digest import SHA256, RecordDigest
from kafkasource.writing.failures import DeliveryError, delivery_error
from kafkasource.writing.markers import MarkedBatch
from kafkasource.writing.producer import close, new_producer, send
from kafkasource.writing.rows import ArrowRecords, Columns
from kafkasource.writing.transactional_pool import TransactionalPool
from kafkasource.writing.transactions import Outcome, write_transaction
from tests.support.checkpoints import batch_end, forget_last_commit
from tests.support.kafka_helpers import Record
from tests.support.query_helpers import base_options, stream
from tests.support.sink_helpers import (
    DIGEST,
    PARTITIONS,
    batch_marker,
    batch_markers,
    copy_to_end,
    expected_records,
    finish_available_now,
    read_topic,
    sample_frame,
    sample_rows,
    without_offsets,
    write_batch,
)


def test_a_replayed_batch_is_written_once_under_exactly_once_and_again_under_at_least_once(spark, kafka, tmp_path):
    source = kafka.create_topic(kafka.unique_name("replay-in"), PARTITIONS)
    produced = kafka.produce(source, [Record(i % PARTITIONS, f"k{i}".encode(), f"v{i}".encode())
                                      for i in range(30)])
    copied = [(r.partition, r.key, r.value, ()) for r in sorted(produced, key=lambda r: (r.partition, r.offset))]
    prefix = kafka.unique_name("replay-sink")
    outputs = {}
    for guarantee in ("exactly-once", "at-least-once"):
        sink = kafka.create_topic(kafka.unique_name(f"replay-out-{guarantee}"), PARTITIONS)
        options = {"topic": sink, "deliveryGuarantee": guarantee}
        if guarantee == "exactly-once":
            options["transactionalIdPrefix"] = prefix
        checkpoint = tmp_path / guarantee
        first = copy_to_end(spark, kafka, source, checkpoint, options)
        replayed = forget_last_commit(checkpoint)
        again = copy_to_end(spark, kafka, source, checkpoint, options)
        assert again.id == first.id and replayed >= 1  # the same query, resumed, and more than one batch
        outputs[guarantee] = (sink, replayed, again.id, read_topic(kafka, sink, PARTITIONS, read_committed=True))

    sink, replayed, query_id, exactly_once = outputs["exactly-once"]
    assert without_offsets(exactly_once) == copied
    # each task's marker: its group's offset on partition 0 of the sink's topic says the last batch, of this query
    # with how many records its task wrote, and their digest
    checkpoint = tmp_path / "exactly-once"
    start, end = batch_end(checkpoint, source, replayed - 1), batch_end(checkpoint, source, replayed)
    assert batch_markers(kafka, prefix, sink, PARTITIONS) == [(replayed + 1, {
        "kind": "kafkasource-sink-marker", "queryId": query_id, "batchId": replayed, "partition": task,
        "records": end[task] - start.get(task, 0), "digest": DIGEST}) for task in range(PARTITIONS)]

    # the contrast: at-least-once wrote the replayed batch's records a second time, at the end of each partition
    sink, replayed, _, at_least_once = outputs["at-least-once"]
    checkpoint = tmp_path / "at-least-once"
    start, end = batch_end(checkpoint, source, replayed - 1), batch_end(checkpoint, source, replayed)
    expected, twice = [], 0
    for partition in range(PARTITIONS):
        records = sorted((r for r in produced if r.partition == partition), key=lambda r: r.offset)
        again = [r for r in records if start.get(partition, 0) <= r.offset < end.get(partition, 0)]
        expected += [(partition, r.key, r.value, ()) for r in records + again]
        twice += len(again)
    assert twice > 0, "the replayed batch held records"
    assert without_offsets(at_least_once) == expected

def test_an_exactly_once_task_puts_its_keyless_records_in_one_partition_turning_with_the_batch(
        spark, kafka, tmp_path, write_path):
    """Exactly-once, the topic option and no partition column: a task's records without a key go to one partition,
    (its Spark partition + the batch id) modulo the topic's 4 partitions, so its transaction touches few; keyed
    records land where the partitioner puts them, as at-least-once puts them. One source partition, batches of 10."""
    source = kafka.create_topic(kafka.unique_name("placed-in"), 1)
    produced = kafka.produce(source, [Record(0, None if i % 3 else f"k{i}".encode(), f"v{i}".encode())
                                      for i in range(25)])
    written = {}
    for guarantee in ("exactly-once", "at-least-once"):
        sink = kafka.create_topic(kafka.unique_name(f"placed-out-{guarantee}"), 4)
        options = {"topic": sink, "deliveryGuarantee": guarantee, "writePath": write_path}
        if guarantee == "exactly-once":
            options["transactionalIdPrefix"] = sink
        df = stream(spark, base_options(kafka, subscribe=source, startingOffsets="earliest", maxOffsetsPerTrigger="10"))
        writer = df.selectExpr("key", "value").writeStream.format("kafkasource").trigger(availableNow=True)
        for name, value in {**base_options(kafka), **options}.items():
            writer = writer.option(name, value)
        finish_available_now(writer.option("checkpointLocation", str(tmp_path / guarantee)).start())
        written[guarantee] = {value: partition for partition, _, _, value, _ in
                              read_topic(kafka, sink, 4, read_committed=True)}

    values = [r.value for r in produced]
    assert sorted(written["exactly-once"]) == sorted(values) == sorted(written["at-least-once"])
    keyless = {r.value: r.offset // 10 % 4 for r in produced if r.key is None}  # batch b (offsets 10b..) to b
    keyed = {r.value: written["at-least-once"][r.value] for r in produced if r.key is not None}
    assert len(keyless) == 16 and set(keyless.values()) == {0, 1, 2}
    assert written["exactly-once"] == {**keyless, **keyed}


def test_an_aborted_transaction_stays_invisible_to_read_committed(spark, kafka):
    prefix = kafka.unique_name("abort-sink")
    rows = [(f"small-{i}".encode(), 0) for i in range(5)] + [(b"x" * 5_000, 1)]
    df = spark.createDataFrame(rows, "value binary, partition int").coalesce(1)
    seen = {}
    for guarantee in ("exactly-once", "at-least-once"):
        topic = kafka.create_topic(kafka.unique_name(f"abort-{guarantee}"), 2, config={"max.message.bytes": "2000"})
        options = base_options(kafka, topic=topic, deliveryGuarantee=guarantee)
        if guarantee == "exactly-once":
            options["transactionalIdPrefix"] = prefix
        with pytest.raises(Exception) as failed:
            write_batch(df, options)
        assert (f"a record of 5,000 bytes for topic {topic} partition 1 is too large: Broker: Message size too "
                "large") in str(failed.value)
        seen[guarantee] = (read_topic(kafka, topic, 2, read_committed=True), read_topic(kafka, topic, 2))

    small = [(0, value, ()) for value, _ in rows[:5]]
    committed, uncommitted = seen["exactly-once"]
    assert committed == []  # the task's transaction was aborted: none of its records is visible
    assert [(p, v, h) for p, _, _, v, h in uncommitted] == small  # though they reached the log
    committed, _ = seen["at-least-once"]
    assert [(p, v, h) for p, _, _, v, h in committed] == small  # without a transaction, half a task is written


def test_a_newer_attempt_fences_the_older_one_which_fails_having_written_nothing(kafka, write_path):
    topic = kafka.create_topic(kafka.unique_name("fenced"), 1)
    prefix = kafka.unique_name("fence-sink")
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              transactionalIdPrefix=prefix, writePath=write_path), streaming=True)
    batch = MarkedBatch("query-1", 4)
    newer: dict[str, Outcome] = {}

    def older_attempt():
        yield topic, b"k", b"old-0", None, 0
        yield topic, b"k", b"old-1", None, 0
        # Spark starts another attempt of the same task (same partition, same batch) while this one still writes
        newer["outcome"] = write_transaction(options, 3, iter([(topic, b"k", b"new-0", None, 0),
                                                               (topic, b"k", b"new-1", None, 0)]), batch)
        yield topic, b"k", b"old-2", None, 0

    with pytest.raises(DeliveryError) as fenced:
        write_transaction(options, 3, older_attempt(), batch)

    assert str(fenced.value).startswith(f"the transactional producer {prefix}-3 writing to topic {topic} was fenced "
                                        "by a newer producer with the same transactional.id: ")
    assert str(fenced.value).endswith(
        "Either Spark started a newer attempt of this task (a retry or a speculative copy), which carries on, or "
        f"another sink uses transactionalIdPrefix {prefix}. Nothing of this attempt was committed. If no other "
        "attempt runs, give every query and job its own transactionalIdPrefix")
    assert newer["outcome"] == Outcome(2)
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"new-0", b"new-1"]

    # a third attempt of the batch, over the same records, finds the newer one's marker and writes nothing
    assert write_transaction(options, 3, iter([(topic, b"k", b"new-0", None, 0), (topic, b"k", b"new-1", None, 0)]),
                             batch) == Outcome(0, True)
    # the next batch is written
    assert write_transaction(options, 3, iter([(topic, b"k", b"next", None, 0)]),
                             MarkedBatch("query-1", 5)) == Outcome(1)
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"new-0", b"new-1", b"next"]
    # another query with the same prefix is no replay of this one: it takes the prefix over, and its batch 4 is written
    assert write_transaction(options, 3, iter([(topic, b"k", b"other", None, 0)]),
                             MarkedBatch("query-2", 4)) == Outcome(1)


def test_a_worker_keeps_its_producer_across_batches_and_replaces_it_once_another_worker_fenced_it(kafka):
    """Two pools stand for two Python workers that Spark hands the same partition's tasks in turn: each batch in a
    worker that wrote the partition before takes its kept producer (no new init_transactions); a producer fenced by
    the other worker meanwhile is replaced before it takes a record, from then on by a spare the worker made at the
    end of its last task, and no batch is written twice or lost."""
    topic = kafka.create_topic(kafka.unique_name("kept"), 1)
    prefix = kafka.unique_name("kept-sink")
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              transactionalIdPrefix=prefix), streaming=True)
    worker_a, worker_b = TransactionalPool(), TransactionalPool()

    def write(worker: TransactionalPool, batch_id: int, value: bytes) -> Outcome:
        return write_transaction(options, 0, iter([(topic, None, value, None, 0)]), MarkedBatch("q", batch_id), worker)

    try:
        assert [write(worker_a, 0, b"b0"), write(worker_a, 1, b"b1")] == [Outcome(1), Outcome(1)]
        assert worker_a.created == 1  # batch 1 took the producer batch 0 left
        assert write(worker_b, 2, b"b2") == Outcome(1)  # worker B's new producer fences worker A's
        assert write(worker_a, 3, b"b3") == Outcome(1)  # A finds its producer fenced and makes a new one
        assert (worker_a.created, worker_a.spares) == (2, 1)  # and, its tasks having moved, a spare at the end
        # a replay of batch 3 where it was written, over the same record: the kept producer knows its last marker
        assert write(worker_a, 3, b"b3") == Outcome(0, replayed=True)
        assert (worker_a.created, worker_a.spares) == (2, 1)  # the spare waits for the next fence
        # a replay of batch 3 in worker B, whose producer A fenced: the new one reads the marker, at batch 3
        assert write(worker_b, 3, b"b3") == Outcome(0, replayed=True)
        assert (worker_b.created, worker_b.spares) == (2, 1)
        # B fenced A's producer again: A's spare takes its place, and a new spare is made after the batch
        assert write(worker_a, 4, b"b4") == Outcome(1)
        assert (worker_a.created, worker_a.spares) == (2, 2)
    finally:
        worker_a.close_all()
        worker_b.close_all()
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"b0", b"b1", b"b2", b"b3", b"b4"]
    assert batch_markers(kafka, prefix, topic, 1) == [
        (5, {"kind": "kafkasource-sink-marker", "queryId": "q", "batchId": 4, "partition": 0, "records": 1,
             "digest": DIGEST})
    ]


FENCE_ERROR_LINE = re.compile(r"^%[0-6]\|.*fenced by a newer instance", re.MULTILINE)


def test_a_kept_producer_replaced_after_a_fence_prints_no_error_line(kafka, write_path, capfd):
    """Being fenced is how a kept producer learns that another worker took its transactional.id; librdkafka logs it
    at error level (FATAL, TXNERR, ADDOFFSETS), which the sink keeps from the output."""
    topic = kafka.create_topic(kafka.unique_name("quiet-fence"), 1)
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              writePath=write_path,
                                              transactionalIdPrefix=kafka.unique_name("quiet-fence")), streaming=True)
    worker_a, worker_b = TransactionalPool(), TransactionalPool()

    def write(worker: TransactionalPool, batch_id: int) -> Outcome:
        return write_transaction(options, 0, iter([(topic, None, b"v", None, 0)]), MarkedBatch("q", batch_id), worker)

    try:
        assert [write(worker_a, 0), write(worker_b, 1), write(worker_a, 2)] == [Outcome(1)] * 3
        assert worker_a.created == 2  # its kept producer was fenced by B's, and replaced
    finally:
        worker_a.close_all()
        worker_b.close_all()
    printed = capfd.readouterr().err
    assert not FENCE_ERROR_LINE.search(printed), printed
    # what the search looks for: the line librdkafka prints for such a producer by itself
    assert FENCE_ERROR_LINE.search("%3|1795742874.991|ADDOFFSETS|rdkafka#producer-1| [thrd:main]: TxnCoordinator/1: "
                                   "Failed to add offsets to transaction on broker TxnCoordinator/1: Local: This "
                                   "instance has been fenced by a newer instance")


def test_a_producer_fenced_before_a_record_says_fenced_not_only_fatal_error(kafka):
    """confluent-kafka raises a fenced producer's error once, from the call that serves the error's event, and
    produce() says only "Local: Fatal error" (which can come first, when the fencing lands between two polls);
    a record produced after either still gets a DeliveryError that says the producer was fenced."""
    topic = kafka.create_topic(kafka.unique_name("fenced-late"), 1)
    prefix = kafka.unique_name("fence-late")
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              transactionalIdPrefix=prefix), streaming=False)
    tid = f"{prefix}-0"
    older, deliveries = new_producer(options, Deliveries(), **{"transactional.id": tid}), Deliveries()
    try:
        older.init_transactions(30)
        older.begin_transaction()
        older.produce(topic, b"old-0")
        assert older.flush(30) == 0
        newer = new_producer(options, Deliveries(), **{"transactional.id": tid})
        newer.init_transactions(30)  # fences the older producer
        with pytest.raises(KafkaException) as first:  # the fenced error itself, or produce()'s _FATAL
            for _ in range(50):
                older.produce(topic, b"old-1")
                older.poll(0.2)
        assert first.value.args[0].code() in (KafkaError._FENCED, KafkaError._FATAL)

        with pytest.raises(DeliveryError) as fenced:
            send(older, deliveries, [(topic, None, b"old-2", None, 0)], options, transactional_id=tid)

        assert str(fenced.value).startswith(f"the transactional producer {tid} writing to topic {topic} was fenced "
                                            "by a newer producer with the same transactional.id: ")
    finally:
        close(older)
    assert read_topic(kafka, topic, 1, read_committed=True) == []


def one_partition_sink(kafka, name: str, write_path: str):
    """A one-partition topic, an exactly-once sink's prefix for it, a pool of the sink's producers, and a function
    that writes values as Spark partition 0's task of a batch of query q."""
    topic = kafka.create_topic(kafka.unique_name(name), 1)
    prefix = kafka.unique_name(f"{name}-sink")
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              transactionalIdPrefix=prefix, writePath=write_path), streaming=True)
    pool = TransactionalPool()

    def write(batch_id: int, *values: bytes) -> Outcome:
        return write_transaction(options, 0, iter([(topic, None, v, None, 0) for v in values]),
                                 MarkedBatch("q", batch_id), pool)

    return topic, prefix, pool, write


def test_a_replay_over_other_records_or_behind_the_marker_fails_and_commits_nothing(kafka, write_path):
    """A task may skip a batch only when its marker names the same batch of the same query over the same records:
    a marker ahead of the batch means a rewound checkpoint, a marker at the batch over other records a changed
    input. Both fail before anything is committed, saying what the marker holds."""
    topic, prefix, pool, write = one_partition_sink(kafka, "rewound", write_path)
    try:
        assert [write(0, b"a"), write(1, b"b", b"c"), write(2, b"d")] == [Outcome(1), Outcome(2), Outcome(1)]
        with pytest.raises(ExactlyOnceError) as rewound:
            write(1, b"b", b"c", b"d", b"e")  # a restored checkpoint plans batch 1 again, over more offsets
        with pytest.raises(ExactlyOnceError) as changed:
            write(2, b"d", b"e")  # batch 2 again, over other records
        assert write(2, b"d") == Outcome(0, replayed=True)  # over the same: skipped
    finally:
        pool.close_all()
    assert str(rewound.value).startswith(
        f"the checkpoint is behind what this sink already wrote: Spark runs batch 1 of query q, but the marker of "
        f"transactionalIdPrefix {prefix} for partition 0 says batch 2 of that query is written. The checkpoint was "
        "rewound")
    assert str(changed.value).startswith(
        "the checkpoint is behind what this sink already wrote: Spark runs batch 2 of query q again, whose part for "
        f"partition 0 is written under transactionalIdPrefix {prefix} as 1 records of digest ")
    assert "but the task now holds 2 records of digest " in str(changed.value)
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"a", b"b", b"c", b"d"]
    assert batch_markers(kafka, prefix, topic, 1) == [
        (3, {"kind": "kafkasource-sink-marker", "queryId": "q", "batchId": 2, "partition": 0, "records": 1,
             "digest": DIGEST})]


def test_a_batch_an_earlier_kafkasource_marked_with_sha256_is_still_recognised_when_replayed(
        kafka, write_path, monkeypatch):
    """Markers written before the digest took XXH3 hold a SHA-256 digest without a prefix. A replay of their batch is
    hashed that way: over the same records it is skipped, over other records it fails naming both digests. The
    next batch's marker holds an XXH3 digest."""
    topic, prefix, pool, write = one_partition_sink(kafka, "upgraded", write_path)

    def marker_digest() -> str:
        return batch_marker(kafka, prefix, topic, 0)[1]["digest"]

    try:
        with monkeypatch.context() as earlier:  # the sink as it was: SHA-256 for every digest
            earlier.setattr(transactions, "RecordDigest", lambda columns: RecordDigest(columns, SHA256))
            assert write(0, b"a", b"b") == Outcome(2)
        legacy = marker_digest()
        assert re.fullmatch("[0-9a-f]{32}", legacy), legacy
        assert write(0, b"a", b"b") == Outcome(0, replayed=True)
        with pytest.raises(ExactlyOnceError) as changed:
            write(0, b"a", b"c")
        assert write(1, b"c") == Outcome(1)
        assert re.fullmatch("xxh3:[0-9a-f]{32}", marker_digest())
    finally:
        pool.close_all()
    assert f"as 2 records of digest {legacy}, but the task now holds 2 records of digest " in str(changed.value)
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"a", b"b", b"c"]


def test_two_queries_taking_turns_under_one_prefix_fail_while_a_new_checkpoint_takes_over(kafka, caplog):
    """Two pools stand for two queries' workers. A query that finds another's marker takes the prefix over (a new
    checkpoint after a clean stop), and says so; once the other wrote after it, it fails, naming the other query."""
    topic = kafka.create_topic(kafka.unique_name("shared"), 1)
    prefix = kafka.unique_name("shared-sink")
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              transactionalIdPrefix=prefix), streaming=True)
    first, second = TransactionalPool(), TransactionalPool()

    def write(pool: TransactionalPool, query: str, batch_id: int, value: bytes) -> Outcome:
        return write_transaction(options, 0, iter([(topic, None, value, None, 0)]), MarkedBatch(query, batch_id), pool)

    try:
        assert write(first, "query-1", 0, b"1-0") == Outcome(1)
        caplog.clear()
        assert write(second, "query-2", 0, b"2-0") == Outcome(1)  # takes over: no earlier write of query-2
        assert (f"batch 0 of query query-2 takes transactionalIdPrefix {prefix} partition 0 over from query-1 (its "
                "marker names batch 0 of it): a new checkpoint or a new write for this sink") in caplog.text
        with pytest.raises(ExactlyOnceError) as shared:
            write(first, "query-1", 1, b"1-1")
    finally:
        first.close_all()
        second.close_all()
    assert str(shared.value).startswith(
        f"another sink writes under transactionalIdPrefix {prefix}: partition 0's marker names query query-2 (its "
        "batch 0), which took the prefix over after this query (query-1) had written under it.")
    assert [r[3] for r in read_topic(kafka, topic, 1, read_committed=True)] == [b"1-0", b"2-0"]
    assert batch_markers(kafka, prefix, topic, 1) == [
        (1, {"kind": "kafkasource-sink-marker", "queryId": "query-2", "batchId": 0, "partition": 0, "records": 1,
             "digest": DIGEST, "earlier": ["query-1"]})]


def test_a_task_longer_than_the_transaction_timeout_is_told_so_not_fenced(kafka, write_path):
    """The broker aborts a transaction open longer than transaction.timeout.ms and bumps the producer's epoch, which
    the producer takes for a newer producer: the sink says what happened and what to raise. The task's Arrow batches
    come one row at a time, 0.3 s apart, as Spark hands them over."""
    topic = kafka.create_topic(kafka.unique_name("slow-task"), 1)
    prefix = kafka.unique_name("slow-sink")
    options = parse_sink_options(base_options(kafka, topic=topic, deliveryGuarantee="exactly-once",
                                              transactionalIdPrefix=prefix, writePath=write_path,
                                              **{"kafka.transaction.timeout.ms": "1500"}), streaming=False)
    columns = Columns(topic=topic, key=False, headers=False, partition=False)

    def slowly():
        deadline = time.monotonic() + 60  # the broker aborts after 1.5 s (and its next check, within 1 s)
        while time.monotonic() < deadline:
            time.sleep(0.3)
            yield pa.RecordBatch.from_arrays([pa.array([b"v"])], names=["value"])

    with pytest.raises(DeliveryError) as failed:
        write_transaction(options, 0, ArrowRecords(slowly(), columns), MarkedBatch("write-1", 0, stream=False),
                          TransactionalPool())

    assert str(failed.value).startswith(f"the transaction of {prefix}-0 writing to topic {topic} was open ")
    assert (", longer than kafka.transaction.timeout.ms (1,500 ms), and the broker aborted it (the producer then reads "
            "its requests' refusal as being fenced). Nothing of this attempt was committed") in str(failed.value)
    assert "Raise kafka.transaction.timeout.ms above the time a task takes to write" in str(failed.value)
    # not the fence's words, which the same error has in a transaction within its timeout
    fence = str(delivery_error(KafkaError(KafkaError.PRODUCER_FENCED, "fenced"), options, topic, 0,
                               transactional_id=f"{prefix}-0"))
    assert f"another sink uses transactionalIdPrefix {prefix}" in fence
    assert f"another sink uses transactionalIdPrefix {prefix}" not in str(failed.value)
    assert read_topic(kafka, topic, 1, read_committed=True) == []


def test_an_exactly_once_batch_write_writes_every_sample_row_and_marks_its_task(spark, kafka):
    topic_a = kafka.create_topic(kafka.unique_name("eos-a"), PARTITIONS)
    topic_b = kafka.create_topic(kafka.unique_name("eos-b"), PARTITIONS)
    prefix = kafka.unique_name("eos-batch")
    rows = sample_rows(topic_a, topic_b)

    write_batch(sample_frame(spark, topic_a, topic_b),
                base_options(kafka, deliveryGuarantee="exactly-once", transactionalIdPrefix=prefix,
                             markerTopic=topic_a))

    for topic in (topic_a, topic_b):
        assert without_offsets(read_topic(kafka, topic, PARTITIONS, read_committed=True)) == \
            without_offsets(expected_records(rows, topic))
    # the one task's marker names the write, batch 0
    (marker,) = batch_markers(kafka, prefix, topic_a, 1)
    assert marker[0] == 1 and marker[1]["queryId"].startswith("write-") and marker[1]["records"] == len(rows)
