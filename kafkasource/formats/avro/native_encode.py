"""The native Avro encoder (kafkasource._native's encode_avro, Rust): a whole Arrow column of a batch encoded in one
call, where the Python encoder (kafkasource.formats.avro.encode) converts and encodes row by row with fastavro.

Both give the same bytes for the same rows and the same reasons for the rows that do not fit. The writer schema
is parsed here (avro/schema.py, as for decoding) into a plan, made once per process and schema: per place of the
schema, what to write, as nested tuples the extension reads:

    ("boolean",) ("int",) ("long",) ("float",) ("double",) ("string",) ("bytes",) ("fixed", size)
    ("enum", [symbol, ...]) ("decimal", size or -1 for bytes, precision, scale) ("date",)
    ("timestamp", millis, utc) ("record", [(name, plan, missing_null), ...]) ("array", plan) ("map", plan)
    ("union", null index or None, value index, plan) ("unsupported", why)

Not covered, so encoded in Python: unions of several types besides null (fastavro picks a branch by the
value), a field the column lacks whose default is not null, Arrow types other than those Spark gives the
mapped Spark types, a map with a duplicate key (fastavro writes a dict), a timestamp beyond int64 once scaled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from kafkasource.formats.avro import schema as avro_schema
from kafkasource.formats.avro.schema import NO_DEFAULT, Node
from kafkasource.formats.registry import RegistrySchema
from kafkasource.runtime import native_extension
from kafkasource.runtime.native_arrow import binary_array
from kafkasource.runtime.native_results import EncodedColumn

if TYPE_CHECKING:
    from kafkasource import _native


def available() -> bool:
    """The native encoder: part of the extension, absent from one built without it."""
    return native_extension.has("avro_encoder")


def native_encoder(schema: RegistrySchema, column: str) -> NativeAvroEncoder | None:
    """The native encoder of a column's writer schema; None where the extension has none."""
    return NativeAvroEncoder(schema, column) if available() else None


def plan(node: Node, records: tuple = ()) -> tuple:
    """The encoding plan of a place of the schema (the module's docstring lists the steps)."""
    kind, logical = node.kind, node.logical
    if kind == "union":
        nulls = [i for i, branch in enumerate(node.branches) if branch.kind == "null"]
        others = [i for i, branch in enumerate(node.branches) if branch.kind != "null"]
        if len(others) != 1 or len(nulls) > 1:
            return ("unsupported", f"a union of {', '.join(b.describe() for b in node.branches)}")
        return ("union", nulls[0] if nulls else None, others[0], plan(node.branches[others[0]], records))
    if logical == "decimal":
        size = node.size if kind == "fixed" else -1
        if kind == "fixed" and node.precision > len(str(2 ** (8 * node.size - 1) - 1)) - 1:
            return ("unsupported", f"decimal({node.precision}, {node.scale}) wider than its fixed of {node.size}")
        return ("decimal", size, node.precision, node.scale)
    if logical == "date":
        return ("date",)
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        return ("timestamp", logical.endswith("millis"), not logical.startswith("local"))
    if kind == "record":
        if node.name in records:
            return ("unsupported", f"record {node.name} refers to itself")
        inner = records + (node.name,)
        fields = []
        for f in node.fields:
            nullable = f.type.kind == "union" and any(branch.kind == "null" for branch in f.type.branches)
            fields.append((f.name, plan(f.type, inner), nullable and (f.default is NO_DEFAULT or f.default is None)))
        return ("record", fields)
    if kind in ("array", "map"):
        return (kind, plan(node.inner, records))
    if kind == "enum":
        return ("enum", list(node.symbols))
    if kind == "fixed":
        return ("fixed", node.size)
    if kind in ("boolean", "int", "long", "float", "double", "string", "bytes"):
        return (kind,)  # uuid is a string, time-millis an int, time-micros a long: written as they are
    return ("unsupported", f"Avro type {node.describe()}")


class NativeAvroEncoder:
    """Encodes a column's Arrow array with one writer schema; `encode` returns None where the native encoder
    does not cover the schema or the column (Python encodes it then)."""

    def __init__(self, schema: RegistrySchema, column: str):
        extension = native_extension.extension()  # the caller asked available() first
        self.extension, self.schema_id, self.column = extension, schema.schema_id, column
        self.plan: _native.AvroEncodePlan = extension.AvroEncodePlan(
            plan(avro_schema.parse(schema.text, schema.references).node)
        )
        self.unsupported: str | None = None  # why the last encode returned None

    def encode(self, array: pa.Array) -> tuple[pa.Array, list[tuple[int, str | None]]] | None:
        """(payloads, bad rows): a binary payload per row, null for a null row and for a row that does not fit;
        bad rows as (row, "value.amount: null for a non-nullable field"), the reason None where Python words it
        (a path or an enum name that is not ASCII). None: not covered."""
        try:
            encoded = EncodedColumn._make(self.extension.encode_avro(self.plan, self.schema_id, array, self.column))
        except NotImplementedError as exc:
            self.unsupported = str(exc)
            return None
        if encoded.length == 0:
            return pa.array([], pa.binary()), encoded.bad_rows
        return binary_array(encoded.length, encoded.payloads), encoded.bad_rows
