"""Avro schemas: parsing, and the Arrow type Spark's `from_avro` gives each. A schema's text is read once
(AvroSchema): its JSON becomes a tree of Nodes, which the Arrow types, the resolution and the Python decoder's
conversions walk, and, when first asked for, fastavro's parsed form of the same JSON, which the Python decoder
reads with. The resolution of a writer schema into a reader schema (Avro's schema resolution rules), as a plan
the native decoder executes, is avro/resolution.py's, by the rules below.

Both decoders (kafkasource.formats.avro.decode) take their verdict on whether a writer schema resolves from `resolve`,
so a schema refused is refused with the same reason whichever decodes.

Types map as Spark's SchemaConverters maps them: record -> struct, array -> list, map -> map<string, ..>,
enum and uuid -> string, fixed and bytes -> binary, decimal -> decimal(p, s), date -> date32,
timestamp-millis/micros -> timestamp[us, UTC], local-timestamp-millis/micros -> timestamp[us] (Spark's
TimestampNTZ), time-millis -> int32 (milliseconds of the day). One difference: time-micros is int64
(microseconds of the day), where spark-avro 4.1 and later give Spark's TIME(6), a type older Spark versions
lack. A union of null and one type is that type (nullable); a union of int and long is long, of float and
double is double (null or not); any other union is a struct of fields member0, member1, ... for its non-null
branches in order, exactly one set.
Recursive types are refused, as Spark refuses them.

Resolution follows the Avro specification: fields the reader adds take their defaults, fields the reader lacks
are skipped, int -> long/float/double, long -> float/double, float -> double and string <-> bytes promote,
enum symbols map by name (an unknown one to the reader's enum default), named types match by unqualified name
or a reader alias, unions resolve branch by branch. Logical types must agree between writer and reader
(a date read as a plain int, or timestamp-millis as timestamp-micros, is refused rather than reinterpreted); a
decimal may widen its precision, never change its scale.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import pyarrow as pa

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
NO_DEFAULT = object()
# an Avro schema's JSON: a type's name, a union's list of types, or a type's object
AvroJson: TypeAlias = str | list | dict
MAX_DECIMAL_PRECISION = 38  # Spark's DecimalType, Arrow's decimal128

# logical type -> the Avro type it annotates; any other pairing is ignored, as the specification says
LOGICAL_BASES = {
    "date": ("int",),
    "time-millis": ("int",),
    "time-micros": ("long",),
    "timestamp-millis": ("long",),
    "timestamp-micros": ("long",),
    "local-timestamp-millis": ("long",),
    "local-timestamp-micros": ("long",),
    "uuid": ("string",),
    "decimal": ("bytes", "fixed"),
}


class SchemaError(ValueError):
    """The text is not an Avro schema this decoder can read."""


class Unresolvable(ValueError):
    """A writer schema that cannot be resolved into the reader schema; the message says why."""


@dataclass(eq=False)
class Field:
    name: str
    type: Node
    default: object = NO_DEFAULT
    aliases: tuple = ()


@dataclass(eq=False)
class Node:
    kind: str  # a primitive, record, enum, array, map, fixed or union
    name: str | None = None  # full name of a named type
    aliases: tuple = ()  # full names
    logical: str | None = None
    precision: int = 0
    scale: int = 0
    fields: list = field(default_factory=list)
    symbols: list = field(default_factory=list)
    enum_default: str | None = None
    size: int = 0
    items: Node | None = None  # array items, map values
    branches: list = field(default_factory=list)

    @property
    def inner(self) -> Node:
        """An array's items, a map's values: the parser sets them for both kinds, and no other kind has any."""
        if self.items is None:
            raise TypeError(f"a {self.kind} holds no items")
        return self.items

    def describe(self) -> str:
        text = self.name or self.kind
        if self.kind in ("record", "enum", "fixed"):
            text = f"{self.kind} {self.name}"
        return f"{text} ({self.logical})" if self.logical else text


class AvroSchema:
    """An Avro schema read once from its text: its tree of Nodes, and fastavro's parsed form of the same JSON."""

    def __init__(self, node: Node, documents: list[AvroJson]):
        self.node = node
        self._documents = documents  # the JSON of the schemas it references, each after those it uses, then its own

    @functools.cached_property
    def fastavro(self) -> tuple[AvroJson, dict]:
        """fastavro's parsed form and its named types (full name -> parsed), knowing the named types of the schemas
        it references, and marked as parsed (its write hint): fastavro's reader would parse an unmarked schema
        again, without them. Defaults are not checked here (fastavro refuses a schema over any default that does
        not fit its field): a reader's are checked where a writer lacks the field, as for the native decoder
        (avro/resolution.py), and a writer's are never read. SchemaError says why fastavro cannot read the schema
        (a named type defined twice, an enum symbol that is not a name, a decimal wider than its fixed), where
        our parser could."""
        import fastavro

        named: dict = {}
        try:
            for document in self._documents[:-1]:
                fastavro.parse_schema(document, named_schemas=named, _write_hint=False, _ignore_default_error=True)
            parsed = fastavro.parse_schema(self._documents[-1], named_schemas=named, _ignore_default_error=True)
        except Exception as e:  # fastavro's SchemaParseException, or whatever its parsing ran into
            raise SchemaError(f"fastavro does not read it: {type(e).__name__}: {e}") from None
        return parsed, named


