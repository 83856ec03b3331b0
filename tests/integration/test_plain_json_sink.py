"""The sink's valueFormat=json / keyFormat=json: a struct column written as plain JSON, each record's bytes those of
Spark's to_json in the same session (the default UTC, another zone, ignoreNullFields=false), on both write paths."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

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
