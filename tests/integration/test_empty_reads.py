"""Batch reads with nothing to read, against the real broker, registry and Spark, on both read paths: an empty
topic, a pattern that matches nothing or partitions that do not exist give the empty frame in the source's
schema, whatever the formats, as format("kafka") gives 0 rows; a topic that does not exist fails the read naming
it, as format("kafka") fails (UnknownTopicOrPartitionException)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.serialization import MessageField
from pyspark.errors import PySparkException
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

from tests.support.query_helpers import base_options, batch
from tests.support.registry_helpers import encode, item_serializer

KAFKA_COLUMNS = [StructField("key", BinaryType()), StructField("value", BinaryType()),
                 StructField("topic", StringType()), StructField("partition", IntegerType()),
                 StructField("offset", LongType()), StructField("timestamp", TimestampType()),
                 StructField("timestampType", IntegerType())]
HEADERS = StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                       StructField("value", BinaryType())])))


@pytest.fixture(scope="module")
def empty_topic(kafka) -> str:
    return kafka.create_topic(kafka.unique_name("empty"), partitions=2)


@pytest.mark.parametrize("case", ["empty-topic", "empty-topic-with-headers", "pattern-matching-nothing",
                                  "assigned-partition-that-does-not-exist"])
def test_an_empty_batch_read_is_the_empty_frame_in_the_sources_schema(spark, kafka, empty_topic, read_path, case):
    subscription = {"empty-topic": {"subscribe": empty_topic},
                    "empty-topic-with-headers": {"subscribe": empty_topic, "includeHeaders": "true"},
                    "pattern-matching-nothing": {"subscribePattern": f"^{kafka.unique_name('nothing')}$"},
                    "assigned-partition-that-does-not-exist": {"assign": json.dumps({empty_topic: [0, 7]})}}[case]

    df = batch(spark, base_options(kafka, readPath=read_path, **subscription))

    headers = [HEADERS] if case == "empty-topic-with-headers" else []
    assert df.schema == StructType(KAFKA_COLUMNS + headers)
    assert df.count() == 0
    assert df.collect() == []


@pytest.mark.parametrize("fmt", ["avro", "protobuf", "json-schema"])
def test_an_empty_batch_read_with_key_and_value_formats_is_the_empty_frame_in_the_decoded_schema(
        spark, kafka, schema_registry, read_path, fmt):
    topic = kafka.create_topic(kafka.unique_name(f"empty-{fmt}"), partitions=2)
    for field in (MessageField.KEY, MessageField.VALUE):  # registers <topic>-key and <topic>-value, writes nothing
        encode(item_serializer(schema_registry, fmt), topic, {"id": 1, "name": "a"}, field)
    options = base_options(kafka, **{"readPath": read_path, "keyFormat": fmt, "valueFormat": fmt,
                                     "includeHeaders": "true", "schema.registry.url": schema_registry})

    by_topic = batch(spark, {**options, "subscribe": topic})
    by_pattern = batch(spark, {**options, "subscribePattern": f"^{kafka.unique_name('nothing')}$",
                               "keySubject": f"{topic}-key", "valueSubject": f"{topic}-value"})

    item = StructType([StructField("id", LongType()), StructField("name", StringType())])
    decoded = StructType([StructField("key", item), StructField("value", item), *KAFKA_COLUMNS[2:], HEADERS,
                          StructField("key_raw", BinaryType()), StructField("value_raw", BinaryType())])
    for df in (by_topic, by_pattern):
        assert df.schema == decoded
        assert df.count() == 0
        assert df.collect() == []


@pytest.mark.parametrize("mode", ["subscribe", "subscribe-with-an-existing-topic", "assign"])
def test_a_batch_read_of_a_topic_that_does_not_exist_fails_naming_it(spark, kafka, empty_topic, read_path, mode):
    missing = kafka.unique_name("missing")
    subscription = {"subscribe": {"subscribe": missing},
                    "subscribe-with-an-existing-topic": {"subscribe": f"{empty_topic},{missing}"},
                    "assign": {"assign": json.dumps({missing: [0], empty_topic: [0]})}}[mode]
    option = next(iter(subscription))

    with pytest.raises(PySparkException) as raised:
        batch(spark, base_options(kafka, readPath=read_path, **subscription)).count()

    assert (f"kafkasource.errors.OptionError: option {option} names topic {missing}, which does not exist in the "
            f"cluster (or this client may not describe it): a batch read of it fails, as format(\"kafka\")'s does; "
            f"create the topic, or remove it from {option}") in str(raised.value)
