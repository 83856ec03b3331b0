"""The columns of a Kafka record: their names, Spark's built-in format("kafka") schema (every field nullable), and
the headers' type, in Spark's DDL and in Arrow."""

from __future__ import annotations

import pyarrow as pa

TOPIC, KEY, VALUE, HEADERS, PARTITION = "topic", "key", "value", "headers", "partition"
OFFSET, TIMESTAMP, TIMESTAMP_TYPE_COLUMN = "offset", "timestamp", "timestampType"

HEADERS_DDL_TYPE = "array<struct<key:string,value:binary>>"
HEADERS_ARROW_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
TIMESTAMP_ARROW_TYPE = pa.timestamp("us", tz="UTC")  # Spark's timestamps: microseconds, UTC

BASE_SCHEMA_DDL = (
    "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int"
)
BASE_FIELDS = [
    pa.field(KEY, pa.binary()),
    pa.field(VALUE, pa.binary()),
    pa.field(TOPIC, pa.string()),
    pa.field(PARTITION, pa.int32()),
    pa.field(OFFSET, pa.int64()),
    pa.field(TIMESTAMP, TIMESTAMP_ARROW_TYPE),
    pa.field(TIMESTAMP_TYPE_COLUMN, pa.int32()),
]


def schema_ddl(include_headers: bool) -> str:
    """The read schema in Spark's DDL: the built-in source's, with headers when includeHeaders."""
    return f"{BASE_SCHEMA_DDL}, {HEADERS} {HEADERS_DDL_TYPE}" if include_headers else BASE_SCHEMA_DDL


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The read schema in Arrow."""
    return pa.schema(BASE_FIELDS + ([pa.field(HEADERS, HEADERS_ARROW_TYPE)] if include_headers else []))
