"""The sink's side of valueFormat/keyFormat: a writer schema read into a Shape (what each field takes: its type, whether
it may be null or left out, the enum symbols, the range of an unsigned number), a DataFrame column's Spark type
checked against it on the driver, and each row's value converted and encoded in the format on the executors.

The Shape of a schema follows the read side's type mapping (docs/schema-registry.md) in reverse, so a column of
exactly the type the reader gives a schema is written as that schema; a narrower column is written too (int into
long, float into double, a decimal into a wider one, any integer into a decimal with room for it). Checked per
row, where a type cannot say it: a null where the schema takes none, an enum name the enum lacks, a decimal
with more digits than the schema's, an unsigned number below 0, a fixed of another size; for JSON Schema,
everything else the schema says (jsonschema validates each record, as confluent-kafka's JSONSerializer does).

The schemas auto.register.schemas registers are derived in kafkasource.formats.derived_schemas.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any

import pyarrow as pa

from kafkasource.formats.registry import RegistrySchema

MAX_DEPTH = 64
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
    message: Any = None  # Protobuf: the message class of a struct; "timestamp" for google.protobuf.Timestamp


@dataclass(eq=False)
class ShapeField:
    name: str
    shape: Shape
    nullable: bool  # a null can be written
    optional: bool  # the column may lack it (the schema's default, or a null, or protobuf's default is written)


# ---- shapes of the three formats ------------------------------------------------------------------------------


def _scalar(arrow: pa.DataType) -> Shape:
    from pyspark.sql.pandas.types import from_arrow_type

    if pa.types.is_decimal(arrow):
        return Shape(f"decimal({arrow.precision},{arrow.scale})", precision=arrow.precision, scale=arrow.scale)
    return Shape(from_arrow_type(arrow, prefer_timestamp_ntz=True).simpleString())  # as the read side: decoding.py


def avro_shape(schema: RegistrySchema) -> Shape:
    from kafkasource.formats import avro_schema

    parsed = avro_schema.parse(schema.text, schema.references)
    avro_schema.arrow_type(parsed.node)  # refuses recursive records and over-wide decimals, in the read side's words
    shape, _nullable = _avro(parsed.node, "")
    return shape


def _avro(node, path: str) -> tuple[Shape, bool]:
    from kafkasource.formats import avro_schema

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
            fields.append(ShapeField(f.name, shape, nullable, nullable or f.default is not avro_schema.NO_DEFAULT))
        return Shape("struct", fields=fields), False
    if node.kind in ("array", "map"):
        item, nullable = _avro(node.inner, f"{path}[]")
        return Shape("list" if node.kind == "array" else "map", item=item, item_nullable=nullable), False
    if node.kind == "enum":
        return Shape("string", symbols=tuple(node.symbols)), False
    shape = _scalar(avro_schema.arrow_type(node))
    if node.kind == "fixed" and node.logical != "decimal":
        shape.size = node.size
    return shape, False


def json_shape(schema: RegistrySchema) -> Shape:
    from kafkasource.formats import json_schema

    root = json.loads(schema.text)
    return _json(root, json_schema._resolver(root, schema.references), 0)[0]


def _json(node: object, resolver, depth: int) -> tuple[Shape, bool]:
    from kafkasource.formats import json_schema

    if depth > MAX_DEPTH:
        raise SchemaUnfit("the schema nests deeper than 64 levels (a recursive $ref?): Spark has no recursive types")
    followed, resolver = json_schema._follow(node, resolver)
    one = json_schema._one_type(followed, resolver)
    if one is None:
        return Shape("json"), True
    kind = followed.get("type")
    nullable = (isinstance(kind, list) and "null" in kind) or any(
        json_schema._follow(member, resolver)[0].get("type") == "null"
        for combiner in ("oneOf", "anyOf")
        for member in followed.get(combiner, ())
    )
    node, resolver = one
    kind = node.get("type", "object" if "properties" in node else None)
    if kind in json_schema.SCALARS:
        return _scalar(json_schema.SCALARS[kind]), nullable
    if kind == "array":
        item, item_nullable = _json(node.get("items", {}), resolver, depth + 1)
        return Shape("list", item=item, item_nullable=item_nullable), nullable
    if kind == "object":
        properties = node.get("properties")
        if properties:
            required = set(node.get("required", ()))
            fields = []
            for name, sub in properties.items():
                shape, sub_nullable = _json(sub, resolver, depth + 1)
                fields.append(ShapeField(name, shape, sub_nullable, name not in required))
            return Shape("struct", fields=fields), nullable
        extra = node.get("additionalProperties")
        item, item_nullable = _json(extra, resolver, depth + 1) if isinstance(extra, dict) else (Shape("string"), False)
        return Shape("map", item=item, item_nullable=item_nullable), nullable
    return Shape("json"), True


def protobuf_shape(schema: RegistrySchema, message: str | None) -> Shape:
    from kafkasource.formats import protobuf

    descriptor = protobuf.reader_message(schema.text, message, schema.references)
    protobuf.arrow_type(schema.text, message, schema.references)  # refuses recursive messages in its words
    return _message_shape(descriptor)


def _message_shape(descriptor) -> Shape:
    from google.protobuf import message_factory

    from kafkasource.formats import protobuf

    fields = []
    for f in descriptor.fields:
        if protobuf._is_map(f):
            entry = f.message_type.fields_by_name
            shape = Shape("map", item=_proto_single(entry["value"]), key=_proto_single(entry["key"]))
        elif f.is_repeated:
            shape = Shape("list", item=_proto_single(f), item_nullable=False)
        else:
            shape = _proto_single(f)
        presence = not f.is_repeated and f.has_presence
        fields.append(ShapeField(f.name, shape, presence, True))
    return Shape("struct", fields=fields, message=message_factory.GetMessageClass(descriptor))


def _proto_single(f) -> Shape:
    from kafkasource.formats import protobuf

    if f.message_type is not None:
        if f.message_type.full_name == protobuf.TIMESTAMP:
            return Shape("timestamp", message="timestamp")
        return _message_shape(f.message_type)
    if f.enum_type is not None:
        return Shape("string", symbols=tuple(v.name for v in f.enum_type.values))
    shape = _scalar(protobuf._scalar_types()[f.type])
    if f.type in (f.TYPE_UINT32, f.TYPE_FIXED32):
        shape.low, shape.high = 0, 2**32 - 1
    if f.type in (f.TYPE_UINT64, f.TYPE_FIXED64):
        shape.low, shape.high = 0, 2**64 - 1
    return shape


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


def convert(value, shape: Shape, path: str, fmt: str):
    """`value` (not None) as the format's library takes it; RowError naming the path where it does not fit."""
    kind = shape.kind
    if kind == "struct":
        out: dict[str, Any] = {}
        for f in shape.fields:
            sub = value.get(f.name)
            if sub is None:
                if f.name not in value:  # the column lacks the field (the driver checked it may)
                    if fmt == "avro" and f.nullable and not f.optional:
                        out[f.name] = None
                    continue  # else the schema's default: Avro's, protobuf's, or left out of the JSON
                if f.nullable:
                    if fmt != "protobuf":
                        out[f.name] = None
                    continue  # protobuf: a field with presence left unset
                if fmt == "json" and f.optional:
                    continue  # a property the schema does not require: left out, as to_json leaves out nulls
                raise RowError(f"{path}.{f.name}", "null for a non-nullable field")
            out[f.name] = convert(sub, f.shape, f"{path}.{f.name}", fmt)
        return shape.message(**out) if fmt == "protobuf" else out
    if kind == "list":
        return [_item(item, shape, f"{path}[{i}]", fmt) for i, item in enumerate(value)]
    if kind == "map":
        key = shape.key or Shape("string")
        return {_scalar_value(k, key, f"{path}[{k!r}]"): _item(v, shape, f"{path}[{k!r}]", fmt) for k, v in value}
    if kind == "json":
        try:
            return json.loads(value)
        except ValueError as exc:
            raise RowError(path, f"the schema takes any JSON there, and this string is not JSON: {exc}") from None
    return _scalar_value(value, shape, path)


