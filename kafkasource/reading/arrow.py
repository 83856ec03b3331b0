"""Kafka messages to Arrow record batches in Spark's built-in Kafka schema.

Per-message Python work is what a Python source pays for: each column is one
map() over a Message method (no Python frame per record), then Arrow builds it in C.

Columns are laid out from buffers (`array` module, bytes) rather than converted from Python objects by
pa.array or pa.scalar: converting any Python object makes pyarrow import pandas, which Spark's Python
workers otherwise never load (bench/TUNING.md says what that cost). Only a key
column mixing nulls and values, and headers, are still converted.
"""

from __future__ import annotations

from array import array
from itertools import accumulate
from operator import itemgetter

import pyarrow as pa
from confluent_kafka import Message

from kafkasource.records.schema import HEADERS_ARROW_TYPE, TIMESTAMP_ARROW_TYPE, arrow_schema

MILLIS_TYPE = pa.timestamp("ms", tz="UTC")  # Kafka's timestamps, widened to Spark's microseconds by a cast


def to_record_batch(messages: list, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """One RecordBatch from confluent-kafka Message objects of one topic-partition."""
    count = len(messages)
    stamps = list(map(Message.timestamp, messages))  # (type, ms): type 1 CreateTime, 2 LogAppendTime, 0 none
    columns = [
        binary_array(list(map(Message.key, messages))),
        binary_array(list(map(Message.value, messages))),
        repeated_string(topic, count),
        repeated_int32(partition, count),
        fixed_width(pa.int64(), array("q", list(map(Message.offset, messages)))),
        fixed_width(MILLIS_TYPE, array("q", list(map(itemgetter(1), stamps)))).cast(TIMESTAMP_ARROW_TYPE),
        timestamp_types(list(map(itemgetter(0), stamps))),
    ]
    if include_headers:
        columns.append(pa.array(list(map(Message.headers, messages)), HEADERS_ARROW_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def fixed_width(arrow_type: pa.DataType, values: array) -> pa.Array:
    """An array of `arrow_type` over an array.array of values of the same width, without copying."""
    return pa.Array.from_buffers(arrow_type, len(values), [None, pa.py_buffer(values)])


def repeated_int32(value: int, count: int) -> pa.Array:
    return fixed_width(pa.int32(), array("i", [value]) * count)


def repeated_string(value: str, count: int) -> pa.Array:
    """`value` `count` times: one string, taken `count` times at index 0."""
    data = value.encode()
    one = pa.Array.from_buffers(pa.string(), 1, [None, pa.py_buffer(array("i", [0, len(data)])), pa.py_buffer(data)])
    return one.take(repeated_int32(0, count))


def binary_array(values: list) -> pa.Array:
    """A binary column from bytes objects. Joining them and laying out the offsets ourselves is several times
    faster than pa.array's per-object conversion (bench/TUNING.md). All nulls (records
    without keys) is one null array; a mix of nulls and values (len(None) fails) or 2 GiB and more (the
    offsets overflow int32) is built by pa.array."""
    try:
        offsets = array("i", list(accumulate(map(len, values), initial=0)))
    except TypeError:
        if values.count(None) == len(values):
            return pa.nulls(len(values), pa.binary())
        return pa.array(values, pa.binary())
    except OverflowError:
        return pa.array(values, pa.binary())
    data = b"".join(values)
    return pa.Array.from_buffers(pa.binary(), len(values), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def timestamp_types(librdkafka_types: list[int]) -> pa.Array:
    """Kafka's TimestampType ids (-1 none, 0 CreateTime, 1 LogAppendTime) from librdkafka's (0 none, 1, 2).
    A partition's records nearly always share one type: then it is one repeated value."""
    count = len(librdkafka_types)
    if count and librdkafka_types.count(librdkafka_types[0]) == count:
        return repeated_int32(librdkafka_types[0] - 1, count)
    return fixed_width(pa.int32(), array("i", [kind - 1 for kind in librdkafka_types]))
