"""Option and connection errors reach the user through Spark with our message, in bounded time, and never
with a secret in them.

Our message arrives wrapped in a Spark exception (AnalysisException at load(), StreamingQueryException
once a query runs); the tests assert that our text reaches the user and that secrets never do.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest
from pyspark.errors import AnalysisException, PySparkException, StreamingQueryException

from dev.process import free_port
from tests.support.query_helpers import batch, stream

SECRET = f"s3cr3t-{uuid.uuid4().hex}"  # never to appear in a message where an option holding a secret gives it


@pytest.mark.parametrize("options, fragments", [
    pytest.param({"subscribe": "t"},
                 ["option kafka.bootstrap.servers is required", "host1:9092"], id="missing-bootstrap-servers"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "assign": '{"t": [0]}'},
                 ["exactly one of the options subscribe, subscribePattern or assign",
                  "subscribe and assign were given"],
                 id="two-subscriptions"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9"},
                 ["exactly one of the options subscribe, subscribePattern or assign", "none was given"],
                 id="no-subscription"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "startingOffsets": '{"t": {"0": 1'},
                 ["option startingOffsets is not valid JSON"], id="bad-json-offsets"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "assign": '["t", 0]'},
                 ["option assign must be a JSON object"], id="assign-not-an-object"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribePattern": "orders-(["},
                 ["option subscribePattern is not a valid regular expression"], id="bad-regex"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "startingOffsets": "newest"},
                 ["option startingOffsets must be earliest, latest, committed", "'newest'"], id="unknown-start"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.group.id": "g",
                  "kafka.auto.offset.reset": "smallest"},
                 ["option kafka.auto.offset.reset must be one of earliest, latest, none", "'smallest'"],
                 id="bad-reset"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "maxOffsetsPerTrigger": "0"},
                 ["option maxOffsetsPerTrigger must be a positive number"], id="non-positive-number"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.enable.auto.commit": "true"},
                 ["option kafka.enable.auto.commit cannot be true", "commitMode"], id="auto-commit"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t",
                  "kafka.key.deserializer": "org.apache.kafka.common.serialization.StringDeserializer"},
                 ["option kafka.key.deserializer is a Java client setting", "CAST"], id="java-deserializer"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.sasl.jaas.config":
                  'org.apache.kafka.common.security.plain.PlainLoginModule required '
                  f'username="u" password="{SECRET}";'},
                 ["option kafka.sasl.jaas.config is a Java client setting", "kafka.sasl.username",
                  "kafka.sasl.password"], id="jaas-config"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.fetch.max.bytes": "lots",
                  "kafka.sasl.username": "u", "kafka.sasl.password": SECRET},
                 ["librdkafka rejected kafka.fetch.max.bytes='lots'", "Invalid value"],
                 id="librdkafka-rejects-a-value"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafka.fetch.max.byte": "1000",
                  "kafka.sasl.password": SECRET},
                 ["librdkafka rejected kafka.fetch.max.byte: No such configuration property",
                  "Did you mean kafka.fetch.max.bytes?"],
                 id="librdkafka-unknown-setting"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "maxOffsetPerTrigger": "100"},
                 ["unknown option 'maxoffsetpertrigger': did you mean maxOffsetsPerTrigger?"], id="unknown-option"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "bestellungen-für-heute"},
                 ["option subscribe: 'bestellungen-für-heute' is not a Kafka topic name"], id="unicode-topic"),
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "kafkaConsumer.pollTimeoutMs": "9" * 30},
                 ["option kafkaConsumer.pollTimeoutMs must be at most 2147483647"], id="huge-timeout"),
    # where it is no secret, the same value reaches the user whole through Spark's exception
    pytest.param({"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "startingOffsets": SECRET},
                 [f"got '{SECRET}'"], id="a-shown-value"),
])
def test_bad_option_is_rejected_at_load(spark, options, fragments):
    with pytest.raises(AnalysisException) as raised:
        stream(spark, options)

    message = str(raised.value)
    for fragment in fragments:
        assert fragment in message
    assert (SECRET in message) == any(SECRET in fragment for fragment in fragments)  # only where it is no secret


def test_stream_only_error_is_rejected_at_query_start(spark, tmp_path):
    df = stream(spark, {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "endingOffsets": "latest"})
    query = (df.writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
    try:
        with pytest.raises(StreamingQueryException) as raised:
            query.awaitTermination(60)
    finally:
        query.stop()

    assert ("options endingOffsets, endingTimestamp and endingOffsetsByTimestamp are for batch reads"
            in str(raised.value))


def _unreachable_options() -> tuple[str, dict[str, str]]:
    servers = f"127.0.0.1:{free_port()}"
    return servers, {"kafka.bootstrap.servers": servers, "subscribe": "t", "kafkaConsumer.pollTimeoutMs": "3000",
                     "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN",
                     "kafka.sasl.username": "someone", "kafka.sasl.password": SECRET}


@pytest.mark.parametrize("trigger", ["availableNow", "processingTime"])
def test_unreachable_broker_fails_a_stream_in_bounded_time(spark, tmp_path, trigger):
    servers, options = _unreachable_options()
    started = time.monotonic()
    writer = stream(spark, options).writeStream.format("noop").option("checkpointLocation", str(tmp_path / "cp"))
    query = (writer.trigger(availableNow=True) if trigger == "availableNow"
             else writer.trigger(processingTime="1 second")).start()
    try:
        with pytest.raises(StreamingQueryException) as raised:
            query.awaitTermination(60)
    finally:
        query.stop()
    elapsed = time.monotonic() - started

    message = str(raised.value)
    assert f"Kafka at {servers} did not answer within 3000 ms (kafkaConsumer.pollTimeoutMs)" in message
    assert SECRET not in message  # though the servers given beside it are in
    assert elapsed < 30, f"failing took {elapsed:.1f} s with kafkaConsumer.pollTimeoutMs=3000"


def test_unreachable_broker_fails_a_batch_read_in_bounded_time(spark):
    servers, options = _unreachable_options()
    started = time.monotonic()

    with pytest.raises(PySparkException) as raised:
        batch(spark, options).collect()
    elapsed = time.monotonic() - started

    message = str(raised.value)
    assert f"Kafka at {servers} did not answer within 3000 ms" in message
    assert SECRET not in message  # though the servers given beside it are in
    assert elapsed < 30, f"failing took {elapsed:.1f} s with kafkaConsumer.pollTimeoutMs=3000"


def test_batch_read_with_ending_before_starting_names_the_partition(spark, kafka, topic):
    kafka.produce_values(topic, 6, partitions=3)
    df = batch(spark, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic,
                       "startingOffsets": json.dumps({topic: {"0": 2, "1": 0, "2": 0}}),
                       "endingOffsets": json.dumps({topic: {"0": 1, "1": -1, "2": -1}})})

    with pytest.raises(PySparkException) as raised:
        df.collect()

    assert f"endingOffsets lies before startingOffsets for {topic}-0 (2 > 1)" in str(raised.value)


def test_secrets_never_appear_in_query_plans(spark, kafka, topic):
    secrets = {"kafka.sasl.password": "hunter2-plan", "kafka.ssl.key.password": "key-pw-plan",
               "kafka.sasl.oauthbearer.client.secret": "oauth-plan"}
    # a stream's plan lists the source's options (secrets redacted), a batch read's plan lists none
    for read, lists_options in ((batch, False), (stream, True)):
        df = read(spark, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "subscribe": topic, **secrets})
        plan = df._jdf.queryExecution().toString()
        assert "kafkasource" in plan
        assert (f"kafka.bootstrap.servers={kafka.bootstrap_servers}" in plan) is lists_options
        assert (plan.count("kafka.sasl.password=*********(redacted)") > 0) is lists_options
        for value in secrets.values():
            assert value not in plan
