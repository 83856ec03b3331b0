"""The sink through Spark against the real broker: batch and stream writes land exactly the records the DataFrame
holds, Spark's save modes, and every refusal and delivery error reaches the user naming the option, topic or partition
and what to change."""

from __future__ import annotations

import pytest
from pyspark.errors import AnalysisException, StreamingQueryException
from pyspark.sql.types import StringType, StructField, StructType

from dev.process import free_port
from kafkasource.errors import ContinuousTriggerError
from kafkasource.source import KafkaDataSource
from kafkasource.writing.task import CONTINUOUS_REFUSED
from tests.support.kafka_helpers import Record, await_condition
from tests.support.query_helpers import QUERY_TIMEOUT_S, base_options, stream
from tests.support.sink_helpers import (
    PARTITIONS,
    expected_records,
    failure_of,
    finish_available_now,
    read_topic,
    sample_frame,
    sample_rows,
    write_batch,
)

# --- what lands --------------------------------------------------------------------------------------------

def test_a_batch_write_lands_every_record_exactly_where_the_columns_say(spark, kafka, write_path):
    topic_a = kafka.create_topic(kafka.unique_name("sink-a"), PARTITIONS)
    topic_b = kafka.create_topic(kafka.unique_name("sink-b"), PARTITIONS)
    rows = sample_rows(topic_a, topic_b)

    write_batch(sample_frame(spark, topic_a, topic_b), base_options(kafka, writePath=write_path))

    assert read_topic(kafka, topic_a, PARTITIONS) == expected_records(rows, topic_a)
    assert read_topic(kafka, topic_b, PARTITIONS) == expected_records(rows, topic_b)


def test_the_topic_option_wins_over_the_topic_column(spark, kafka):
    topic_a = kafka.create_topic(kafka.unique_name("unused-a"), PARTITIONS)
    topic_b = kafka.create_topic(kafka.unique_name("unused-b"), PARTITIONS)
    chosen = kafka.create_topic(kafka.unique_name("chosen"), PARTITIONS)
    rows = sample_rows(topic_a, topic_b)

    write_batch(sample_frame(spark, topic_a, topic_b), base_options(kafka, topic=chosen))

    assert read_topic(kafka, chosen, PARTITIONS) == expected_records(rows, chosen, topic_option=True)
    assert read_topic(kafka, topic_a, PARTITIONS) == read_topic(kafka, topic_b, PARTITIONS) == []


def test_string_keys_and_values_are_written_as_their_utf8_bytes(spark, kafka, write_path):
    topic = kafka.create_topic(kafka.unique_name("strings"), 1)
    df = spark.createDataFrame([("k", "ünïcode ✓"), (None, "")], "key string, value string").coalesce(1)

    write_batch(df, base_options(kafka, topic=topic, writePath=write_path))

    assert read_topic(kafka, topic, 1) == [(0, 0, b"k", "ünïcode ✓".encode(), ()), (0, 1, None, b"", ())]


