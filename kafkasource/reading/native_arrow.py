"""The native consumer's take() as a record batch in Spark's Kafka schema, over the buffers kafkasource._native hands
over (TakenRows: BinaryBuffers for keys and values, HeaderBuffers, fixed-width Buffers), wrapped without copying as
kafkasource.runtime.native_arrow wraps every buffer of the extension.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from kafkasource.reading.arrow import repeated_int32, repeated_string
from kafkasource.records.schema import HEADERS_ARROW_TYPE, TIMESTAMP_ARROW_TYPE, arrow_schema
from kafkasource.runtime.native_arrow import binary_array

if TYPE_CHECKING:
    from kafkasource import _native


def taken_batch(taken: _native.TakenRows, topic: str, partition: int, include_headers: bool) -> pa.RecordBatch:
    """A RecordBatch in Spark's Kafka schema over the rows of one topic-partition the native consumer took."""
    rows, buf = taken.rows, pa.py_buffer
    columns = [
        binary_array(rows, taken.keys),
        binary_array(rows, taken.values),
        repeated_string(topic, rows),
        repeated_int32(partition, rows),
        pa.Array.from_buffers(pa.int64(), rows, [None, buf(taken.offsets)]),
        pa.Array.from_buffers(TIMESTAMP_ARROW_TYPE, rows, [None, buf(taken.timestamps_us)]),
        pa.Array.from_buffers(pa.int32(), rows, [None, buf(taken.timestamp_types)]),
    ]
    if include_headers:
        assert taken.headers is not None  # take(with_headers=True) hands them over
        columns.append(_headers_array(rows, taken.headers))
    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema(include_headers))


def _headers_array(rows: int, headers: _native.HeaderBuffers) -> pa.Array:
    """The headers column: a list per row (null without headers) of (key, value) entries."""
    buf, keys = pa.py_buffer, headers.keys
    entries = len(keys.offsets) // 4 - 1  # i32 offsets, one more than the entries
    entry = pa.Array.from_buffers(
        HEADERS_ARROW_TYPE.value_type,
        entries,
        [None],
        children=[
            pa.Array.from_buffers(pa.string(), entries, [None, buf(keys.offsets), buf(keys.data)]),  # never null
            binary_array(entries, headers.values),
        ],
    )
    return pa.Array.from_buffers(
        HEADERS_ARROW_TYPE, rows, [buf(headers.validity), buf(headers.offsets)], children=[entry]
    )