def parse(text: str, references: Sequence[tuple[str, str]] = ()) -> AvroSchema:
    """An Avro schema's JSON text, read once: its tree of Nodes (uses of a named type share the named Node) and the
    JSON fastavro parses when asked. `references` (name, JSON text), each after those it uses, define named types
    the schema may use (a registry's schema references)."""
    named: dict = {}
    documents: list[AvroJson] = []
    for name, referenced in references:
        try:
            documents.append(_parse_text(referenced, named)[0])
        except SchemaError as e:
            raise SchemaError(f"the schema it references as {name}: {e}") from None
    document, node = _parse_text(text, named)
    return AvroSchema(node, [*documents, document])


def _parse_text(text: str, named: dict) -> tuple[AvroJson, Node]:
    """The text's JSON, and its tree of Nodes."""
    try:
        schema = json.loads(text)
    except (TypeError, ValueError) as e:
        raise SchemaError(f"not JSON: {e}") from None
    try:
        return schema, _parse(schema, None, named)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        if isinstance(e, SchemaError):
            raise
        raise SchemaError(f"{type(e).__name__}: {e}") from None


def _full_name(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _parse(schema, namespace: str | None, named: dict) -> Node:
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return Node(schema)
        full = _full_name(schema, namespace)
        for candidate in (full, schema):
            if candidate in named:
                return named[candidate]
        raise SchemaError(f"unknown type {schema!r}")
    if isinstance(schema, list):
        return Node("union", branches=[_parse(branch, namespace, named) for branch in schema])
    if not isinstance(schema, dict) or "type" not in schema:
        raise SchemaError(f"not a schema: {json.dumps(schema)[:200]}")
    kind = schema["type"]
    if isinstance(kind, (dict, list)) or (
        kind not in ("record", "error", "enum", "array", "map", "fixed") and kind not in PRIMITIVES
    ):
        node = _parse(kind, namespace, named)  # {"type": {...}} or {"type": "SomeName"}
    elif kind == "array":
        node = Node("array", items=_parse(schema.get("items"), namespace, named))
    elif kind == "map":
        node = Node("map", items=_parse(schema.get("values"), namespace, named))
    elif kind in PRIMITIVES:
        node = Node(kind)
    else:
        node = _parse_named("record" if kind == "error" else kind, schema, namespace, named)
    return _with_logical(node, schema)


def _parse_named(kind: str, schema: dict, namespace: str | None, named: dict) -> Node:
    if not isinstance(schema.get("name"), str):
        raise SchemaError(f"a {kind} without a name")
    full = _full_name(schema["name"], schema.get("namespace", namespace))
    own_namespace = full.rpartition(".")[0] or None
    aliases = tuple(_full_name(alias, own_namespace) for alias in schema.get("aliases", ()))
    node = Node(kind, name=full, aliases=aliases)
    named[full] = node  # before the fields: a field may refer to the record itself
    if kind == "record":
        for spec in schema.get("fields", ()):
            node.fields.append(
                Field(
                    spec["name"],
                    _parse(spec["type"], own_namespace, named),
                    spec.get("default", NO_DEFAULT),
                    tuple(spec.get("aliases", ())),
                )
            )
    elif kind == "enum":
        node.symbols = list(schema.get("symbols", ()))
        node.enum_default = schema.get("default")
    else:
        node.size = int(schema["size"])
    return node


def _with_logical(node: Node, schema: dict) -> Node:
    logical = schema.get("logicalType")
    if not isinstance(logical, str) or node.kind not in LOGICAL_BASES.get(logical, ()):
        return node
    if logical == "decimal":
        precision, scale = schema.get("precision"), schema.get("scale", 0)
        if not isinstance(precision, int) or precision < 1 or not isinstance(scale, int) or not 0 <= scale <= precision:
            return node  # an invalid decimal is its underlying type, per the specification
        if node.name:  # a named fixed: the annotation belongs to this use of it
            node = Node(**{**node.__dict__})
        node.precision, node.scale = precision, scale
    node.logical = logical
    return node


# ---- Arrow types, as Spark's from_avro ----

TIMESTAMP_UTC = pa.timestamp("us", tz="UTC")
TIMESTAMP_NTZ = pa.timestamp("us")
SIMPLE_TYPES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
    "enum": pa.string(),
    "fixed": pa.binary(),
}
LOGICAL_TYPES = {
    "date": pa.date32(),
    "timestamp-millis": TIMESTAMP_UTC,
    "timestamp-micros": TIMESTAMP_UTC,
    "local-timestamp-millis": TIMESTAMP_NTZ,
    "local-timestamp-micros": TIMESTAMP_NTZ,
}