def test_a_stream_copies_a_topic_record_for_record(spark, kafka, tmp_path, write_path):
    source = kafka.create_topic(kafka.unique_name("copy-in"), PARTITIONS)
    sink = kafka.create_topic(kafka.unique_name("copy-out"), PARTITIONS)
    produced = kafka.produce(source, [Record(i % PARTITIONS, None if i % 5 == 0 else f"k{i}".encode(), f"v{i}".encode(),
                                             (("n", f"{i}".encode()),) if i % 2 else ()) for i in range(60)])
    df = stream(spark, base_options(kafka, subscribe=source, startingOffsets="earliest", includeHeaders="true"))

    # a named query: Spark hands the sink its queryName among the options, which format("kafka") takes too
    query = (df.selectExpr("key", "value", "headers", "partition").writeStream.format("kafkasource")
             .queryName(f"copy_{write_path}")
             .option("kafka.bootstrap.servers", kafka.bootstrap_servers).option("topic", sink)
             .option("writePath", write_path)
             .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    finish_available_now(query)

    # each source task reads one partition in order and names it: the copy has the same positions
    assert read_topic(kafka, sink, PARTITIONS) == sorted(
        (r.partition, r.offset, r.key, r.value, r.headers) for r in produced)


# --- save modes --------------------------------------------------------------------------------------------

def test_spark_refuses_the_default_save_mode_of_any_python_source_and_append_writes(spark, kafka):
    topic = kafka.create_topic(kafka.unique_name("modes"), 1)
    df = spark.createDataFrame([("v",)], "value string")
    writer = df.write.format("kafkasource").option("kafka.bootstrap.servers", kafka.bootstrap_servers)

    for mode in (None, "errorifexists", "ignore"):
        with pytest.raises(AnalysisException) as refused:
            (writer if mode is None else writer.mode(mode)).option("topic", topic).save()
        assert refused.value.getCondition() == "UNSUPPORTED_DATA_SOURCE_SAVE_MODE"
        shown = "ErrorIfExists" if mode in (None, "errorifexists") else "Ignore"
        assert str(refused.value) == (f'[UNSUPPORTED_DATA_SOURCE_SAVE_MODE] The data source "kafkasource" cannot be '
                                      f'written in the "{shown}" mode. Please use either the "Append" or "Overwrite" '
                                      'mode instead. SQLSTATE: 0A000')
    with pytest.raises(Exception) as overwrite:
        writer.mode("overwrite").option("topic", topic).save()
    assert "Save mode Overwrite not allowed for kafkasource: records are only ever appended to a Kafka topic. Use " \
           '.mode("append")' in str(overwrite.value)
    assert read_topic(kafka, topic, 1) == []

    writer.mode("append").option("topic", topic).save()
    assert read_topic(kafka, topic, 1) == [(0, 0, None, b"v", ())]


# --- refusals before any data moves --------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "columns", "expected"), [
    pytest.param({"topic": "t", "deliveryGuarante": "none"}, "value string",
                 "unknown option 'deliveryguarante' for the kafkasource sink: did you mean deliveryGuarantee?",
                 id="unknown-option"),
    pytest.param({"topic": "t", "deliveryGuarantee": "exactly-once"}, "value string",
                 "deliveryGuarantee=exactly-once needs the option transactionalIdPrefix", id="no-prefix"),
    pytest.param({"topic": "t", "kafka.transactional.id": "x"}, "value string",
                 "option kafka.transactional.id is not supported by the sink", id="transactional-id"),
    pytest.param({"topic": "t", "kafka.linger.mss": "5"}, "value string",
                 "librdkafka rejected kafka.linger.mss: No such configuration property", id="unknown-setting"),
    pytest.param({}, "value string", "topic option required when no 'topic' attribute is present. Use the topic "
                                     "option for setting a topic.", id="no-topic"),
    pytest.param({"topic": "t"}, "key string", "Required attribute 'value' not found", id="no-value"),
    pytest.param({"topic": "t"}, "value int", "value attribute unsupported type int. value must be a(n) string or "
                                              "binary", id="value-type"),
    pytest.param({"topic": "t"}, "value string, partition bigint",
                 "partition attribute unsupported type bigint. partition must be a(n) int", id="partition-type"),
])
def test_bad_options_and_columns_are_refused_before_any_task_runs(spark, options, columns, expected):
    df = spark.createDataFrame([], columns)
    writer = df.write.format("kafkasource").mode("append").option("kafka.bootstrap.servers", "127.0.0.1:9")
    for name, value in options.items():
        writer = writer.option(name, value)
    with pytest.raises(Exception) as refused:
        writer.save()
    assert expected in str(refused.value)


def test_a_stream_with_a_bad_option_fails_before_its_first_batch_writes(spark, kafka, tmp_path):
    topic = kafka.create_topic(kafka.unique_name("never"), 1)
    df = spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS value")
    query = (df.writeStream.format("kafkasource").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
             .option("topic", topic).option("deliveryGuarantee", "always")
             .option("checkpointLocation", str(tmp_path / "ck")).start())
    try:
        with pytest.raises(StreamingQueryException) as refused:
            query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()
    assert "option deliveryGuarantee must be one of at-least-once, exactly-once, none, got 'always'" in \
        str(refused.value)
    assert read_topic(kafka, topic, 1) == []


