"""The sink's valueFormat=json / keyFormat=json: a struct column written as plain JSON, each record's bytes those of
Spark's to_json in the same session (the default UTC, another zone, ignoreNullFields=false), on both write paths;
and what the driver refuses before any data moves, in the error's words."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, MapType, StringType, StructField, StructType

from kafkasource.errors import ColumnError, OptionError
from kafkasource.options.sink import parse_sink_options
from tests.support.sink_helpers import read_topic, write_batch

ROWS = """
SELECT * FROM VALUES
  (1, 'a', 1.5D, TIMESTAMP'2026-03-29 01:30:00.123456Z', DATE'2026-01-02', true, array('x', null), map('k', 1),
   named_struct('n', 7L, 's', CAST(NULL AS STRING)), CAST(12.50 AS DECIMAL(10, 2))),
  (2, 'é "q" \\\\ \\n', -0.1D, TIMESTAMP'1969-12-31 23:59:59.999Z', DATE'1900-02-28', false, array(), map(),
   named_struct('n', CAST(NULL AS BIGINT), 's', 'z'), CAST(NULL AS DECIMAL(10, 2))),
  (3, CAST(NULL AS STRING), 1.0E10D, CAST(NULL AS TIMESTAMP), CAST(NULL AS DATE), CAST(NULL AS BOOLEAN),
   CAST(NULL AS ARRAY<STRING>), CAST(NULL AS MAP<STRING, INT>), CAST(NULL AS STRUCT<n: BIGINT, s: STRING>),
   CAST(0 AS DECIMAL(10, 2)))
AS t(id, name, amount, at, day, paid, tags, counts, inner, price)
"""


def orders(spark):
    """Three orders as a key struct (the id) and a value struct of every kind of field, nulls at each level."""
    df = spark.sql(ROWS)
    return df.select(F.struct("id").alias("key"), F.struct(*[c for c in df.columns if c != "id"]).alias("value"))


@pytest.mark.parametrize(("json_options", "spark_options"), [
    ({}, {"timeZone": "UTC"}),
    ({"json.timeZone": "America/Los_Angeles", "json.ignoreNullFields": "false"},
     {"timeZone": "America/Los_Angeles", "ignoreNullFields": "false"}),
], ids=["defaults", "zone-and-nulls"])
def test_each_record_holds_the_bytes_of_spark_to_json(spark, kafka, write_path, json_options, spark_options):
    topic = kafka.create_topic(kafka.unique_name("plain-json-sink"), 1)
    df = orders(spark).coalesce(1)
    expected = [(row.k.encode(), row.v.encode()) for row in df.select(
        F.to_json("key", spark_options).alias("k"), F.to_json("value", spark_options).alias("v")).collect()]

    write_batch(df, {"kafka.bootstrap.servers": kafka.bootstrap_servers, "topic": topic, "writePath": write_path,
                     "valueFormat": "json", "keyFormat": "json", **json_options})

    written = [(key, value) for _, _, key, value, _ in read_topic(kafka, topic, 1)]
    assert written == expected
    assert b'"at":"2026-03-2' in expected[0][1]  # the search finds what is there: a timestamp in to_json's form


def sink_options(**options: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "127.0.0.1:9", "topic": "t", **options}


def schema_of(value_type) -> StructType:
    return StructType([StructField("value", value_type)])


STRUCT = StructType([StructField("a", IntegerType())])


@pytest.mark.parametrize(("options", "schema", "error", "message"), [
    ({"valueFormat": "json"}, schema_of(StringType()), ColumnError,
     "option valueFormat=json writes a struct value column as JSON, but value is string: make it a struct "
     "(struct(...) AS value), or remove valueFormat to write a string or binary value as it is"),
    ({"valueFormat": "json"}, schema_of(StructType([StructField("m", MapType(BinaryType(), IntegerType()))])),
     ColumnError, "option valueFormat=json cannot write value.m, a map with binary keys; convert it in Spark first "
     "(CAST AS STRING), or write to_json(...) AS value and remove valueFormat"),
    ({"keyFormat": "json"}, schema_of(STRUCT), ColumnError,
     "option keyFormat is json, but the DataFrame has no key column; add one (a struct of the fields to write as "
     "JSON), or remove keyFormat"),
    ({"valueFormat": "json", "valueSubject": "orders-value"}, schema_of(STRUCT), OptionError,
     "option valueSubject names a schema in the registry; valueFormat=json writes the value struct as plain JSON "
     "(to_json's text): remove valueSubject, or set valueFormat=json-schema to write JSON Schema through the "
     "registry"),
    ({"valueFormat": "json", "json.timeZone": "Mars/Olympus"}, schema_of(STRUCT), OptionError,
     "option json.timeZone must be a region (Europe/Paris) or an offset (+01:00, UTC), got 'Mars/Olympus'"),
    ({"valueFormat": "json", "json.ignoreNullFields": "yes"}, schema_of(STRUCT), OptionError,
     "option json.ignoreNullFields must be true or false, got 'yes'"),
    ({"json.ignoreNullFields": "false"}, schema_of(STRUCT), OptionError,
     "option json.ignoreNullFields has no effect while valueFormat and keyFormat are binary; set valueFormat or "
     "keyFormat (json, avro, protobuf or json-schema), or remove it"),
], ids=["string-value", "binary-map-keys", "no-key-column", "registry-option", "unknown-zone", "not-a-boolean",
        "json-option-without-json"])
def test_the_driver_refuses_what_it_cannot_write_as_json_naming_the_option(options, schema, error, message):
    with pytest.raises(error) as refused:
        parse_sink_options(sink_options(**options), streaming=False, schema=schema)
    assert str(refused.value) == message


def test_plain_json_on_the_sink_needs_no_registry():
    """valueFormat=json without schema.registry.url: the encoding is the column's, with the options' zone."""
    parsed = parse_sink_options(sink_options(valueFormat="json", **{"json.timeZone": "+05:30"}), streaming=False,
                                schema=schema_of(STRUCT))
    assert parsed.encoding is not None
    (column,) = parsed.encoding.columns
    assert (column.column, column.format, column.schema.time_zone, column.schema.ignore_null_fields) == \
        ("value", "json", "+05:30", True)
    assert parsed.encoding.registry == {}
