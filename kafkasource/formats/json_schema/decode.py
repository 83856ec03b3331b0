"""JSON Schema records in the schema-registry wire format to an Arrow column of the reader schema's type.

A payload is a magic byte 0, the writer schema's id (4 bytes, big-endian) and the record as JSON text. Each
record is checked against its writer schema (as confluent-kafka's JSONDeserializer checks it), then laid
into the reader schema's type (kafkasource.formats.json_schema.schema says which): properties the reader names
are taken (a missing one is null), others are left out; a value of another kind than the reader wants makes the
record bad, with the path to it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence

import pyarrow as pa
from referencing.exceptions import Unresolvable  # jsonschema's: valueFormat=json-schema only

from kafkasource.formats.each_record import WriterCache, decode_each
from kafkasource.formats.json_schema.schema import arrow_type, writer_validator
from kafkasource.formats.registry import RegistrySchema
from kafkasource.formats.wire_format import JSON_WIRE, unresolvable_reason


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


class JsonSchemaDecoder:
    """Decodes payloads into `arrow_type`. Writer schemas are compiled into validators once per id and kept."""

    def __init__(self, reader_schema: str, native: bool = False, references: Sequence[tuple[str, str]] = ()):
        self.arrow_type = arrow_type(reader_schema, references)
        self.validators = WriterCache(writer_validator)

    def decode(self, payloads: pa.Array, writer_schemas: Mapping[int, RegistrySchema]) -> tuple[pa.Array, pa.Array]:
        return decode_each(payloads, self.validators.of(writer_schemas), self._decode_one, self.arrow_type, JSON_WIRE)

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
