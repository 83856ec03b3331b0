"""JSON Schema records in the schema-registry wire format to an Arrow column of the reader schema's type.

A payload is a magic byte 0, the writer schema's id (4 bytes, big-endian) and the record as JSON text. Each
record is checked against its writer schema (as confluent-kafka's JSONDeserializer checks it), then laid
into the reader schema's type: properties the reader names are taken (a missing one is null), others are
left out; a value of another kind than the reader wants makes the record bad, with the path to it.

Types: an object with `properties` -> struct (in their order), an object with only `additionalProperties`
-> map<string, ..>, array -> list of its `items`, string -> string, integer -> bigint, number -> double,
boolean -> boolean; `["null", T]`, or `oneOf`/`anyOf` of null and one schema, -> T, nullable; `$ref` to
`#/definitions/..` or `#/$defs/..` is followed, and so is one to a schema the registry lists as a reference
(`money.json`, `money.json#/definitions/..`: the name the reference was registered under), and the $refs within
it against it. referencing (jsonschema's resolver) follows them, for the reader's type as for the writer's
validation. Any other schema (unions of several types, `{}`) -> string holding the value's JSON text.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence

import pyarrow as pa
from referencing.exceptions import PointerToNowhere, Unresolvable  # jsonschema's: valueFormat=json only

from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import Unusable, WriterCache, decode_each, unresolvable_reason

NEITHER = (
    "$ref {!r} is neither a reference into this schema (#/definitions/.. or #/$defs/..) nor to a schema the "
    "registry lists among its references"
)


def _specification(document: object):
    """The JSON Schema draft a schema is read in: the one its $schema names, else jsonschema's default (as the
    writer's validator is chosen)."""
    import jsonschema
    from referencing.jsonschema import specification_with

    return specification_with(jsonschema.validators.validator_for(document).META_SCHEMA["$schema"])


def _registry(references: Sequence[tuple[str, str]], specification):
    """The referenced schemas as referencing (jsonschema's resolver) resolves $refs: each under the name the registry
    gave its reference, read in `specification` unless it names its own draft."""
    from referencing import Registry, Resource

    return Registry().with_resources(
        (name, Resource.from_contents(json.loads(text), default_specification=specification))
        for name, text in references
    )


def _resolver(root: object, references: Sequence[tuple[str, str]]):
    """referencing's resolver of the reader schema's $refs: into the schema itself, and into the schemas it
    references, whose own $refs it resolves against them."""
    from referencing import Resource

    specification = _specification(root)
    return _registry(references, specification).resolver_with_root(
        Resource.from_contents(root, default_specification=specification)
    )


def _follow(node: object, resolver, depth: int = 0) -> tuple[dict, object]:
    """The node with its $refs followed, and the resolver of the $refs within it."""
    if not isinstance(node, dict):
        return {}, resolver
    ref = node.get("$ref")
    if ref is None:
        return node, resolver
    if depth > 32 or not isinstance(ref, str):
        raise ValueError(NEITHER.format(ref))
    try:
        resolved = resolver.lookup(ref)
    except PointerToNowhere:
        raise ValueError(f"$ref {ref!r} names nothing in the schema") from None
    except Unresolvable:
        raise ValueError(NEITHER.format(ref)) from None
    return _follow(resolved.contents, resolved.resolver, depth + 1)


def _one_type(node: dict, resolver) -> tuple[dict, object] | None:
    """The one non-null schema of a nullable type (and its resolver), or None if the node is not one type."""
    kind = node.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return ({**node, "type": others[0]}, resolver) if len(others) == 1 else None
    for combiner in ("oneOf", "anyOf"):
        if combiner in node:
            others = [
                (n, r) for n, r in (_follow(member, resolver) for member in node[combiner]) if n.get("type") != "null"
            ]
            return _one_type(*others[0]) if len(others) == 1 else None
    return (node, resolver) if isinstance(kind, str) or "properties" in node else None


SCALARS = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}


