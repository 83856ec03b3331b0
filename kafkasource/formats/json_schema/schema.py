"""JSON Schema schemas: their $refs followed, the Arrow type of a reader schema (which the sink's shapes follow in
reverse), and a writer schema's validator (jsonschema's, as confluent-kafka's JSONDeserializer and JSONSerializer
check records with).

Types: an object with `properties` -> struct (in their order), an object with only `additionalProperties`
-> map<string, ..>, array -> list of its `items`, string -> string, integer -> bigint, number -> double,
boolean -> boolean; `["null", T]`, or `oneOf`/`anyOf` of null and one schema, -> T, nullable; `$ref` to
`#/definitions/..` or `#/$defs/..` is followed, and so is one to a schema the registry lists as a reference
(`money.json`, `money.json#/definitions/..`: the name the reference was registered under), and the $refs within
it against it. referencing (jsonschema's resolver) follows them, for the reader's type as for the writer's
validation. Any other schema (unions of several types, `{}`) -> string holding the value's JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
from referencing.exceptions import PointerToNowhere, Unresolvable  # jsonschema's: valueFormat=json-schema only

from kafkasource.formats.each_record import Unusable
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import unresolvable_reason

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


def reader_resolver(root: object, references: Sequence[tuple[str, str]]):
    """referencing's resolver of the reader schema's $refs: into the schema itself, and into the schemas it
    references, whose own $refs it resolves against them."""
    from referencing import Resource

    specification = _specification(root)
    return _registry(references, specification).resolver_with_root(
        Resource.from_contents(root, default_specification=specification)
    )


def follow(node: object, resolver, depth: int = 0) -> tuple[dict, object]:
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
    return follow(resolved.contents, resolved.resolver, depth + 1)


def one_type(node: dict, resolver) -> tuple[dict, object] | None:
    """The one non-null schema of a nullable type (and its resolver), or None if the node is not one type."""
    kind = node.get("type")
    if isinstance(kind, list):
        others = [k for k in kind if k != "null"]
        return ({**node, "type": others[0]}, resolver) if len(others) == 1 else None
    for combiner in ("oneOf", "anyOf"):
        if combiner in node:
            others = [
                (n, r) for n, r in (follow(member, resolver) for member in node[combiner]) if n.get("type") != "null"
            ]
            return one_type(*others[0]) if len(others) == 1 else None
    return (node, resolver) if isinstance(kind, str) or "properties" in node else None


SCALARS = {"string": pa.string(), "integer": pa.int64(), "number": pa.float64(), "boolean": pa.bool_()}


def _arrow(node: object, resolver, depth: int = 0) -> pa.DataType:
    if depth > 64:
        raise ValueError("the schema nests deeper than 64 levels (a recursive $ref?): Spark has no recursive types")
    one = one_type(*follow(node, resolver))
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
    return _arrow(root, reader_resolver(root, references))


def writer_validator(schema_id: int, schema: RegistrySchema):
    """jsonschema's validator of a writer schema, or why there is none."""
    import jsonschema

    try:
        document = json.loads(schema.text)
        cls = jsonschema.validators.validator_for(document)
        cls.check_schema(document)
        return cls(document, registry=_registry(schema.references, _specification(document)))
    except Exception as exc:
        return Unusable(unresolvable_reason(schema_id, f"it is not a valid JSON Schema: {exc}"))