def _item(value, shape: Shape, path: str, fmt: str):
    if value is None:
        if not shape.item_nullable:
            raise RowError(path, "null where the schema takes none")
        return None
    return convert(value, shape.item, path, fmt)  # type: ignore[arg-type]


# ---- encoders: one per writer schema and column, built once per process --------------------------------------


class Encoder:
    """Encodes one column's Python values (pyarrow's to_pylist) into the wire format of one writer schema."""

    def __init__(self, fmt: str, schema: RegistrySchema, message: str | None, column: str):
        self.format, self.column = fmt, column
        self.shape = (
            {"avro": avro_shape, "json": json_shape}[fmt](schema)
            if fmt != "protobuf"
            else (protobuf_shape(schema, message))
        )
        prefix = struct.pack(">bI", 0, schema.schema_id)
        self.write: Callable[[object], bytes]
        if fmt == "avro":
            import fastavro

            from kafkasource.formats import avro_schema

            parsed = avro_schema.parse(schema.text, schema.references).fastavro[0]

            def write_avro(record) -> bytes:
                out = io.BytesIO()
                out.write(prefix)
                fastavro.schemaless_writer(out, parsed, record)
                return out.getvalue()

            self.write = write_avro
        elif fmt == "json":
            from kafkasource.formats.json_schema import _validator
            from kafkasource.formats.wire_format import Unusable

            validator = _validator(schema.schema_id, schema)
            if isinstance(validator, Unusable):
                raise SchemaUnfit(validator.reason)

            def write_json(document) -> bytes:
                error = next(iter(validator.iter_errors(document)), None)
                if error is not None:
                    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
                    raise RowError(f"{column}{where}", f"does not match the schema: {error.message}")
                return prefix + json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()

            self.write = write_json
        else:
            from confluent_kafka.schema_registry.serde import SchemaId

            descriptor = self.shape.message.DESCRIPTOR
            header = SchemaId("PROTOBUF", schema.schema_id, message_indexes=_message_indexes(descriptor)).id_to_bytes()
            self.write = lambda message: header + message.SerializeToString()  # type: ignore[attr-defined]

    def encode(self, value) -> bytes:
        """The payload of one non-null value; RowError where it does not fit the schema."""
        try:
            return self.write(convert(value, self.shape, self.column, self.format))
        except RowError:
            raise
        except (ValueError, TypeError, OverflowError) as exc:  # fastavro's and protobuf's own refusals
            raise RowError(self.column, f"{type(exc).__name__}: {exc}") from None


def _message_indexes(descriptor) -> list[int]:
    """Where a message sits in its file (its index among the top-level messages, then among each level's nested
    ones), as confluent-kafka's ProtobufSerializer writes it."""
    indexes: list[int] = []
    while descriptor is not None:
        siblings = (
            descriptor.containing_type.nested_types
            if descriptor.containing_type
            else list(descriptor.file.message_types_by_name.values())
        )
        indexes.insert(0, [s.full_name for s in siblings].index(descriptor.full_name))
        descriptor = descriptor.containing_type
    return indexes


def first_problems(problems: Sequence[str], limit: int = 5) -> str:
    more = len(problems) - limit
    return "; ".join(problems[:limit]) + (f" (and {more} more)" if more > 0 else "")
