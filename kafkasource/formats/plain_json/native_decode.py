"""Plain JSON decoded by the native extension's JsonDecoder, with the Python decoder (decode.PlainJsonDecoder) for the
records it hands over: together they give the Python decoder's rows exactly.

The native decoder reads the records a strict reading settles (valid UTF-8, strict JSON, every value of the kind its
type reads, no field given twice), which are nearly all of a topic's, straight into Arrow buffers. Every other
record (Jackson's lenient grammar, a value that fails its type, a timestamp string of a rarer shape, a decimal) is
cut back and named by its row; the Python decoder, which keeps all of from_json's rules, reads those, and their
values take those rows' places. So a decimal or binary field, which only the Python decoder reads, costs its
record the native speed, not its correctness.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DoubleType,
    FloatType,
    MapType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kafkasource.formats.plain_json.convert import INTEGER_RANGES
from kafkasource.formats.plain_json.datetimes import fixed_offset
from kafkasource.formats.plain_json.decode import PlainJsonDecoder
from kafkasource.formats.plain_json.options import PlainJsonOptions
from kafkasource.runtime import native_extension
from kafkasource.runtime.native_arrow import column_spec, decoded_array

if TYPE_CHECKING:
    from kafkasource import _native

_LEAVES: dict[type, tuple] = {
    BooleanType: ("bool",),
    FloatType: ("float32",),
    DoubleType: ("float64",),
    StringType: ("text",),
    TimestampType: ("timestamp",),
    TimestampNTZType: ("timestamp_ntz",),
    DateType: ("date",),
}


def native_plan(data_type: DataType, skipped: str | None = None) -> tuple:
    """How the native decoder reads `data_type`, as nested tuples; a struct's field named `skipped` (the root's
    corrupt-record column) is never read. A type it leaves to the Python decoder (a decimal, binary) is "elsewhere"."""
    if type(data_type) in INTEGER_RANGES:
        low, high, _ = INTEGER_RANGES[type(data_type)]
        # a TINYINT of 128 to 255, which Jackson wraps, is handed over
        return ("integer", low, 127 if isinstance(data_type, ByteType) else high)
    if type(data_type) in _LEAVES:
        return _LEAVES[type(data_type)]
    if isinstance(data_type, StructType):
        return ("struct", [(None if f.name == skipped else f.name, native_plan(f.dataType)) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ("array", native_plan(data_type.elementType))
    if isinstance(data_type, MapType):
        return ("map", native_plan(data_type.valueType))
    return ("elsewhere",)


class NativePlainJsonDecoder:
    """Decodes payloads into `schema` as `options` say: natively, and by the Python decoder where the native one hands
    a record over. The same arguments and results as PlainJsonDecoder."""

    def __init__(self, schema: DataType, options: PlainJsonOptions):
        self.python = PlainJsonDecoder(schema, options)
        self.arrow_type = self.python.arrow_type
        extension = native_extension.extension()  # the caller asked has("json_decoder") first
        plan = native_plan(schema, self.python.corrupt)
        self.native: _native.JsonDecoder = extension.JsonDecoder(
            column_spec(self.arrow_type), plan, fixed_offset(options.time_zone)
        )

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, object] = {}) -> tuple[pa.Array, pa.Array]:
        values, reasons, _ = self.decode_counting(payloads)
        return values, reasons

    def decode_counting(self, payloads: pa.Array) -> tuple[pa.Array, pa.Array, int]:
        """decode's values and reasons, and how many records the Python decoder read."""
        if len(payloads) == 0:
            return pa.array([], self.arrow_type), pa.array([], pa.string()), 0
        validity, offsets, data = payloads.buffers()
        column, handed = self.native.decode(
            len(payloads), payloads.offset, validity, offsets, data if data is not None else pa.py_buffer(b"")
        )
        values = decoded_array(self.arrow_type, column)
        reasons = pa.nulls(len(payloads), pa.string())
        if not handed:
            return values, reasons, 0
        read = [self.python.decode_one(payloads[row].as_py()) for row in handed]
        order = list(range(len(payloads)))
        for k, row in enumerate(handed):
            order[row] = len(payloads) + k
        taken = pa.array(order, pa.int64())
        values = pa.concat_arrays([values, pa.array([v for v, _ in read], self.arrow_type)]).take(taken)
        reasons = pa.concat_arrays([reasons, pa.array([r for _, r in read], pa.string())]).take(taken)
        return values, reasons, len(handed)