def arrow_type(node: Node, records: tuple = ()) -> pa.DataType:
    if node.logical == "decimal":
        if node.precision > MAX_DECIMAL_PRECISION:
            raise SchemaError(
                f"decimal({node.precision}, {node.scale}) is wider than Spark's {MAX_DECIMAL_PRECISION} digits"
            )
        return pa.decimal128(node.precision, node.scale)
    if node.logical in LOGICAL_TYPES:
        return LOGICAL_TYPES[node.logical]
    if node.kind in SIMPLE_TYPES:
        return SIMPLE_TYPES[node.kind]
    if node.kind == "record":
        if node.name in records:
            raise SchemaError(f"record {node.name} refers to itself: recursive types have no Spark type")
        inner = records + (node.name,)
        return pa.struct([pa.field(f.name, arrow_type(f.type, inner)) for f in node.fields])
    if node.kind == "array":
        return pa.list_(arrow_type(node.inner, records))
    if node.kind == "map":
        return pa.map_(pa.string(), arrow_type(node.inner, records))
    shape = union_shape(node)
    if shape is None:
        raise SchemaError("a union with no branch but null has no Spark type")
    if isinstance(shape, Node):
        return arrow_type(shape, records)
    return pa.struct([pa.field(f"member{i}", arrow_type(branch, records)) for i, branch in enumerate(shape)])


def union_shape(union: Node):
    """What Spark makes of a union: a Node (the one type it reads as, nullable) or the list of its non-null
    branches (a struct of member0, member1, ...); None for a union of nothing but null."""
    others = [branch for branch in union.branches if branch.kind != "null"]
    kinds = {branch.kind for branch in others}  # as Spark: logical types aside
    if not others:
        return None
    if len(others) == 1:
        return others[0]
    if len(others) == 2 and kinds in ({"int", "long"}, {"float", "double"}):
        return next(branch for branch in others if branch.kind in ("long", "double"))
    return others
