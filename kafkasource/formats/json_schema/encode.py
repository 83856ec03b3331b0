"""The sink's JSON Schema: a writer schema read into a Shape (kafkasource.formats.shapes), and each row's converted
document validated against the writer schema (jsonschema, as confluent-kafka's JSONSerializer validates) and
written as compact JSON text after the wire-format prefix.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kafkasource.formats.each_record import Unusable
from kafkasource.formats.json_schema.schema import SCALARS, follow, one_type, reader_resolver, writer_validator
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.shapes import MAX_DEPTH, NullAs, RowError, SchemaUnfit, Shape, ShapeField, scalar_shape
from kafkasource.formats.wire_format import JSON_WIRE


def json_shape(schema: RegistrySchema, message: str | None = None) -> Shape:
    """The Shape of a JSON Schema writer schema (`message` is Protobuf's alone)."""
    root = json.loads(schema.text)
    return _json(root, reader_resolver(root, schema.references), 0)[0]


def _json(node: object, resolver, depth: int) -> tuple[Shape, bool]:
    if depth > MAX_DEPTH:
        raise SchemaUnfit("the schema nests deeper than 64 levels (a recursive $ref?): Spark has no recursive types")
    followed, resolver = follow(node, resolver)
    one = one_type(followed, resolver)
    if one is None:
        return Shape("json"), True
    kind = followed.get("type")
    nullable = (isinstance(kind, list) and "null" in kind) or any(
        follow(member, resolver)[0].get("type") == "null"
        for combiner in ("oneOf", "anyOf")
        for member in followed.get(combiner, ())
    )
    node, resolver = one
    kind = node.get("type", "object" if "properties" in node else None)
    if kind in SCALARS:
        return scalar_shape(SCALARS[kind]), nullable
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
                optional = name not in required
                null_as: NullAs = "null" if sub_nullable else "omitted" if optional else "refused"
                fields.append(ShapeField(name, shape, sub_nullable, optional, null_as))
            return Shape("struct", fields=fields), nullable
        extra = node.get("additionalProperties")
        item, item_nullable = _json(extra, resolver, depth + 1) if isinstance(extra, dict) else (Shape("string"), False)
        return Shape("map", item=item, item_nullable=item_nullable), nullable
    return Shape("json"), True


def json_writer(schema: RegistrySchema, shape: Shape, column: str) -> Callable[[object], bytes]:
    """The payload of a converted document: the prefix, then the document as JSON text; RowError naming the path
    where it does not match the writer schema."""
    validator = writer_validator(schema.schema_id, schema)
    if isinstance(validator, Unusable):
        raise SchemaUnfit(validator.reason)
    prefix = JSON_WIRE.prefix(schema.schema_id)

    def write_json(document) -> bytes:
        error = next(iter(validator.iter_errors(document)), None)
        if error is not None:
            where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            raise RowError(f"{column}{where}", f"does not match the schema: {error.message}")
        return prefix + json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()

    return write_json
