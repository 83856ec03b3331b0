"""The sink's side of valueFormat/keyFormat, whatever the format: a writer schema read into a Shape (what each field
takes: its type, whether it may be null or left out, the enum symbols, the range of an unsigned number), a DataFrame
column's Spark type checked against it on the driver, and each row's value converted to what the format's library
takes on the executors. Each format reads its schemas into Shapes in its own encode module
(kafkasource.formats.avro.encode, protobuf.encode, json_schema.encode).

The Shape of a schema follows the read side's type mapping (docs/schema-registry.md) in reverse, so a column of
exactly the type the reader gives a schema is written as that schema; a narrower column is written too (int into
long, float into double, a decimal into a wider one, any integer into a decimal with room for it). Checked per
row, where a type cannot say it: a null where the schema takes none, an enum name the enum lacks, a decimal
with more digits than the schema's, an unsigned number below 0, a fixed of another size; for JSON Schema,
everything else the schema says (jsonschema validates each record, as confluent-kafka's JSONSerializer does).

The schemas auto.register.schemas registers are derived in each format's derive module.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any, Literal

import pyarrow as pa

MAX_DEPTH = 64
NullAs = Literal["null", "omitted", "refused"]  # what a null in a field is written as (ShapeField)
INTEGER_DIGITS = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 19}


class RowError(ValueError):
    """A row's value does not fit the writer schema: `path` (value.amount) and why."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path, self.reason = path, reason


class SchemaUnfit(ValueError):
    """The writer schema holds a type the sink does not write (a union of several types)."""


@dataclass(eq=False)
class Shape:
    """What one place of a schema takes. kind: struct, list, map, json (any JSON: the reader's string of JSON text)
    or a scalar kind (Spark's simpleString of the type the reader gives it: string, bigint, decimal(20,0), ...)."""

    kind: str
    fields: list[ShapeField] = field(default_factory=list)  # struct
    item: Shape | None = None  # list items, map values
    key: Shape | None = None  # map keys, where they are not strings (protobuf)
    item_nullable: bool = False
    symbols: tuple[str, ...] = ()  # an enum's names
    low: int | None = None  # an integer's range, where the type's own is wider
    high: int | None = None
    size: int | None = None  # Avro fixed
    precision: int = 0  # decimal
    scale: int = 0
    message: Any = None  # Protobuf: the message class a struct is built as; "timestamp" for google.protobuf.Timestamp


@dataclass(eq=False)
class ShapeField:
    """A field of a struct; each format says what a null in it is written as: a null (Avro's union with null, a
    JSON Schema type that takes null), left out of the record (a Protobuf field with presence left unset, a JSON
    property the schema does not require, as to_json leaves out nulls), or refused."""

    name: str
    shape: Shape
    nullable: bool  # a null can be written
    optional: bool  # the column may lack it (the schema's default, or a null, or protobuf's default is written)
    null_as: NullAs


def scalar_shape(arrow: pa.DataType) -> Shape:
    """The Shape of a scalar the read side gives the Arrow type `arrow`: named by Spark's type for it."""
    from pyspark.sql.pandas.types import from_arrow_type

    if pa.types.is_decimal(arrow):
        return Shape(f"decimal({arrow.precision},{arrow.scale})", precision=arrow.precision, scale=arrow.scale)
    return Shape(from_arrow_type(arrow, prefer_timestamp_ntz=True).simpleString())  # as the read side types it


# ---- the driver's check: a column's Spark type against a Shape ----------------------------------------------


def check_fit(data_type, shape: Shape, path: str) -> list[str]:
    """Why a column (or field) of this Spark type cannot be written as `shape`: one line per place, naming its path
    and what to change; empty when it fits. Nullability is left to the rows (as Spark's to_avro leaves it): a
    nullable column feeding a field that takes no null fails only at a row that holds one."""
    from pyspark.sql.types import ArrayType, MapType, StringType, StructType

    shown = data_type.simpleString()
    if shape.kind == "json":
        if isinstance(data_type, StringType):
            return []
        return [f"{path} is {shown}, the schema takes any JSON there: give it the JSON text as a string (to_json)"]
    if shape.kind == "struct":
        if not isinstance(data_type, StructType):
            return [f"{path} is {shown}, the schema wants a struct (record) there"]
        wanted = {f.name: f for f in shape.fields}
        problems = []
        for f in data_type.fields:
            if f.name not in wanted:
                problems.append(
                    f"{path}.{f.name}: the schema has no field {f.name} (its fields: {', '.join(wanted) or 'none'});"
                    " drop it, or register a schema version that has it"
                )
            else:
                problems += check_fit(f.dataType, wanted[f.name].shape, f"{path}.{f.name}")
        present = set(data_type.names)
        for name, wanted_field in wanted.items():
            if name not in present and not wanted_field.optional:
                problems.append(
                    f"{path}.{name}: the schema's field {name} has no default and takes no null, and the column "
                    "lacks it; add it to the struct"
                )
        return problems
    if shape.kind in ("list", "map"):
        kind = ArrayType if shape.kind == "list" else MapType
        if not isinstance(data_type, kind):
            return [f"{path} is {shown}, the schema wants {'an array' if shape.kind == 'list' else 'a map'} there"]
        if isinstance(data_type, MapType):
            key_problems = check_fit(data_type.keyType, shape.key or Shape("string"), f"{path}.key")
            if key_problems:
                return key_problems
        inner = data_type.elementType if isinstance(data_type, ArrayType) else data_type.valueType
        return check_fit(inner, shape.item, f"{path}[]")  # type: ignore[arg-type]
    if _scalar_fits(shown, shape):
        return []
    return [f"{path} is {shown}, the schema's type there is {_describe(shape)}: CAST it to {shape.kind}"]