def _arrow(node: object, resolver, depth: int = 0) -> pa.DataType:
    if depth > 64:
        raise ValueError("the schema nests deeper than 64 levels (a recursive $ref?): Spark has no recursive types")
    one = _one_type(*_follow(node, resolver))
    if one is None:
        return pa.string()  # JSON text
    node, resolver = one
    kind = node.get("type", "object" if "properties" in node else None)
    if kind in SCALARS:
        return SCALARS[kind]
    if kind == "array":
        return pa.list_(_arrow(node.get("items", {}), resolver, depth + 1))
    if kind == "object":
        properties = node.get("properties")
        if properties:
            return pa.struct([pa.field(name, _arrow(sub, resolver, depth + 1)) for name, sub in properties.items()])
        extra = node.get("additionalProperties")
        return pa.map_(pa.string(), _arrow(extra, resolver, depth + 1) if isinstance(extra, dict) else pa.string())
    return pa.string()


def arrow_type(reader_schema: str, references: Sequence[tuple[str, str]] = ()) -> pa.DataType:
    """The Arrow type of records of this JSON Schema (JSON text), whose $refs may name the schemas it references."""
    root = json.loads(reader_schema)
    return _arrow(root, _resolver(root, references))


class Mismatch(ValueError):
    pass


def _json_kind(value: object) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _lay(value: object, arrow: pa.DataType, path: str) -> object:
    """`value` (parsed JSON) as what pyarrow builds `arrow` from; Mismatch naming the path if it cannot be."""
    if value is None:
        return None
    if pa.types.is_string(arrow):
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if pa.types.is_boolean(arrow):
        if isinstance(value, bool):
            return value
    elif pa.types.is_int64(arrow):
        if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
            return value
        if isinstance(value, float) and value.is_integer() and -(2**63) <= value < 2**63:
            return int(value)
    elif pa.types.is_float64(arrow):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    elif pa.types.is_list(arrow):
        if isinstance(value, list):
            return [_lay(item, arrow.value_type, f"{path}[{i}]") for i, item in enumerate(value)]
    elif pa.types.is_map(arrow):
        if isinstance(value, dict):
            return [(key, _lay(item, arrow.item_type, f"{path}.{key}")) for key, item in value.items()]
    elif pa.types.is_struct(arrow):
        if isinstance(value, dict):
            return {f.name: _lay(value.get(f.name), f.type, f"{path}.{f.name}") for f in arrow}
    wanted = {"bool": "a boolean", "int64": "an integer", "double": "a number"}.get(str(arrow), f"a {arrow}")
    if pa.types.is_list(arrow):
        wanted = "an array"
    elif pa.types.is_struct(arrow) or pa.types.is_map(arrow):
        wanted = "an object"
    raise Mismatch(
        f"{path} is {'an' if _json_kind(value)[0] in 'aeiou' else 'a'} {_json_kind(value)}, the reader "
        f"schema wants {wanted}"
    )


def _validator(schema_id: int, schema: RegistrySchema):
    """jsonschema's validator of a writer schema, or why there is none."""
    import jsonschema

    try:
        document = json.loads(schema.text)
        cls = jsonschema.validators.validator_for(document)
        cls.check_schema(document)
        return cls(document, registry=_registry(schema.references, _specification(document)))
    except Exception as exc:
        return Unusable(unresolvable_reason(schema_id, f"it is not a valid JSON Schema: {exc}"))


class JsonSchemaDecoder:
    """Decodes payloads into `arrow_type`. Writer schemas are compiled into validators once per id and kept."""

    def __init__(self, reader_schema: str, native: bool = False, references: Sequence[tuple[str, str]] = ()):
        self.arrow_type = arrow_type(reader_schema, references)
        self.validators = WriterCache(_validator)

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, RegistrySchema]) -> tuple[pa.Array, pa.Array]:
        return decode_each(payloads, self.validators.of(writer_schemas), self._decode_one, self.arrow_type)

    def _decode_one(self, schema_id: int, validator, wire, body: io.BytesIO) -> tuple[object, str | None]:
        try:
            document = json.loads(body.read())
        except (ValueError, RecursionError) as exc:
            return None, f"malformed JSON record: {exc}"
        try:
            error = next(iter(validator.iter_errors(document)), None)
        except Unresolvable as exc:  # met only where a record reaches the $ref
            return None, unresolvable_reason(
                schema_id,
                f"its $ref {exc.ref!r} names neither a part of it nor a schema the registry lists among its references",
            )
        if error is not None:
            where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
            return None, f"record does not match its writer schema {schema_id}: at {where}: {error.message}"
        try:
            return _lay(document, self.arrow_type, "$"), None
        except Mismatch as exc:
            return None, unresolvable_reason(schema_id, str(exc))
