"""Kafka rows to the rows the jobs write: the decoded value, the key, and where each record came from.

A record whose value cannot be decoded is kept, never dropped: its decoded columns are null and
`_corrupt` holds its value's bytes exactly (null on every record that decoded), unless the job sends such
records to a dead-letter topic (writing/dead_letters.py). Avro values are decoded by the source itself; their
record's fields become columns as a JSON value's do.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from kafkasource.jobs.config import ValueDecoding


def _ingestion_columns(partition_by_date: bool) -> list[Column]:
    columns = [
        F.col("topic").alias("kafka_topic"),
        F.col("partition").alias("kafka_partition"),
        F.col("offset").alias("kafka_offset"),
        F.col("timestamp").alias("kafka_timestamp"),
    ]
    if partition_by_date:
        columns.append(F.to_date("timestamp").alias("date"))  # in spark.sql.session.timeZone
    return columns


def decode(kafka_rows: DataFrame, decoding: ValueDecoding, partition_by_date: bool = True) -> DataFrame:
    """key (binary), the value's columns, _corrupt (binary), then kafka_topic, kafka_partition,
    kafka_offset, kafka_timestamp and, when partitioned by date, date."""
    value = F.col("value")
    if decoding.value in ("json", "avro", "protobuf", "json-schema"):  # the source decodes (onDecodeError=keep)
        value_type = kafka_rows.schema["value"].dataType
        names = value_type.names if isinstance(value_type, StructType) else None
        values = [value[name].alias(name) for name in names] if names else [value]
        corrupt = F.when(F.col("value_error").isNotNull(), F.col("value_raw"))
    elif decoding.value == "raw":
        values, corrupt = [value], F.lit(None).cast("binary")
    elif decoding.value == "text":
        text = value.cast("string")
        valid = F.is_valid_utf8(text)  # a cast never fails: invalid bytes would turn into U+FFFD silently
        values, corrupt = [F.when(valid, text).alias("value")], F.when(~valid, value)
    else:
        raise ValueError(f"[decode] value {decoding.value!r}")  # never: the config allows the formats above only
    return kafka_rows.select(F.col("key"), *values, corrupt.alias("_corrupt"), *_ingestion_columns(partition_by_date))
