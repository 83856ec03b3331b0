"""Kafka messages to Arrow record batches in Spark's built-in Kafka schema.

Per-message Python work is what a Python source pays for: each column is one
map() over a Message method (no Python frame per record), then Arrow builds it in C.
"""

from __future__ import annotations

import pyarrow as pa
from confluent_kafka import Message

# names, types and nullability of Spark's built-in format("kafka") source (every field nullable)
BASE_SCHEMA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
                   "timestamp timestamp, timestampType int")
HEADERS_DDL = "headers array<struct<key:string,value:binary>>"

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
MILLIS_TYPE = pa.timestamp("ms", tz="UTC")  # Kafka's timestamps, widened to Spark's microseconds by a cast
BASE_FIELDS = [
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", TIMESTAMP_TYPE),
    pa.field("timestampType", pa.int32()),
]


def schema_ddl(include_headers: bool) -> str:
    return f"{BASE_SCHEMA_DDL}, {HEADERS_DDL}" if include_headers else BASE_SCHEMA_DDL


def arrow_schema(include_headers: bool) -> pa.Schema:
    return pa.schema(BASE_FIELDS + ([pa.field("headers", HEADER_TYPE)] if include_headers else []))


def to_record_batch(messages: list, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """One RecordBatch from confluent-kafka Message objects of one topic-partition."""
    count = len(messages)
    stamps = list(map(Message.timestamp, messages))  # (type, ms): type 1 CreateTime, 2 LogAppendTime, 0 none
    millis = pa.array([s[1] for s in stamps], MILLIS_TYPE)
    columns = [
        pa.array(list(map(Message.key, messages)), pa.binary()),
        pa.array(list(map(Message.value, messages)), pa.binary()),
        pa.array([topic] * count, pa.string()),
        pa.array([partition] * count, pa.int32()),
        pa.array(list(map(Message.offset, messages)), pa.int64()),
        millis.cast(TIMESTAMP_TYPE),
        # Kafka's TimestampType ids: -1 none, 0 CreateTime, 1 LogAppendTime
        pa.array([s[0] - 1 for s in stamps], pa.int32()),
    ]
    if include_headers:
        columns.append(pa.array(list(map(Message.headers, messages)), HEADER_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))
