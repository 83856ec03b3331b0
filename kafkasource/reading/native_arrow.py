"""Arrow arrays over the buffers kafkasource._native hands over, wrapped without copying: the one place that knows
how the extension lays them out. The consumer's take() (TakenRows: BinaryBuffers for keys and values,
HeaderBuffers, fixed-width Buffers), encode_avro's payloads (BinaryBuffers) and the Avro decoder's columns
((length, validity, buffers, children), nested as the Arrow type is) all become pyarrow arrays here.

A Buffer reads through the buffer protocol, so pa.py_buffer wraps the memory Rust allocated; the array keeps the
Buffer, and with it that memory, alive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from kafkasource.reading.arrow import repeated_int32, repeated_string
from kafkasource.records.schema import HEADERS_ARROW_TYPE, TIMESTAMP_ARROW_TYPE, arrow_schema

if TYPE_CHECKING:
    from kafkasource import _native


def binary_array(length: int, buffers: _native.BinaryBuffers) -> pa.Array:
    """A binary column of `length` rows: validity bits, i32 offsets, bytes."""
    buf = pa.py_buffer
    return pa.Array.from_buffers(pa.binary(), length, [buf(buffers.validity), buf(buffers.offsets), buf(buffers.data)])


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


def decoded_array(arrow_type: pa.DataType, column: _native.DecodedColumn) -> pa.Array:
    """An array of `arrow_type` over a column the native Avro decoder built: (length, validity, buffers, children),
    the children nested as the type's are (a struct's fields, a list's items, a map's key-value entries)."""
    length, validity, buffers, children = column
    if pa.types.is_null(arrow_type):
        return pa.nulls(length)
    if pa.types.is_struct(arrow_type):
        child_types = [f.type for f in arrow_type]
    elif pa.types.is_map(arrow_type):
        child_types = [pa.struct([arrow_type.key_field, arrow_type.item_field])]
    elif pa.types.is_list(arrow_type):
        child_types = [arrow_type.value_type]
    else:
        child_types = []
    return pa.Array.from_buffers(
        arrow_type,
        length,
        [pa.py_buffer(validity), *map(pa.py_buffer, buffers)],
        children=[decoded_array(t, c) for t, c in zip(child_types, children, strict=True)],
    )
