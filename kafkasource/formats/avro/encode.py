"""The sink's Avro in Python: an Avro writer schema read into a Shape (kafkasource.formats.shapes), and each row's
converted value written with fastavro after the wire-format prefix. The native encoder (native_encode.py) writes
the same bytes a column at a time where the extension has it and it covers the schema and the column.
"""

from __future__ import annotations

import io
from collections.abc import Callable

from kafkasource.formats.avro import schema as avro_schema
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.shapes import SchemaUnfit, Shape, ShapeField, scalar_shape
from kafkasource.formats.wire_format import AVRO_WIRE


def avro_shape(schema: RegistrySchema, message: str | None = None) -> Shape:
    """The Shape of an Avro writer schema (`message` is Protobuf's alone)."""
    parsed = avro_schema.parse(schema.text, schema.references)
    avro_schema.arrow_type(parsed.node)  # refuses recursive records and over-wide decimals, in the read side's words
    shape, _nullable = _avro(parsed.node, "")
    return shape


def _avro(node, path: str) -> tuple[Shape, bool]:
    if node.kind == "union":
        one = avro_schema.union_shape(node)
        nullable = any(branch.kind == "null" for branch in node.branches)
        if not isinstance(one, avro_schema.Node):
            raise SchemaUnfit(
                f"{path or 'the schema'} is a union of {', '.join(b.describe() for b in node.branches)}: the sink "
                "writes unions of null and one type (or int|long, float|double) only"
            )
        return _avro(one, path)[0], nullable
    if node.kind == "record":
        fields = []
        for f in node.fields:
            shape, nullable = _avro(f.type, f"{path}.{f.name}")
            optional = nullable or f.default is not avro_schema.NO_DEFAULT
            fields.append(ShapeField(f.name, shape, nullable, optional, "null" if nullable else "refused"))
        return Shape("struct", fields=fields), False
    if node.kind in ("array", "map"):
        item, nullable = _avro(node.inner, f"{path}[]")
        return Shape("list" if node.kind == "array" else "map", item=item, item_nullable=nullable), False
    if node.kind == "enum":
        return Shape("string", symbols=tuple(node.symbols)), False
    shape = scalar_shape(avro_schema.arrow_type(node))
    if node.kind == "fixed" and node.logical != "decimal":
        shape.size = node.size
    return shape, False


def avro_writer(schema: RegistrySchema, shape: Shape, column: str) -> Callable[[object], bytes]:
    """The payload of a converted record: the prefix, then the record in Avro binary (fastavro's)."""
    import fastavro

    parsed = avro_schema.parse(schema.text, schema.references).fastavro[0]
    prefix = AVRO_WIRE.prefix(schema.schema_id)

    def write_avro(record) -> bytes:
        out = io.BytesIO()
        out.write(prefix)
        fastavro.schemaless_writer(out, parsed, record)
        return out.getvalue()

    return write_avro