def _scalar_fits(shown: str, shape: Shape) -> bool:
    wanted = shape.kind
    if shown == wanted:
        return True
    if wanted in INTEGER_DIGITS and shown in INTEGER_DIGITS:
        return INTEGER_DIGITS[shown] <= INTEGER_DIGITS[wanted]
    if wanted == "double" and shown == "float":
        return True
    if wanted.startswith("decimal"):
        if shown in INTEGER_DIGITS:
            return INTEGER_DIGITS[shown] <= shape.precision - shape.scale
        if shown.startswith("decimal("):
            precision, scale = (int(x) for x in shown[len("decimal(") : -1].split(","))
            return scale <= shape.scale and precision - scale <= shape.precision - shape.scale
    return False


def _describe(shape: Shape) -> str:
    if shape.symbols:
        return f"an enum ({', '.join(shape.symbols[:8])}{', ...' if len(shape.symbols) > 8 else ''})"
    if shape.size is not None:
        return f"fixed({shape.size}) bytes (binary)"
    return shape.kind


# ---- rows: Python values (as pyarrow gives them) to what each format's library takes -------------------------


def _scalar_value(value, shape: Shape, path: str):
    if shape.symbols and value not in shape.symbols:
        raise RowError(path, f"{value!r} is not one of the enum's names ({', '.join(shape.symbols[:8])})")
    if shape.low is not None and not shape.low <= value <= shape.high:
        raise RowError(path, f"{value} is outside {shape.kind}'s range {shape.low} to {shape.high} here")
    if shape.size is not None and len(value) != shape.size:
        raise RowError(path, f"{len(value)} bytes for a fixed of {shape.size}")
    if shape.precision:
        with localcontext(prec=80):
            value = Decimal(value)
            scaled = value.quantize(Decimal(1).scaleb(-shape.scale))
        if scaled != value or (scaled != 0 and scaled.adjusted() + 1 > shape.precision - shape.scale):
            raise RowError(path, f"{value} does not fit decimal({shape.precision},{shape.scale})")
        if shape.low is not None:  # protobuf's uint64
            return int(scaled)
        return scaled
    return value


def convert(value, shape: Shape, path: str):
    """`value` (not None) as the format's library takes it; RowError naming the path where it does not fit."""
    kind = shape.kind
    if kind == "struct":
        out: dict[str, Any] = {}
        for f in shape.fields:
            sub = value.get(f.name)
            if sub is None:
                if f.name not in value or f.null_as == "omitted":
                    continue  # lacking (the driver checked it may): the schema's default, or left out of the JSON
                if f.null_as == "refused":
                    raise RowError(f"{path}.{f.name}", "null for a non-nullable field")
                out[f.name] = None
                continue
            out[f.name] = convert(sub, f.shape, f"{path}.{f.name}")
        return out if shape.message is None else shape.message(**out)
    if kind == "list":
        return [_item(item, shape, f"{path}[{i}]") for i, item in enumerate(value)]
    if kind == "map":
        key = shape.key or Shape("string")
        return {_scalar_value(k, key, f"{path}[{k!r}]"): _item(v, shape, f"{path}[{k!r}]") for k, v in value}
    if kind == "json":
        try:
            return json.loads(value)
        except ValueError as exc:
            raise RowError(path, f"the schema takes any JSON there, and this string is not JSON: {exc}") from None
    return _scalar_value(value, shape, path)


def _item(value, shape: Shape, path: str):
    if value is None:
        if not shape.item_nullable:
            raise RowError(path, "null where the schema takes none")
        return None
    return convert(value, shape.item, path)  # type: ignore[arg-type]


def first_problems(problems: Sequence[str], limit: int = 5) -> str:
    more = len(problems) - limit
    return "; ".join(problems[:limit]) + (f" (and {more} more)" if more > 0 else "")
