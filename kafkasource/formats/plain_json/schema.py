"""valueSchema / keySchema: the struct plain JSON is read into (or the array or map, as from_json takes them), given
as Spark's DDL ("order_id BIGINT, customer STRING") or Spark's JSON form of a StructType (what StructType.json()
writes), and its Arrow type.

The text is read where the options are (the driver's Python worker, without a JVM: kafkasource.formats.plain_json.ddl
says why), and the executors get the struct's JSON form. Every field is read nullable, as from_json reads it.
"""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from kafkasource.formats.plain_json.ddl import DdlError, parse_ddl
from kafkasource.records.schema import TIMESTAMP_ARROW_TYPE

_ARROW: dict[type, pa.DataType] = {
    BooleanType: pa.bool_(),
    ByteType: pa.int8(),
    ShortType: pa.int16(),
    IntegerType: pa.int32(),
    LongType: pa.int64(),
    FloatType: pa.float32(),
    DoubleType: pa.float64(),
    StringType: pa.string(),
    BinaryType: pa.binary(),
    DateType: pa.date32(),
    TimestampType: TIMESTAMP_ARROW_TYPE,
    TimestampNTZType: pa.timestamp("us"),
}


class SchemaRefused(ValueError):
    """The schema text cannot be read, or holds a type plain JSON cannot fill; the message says which."""


def read_schema(text: str) -> DataType:
    """The struct (or array, or map) `text` gives (DDL, or JSON when it starts with '{'), every field made
    nullable."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            parsed = parse_json_type(stripped)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SchemaRefused(
                f"it starts with '{{' and is not Spark's JSON form of a StructType ({type(exc).__name__}: {exc})"
            ) from None
        if not isinstance(parsed, (StructType, ArrayType, MapType)):
            raise SchemaRefused(f"it is {parsed.simpleString()}: from_json reads a struct, an array or a map")
    else:
        try:
            parsed = parse_ddl(stripped)
        except DdlError as exc:
            raise SchemaRefused(f"it is not a Spark DDL schema: {exc}") from None
    if isinstance(parsed, StructType) and not parsed.fields:
        raise SchemaRefused("it has no fields")
    problem = _unreadable(parsed, "")
    if problem is not None:
        raise SchemaRefused(problem)
    return nullable(parsed)


def parse_json_type(text: str) -> DataType:
    """A type in Spark's JSON form (what DataType.json() writes): pyspark's own reader, which needs no JVM."""
    from pyspark.sql.types import _parse_datatype_json_value

    return _parse_datatype_json_value(json.loads(text))


def _unreadable(data_type: DataType, path: str) -> str | None:
    """Why plain JSON cannot fill `data_type` (None: it can), naming the field."""
    if isinstance(data_type, StructType):
        seen = set()
        for f in data_type.fields:
            if f.name in seen:
                return f"field {path}{f.name} is named twice"
            seen.add(f.name)
            problem = _unreadable(f.dataType, f"{path}{f.name}.")
            if problem is not None:
                return problem
        return None
    if isinstance(data_type, ArrayType):
        return _unreadable(data_type.elementType, path)
    if isinstance(data_type, MapType):
        if not isinstance(data_type.keyType, StringType):
            where = f"field {path.rstrip('.')}" if path else "the schema"
            return f"{where} is a map with {data_type.keyType.simpleString()} keys: JSON's are strings"
        return _unreadable(data_type.valueType, path)
    if type(data_type) in _ARROW or isinstance(data_type, DecimalType):
        return None
    where = f"field {path.rstrip('.')}" if path else "the schema"
    return f"{where} is {data_type.simpleString()}, which plain JSON is not read into here"


def nullable(data_type: DataType) -> DataType:
    """`data_type` with every field, element and value nullable: from_json's schema."""
    if isinstance(data_type, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True, f.metadata) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return ArrayType(nullable(data_type.elementType), True)
    if isinstance(data_type, MapType):
        return MapType(data_type.keyType, nullable(data_type.valueType), True)
    return data_type


def arrow_type(data_type: DataType) -> pa.DataType:
    """The Arrow type Spark reads back as `data_type` (pyspark's from_arrow_type, zone-less timestamps as NTZ)."""
    if isinstance(data_type, StructType):
        return pa.struct([pa.field(f.name, arrow_type(f.dataType)) for f in data_type.fields])
    if isinstance(data_type, ArrayType):
        return pa.list_(arrow_type(data_type.elementType))
    if isinstance(data_type, MapType):
        return pa.map_(pa.string(), arrow_type(data_type.valueType))
    if isinstance(data_type, DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    return _ARROW[type(data_type)]