def test_trigger_continuous_hands_the_sink_no_row_and_every_epochs_commit_is_refused(spark, kafka, tmp_path):
    """Spark never calls a Python sink's write() under Trigger.Continuous and commits each epoch with no task's
    message; the sink refuses that commit (Spark logs the refusal and keeps the query running, so no test can see
    the query fail): epochs pass, none is committed, and the topic receives nothing."""
    topic = kafka.create_topic(kafka.unique_name("continuous"), 1)
    checkpoint = tmp_path / "ck"
    df = spark.readStream.format("rate").option("rowsPerSecond", "50").load() \
        .selectExpr("CAST(value AS STRING) AS value")
    query = (df.writeStream.format("kafkasource").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
             .option("topic", topic).option("checkpointLocation", str(checkpoint))
             .trigger(continuous="1 second").start())
    try:
        await_condition("three epochs planned", lambda: (checkpoint / "offsets" / "2").exists(),
                        timeout=QUERY_TIMEOUT_S)
        assert not any(p.name.isdigit() for p in (checkpoint / "commits").iterdir())
    finally:
        query.stop()
    assert read_topic(kafka, topic, 1) == []

    schema = StructType([StructField("value", StringType())])
    writer = KafkaDataSource(base_options(kafka, topic=topic)).streamWriter(schema, False)
    with pytest.raises(ContinuousTriggerError) as refused:
        writer.commit([None, None], 7)
    assert str(refused.value) == CONTINUOUS_REFUSED == (
        "kafkasource's sink does not run under Trigger.Continuous: Spark never hands a Python sink's tasks a row under "
        "it (it commits each epoch with no task's message), so every record would be lost. Stop the query and use a "
        "micro-batch trigger (processingTime, availableNow)")


# --- delivery errors -----------------------------------------------------------------------------------------

def test_a_record_over_the_producers_limit_names_topic_partition_and_both_limits(spark, kafka, write_path):
    topic = kafka.create_topic(kafka.unique_name("large"), 2)
    message = failure_of(spark, [(b"x" * 20_000, 1)], "value binary, partition int",
                         base_options(kafka, topic=topic, writePath=write_path, **{"kafka.message.max.bytes": "10000"}))
    assert (f"a record of 20,000 bytes for topic {topic} partition 1 is too large: Unable to produce message: "
            "Broker: Message size too large. The producer takes records up to kafka.message.max.bytes (10000 bytes "
            "now) and the brokers up to the topic's max.message.bytes: raise both") in message


def test_a_topic_that_does_not_exist_is_named(spark, kafka):
    missing = kafka.unique_name("missing")
    message = failure_of(spark, [("v",)], "value string",
                         base_options(kafka, topic=missing, **{"kafka.topic.metadata.propagation.max.ms": "1000"}))
    assert (f"topic {missing} does not exist on the brokers at {kafka.bootstrap_servers}: Broker: Unknown topic or "
            "partition. Create it first (kafka-topics --create), or write to an existing topic (the topic option, "
            "or the topic column)") in message


def test_a_partition_the_topic_lacks_is_named(spark, kafka, write_path):
    topic = kafka.create_topic(kafka.unique_name("three"), PARTITIONS)
    message = failure_of(spark, [("v", 7)], "value string, partition int",
                         base_options(kafka, topic=topic, writePath=write_path))
    assert (f"topic {topic} partition 7 does not exist: Local: Unknown partition. Write a partition number the "
            "topic has in the partition column, or null to let the partitioner choose") in message


def test_a_null_topic_in_the_data_fails_in_the_built_ins_words(spark, kafka, write_path):
    topic = kafka.create_topic(kafka.unique_name("named"), 1)
    message = failure_of(spark, [(topic, "v"), (None, "w")], "topic string, value string",
                         base_options(kafka, writePath=write_path))
    assert ("The Kafka message data sent to the producer contains a null topic. Use the `topic` option for setting "
            "a default topic.") in message


def test_brokers_that_never_answer_fail_the_write_after_the_delivery_timeout(spark):
    port = free_port()
    message = failure_of(spark, [("v", 0)], "value string, partition int",
                         {"kafka.bootstrap.servers": f"127.0.0.1:{port}", "topic": "anywhere",
                          "kafka.delivery.timeout.ms": "3000"})
    assert ("records for topic anywhere partition 0 were not delivered within kafka.delivery.timeout.ms (3,000 ms): "
            f"Local: Message timed out. Check that the brokers at 127.0.0.1:{port} are up and reachable from the "
            "executors, or raise kafka.delivery.timeout.ms to wait longer") in message
