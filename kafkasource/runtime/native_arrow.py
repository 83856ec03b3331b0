"""Arrow arrays over the buffers kafkasource._native hands over, wrapped without copying: the one place that knows
how the extension lays out a column. The consumer's keys and values and encode_avro's payloads (BinaryBuffers) and
the decoders' columns ((length, validity, buffers, children), nested as the Arrow type is) become pyarrow
arrays here, from the column builders named here for each type (column_spec); the consumer's whole take() becomes a
record batch in kafkasource.reading.native_arrow.

A Buffer reads through the buffer protocol, so pa.py_buffer wraps the memory Rust allocated; the array keeps the
Buffer, and with it that memory, alive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from kafkasource import _native


def binary_array(length: int, buffers: _native.BinaryBuffers) -> pa.Array:
    """A binary column of `length` rows: validity bits, i32 offsets, bytes."""
    buf = pa.py_buffer
    return pa.Array.from_buffers(pa.binary(), length, [buf(buffers.validity), buf(buffers.offsets), buf(buffers.data)])


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


def column_spec(arrow_type: pa.DataType) -> tuple:
    """The column builders a native decoder (Avro, plain JSON) makes for an Arrow type, as nested tuples."""
    if pa.types.is_null(arrow_type):
        return ("null",)
    if pa.types.is_boolean(arrow_type):
        return ("bool",)
    if pa.types.is_binary(arrow_type) or pa.types.is_string(arrow_type):
        return ("bytes",)
    if pa.types.is_struct(arrow_type):
        return ("struct", [column_spec(f.type) for f in arrow_type])
    if pa.types.is_map(arrow_type):
        return ("list", ("struct", [("bytes",), column_spec(arrow_type.item_type)]))
    if pa.types.is_list(arrow_type):
        return ("list", column_spec(arrow_type.value_type))
    return ("fixed", arrow_type.bit_width // 8)
